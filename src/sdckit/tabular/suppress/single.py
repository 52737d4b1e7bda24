"""Primary and secondary cell suppression of one table: the two methods, then the audit.

``method="fast"``: for each primary cell and direction, the cheapest deviation flow
(min sum w_i |z_i| with z_p at its level, the same bounds, cells already suppressed free; the
network-flow heuristic of Kelly, Golden & Assad 1992 and Castro 2007 generalised to any table by
LP), suppressing the cells it moves. On tables of up to ``POLISH_WHOLE`` non-empty cells the
pattern is then polished by the optimal method's loop under work limits (a few integer rounds and
branch-and-bound nodes: reproducible) and a cap of ``POLISH_SECONDS`` of CPU
(:mod:`sdckit.tabular.suppress.polish`); on larger ones redundant secondaries are dropped while
the pattern stays safe. ``method="optimal"``: :mod:`sdckit.tabular.suppress.optimal`.

Both methods return only after :func:`~sdckit.tabular.audit.audit_pattern` has shown every
primary cell protected against an intruder without upper bounds.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.tabular.audit import audit_pattern
from sdckit.tabular.cutloop import cpu_time
from sdckit.tabular.rules import sensitivity
from sdckit.tabular.suppress import limits
from sdckit.tabular.suppress.optimal import solve_optimal
from sdckit.tabular.suppress.polish import polish
from sdckit.tabular.suppress.problem import SuppressionProblem, cell_costs
from sdckit.tabular.suppress.result import STATUSES, SuppressionResult
from sdckit.tabular.table import Table


def suppress_table(table: Table, rules: Any = None, primary: Any = None, method: str = "optimal",
                   cost: str = "value", time_limit: float | None = None) -> SuppressionResult:
    """The body of :func:`sdckit.tabular.suppress.suppress` for one table (parameters as there,
    already checked by it): the sensitivity rules, the method, and the audit, which a primary
    still short (numerical slack) passes after its flows are sought again with larger levels.

    Raises
    ------
    DataError
        A primary cell that no pattern can protect (named by its codes).
    """
    start, cpu0 = time.perf_counter(), cpu_time()
    w = cell_costs(table, cost)
    sens = sensitivity(table, rules, primary)
    prob = SuppressionProblem(table, sens, w)
    C = len(prob.cand)
    y0 = np.zeros(C)
    y0[prob.prim] = 1.0
    optimal, gap, lower, rounds = False, None, None, 0
    if not len(prob.prim):
        y = y0
        optimal, gap, lower = True, 0.0, 0.0
    elif method == "fast":
        y = prob.flow_protect(y0)
        # improvement, bounded by work (the same pattern on any machine) unless a time limit is
        # given: then up to half of it for the redundancy removal on large tables, 3/4 for the
        # polish on small ones; without one, the polish is capped by POLISH_SECONDS of CPU too
        if len(prob.cand) > limits.POLISH_WHOLE:  # large tables: the heuristic, then redundancy removal
            y = prob.drop_redundant(y, deadline=None if time_limit is None else cpu0 + 0.5 * time_limit,
                                    lp_budget=limits.REDUNDANCY_LPS if time_limit is None else None)
        else:  # small ones: branch-and-cut from the heuristic's pattern (it removes redundancy too)
            budget = limits.POLISH_SECONDS if time_limit is None else time_limit
            y = polish(prob, y0, y, deadline=cpu0 + 0.75 * budget, end=cpu0 + budget, work=time_limit is None)
    else:
        y, optimal, lower, rounds = solve_optimal(prob, y0, cpu0, limits.OPTIMAL_TIME_LIMIT if time_limit is None
                                                  else time_limit)
        optimal = optimal and not prob.undecided  # an undecided attacker LP leaves the proof open
    # audit; a primary still short (numerical slack) is protected again with a larger level
    for boost in (1.0, 1.01, 1.1, 1.5, None):
        mask = np.zeros(len(table.cells), bool)
        mask[prob.cand[y > 0.5]] = True
        status = np.where(sens.primary, "primary", np.where(mask, "secondary", "safe"))
        result_audit = audit_pattern(table, mask, sens, status)
        if result_audit.safe:
            break
        bad_cells = ~result_audit.cells["protected"].to_numpy()
        if boost is None:
            raise DataError(f"Primary cell {table.cell_name(int(np.flatnonzero(bad_cells)[0]))} could not "
                            "be protected.")
        bad = bad_cells[prob.cand[prob.prim]]
        y = prob.flow_protect(y, order=prob.prim[bad], boost=boost)
    sec = mask & ~sens.primary
    total_cost = float(w[sec].sum())
    if method == "optimal" and lower is not None:
        base = float(w[sens.primary].sum())
        full = total_cost + base
        if optimal:
            gap, lower = 0.0, full
        else:
            gap = max(0.0, (full - lower) / full) if full > 0 else 0.0
    v = np.abs(table.cells["value"].to_numpy(float))
    share = float(v[mask].sum() / v.sum()) if v.sum() > 0 else 0.0
    cells = table.cells[list(table.dimensions) + ["value", "freq"]].copy()
    cells["status"] = pd.Categorical(status, categories=list(STATUSES)).astype(str)
    return SuppressionResult(table, sens, cells, method, cost, int(sens.primary.sum()), int(sec.sum()),
                             share, total_cost, bool(optimal), gap, lower,
                             time.perf_counter() - start, rounds, result_audit)
