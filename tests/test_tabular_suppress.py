"""Secondary suppression: hand-worked rectangle, brute-force optimality oracle on tiny tables,
the 3-D case where a 2-D pattern is unsafe, determinism, time limit and bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import MinFrequency, PPercent, Table, audit, suppress
from sdckit.tabular.suppress import cell_costs


def table_from_leaves(leaf_values, leaf_freqs, hier_r, cols):
    """Cells of a 2-D table (dimension r with hierarchy ``hier_r``, flat dimension c) from leaves."""
    frame = []
    for (r, c), v in leaf_values.items():
        frame += [{"r": r, "c": c, "y": v / leaf_freqs[(r, c)]}] * leaf_freqs[(r, c)]
    return Table.from_microdata(pd.DataFrame(frame), ["r", "c"], {"r": hier_r, "c": {c: "Total" for c in cols}},
                                response="y")


def test_one_sensitive_cell_gets_the_cheapest_rectangle():
    # interior 3x3; (b, y) = 2 is primary; the cheapest rectangle is a/b x x/y (5 + 7 + 6 = 18)
    vals = {("a", "x"): 5, ("a", "y"): 7, ("a", "z"): 9, ("b", "x"): 6, ("b", "y"): 2, ("b", "z"): 8,
            ("c", "x"): 10, ("c", "y"): 11, ("c", "z"): 12}
    t = table_from_leaves(vals, {k: 5 for k in vals}, {"a": "Total", "b": "Total", "c": "Total"}, "xyz")
    for method in ("optimal", "fast"):
        r = suppress(t, primary=[("b", "y")], method=method)
        got = {(a, b) for a, b, s in r.cells[["r", "c", "status"]].itertuples(index=False) if s != "safe"}
        assert got == {("b", "y"), ("a", "x"), ("a", "y"), ("b", "x")}
        assert r.secondaries == 3 and r.secondary_cost == 18.0 and r.audit.safe
        assert set(r.cells["status"]) <= {"safe", "primary", "secondary"}
    assert suppress(t, primary=[("b", "y")]).optimal


# ------------------------------------------------------------------ brute-force oracle
def oracle_safe(A, v, pub, prim, upper, lower):
    """Independent check with scipy's linprog: every primary reaches its levels."""
    S = np.flatnonzero(~pub)
    Aeq = A[:, S]
    beq = -A[:, pub] @ v[pub]
    for p in prim:
        j = int(np.flatnonzero(S == p)[0])
        c = np.zeros(len(S))
        c[j] = 1
        lo = linprog(c, A_eq=Aeq, b_eq=beq, bounds=(0, None), method="highs")
        hi = linprog(-c, A_eq=Aeq, b_eq=beq, bounds=(0, None), method="highs")
        up = np.inf if hi.status == 3 else -hi.fun
        if up < v[p] + upper[p] - 1e-7 or lo.fun > v[p] - lower[p] + 1e-7:
            return False
    return True


def brute_force_min_cost(t, res):
    A = t.equations().toarray()
    v = t.cells["value"].to_numpy(float)
    w = cell_costs(t, "value")
    s = res.sensitivity
    prim = np.flatnonzero(s.primary)
    free = np.flatnonzero(~s.primary & ~t.empty)
    masks = np.array(list(itertools.product([False, True], repeat=len(free))))
    sup = np.zeros((len(masks), len(v)), bool)
    sup[:, prim] = True
    sup[:, free] = masks
    # a cheapest pattern never holds a cell its equations give away (publishing it costs nothing)
    per_row = sup.astype(int) @ (A != 0).T.astype(int)
    keep = ~(per_row == 1).any(axis=1)
    sup, cost = sup[keep], (sup[keep] * w).sum(axis=1)
    for i in np.argsort(cost, kind="stable"):
        if oracle_safe(A, v, ~sup[i], prim, s.upper, s.lower):
            return cost[i] - w[prim].sum()
    raise AssertionError("no safe pattern")


@pytest.mark.parametrize("seed", range(4))
def test_optimal_equals_brute_force_flat_3x3(seed):
    rng = np.random.default_rng(seed)
    rows, cols = "abc", "xyz"
    vals = {(r, c): int(rng.integers(1, 30)) for r in rows for c in cols}
    freqs = {k: int(rng.choice([1, 2, 4, 6, 8], p=[0.15, 0.1, 0.25, 0.25, 0.25])) for k in vals}
    freqs[("a", "x")] = 1
    t = table_from_leaves(vals, freqs, {r: "Total" for r in rows}, cols)
    res = suppress(t, MinFrequency(3, share=0.3), method="optimal")
    assert res.optimal and res.audit.safe
    assert res.secondary_cost == pytest.approx(brute_force_min_cost(t, res))
    fast = suppress(t, MinFrequency(3, share=0.3), method="fast")
    assert fast.audit.safe and fast.secondary_cost >= res.secondary_cost - 1e-9
    assert fast.secondary_cost <= 1.10 * brute_force_min_cost(t, res) + 1e-9  # issue 13: within 10%


@pytest.mark.parametrize("seed", range(3))
def test_optimal_equals_brute_force_hierarchical(seed):
    rng = np.random.default_rng(100 + seed)
    hier = {"a1": "A", "a2": "A", "b": "Total", "A": "Total"}
    vals = {(r, c): int(rng.integers(1, 40)) for r in ("a1", "a2", "b") for c in "xy"}
    freqs = {k: int(rng.choice([1, 5, 9])) for k in vals}
    freqs[("a1", "y")] = 2
    t = table_from_leaves(vals, freqs, hier, "xy")
    res = suppress(t, MinFrequency(3, share=0.25), method="optimal")
    assert res.optimal and res.audit.safe
    assert res.secondary_cost == pytest.approx(brute_force_min_cost(t, res))


# ------------------------------------------------------------------ 3-D
def test_3d_pattern_protects_where_the_2d_one_would_not():
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"d1": rng.choice(["a", "b"], 400), "d2": rng.choice(["x", "y"], 400),
                          "d3": rng.choice(["p", "q"], 400), "y": rng.integers(1, 100, 400).astype(float)})
    frame = frame[~((frame.d1 == "a") & (frame.d2 == "x") & (frame.d3 == "p"))]
    frame = pd.concat([frame, pd.DataFrame({"d1": ["a"], "d2": ["x"], "d3": ["p"], "y": [50.0]})])
    t = Table.from_microdata(frame, ["d1", "d2", "d3"], response="y")
    r = suppress(t, MinFrequency(3))
    assert r.audit.safe and r.optimal
    sup = r.cells[r.cells.status != "safe"]
    # not only within the layer d3 = p: some suppressed cell lies outside it
    assert (sup["d3"] != "p").any()
    assert audit(r).safe


# ------------------------------------------------------------------ behaviour
def test_deterministic_and_fast_is_safe_on_a_larger_table():
    rng = np.random.default_rng(11)
    n = 3000
    frame = pd.DataFrame({"r": rng.choice([f"r{i}" for i in range(8)], n, p=np.r_[[0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05]]),
                          "c": rng.choice([f"c{i}" for i in range(6)], n, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05]),
                          "s": rng.choice(["s1", "s2", "s3"], n, p=[0.8, 0.15, 0.05]),
                          "y": rng.lognormal(3, 1, n)})
    hier = {"r": {**{f"r{i}": f"R{i // 4}" for i in range(8)}, "R0": "Total", "R1": "Total"}}
    t = Table.from_microdata(frame, ["r", "c", "s"], hier, response="y")
    a = suppress(t, [MinFrequency(3), PPercent(10)], method="fast")
    b = suppress(t, [MinFrequency(3), PPercent(10)], method="fast")
    assert a.audit.safe and a.primaries > 5
    assert (a.cells["status"] == b.cells["status"]).all()


def test_time_limit_reports_gap_and_stays_safe():
    rng = np.random.default_rng(3)
    n = 2000
    frame = pd.DataFrame({"r": rng.choice([f"r{i}" for i in range(7)], n, p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05]),
                          "c": rng.choice([f"c{i}" for i in range(7)], n, p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05]),
                          "s": rng.choice(["s1", "s2", "s3", "s4"], n, p=[0.7, 0.2, 0.05, 0.05])})
    t = Table.from_microdata(frame, ["r", "c", "s"])
    r = suppress(t, MinFrequency(4), method="optimal", time_limit=0.05)
    assert r.audit.safe
    assert not r.optimal and r.gap is not None and 0 <= r.gap <= 1


def test_structural_zeros_never_suppressed():
    frame = pd.DataFrame({"r": ["a", "a", "b", "b", "b", "c", "c", "c"], "c": ["x", "y", "x", "x", "y", "x", "y", "y"],
                          "y": [5.0, 6, 7, 8, 9, 10, 11, 12]})
    frame = frame[~((frame.r == "a") & (frame.c == "y"))]
    t = Table.from_microdata(frame, ["r", "c"], response="y")
    r = suppress(t, MinFrequency(2))
    empty = t.empty
    assert (r.cells.loc[empty, "status"] == "safe").all()
    assert r.audit.safe


def test_everything_but_structural_zeros_may_be_suppressed():
    """A leaf that equals the total: both are suppressed, and the intruder learns nothing
    (the equations are homogeneous, so any multiple of the values fits)."""
    frame = pd.DataFrame({"r": ["a"], "y": [5.0]})
    t = Table.from_microdata(frame, ["r"], response="y")
    r = suppress(t, MinFrequency(3), method="fast")
    assert set(r.cells["status"]) == {"primary"} and r.audit.safe
    assert np.isinf(r.audit.cells["hi"]).all()


@pytest.mark.parametrize("kw, message", [
    ({"method": "exact"}, "'method'"),
    ({"cost": "money"}, "'cost'"),
    ({"time_limit": -1}, "'time_limit'"),
    ({"primary": [("zz", "x")]}, "'zz'"),
])
def test_bad_arguments_named(kw, message):
    frame = pd.DataFrame({"r": ["a", "b"], "c": ["x", "y"], "y": [1.0, 2.0]})
    t = Table.from_microdata(frame, ["r", "c"], response="y")
    with pytest.raises((ParameterError, DataError), match=message):
        suppress(t, **kw)


# ------------------------------------------------------------------ issue 29: one contract
def _small_table() -> Table:
    frame = pd.DataFrame({"r": ["a", "a", "b", "b"] * 3, "c": ["x", "y"] * 6, "y": np.arange(1.0, 13.0)})
    return Table.from_microdata(frame, ["r", "c"], response="y")


def test_suppression_results_are_results_with_todays_keys():
    """SuppressionResult (and its audit) are built on the one Result base: to_dict goes through
    plain (json without default= or NaN), keeps the keys the CLI and the recipes publish, and
    summary() gives string rows."""
    import json

    from sdckit.core.result import Result, plain

    r = suppress(_small_table(), primary=[("a", "x")], method="fast")
    assert isinstance(r, Result) and isinstance(r.audit, Result)
    d = r.to_dict()
    assert list(d) == ["method", "cost", "cells", "primaries", "secondaries", "suppressed_value_share",
                       "secondary_cost", "optimal", "gap", "lower_bound", "seconds", "rounds", "audit"]
    assert d["cells"] == 9 and d["primaries"] == 1 and d["secondaries"] == 3 and d["method"] == "fast"
    assert d["audit"] == {"safe": True, "unprotected_primaries": 0, "suppressed_cells": 4,
                          "lps_solved": r.audit.lp_solved}
    assert plain(r) == d and json.loads(json.dumps(d, allow_nan=False)) == d
    rows = r.summary()
    assert ("method", "fast") in rows and ("secondaries", "3") in rows
    assert all(isinstance(c, str) for row in rows for c in row)


@pytest.mark.parametrize("function", ["suppress", "suppress_linked", "suppress_modular"])
def test_suppression_functions_declare_their_rules(function):
    """The options are checked by the declared rules in the one template (sdckit.core.params)."""
    import sdckit.tabular as tabular

    func = getattr(tabular, function)
    assert set(func.constraints) == {"method", "cost", "time_limit"}
    table = _small_table() if function != "suppress_linked" else [_small_table()]
    with pytest.raises(ParameterError, match=rf"The 'method' parameter of {function} must be one of \{{"):
        func(table, method="exact")
    with pytest.raises(ParameterError, match=rf"The 'time_limit' parameter of {function} must be None or a float > 0"):
        func(table, time_limit=0)


def test_modular_checks_its_time_limit_whatever_the_method():
    """suppress_modular's time limit (per sub-table) was checked only when an optimal sub-table
    ran; with the default fast method a bad value went unnoticed."""
    with pytest.raises(ParameterError, match="'time_limit' parameter of suppress_modular"):
        from sdckit.tabular import suppress_modular
        suppress_modular(_small_table(), primary=[("a", "x")], time_limit=-5)


def test_audit_names_a_wrong_result():
    with pytest.raises(ParameterError, match="'result' parameter of audit must be a suppression result"):
        audit(_small_table())
