"""Time limits of cell suppression (issue 27, part 4): ``optimal`` has a default time limit and
then returns its best audited pattern with the gap, warm-started from the heuristic's pattern
(never costlier than it); ``fast``'s polish is capped in seconds as well as in work. Clocks are
simulated (a clock that jumps an hour at each reading), never measured: no test here is timed."""

import importlib
import math
import time

import numpy as np
import pytest

from sdckit.core.errors import ParameterError
from sdckit.tabular import MinFrequency, sensitivity, suppress
from sdckit.tabular.suppress import SuppressionProblem, cell_costs

from test_tabular_quality import heuristic_only, independently_safe, water_relat  # noqa: F401

L = importlib.import_module("sdckit.tabular.suppress.limits")
O = importlib.import_module("sdckit.tabular.suppress.optimal")
RULES = [MinFrequency(3)]


class RacingClock:
    """A clock that jumps an hour at every reading: any step bounded by seconds stops at once."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 3600.0
        return self.now


def test_optimal_stops_at_its_default_time_limit_with_a_gap(water_relat, monkeypatch):  # noqa: F811
    proved = suppress(water_relat, RULES, method="optimal", time_limit=math.inf)
    assert proved.optimal and proved.gap == 0.0
    monkeypatch.setattr(L, "OPTIMAL_TIME_LIMIT", 1e-9)  # the default, reached at once
    r = suppress(water_relat, RULES, method="optimal")
    assert not r.optimal and r.audit.safe
    assert r.gap is not None and 0 < r.gap <= 1 and r.lower_bound is not None
    assert r.to_dict()["optimal"] is False and r.to_dict()["gap"] == r.gap
    assert independently_safe(water_relat, r.cells["status"].to_numpy(), r.sensitivity)
    assert r.secondary_cost >= proved.secondary_cost  # never below the proved optimum


def test_optimal_search_starts_from_the_heuristic_pattern_without_redundancy(water_relat, monkeypatch):  # noqa: F811
    """The master's first incumbent is the flow heuristic's pattern with its redundant cells
    published again (fast without its polish): a search stopped at once returns no more than it
    (the raw flow pattern costs 183 where this one costs 157, the optimum)."""
    seen = {}
    real = O.branch_and_cut

    def stopped_at_once(prob, y0, best, limits, complete):
        seen["incumbent"] = float(prob.w @ best) - float(prob.w[prob.prim].sum())
        return best, False, 0.0, 0

    monkeypatch.setattr(O, "branch_and_cut", stopped_at_once)
    stopped = suppress(water_relat, RULES, method="optimal")
    target = heuristic_only(water_relat, RULES)
    assert seen["incumbent"] <= target + 1e-9
    assert stopped.audit.safe and not stopped.optimal and stopped.secondary_cost <= target + 1e-9
    monkeypatch.setattr(O, "branch_and_cut", real)
    full = suppress(water_relat, RULES, method="optimal")
    assert full.optimal and full.secondary_cost <= stopped.secondary_cost + 1e-9


def test_fast_polish_is_capped_in_cpu_seconds(water_relat, monkeypatch):  # noqa: F811
    """Without a time limit the polish stops at its work limits or after POLISH_SECONDS of CPU,
    whichever comes first; when the cap stops it at once, fast returns the flow heuristic's own
    audited pattern. The clock is the process's CPU time, not the wall clock."""
    calm = suppress(water_relat, RULES, method="fast")
    monkeypatch.setattr(time, "process_time", RacingClock())
    racing = suppress(water_relat, RULES, method="fast")
    prob = SuppressionProblem(water_relat, sensitivity(water_relat, RULES, None), cell_costs(water_relat, "value"))
    y0 = np.zeros(len(prob.cand))
    y0[prob.prim] = 1
    unpolished = float(prob.w @ prob.flow_protect(y0)) - float(prob.w[prob.prim].sum())
    assert racing.audit.safe and racing.secondary_cost == pytest.approx(unpolished)
    assert calm.secondary_cost < racing.secondary_cost  # so the cap is what stopped the polish
    assert independently_safe(water_relat, racing.cells["status"].to_numpy(), racing.sensitivity)


def test_time_limits_count_cpu_seconds_not_wall_clock(water_relat, monkeypatch):  # noqa: F811
    """A wall clock that races (a loaded machine) stops nothing: the same proved optimum."""
    monkeypatch.setattr(time, "perf_counter", RacingClock())
    r = suppress(water_relat, RULES, method="optimal", time_limit=5.0)
    assert r.optimal and r.secondary_cost == pytest.approx(157.0)


@pytest.mark.parametrize("bad", [0, -1, True, "60", float("nan")])
def test_time_limit_checked(water_relat, bad):  # noqa: F811
    with pytest.raises(ParameterError, match="'time_limit'"):
        suppress(water_relat, RULES, time_limit=bad)


def test_primal_lp_solves_first_from_scratch_by_highs_choice():
    """An LP re-solved after cost changes (audit, attacker LPs) goes on by the primal simplex
    from its last basis, but its first solve, from scratch, is HiGHS's choice: the primal simplex
    from scratch stalled on an audit LP of testdata's income table (864 cells, Dominance, a
    pattern of 190 cells: 0.2 s CPU by HiGHS's choice, over 90 s by the primal simplex)."""
    import scipy.sparse as sp

    from sdckit.tabular.lp import LP

    A = sp.csr_matrix(np.array([[1.0, 1.0, -1.0]]))
    lp = LP(A, [0.0], [0.0], [0.0, 0.0, 0.0], [np.inf, np.inf, np.inf], primal=True)
    assert lp.h.getOptionValue("simplex_strategy")[1] != 4
    lp.set_costs([0], [-1.0])
    lp.set_bounds([2], [0.0], [5.0])
    assert lp.solve() == "optimal" and lp.objective == pytest.approx(-5.0)
    assert lp.h.getOptionValue("simplex_strategy")[1] == 4  # then the primal simplex from the basis
    lp.set_costs([0, 1], [0.0, -1.0])
    assert lp.solve() == "optimal" and lp.objective == pytest.approx(-5.0)
