"""Controlled and random rounding: a hand-worked 3x3 table, brute-force oracles on tiny tables
(closest additive rounding; a 3-D table with none), the audit's intervals against linprog,
random rounding's unbiasedness, determinism and every bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import MinFrequency, Table
from sdckit.tabular.rounding import RoundingResult, audit_rounding, round_table


def table2(X, rows="abc", cols="xyz"):
    """A 2-D table (flat dimensions r and c, margins 'Total') from its interior matrix."""
    X = np.asarray(X, float)
    recs = []
    for i, r in enumerate(list(rows) + ["Total"]):
        for j, c in enumerate(list(cols) + ["Total"]):
            v = X[i, j] if i < X.shape[0] and j < X.shape[1] else (
                X[i].sum() if i < X.shape[0] else X[:, j].sum() if j < X.shape[1] else X.sum())
            recs.append({"r": r, "c": c, "value": v, "freq": 5})
    return Table.from_cells(pd.DataFrame(recs), ["r", "c"])


def table3(vals):
    """A 3-D count table (flat dimensions i, j, k) from its interior counts."""
    recs = []
    for idx in itertools.product(*[range(s) for s in vals.shape]):
        recs += [{"i": f"i{idx[0]}", "j": f"j{idx[1]}", "k": f"k{idx[2]}"}] * int(vals[idx])
    return Table.from_microdata(pd.DataFrame(recs), ["i", "j", "k"])


def rounded_matrix(res, rows="abc", cols="xyz"):
    c = res.cells.set_index(["r", "c"])["rounded"]
    return np.array([[c[(r, k)] for k in list(cols) + ["Total"]] for r in list(rows) + ["Total"]])


# ------------------------------------------------------------------ hand-worked
def test_hand_worked_3x3_base_5():
    #            x   y   z | Total        rounded:   x   y   z | Total
    #   a        3   6  12 |  21                     5   5  10 |  20
    #   b        7  10   4 |  21                     5  10   5 |  20
    #   c       11   2   9 |  22                    10   5  10 |  25
    #   Total   21  18  25 |  64                    20  20  25 |  65
    # Rounding each cell to its nearest multiple is additive too (c,y -> 0, column y -> 15, total
    # -> 60) but moves the cells by 12 + 12 = 24; rounding (c,y) up instead costs 1 more inside
    # and saves 3 on the margins (row c 22 -> 25 is 3, column y 18 -> 20 is 2, total 64 -> 65 is
    # 1, against 2 + 3 + 4): 13 + 9 = 22, the unique minimum (a brute force finds 24 next).
    t = table2([[3, 6, 12], [7, 10, 4], [11, 2, 9]])
    res = round_table(t, 5, mip_gap=0)
    expected = np.array([[5, 5, 10, 20], [5, 10, 5, 20], [10, 5, 10, 25], [20, 20, 25, 65]])
    np.testing.assert_array_equal(rounded_matrix(res), expected)
    assert res.additive and res.equations_violated == 0 and res.optimal
    assert res.total_abs_change == 22 and res.max_abs_change == 3
    assert res.cells_moved == 14  # all but (b,y)=10 and (Total,z)=25, multiples kept
    assert res.mean_abs_change == pytest.approx(22 / 16)
    assert list(res.cells.columns) == ["r", "c", "value", "rounded", "change"]
    assert isinstance(res, RoundingResult)
    d = res.to_dict()
    assert d["cells_moved"] == 14 and d["additive"] is True and d["method"] == "controlled"


def test_multiples_stay_and_base_one_changes_nothing():
    t = table2([[5, 10], [15, 20]], rows="ab", cols="xy")
    res = round_table(t, 5)
    np.testing.assert_array_equal(res.cells["rounded"], res.cells["value"])
    assert res.cells_moved == 0 and res.total_abs_change == 0
    t = table2([[3, 7], [1, 4]], rows="ab", cols="xy")
    assert round_table(t, 1).cells_moved == 0


# ------------------------------------------------------------------ brute-force oracles
def brute_force_2x2(X, base):
    """Every up/down choice of the nine cells of a 2x2 table with margins: the smallest L1
    change among the additive ones (zero-restricted)."""
    t = table2(X, rows="ab", cols="xy")
    v = t.cells["value"].to_numpy(float)
    A = t.equations().toarray()
    opts = [[x] if x % base == 0 else [np.floor(x / base) * base, np.floor(x / base) * base + base] for x in v]
    best = np.inf
    for choice in itertools.product(*opts):
        y = np.array(choice)
        if np.allclose(A @ y, 0):
            best = min(best, np.abs(y - v).sum())
    return t, best


@pytest.mark.parametrize("seed", range(12))
def test_milp_is_the_closest_additive_rounding_of_a_2x2_table(seed):
    rng = np.random.default_rng(seed)
    base = int(rng.integers(2, 7))
    X = rng.integers(0, 25, size=(2, 2))
    t, best = brute_force_2x2(X, base)
    res = round_table(t, base, mip_gap=0)
    assert res.additive and res.optimal
    assert res.total_abs_change == pytest.approx(best)
    r, v = res.cells["rounded"].to_numpy(), res.cells["value"].to_numpy()
    assert np.all(r % base == 0)
    assert np.all(np.abs(r - v) < base)
    assert np.all(r[v % base == 0] == v[v % base == 0])


def brute_force_3d_exists(vals, base):
    """Whether any zero-restricted rounding of the interior cells gives margins that are
    zero-restricted roundings of the true margins (independent of the code under test)."""
    opts = [[x] if x % base == 0 else [x - x % base, x - x % base + base] for x in vals.ravel()]

    def ok(true, got):
        true, got = np.asarray(true), np.asarray(got)
        fl = true - true % base
        return np.all((got == fl) | ((true % base != 0) & (got == fl + base)))

    for choice in itertools.product(*opts):
        Y = np.array(choice).reshape(vals.shape)
        sums = [(vals.sum(axis=a), Y.sum(axis=a)) for a in range(3)]
        sums += [(vals.sum(axis=a), Y.sum(axis=a)) for a in ((0, 1), (0, 2), (1, 2))]
        sums += [(vals.sum(), Y.sum())]
        if all(ok(tr, gt) for tr, gt in sums):
            return True
    return False


def test_3d_table_without_controlled_rounding_is_refused_clearly():
    vals = np.array([[[1, 0], [0, 0]], [[0, 1], [1, 2]]])
    assert not brute_force_3d_exists(vals, 2)
    with pytest.raises(DataError, match="No zero-restricted controlled rounding.*3-D.*need not exist"):
        round_table(table3(vals), 2)


def test_3d_table_rounding_matches_brute_force_existence():
    vals = np.array([[[1, 2], [0, 1]], [[2, 1], [1, 0]]])
    assert brute_force_3d_exists(vals, 3)
    res = round_table(table3(vals), 3)
    assert res.additive and np.all(res.cells["rounded"].to_numpy() % 3 == 0)


@pytest.mark.parametrize("seed", range(4))
def test_2d_hierarchical_tables_always_round(seed):
    # 2-D tables, hierarchical too, always have a controlled rounding (Cox 1987)
    rng = np.random.default_rng(seed)
    recs = []
    for r in ["A1", "A2", "B1", "B2", "B3"]:
        for c in "xyzw":
            recs += [{"r": r, "c": c}] * int(rng.integers(0, 30))
    t = Table.from_microdata(pd.DataFrame(recs), ["r", "c"],
                             {"r": {"A1": "A", "A2": "A", "B1": "B", "B2": "B", "B3": "B", "A": "Total", "B": "Total"}})
    base = int(rng.integers(3, 11))
    res = round_table(t, base, mip_gap=0)
    r, v = res.cells["rounded"].to_numpy(), res.cells["value"].to_numpy()
    assert res.additive and np.allclose(t.equations() @ r, 0)
    assert np.all(r % base == 0) and np.all(np.abs(r - v) < base)


def test_non_integer_values_with_non_integer_base():
    t = table2([[0.3, 1.2], [0.75, 0.5]], rows="ab", cols="xy")
    res = round_table(t, 0.5, mip_gap=0)
    r, v = res.cells["rounded"].to_numpy(), res.cells["value"].to_numpy()
    assert np.allclose(r / 0.5, np.rint(r / 0.5))
    assert np.all(np.abs(r - v) < 0.5) and res.additive
    assert r[(res.cells["r"] == "b") & (res.cells["c"] == "y")][0] == 0.5  # a multiple, kept


def test_controlled_rounding_is_deterministic():
    rng = np.random.default_rng(3)
    t = table3(rng.integers(0, 9, size=(4, 3, 3)))
    a, b = round_table(t, 5), round_table(t, 5)
    np.testing.assert_array_equal(a.cells["rounded"], b.cells["rounded"])


# ------------------------------------------------------------------ random rounding
def test_random_rounding_is_unbiased_and_says_it_is_not_additive():
    t = table2([[1, 2, 3], [4, 6, 8], [9, 11, 13]])
    v = t.cells["value"].to_numpy()
    runs = np.array([round_table(t, 5, method="random", seed=np.random.default_rng(s)).cells["rounded"]
                     for s in range(150)])
    assert np.all(runs % 5 == 0) and np.all(np.abs(runs - v) < 5)
    # each cell is up with probability r/5: mean within 4.5 standard errors of the value
    se = 5 * np.sqrt((v % 5) / 5 * (1 - (v % 5) / 5) / 150)
    assert np.all(np.abs(runs.mean(axis=0) - v) <= 4.5 * se + 1e-12)
    res = round_table(t, 5, method="random", seed=np.random.default_rng(0))
    assert not res.optimal
    assert "not additive" in res.to_dict()["note"]
    broken = [round_table(t, 5, method="random", seed=np.random.default_rng(s)) for s in range(20)]
    assert any(not r.additive and r.equations_violated > 0 for r in broken)


def test_random_rounding_reproducible_from_its_seed():
    t = table2([[1, 2, 3], [4, 6, 8], [9, 11, 13]])
    with pytest.warns(Warning):
        a = round_table(t, 5, method="random", seed=7)
    with pytest.warns(Warning):
        b = round_table(t, 5, method="random", seed=7)
    np.testing.assert_array_equal(a.cells["rounded"], b.cells["rounded"])


# ------------------------------------------------------------------ audit
def test_audit_intervals_match_linprog():
    X = [[3, 6, 12], [7, 1, 4], [11, 2, 9]]
    t = table2(X)
    res = round_table(t, 5, primary=[("b", "y")])
    assert res.audit is not None and res.audit.sensitive == 1
    row = res.audit.cells.iloc[0]
    assert (row["r"], row["c"]) == ("b", "y")
    # independent LP: whole numbers within 4 of the rounded values, >= 0, the table's equations
    R = res.cells["rounded"].to_numpy(float)
    A = t.equations().toarray()
    bounds = [(max(r - 4, 0), r + 4) for r in R]
    i = int(np.flatnonzero((res.cells["r"] == "b") & (res.cells["c"] == "y"))[0])
    c = np.zeros(len(R))
    c[i] = 1
    lo = linprog(c, A_eq=A, b_eq=np.zeros(len(A)), bounds=bounds, method="highs").fun
    hi = -linprog(-c, A_eq=A, b_eq=np.zeros(len(A)), bounds=bounds, method="highs").fun
    assert row["lo"] == pytest.approx(lo) and row["hi"] == pytest.approx(hi)
    assert row["lo"] <= 1 <= row["hi"]
    # the level is 10% of 1: protected when the interval reaches 0.9 and 1.1
    assert bool(row["protected"]) == (lo <= 0.9 + 1e-9 and hi >= 1.1 - 1e-9)
    assert res.to_dict()["audit"]["sensitive_cells"] == 1


def test_audit_flags_a_cell_rounding_cannot_protect():
    # a cell of 1 and a level larger than the base: no interval within base 2 covers it
    t = table2([[1, 20], [30, 40]], rows="ab", cols="xy")
    res = round_table(t, 2)
    a = audit_rounding(res, MinFrequency(10, share=1.0))  # every cell (freq 5) sensitive, level = value
    assert a.sensitive == 9 and not a.safe and a.unprotected > 0
    assert (a.cells["hi"] - a.cells["lo"] <= 2 * 2).all()


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("base", [0, -5, float("nan"), float("inf"), "5", True, None])
def test_bad_base(base):
    t = table2([[3, 6], [7, 10]], rows="ab", cols="xy")
    with pytest.raises(ParameterError, match="'base'"):
        round_table(t, base)


def test_non_integer_base_for_integer_data():
    t = table2([[3, 6], [7, 10]], rows="ab", cols="xy")
    with pytest.raises(ParameterError, match="'base'.*whole number"):
        round_table(t, 2.5)


def test_unknown_method_and_bad_parameters():
    t = table2([[3, 6], [7, 10]], rows="ab", cols="xy")
    with pytest.raises(ParameterError, match="'method'"):
        round_table(t, 5, method="nearest")
    with pytest.raises(ParameterError, match="'time_limit'"):
        round_table(t, 5, time_limit=0)
    with pytest.raises(ParameterError, match="'mip_gap'"):
        round_table(t, 5, mip_gap=1.5)
    with pytest.raises(ParameterError, match="'table'"):
        round_table(pd.DataFrame({"value": [1]}), 5)
    with pytest.raises(ParameterError, match="seed"):
        round_table(t, 5, method="random", seed=-1)


def test_negative_values_round_to_the_multiples_around_them():
    t = table2([[-3, 6], [7, -12]], rows="ab", cols="xy")
    res = round_table(t, 5, mip_gap=0)
    r, v = res.cells["rounded"].to_numpy(), res.cells["value"].to_numpy()
    assert res.additive and np.all(r % 5 == 0) and np.all(np.abs(r - v) < 5)
    # -3 goes to -5 or 0 (never to -10 or 5); the grand total -2 likewise
    assert cell_value(res, "a", "x") in (-5, 0) and cell_value(res, "Total", "Total") in (-5, 0)
    _, best = brute_force_2x2([[-3, 6], [7, -12]], 5)
    assert res.total_abs_change == pytest.approx(best)


def cell_value(res, r, c):
    return res.cells[(res.cells["r"] == r) & (res.cells["c"] == c)]["rounded"].iloc[0]


# ------------------------------------------------------------------ properties


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=6, max_size=6), st.integers(2, 10))
def test_property_zero_restricted_additive_multiples_kept(flat, base):
    t = table2(np.reshape(flat, (2, 3)), rows="ab", cols="xyz")
    res = round_table(t, base)
    r, v = res.cells["rounded"].to_numpy(), res.cells["value"].to_numpy()
    assert np.allclose(t.equations() @ r, 0)
    assert np.all(r % base == 0) and np.all(np.abs(r - v) < base)
    assert np.all(r[v % base == 0] == v[v % base == 0])
    assert res.cells_moved == int((v % base != 0).sum())
