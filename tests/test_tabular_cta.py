"""Controlled tabular adjustment: hand-worked 1-D tables, the MILP's objective against an LP
solved in the test for every choice of directions, report columns and figures, fixed cells,
infeasibility and every bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import Manual, MinFrequency, Table
from sdckit.tabular.cta import AdjustmentResult, adjust_table


def table1(values, freqs=None):
    """A 1-D table r in a, b, c, ... with its Total."""
    codes = "abcdefgh"[:len(values)]
    freqs = freqs or [5] * len(values)
    recs = [{"r": c, "value": float(v), "freq": f} for c, v, f in zip(codes, values, freqs)]
    recs.append({"r": "Total", "value": float(sum(values)), "freq": sum(freqs)})
    return Table.from_cells(pd.DataFrame(recs), ["r"])


def table2(X, F):
    """A 2-D table (flat r, c) from interior values X and frequencies F."""
    X, F = np.asarray(X, float), np.asarray(F)
    recs = []
    I, J = X.shape
    for i in range(I + 1):
        for j in range(J + 1):
            sl = (slice(None) if i == I else i, slice(None) if j == J else j)
            recs.append({"r": "Total" if i == I else f"r{i}", "c": "Total" if j == J else f"c{j}",
                         "value": X[sl].sum(), "freq": int(F[sl].sum())})
    return Table.from_cells(pd.DataFrame(recs), ["r", "c"])


def cell(res, **codes):
    m = np.ones(len(res.cells), bool)
    for k, v in codes.items():
        m &= (res.cells[k] == v).to_numpy()
    return res.cells[m].iloc[0]


# ------------------------------------------------------------------ hand-worked
def test_one_sensitive_cell_total_fixed():
    # a = 10 must move by 3 (Manual share 0.3); the total is fixed, so one other cell moves by 3
    # the other way: distance 6, whichever direction and partner the model picks
    t = table1([10, 30, 50])
    res = adjust_table(t, Manual([("a",)], share=0.3), fixed=[("Total",)])
    a = cell(res, r="a")
    assert a["adjusted"] in (7.0, 13.0) and a["status"] == "primary"
    assert a["direction"] == ("up" if a["adjusted"] == 13 else "down")
    assert res.objective == 6 and res.total_abs_adjustment == 6 and res.cells_adjusted == 2
    assert cell(res, r="Total")["adjusted"] == 90 and res.grand_total_change == 0
    assert res.margins_changed == 0
    adj = res.cells.set_index("r")["adjusted"]
    assert adj["a"] + adj["b"] + adj["c"] == adj["Total"]
    assert sorted(res.cells["status"]) == sorted(["primary", "adjusted", "safe", "safe"])
    assert isinstance(res, AdjustmentResult) and res.optimal


def test_inverse_cost_moves_the_total():
    # cost 1/|value|: a (10) moves by 3 at 3/10; the cheapest partner is the total (3/90 < 3/50
    # < 3/30), so a and the total move together
    t = table1([10, 30, 50])
    res = adjust_table(t, Manual([("a",)], share=0.3), cost="inverse")
    assert res.objective == pytest.approx(3 / 10 + 3 / 90)
    assert abs(res.grand_total_change) == 3 and res.margins_changed == 1
    assert res.max_margin_adjustment == 3 and res.margin_abs_adjustment == 3
    assert cell(res, r="b")["change"] == 0 and cell(res, r="c")["change"] == 0
    assert cell(res, r="a")["relative_change"] == pytest.approx(np.sign(res.grand_total_change) * 0.3)
    assert res.max_relative_adjustment == pytest.approx(0.3)
    assert bool(cell(res, r="Total")["margin"]) and not bool(cell(res, r="a")["margin"])


def test_no_sensitive_cell_changes_nothing():
    t = table1([10, 30, 50])
    res = adjust_table(t, MinFrequency(2))
    np.testing.assert_array_equal(res.cells["adjusted"], res.cells["value"])
    assert res.sensitive == 0 and res.total_abs_adjustment == 0 and set(res.cells["status"]) == {"safe"}


# ------------------------------------------------------------------ LP oracle
def lp_oracle(t, sens_idx, up_lv, lo_lv, w):
    """For every choice of directions, the L1 LP (z+, z-) with that choice, by linprog; the
    smallest objective among them."""
    A = t.equations().toarray()
    v = t.cells["value"].to_numpy(float)
    n = len(v)
    best = np.inf
    for dirs in itertools.product((True, False), repeat=len(sens_idx)):
        bounds = [(0, None)] * n + [(0, x) for x in v]
        for p, up, U, L in zip(sens_idx, dirs, up_lv, lo_lv):
            bounds[p] = (U, None) if up else (0, 0)
            bounds[n + p] = (0, 0) if up else (L, v[p])
        res = linprog(np.r_[w, w], A_eq=np.hstack([A, -A]), b_eq=np.zeros(len(A)), bounds=bounds, method="highs")
        if res.status == 0:
            best = min(best, res.fun)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_milp_objective_is_the_best_lp_over_all_directions(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(1, 40, size=(3, 3))
    F = rng.integers(1, 6, size=(3, 3))
    F[rng.integers(3), rng.integers(3)] = 1  # at least one sensitive cell
    t = table2(X, F)
    rule = MinFrequency(3, share=0.25)
    cost = "unity" if seed % 2 == 0 else "inverse"
    res = adjust_table(t, rule, cost=cost, integer=False)
    sens = res.sensitivity
    P = np.flatnonzero(sens.primary)
    assert len(P) >= 1
    w = np.ones(len(t.cells)) if cost == "unity" else 1 / np.maximum(np.abs(t.cells["value"].to_numpy()), 1)
    best = lp_oracle(t, P, sens.upper[P], np.minimum(sens.lower[P], t.cells["value"].to_numpy()[P]), w)
    assert res.objective == pytest.approx(best, rel=1e-7, abs=1e-7)
    adj = res.cells["adjusted"].to_numpy()
    assert np.allclose(t.equations() @ adj, 0)
    ch = res.cells["change"].to_numpy()
    assert np.all(np.abs(ch[P]) >= np.minimum(sens.upper[P], sens.lower[P]) - 1e-7)
    assert np.all(adj >= -1e-9)


def test_integer_table_gets_whole_changes():
    X = [[12, 3, 25], [7, 30, 1], [14, 9, 20]]
    F = [[5, 1, 6], [4, 7, 1], [5, 5, 5]]
    t = table2(X, F)
    res = adjust_table(t, MinFrequency(3, share=0.3))
    ch = res.cells["change"].to_numpy()
    assert np.allclose(ch, np.rint(ch))
    # (r0,c1) = 3 needs ceil(0.9) = 1, (r1,c2) = 1 needs ceil(0.3) = 1 (down at most to 0)
    for r, c in (("r0", "c1"), ("r1", "c2")):
        assert abs(cell(res, r=r, c=c)["change"]) >= 1 and cell(res, r=r, c=c)["status"] == "primary"
    assert np.allclose(t.equations() @ res.cells["adjusted"].to_numpy(), 0)
    d = res.to_dict()
    assert d["sensitive"] == 2 and d["total_abs_adjustment"] == res.total_abs_adjustment


def test_fast_method_is_feasible_and_no_better_than_the_milp():
    X = [[12, 3, 25], [7, 30, 1], [14, 9, 20]]
    F = [[5, 1, 6], [4, 2, 1], [5, 5, 1]]
    t = table2(X, F)
    exact = adjust_table(t, MinFrequency(3, share=0.3))
    fast = adjust_table(t, MinFrequency(3, share=0.3), method="fast")
    assert fast.method == "fast" and not fast.optimal and np.isnan(fast.gap)
    assert fast.objective >= exact.objective - 1e-9
    P = np.flatnonzero(fast.sensitivity.primary)
    ch = fast.cells["change"].to_numpy()
    assert np.all(np.abs(ch[P]) >= 1) and np.allclose(ch, np.rint(ch))
    assert np.allclose(t.equations() @ fast.cells["adjusted"].to_numpy(), 0)
    assert fast.to_dict()["method"] == "fast" and fast.to_dict()["gap"] is None
    import json
    json.dumps(fast.to_dict(), allow_nan=False)


def test_deterministic():
    X = [[12, 3, 25], [7, 30, 1], [14, 9, 20]]
    F = [[5, 1, 6], [4, 7, 1], [5, 5, 5]]
    t = table2(X, F)
    a, b = adjust_table(t, MinFrequency(3)), adjust_table(t, MinFrequency(3))
    np.testing.assert_array_equal(a.cells["adjusted"], b.cells["adjusted"])


# ------------------------------------------------------------------ infeasible and bad input
def test_fixed_cells_that_block_every_move_are_reported():
    t = table1([10, 30, 50])
    with pytest.raises(DataError, match="No controlled tabular adjustment exists"):
        adjust_table(t, Manual([("a",)], share=0.3), fixed=[("b",), ("c",), ("Total",)])


def test_sensitive_cell_listed_as_fixed():
    t = table1([10, 30, 50])
    with pytest.raises(DataError, match=r"Cell \(r=a\) is sensitive.*'fixed'"):
        adjust_table(t, Manual([("a",)], share=0.3), fixed=[("a",)])


def test_bad_parameters():
    t = table1([10, 30, 50])
    rule = Manual([("a",)], share=0.3)
    with pytest.raises(ParameterError, match="'method'"):
        adjust_table(t, rule, method="lp")
    with pytest.raises(ParameterError, match="'cost'"):
        adjust_table(t, rule, cost="value")
    with pytest.raises(ParameterError, match="'integer'"):
        adjust_table(t, rule, integer="yes")
    with pytest.raises(ParameterError, match="'mip_gap'"):
        adjust_table(t, rule, mip_gap=-0.1)
    with pytest.raises(ParameterError, match="'time_limit'"):
        adjust_table(t, rule, time_limit=-1)
    with pytest.raises(ParameterError, match="'table'"):
        adjust_table("table.csv", rule)
    with pytest.raises(ParameterError, match="rule"):
        adjust_table(t, "p%")
    t2 = table1([1.5, 2.25, 3])
    with pytest.raises(ParameterError, match="'integer'.*not whole"):
        adjust_table(t2, rule, integer=True)
    with pytest.raises(DataError, match="Total2|not in"):
        adjust_table(t, rule, fixed=[("Total2",)])


def test_negative_table_may_go_below_zero():
    # values can be negative, so the level of a = 2 (Manual share 1: 2) is not capped and the
    # model may move a down to 0 or up to 4; with the total fixed one other cell makes up: 2 + 2
    t = table1([2, -30, 50])
    assert t.negative
    res = adjust_table(t, Manual([("a",)], share=1.0), fixed=[("Total",)])
    a = cell(res, r="a")
    assert a["adjusted"] in (0.0, 4.0) and res.objective == 4
    adj = res.cells.set_index("r")["adjusted"]
    assert adj["a"] + adj["b"] + adj["c"] == adj["Total"] == 22


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=4, max_size=4), st.lists(st.integers(1, 4), min_size=4, max_size=4))
def test_property_additive_and_every_sensitive_cell_moved(vals, freqs):
    t = table2(np.reshape(vals, (2, 2)), np.reshape(freqs, (2, 2)))
    res = adjust_table(t, MinFrequency(3, share=0.2))
    ch = res.cells["change"].to_numpy()
    adj = res.cells["adjusted"].to_numpy()
    assert np.allclose(t.equations() @ adj, 0) and np.all(adj >= 0)
    s = res.sensitivity
    P = np.flatnonzero(s.primary)
    need = np.where(ch[P] > 0, np.ceil(s.upper[P] - 1e-9), np.minimum(np.ceil(s.lower[P] - 1e-9), t.cells["value"].to_numpy()[P]))
    assert np.all(np.abs(ch[P]) >= need - 1e-9) and np.all(np.abs(ch[P]) > 0)
    assert (res.cells["status"].to_numpy()[P] == "primary").all()
