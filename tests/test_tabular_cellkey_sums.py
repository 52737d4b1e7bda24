"""The cell key method for magnitude tables: ptable's numeric p-tables and cellKey's flex function
(issue 30 section 2).

Reference values from the R packages (R is not installed here):

* ptable (cran/ptable, commit dd96b8915140d4992c1b7ac9427dcbc84f7ac364, R/pt_examples.R and
  tests/testthat/test-examples.R): ``pt_ex_nums()`` is ``create_num_ptable(D = 10, V = 3,
  step = 2, optim = c(4, 1, 1), icat = c(1, 5, 10))`` and its ``p`` sum to 4;
* cellKey (sdcTools/cellKey, commit 80bb032dd841a081cfa4bc4b8208669902d54ae2,
  tests/testthat/test_params_nums.R and test_numvars.R): that table has 96 rows, mean p 0.042,
  i from 0 to 10 and j from 0 to 20; ``ck_flexparams(fp = 1000, p = c(0.20, 0.03), epsilon =
  c(1, 0.5, 0.3), q = 2)`` with ``top_k = 3`` gives ``E = 1.34`` and ``zs = 0`` (no small-cell
  table); the invalid inputs those tests list are refused.

cellKey's printed magnitude tables (the vignette, test_numvars.R and the shared test data), run in R
with their record keys kept as data, are reproduced in tests/test_tabular_cellkey_r_sums.py; here
the flex function is checked on cells worked by hand from cellKey's ``.perturb_cell_flex``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import CellKeySumParams, cell_key_sums, ptable_numeric
from sdckit.tabular.cellkey_sums import flex_m, scrambled_keys

# a numeric p-table worked by hand: row 1 gives v = -1, 0, 1 on [0, .25), [.25, .75), [.75, 1),
# row 2 gives v = -2, 2 on [0, .5), [.5, 1)
HAND = pd.DataFrame({"i": [0, 1, 1, 1, 2, 2], "j": [0, 0, 1, 2, 0, 4], "p": [1, .25, .5, .25, .5, .5],
                     "v": [0, -1, 0, 1, -2, 2], "p_int_lb": [0, 0, .25, .75, 0, .5],
                     "p_int_ub": [1, .25, .75, 1, .5, 1], "type": "all"})


def one_cell(values, key, **kw):
    """A one-dimensional table of one code; the records' keys sum to ``key``."""
    keys = [key] + [0.0] * (len(values) - 1)
    f = pd.DataFrame({"g": "a", "x": values, "rk": keys})
    params = CellKeySumParams(ptab=HAND, **{"fp": 1000, "p_small": 0.1, "p_large": 0.05, "top_k": 1, **kw})
    return cell_key_sums(f, ["g"], "rk", "x", params).set_index("g").loc["a"]


@pytest.fixture(scope="module")
def small_ptab():
    return ptable_numeric(3, 1, [1, 3], step=2)


def test_flex_function_meets_its_points():
    assert flex_m(1000, 0.2, 0.03, 1000, 2) == pytest.approx(0.2)
    assert flex_m(1e12, 0.2, 0.03, 1000, 2) == pytest.approx(0.03, rel=1e-6)
    xs = np.linspace(1000, 1e6, 50)
    m = [flex_m(x, 0.2, 0.03, 1000, 2) for x in xs]
    assert all(a >= b for a, b in zip(m, m[1:]))  # falls from p_small towards p_large


def test_scrambled_keys_rotate_the_decimals_as_cellkey():
    # .scramble_ckeys on "0.1234567": same_key = FALSE -> 0.2345671, 0.3456712, 0.4567123
    assert scrambled_keys(12345670, 8, 3, False) == [(2345671, 7), (3456712, 7), (4567123, 7)]
    assert scrambled_keys(12345670, 8, 3, True) == [(1234567, 7), (2345671, 7), (3456712, 7)]
    # "0.5" -> "0.05" -> "0.50"; a zero key stays 0
    assert scrambled_keys(50000000, 8, 2, False) == [(5, 2), (50, 2)]
    assert scrambled_keys(0, 8, 2, False)[0][0] == 0


def test_a_cell_worked_by_hand():
    # cv 180, x1 = 100 < fp: x_delta = 100 * 0.1 = 10; a = 18 capped at row 2; key 0.3 -> v = -2
    c = one_cell([100.0, 50.0, 30.0], 0.3)
    assert (c["sum"], c["x_1"], c["x_delta_1"], c["v_1"], c["x_hat_1"], c["sum_pert"]) == (180, 100, 10, -2, -20, 160)
    assert one_cell([100.0, 50.0, 30.0], 0.6)["sum_pert"] == 200
    # cv 15, x1 = 10, p_small 0.8: x_delta 8, a = 1.875 between rows 1 and 2 (lambda 0.875):
    # key 0.3 gives v 0 in row 1 and -2 in row 2 -> v = -1.75, x_hat = -14
    c = one_cell([10.0, 5.0], 0.3, p_small=0.8)
    assert c["v_1"] == pytest.approx(-1.75) and c["x_hat_1"] == pytest.approx(-14) and c["sum_pert"] == pytest.approx(1)
    # |x_delta| = 10 above the cell's value 5: x_delta = 5, a = 1, key 0.9 -> v = 1
    c = one_cell([100.0, -95.0], 0.9)
    assert (c["x_delta_1"], c["v_1"], c["sum_pert"]) == (5, 1, 10)
    # above fp the flex function scales: x_delta = x m(x) epsilon_1
    c = one_cell([5000.0], 0.9, fp=1000, p_small=0.2, p_large=0.03, q=2)
    assert c["x_delta_1"] == pytest.approx(5000 * flex_m(5000, 0.2, 0.03, 1000, 2))


def test_the_simple_approach_worked_by_hand():
    # ck_simpleparams(p = 0.1): x_delta = x p epsilon also above fp (the flex function would scale it):
    # cv 5010, x1 = 5000: x_delta 500, a = 10.02 capped at row 2, key 0.6 -> v = 2, x_hat = 1000
    c = one_cell([5000.0, 10.0], 0.6, fp=None, p=0.1)
    assert (c["x_delta_1"], c["v_1"], c["x_hat_1"], c["sum_pert"]) == (500, 2, 1000, 6010)
    # with a small-cell table (zs = sqrt(4) / (1 x 0.1) = 20): records 25 and -24, cv 1; x_delta 2.5 > 1 is
    # rescaled to 1 and 1 / 0.1 = 10 < zs: the small-cell table, and no noise in the simple approach even
    # for the first component (cellKey's .perturb_cell_simple); the flex function looks it up (key 0.9, v = 1)
    f = pd.DataFrame({"g": "a", "x": [25.0, -24.0], "rk": [0.9, 0.0]})
    tabs = {"all": HAND.drop(columns="type"), "small_cells": HAND.drop(columns="type")}
    simple = CellKeySumParams(ptab=tabs, p=0.1, top_k=1)
    flex = CellKeySumParams(ptab=tabs, fp=1000, p_small=0.1, top_k=1)
    assert simple.zs == flex.zs == pytest.approx(20)
    s, fl = (cell_key_sums(f, ["g"], "rk", "x", prm).set_index("g").loc["a"] for prm in (simple, flex))
    assert (s["lookup"], s["x_delta_1"], s["x_hat_1"], s["sum_pert"]) == ("small_cells", 1, 0, 1)
    assert (fl["lookup"], fl["x_delta_1"], fl["v_1"], fl["sum_pert"]) == ("small_cells", 1, 1, 2)
    with pytest.raises(ParameterError, match="either 'fp'"):
        CellKeySumParams(ptab=HAND, fp=1000, p=0.1)
    with pytest.raises(ParameterError, match="either 'fp'"):
        CellKeySumParams(ptab=HAND)
    with pytest.raises(ParameterError):
        CellKeySumParams(ptab=HAND, p=0)  # ck_simpleparams: 0 < p <= 1


def test_sensitive_cells_get_mu_c_but_never_change_sign():
    f = pd.DataFrame({"g": ["a", "a", "b"], "x": [10.0, 5.0, 40.0], "rk": [0.3, 0.0, 0.3]})
    params = CellKeySumParams(ptab=HAND, fp=1000, p_small=0.8, p_large=0.05, top_k=1, mu_c=5)
    c = cell_key_sums(f, ["g"], "rk", "x", params, supp_freq=2).set_index("g")
    # a: 2 records (sensitive), x_delta 8, v -1.75: -8 * (5 + 1.75) = -54 bounded by -15 -> 0
    assert c.loc["a", "sensitive"] and c.loc["a", "x_hat_1"] == -15 and c.loc["a", "sum_pert"] == 0
    # b: 1 record, x_delta 32, a = 1.25 -> v = 0.75 * 0 + 0.25 * -2 = -0.5: -32 * 5.5 bounded by -40
    assert c.loc["b", "v_1"] == -0.5 and c.loc["b", "x_hat_1"] == -40 and c.loc["b", "sum_pert"] == 0
    c = cell_key_sums(f, ["g"], "rk", "x", params, supp_freq=1).set_index("g")
    assert not c.loc["a", "sensitive"] and c.loc["a", "x_hat_1"] == pytest.approx(-14)  # mu 0: -8 * 1.75


def test_empty_and_zero_cells_are_not_perturbed(small_ptab):
    f = pd.DataFrame({"r": ["a", "a", "b", "b"], "s": ["x", "x", "x", "y"], "v": [5.0, -5.0, 0.0, 7.0],
                      "rk": [0.1, 0.2, 0.3, 0.4]})
    params = CellKeySumParams(ptab=small_ptab, fp=10, top_k=1)
    c = cell_key_sums(f, ["r", "s"], "rk", "v", params).set_index(["r", "s"])
    assert c.loc[("a", "y"), "n"] == 0 and c.loc[("a", "y"), "pert"] == 0  # empty
    assert c.loc[("a", "x"), "sum"] == 0 and c.loc[("a", "x"), "pert"] == 0  # sum 0
    # (b, x) holds one record of value 0: without use_zero_rkeys its cell key is 0 and it stays 0
    assert c.loc[("b", "x"), "cell_key"] == 0 and c.loc[("b", "x"), "pert"] == 0


ROWS = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from("xyz"), st.integers(-50, 3000),
                          st.integers(1, 3), st.integers(0, 10 ** 8 - 1)), min_size=1, max_size=40)


@settings(max_examples=20, deadline=None)
@given(ROWS, st.booleans(), st.sampled_from(["top_contr", "mean", "range", "sum"]))
def test_same_cell_same_perturbation_in_every_table_and_bounded(small_ptab, rows, same_key, kind):
    f = pd.DataFrame(rows, columns=["r", "s", "v", "w", "k"])
    f["rk"] = f["k"] / 1e8
    f["v"] = f["v"].astype(float)
    top = 3 if kind == "top_contr" else None
    eps = (1, 0.5, 0.3) if kind == "top_contr" else (1,)
    params = CellKeySumParams(ptab=small_ptab, fp=500, p_small=0.2, p_large=0.03, q=2, epsilon=eps, type=kind,
                              top_k=top, same_key=same_key, use_zero_rkeys=same_key)
    both = cell_key_sums(f, ["r", "s"], "rk", "v", params, weight="w").set_index(["r", "s"])
    by_r = cell_key_sums(f, ["r"], "rk", "v", params, weight="w").set_index("r")
    by_s = cell_key_sums(f.iloc[::-1], ["s"], "rk", "v", params, weight="w").set_index("s")
    for r in by_r.index:
        assert by_r.loc[r, "sum_pert"] == both.loc[(r, "Total"), "sum_pert"]
    for s in by_s.index:
        assert by_s.loc[s, "sum_pert"] == pytest.approx(both.loc[("Total", s), "sum_pert"], rel=1e-12)
    assert (both["sum"] * both["sum_pert"] >= -1e-9).all()  # the sign never flips
    xd = both[[c for c in both.columns if c.startswith("x_delta_")]].abs().fillna(0).sum(axis=1)
    assert (both["pert"].abs() <= xd * 3 + 1e-9).all()  # |v| <= D = 3, mu_c = 0
    for (r, s), cell in both.iterrows():
        sel = ((f["r"] == r) | (r == "Total")) & ((f["s"] == s) | (s == "Total"))
        assert cell["sum"] == pytest.approx((f["v"] * f["w"])[sel].sum())


def test_ptable_numeric_rows_meet_the_constraints(small_ptab):
    t = small_ptab
    assert sorted(t["i"].unique()) == [0, 1, 3] and t["p"].sum() == pytest.approx(3)
    for i, g in t[t["i"] > 0].groupby("i"):
        assert g["j"].min() == max(i - 3, 0) and g["j"].max() == i + 3 and np.allclose(np.diff(g["j"]), 0.5)
        assert (g["p"] * g["v"]).sum() == pytest.approx(0, abs=1e-7)
        assert (g["p"] * g["v"] ** 2).sum() <= 1 + 1e-7
        assert g["p_int_ub"].iloc[-1] == pytest.approx(1)


@pytest.mark.slow
def test_ptable_numeric_reproduces_pt_ex_nums_shape():
    t = ptable_numeric(10, 3, [1, 5, 10], step=2, optim=[4, 1, 1])
    assert len(t) == 96 and round(t["p"].mean(), 3) == 0.042 and t["p"].sum() == pytest.approx(4)
    assert (t["i"].min(), t["i"].max(), t["j"].min(), t["j"].max()) == (0, 10, 0, 20)
    row1 = t[t["i"] == 1]
    assert (row1["p"] * row1["v"] ** 2).sum() == pytest.approx(3, abs=1e-6)  # optim 4: variance = V


def test_ptable_numeric_refuses_what_ptable_refuses():
    with pytest.raises(ParameterError, match="icat"):
        ptable_numeric(5, 1, [1, 3])  # D not in icat
    with pytest.raises(ParameterError, match="below 50"):
        ptable_numeric(10, 1, [1, 10], step=5)
    with pytest.raises(ParameterError, match="type"):
        ptable_numeric(2, 1, [1, 2], type="other")


def test_params_as_cellkey_and_its_invalid_inputs(small_ptab):
    p = CellKeySumParams(ptab=small_ptab, fp=1000, p_small=0.2, p_large=0.03, q=2, epsilon=(1, 0.5, 0.3), top_k=3)
    assert p.E == pytest.approx(1.34) and p.zs == 0 and not p.separation and not p.even_odd
    sep = CellKeySumParams(ptab={"all": small_ptab, "small_cells": HAND.drop(columns="type")}, fp=1000,
                           p_small=0.2, p_large=0.03, epsilon=(1,), top_k=1)
    # m1^2 of the small-cell table's last row (v = -2, 2 with p 1/2): 4; zs = 2 / (1 * 0.2)
    assert sep.separation and sep.m_fixed_sq == 4 and sep.zs == pytest.approx(10)
    base = {"ptab": small_ptab, "fp": 100, "p_small": 0.25, "p_large": 0.05, "q": 2, "top_k": 1}
    for bad in [{"fp": -100}, {"p_small": 0.2, "p_large": 0.5}, {"p_large": -1}, {"q": -1}, {"epsilon": (2,)},
                {"epsilon": (0.5,)}, {"epsilon": (1, 0.5, 0.7), "top_k": 3}, {"type": "invalid"},
                {"mu_c": -6}, {"same_key": 1}, {"use_zero_rkeys": 1}, {"top_k": None}, {"top_k": 0},
                {"top_k": 7, "epsilon": (1, .5, .4, .3, .2, .2, .2)}, {"top_k": 4, "epsilon": (1, .5, .3)},
                {"ptab": 1}, {"ptab": {"even": small_ptab}}]:
        with pytest.raises(ParameterError):
            CellKeySumParams(**{**base, **bad})
    assert CellKeySumParams(**{**base, "type": "mean", "top_k": 4}).top_k == 1  # ignored, as cellKey


def test_even_odd_tables_by_the_number_of_contributors():
    odd = HAND.assign(type="odd")
    even = HAND.assign(type="even", v=[0, 1, 0, -1, 2, -2])
    f = pd.DataFrame({"g": ["a", "b", "b"], "x": [100.0, 60.0, 40.0], "rk": [0.3, 0.3, 0.0]})
    params = CellKeySumParams(ptab={"odd": odd, "even": even}, fp=1000, p_small=0.1, top_k=1)
    c = cell_key_sums(f, ["g"], "rk", "x", params).set_index("g")
    assert c.loc["a", "lookup"] == "odd" and c.loc["a", "v_1"] == -2  # 1 contributor
    assert c.loc["b", "lookup"] == "even" and c.loc["b", "v_1"] == 2  # 2 contributors


def test_cell_key_sums_refuses_bad_input(small_ptab):
    params = CellKeySumParams(ptab=small_ptab, fp=10, top_k=1)
    f = pd.DataFrame({"g": ["a"], "x": [np.nan], "rk": [0.1]})
    with pytest.raises(DataError, match="value column"):
        cell_key_sums(f, ["g"], "rk", "x", params)
    with pytest.raises(DataError, match="lack"):
        cell_key_sums(f, ["g"], "rk", "nope", params)
    with pytest.raises(ParameterError, match="params"):
        cell_key_sums(f, ["g"], "rk", "x", {"fp": 10})
