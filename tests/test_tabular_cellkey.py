"""The cell key method: ptable's perturbation tables and cellKey's lookup (issue 30 section 2).

Reference values come from the R packages' own tests (R is not installed here; the printed values
are the reference):

* ptable (CRAN mirror cran/ptable, commit dd96b8915140d4992c1b7ac9427dcbc84f7ac364,
  tests/testthat/test-examples.R): ``pt_ex_cnts()@pTable$p``, where ``pt_ex_cnts()`` is
  ``create_cnt_ptable(D = 2, V = 1.05, mono = c(TRUE, TRUE, FALSE, TRUE), js = 1)``
  (R/pt_examples.R); test-params.R: ``create_cnt_ptable(D = 5, V = 3, js = 3)`` is an error.
* ptable's vignette as built for CRAN (same commit, inst/doc/introduction.html, ptable 1.0.0):
  ``create_cnt_ptable(D = 2, V = 0.9)@pTable`` printed in full; ``@tMatrix`` of ``D = 5, V = 3,
  js = 2`` (NLopt's unrounded solution, printed to 7-10 significant digits); ``@empResults``
  (variance and p_stay rounded to 5 decimals) of ``D = 2, V = 1``, of ``D = 4, V = 1.5,
  pstay = c(0.8, 0.9, 0.9, 0.9)`` (pstay lowered by 0.05 steps) and of ``D = 4, V = 1,
  pstay = c(0.5, 0.5, 0.7, 0.8)``.
* cellKey (sdcTools/cellKey, commit 80bb032dd841a081cfa4bc4b8208669902d54ae2,
  tests/testthat/test_countvars.R): the p-table of ``D = 5, V = 3, js = 2, pstay = 0.5`` has
  66 rows, largest i 8, and rounded means of p, lb, ub and v 0.136, 0.562, 0.698, 1.045; with the
  record keys ``round(runif(4580), 5)`` after ``set.seed(1474937517)`` (the seed the test asserts)
  on ``ck_create_testdata()`` (sdcMicro's testdata, our tests/data/sdcmicro/testdata.csv.gz, with
  ``age`` cut into 6 equal-width groups), the sex x age table has cell (Total, age_group2)
  1143 -> 1147, mean perturbed count 872.333, mean cell key 0.456 and mean perturbation -0.048;
  tests/testthat/test_ck_generate_rkeys.R: the first and last of the 8-digit keys of that seed are
  0.97131759 and 0.88019983, of the 10-digit keys of seed 5 0.2002144526 and 0.1878750164;
  weighted by ``sample(20:100, 4580, replace = TRUE)`` after ``set.seed(120, sample.kind =
  "Reject")`` (mean 59.719), the mean perturbed weighted count is 52096.24.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from sdckit.core.errors import DataError, ParameterError, SecurityWarning
from sdckit.tabular import Table, cell_key_counts, cell_key_measures, ptable, read_ptable, record_keys, write_ptable
from sdckit.tabular.cellkey import lookup
from tabular_helpers import ck_create_testdata

STRONG = "0123456789abcdef0123456789abcdef"
DATA = Path(__file__).parent / "data"
PT_EX_CNTS_P = [1.00000000, 0.50833333, 0.47500000, 0.01666667, 0.16155827, 0.55565037, 0.24246618,
                0.04032518, 0.41231301, 0.28806097, 0.18693903, 0.11268699, 0.07012498, 0.24450007,
                0.37074990, 0.24450007, 0.07012498]


@pytest.fixture(scope="module")
def ex_cnts():
    return ptable(2, 1.05, js=1, mono=[True, True, False, True])


@pytest.fixture(scope="module")
def ck_ptab():
    return ptable(5, 3, js=2, pstay=0.5)


def test_ptable_reproduces_ptables_example_table(ex_cnts):
    assert list(ex_cnts.columns) == ["i", "j", "p", "v", "p_int_lb", "p_int_ub", "type"]
    np.testing.assert_allclose(ex_cnts["p"], PT_EX_CNTS_P, rtol=0, atol=1.5e-8)
    assert ex_cnts["i"].tolist() == [0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]
    # row i = 1 by hand: j in {0, 2, 3} (1 is blocked), unbiased, variance 1.05 binding:
    # p(+2) = 0.05 / 3, p(+1) = (1 - 3 p(+2)) / 2, p(-1) = p(+1) + 2 p(+2)
    row = ex_cnts[ex_cnts["i"] == 1]
    assert row["j"].tolist() == [0, 2, 3]
    np.testing.assert_allclose(row["p"], [0.475 + 0.1 / 3, 0.475, 0.05 / 3], atol=1e-8)


def test_ptable_reproduces_the_vignettes_printed_table():
    t = ptable(2, 0.9)
    np.testing.assert_allclose(t["p"], [1, .3625, .3625, .1875, .0875, .05154609, .24381564, .40927654,
                                        .24381564, .05154609], rtol=0, atol=1.5e-8)
    np.testing.assert_allclose(t["p_int_ub"], [1, .3625, .725, .9125, 1, .05154609, .29536173, .70463827,
                                               .94845391, 1], rtol=0, atol=1.5e-8)
    assert t["j"].tolist() == [0, 0, 1, 2, 3, 0, 1, 2, 3, 4] and t["v"].tolist() == [0, -1, 0, 1, 2, -2, -1, 0, 1, 2]


E22_TMATRIX = [  # rows i = 0..8, columns j = 0, 3, 4, ..., 13
    [1.00000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0.73446954, 0.136720190, 0.07279631, 0.03742956, 0.018584399, 0, 0, 0, 0, 0, 0, 0],
    [0.40880704, 0.406643537, 0.14762401, 0.03231882, 0.004266868, 0.0003397188, 0, 0, 0, 0, 0, 0],
    [0.20398618, 0.393662525, 0.24749239, 0.11056847, 0.035102043, 0.0079189055, 0.001269491, 0, 0, 0, 0, 0],
    [0.08485487, 0.277921233, 0.27792123, 0.18939369, 0.105125448, 0.0454553570, 0.015310774, 0.004017391,
     0, 0, 0, 0],
    [0.02014749, 0.173347467, 0.22063302, 0.22131828, 0.174967643, 0.1090164652, 0.053532830, 0.020717693,
     0.006319113, 0, 0, 0],
    [0, 0.072029825, 0.13671708, 0.19735138, 0.216652933, 0.1808822561, 0.114850887, 0.055459983,
     0.020367237, 0.005688418, 0, 0],
    [0, 0.018439196, 0.05548389, 0.12162104, 0.194208159, 0.2259140226, 0.191441399, 0.118180404,
     0.053146176, 0.017410672, 0.004155049, 0],
    [0, 0.003791861, 0.01659093, 0.05229263, 0.118730368, 0.1941934608, 0.228801496, 0.194193460,
     0.118730371, 0.052292634, 0.016590928, 0.00379186]]


def _emp(t):
    """ptable's empResults: per i, the variance and the probability of no change, 5 decimals."""
    return ([round(float(r["p"] @ r["v"] ** 2), 5) for _, r in t.groupby("i")],
            [round(float(r.loc[r["v"] == 0, "p"].sum()), 5) for _, r in t.groupby("i")])


def test_ptable_reproduces_the_vignettes_transition_matrix_and_checks():
    t = ptable(5, 3, js=2)
    m = t.pivot(index="i", columns="j", values="p").fillna(0.0)
    assert list(m.columns) == [0, *range(3, 14)]
    # NLopt stops within ~3e-8 of the optimum and the vignette prints 7 digits of some values
    np.testing.assert_allclose(m.to_numpy(), E22_TMATRIX, rtol=0, atol=6e-8)
    assert _emp(ptable(2, 1)) == ([0.0, 0.93188, 1.0], [1.0, 0.36649, 0.38296])
    assert _emp(ptable(4, 1.5, pstay=[0.8, 0.9, 0.9, 0.9])) == ([0.0, 1.22497, 1.5, 1.5, 1.5],
                                                                 [1.0, 0.38585, 0.6, 0.7, 0.8])
    assert _emp(ptable(4, 1, pstay=[0.5, 0.5, 0.7, 0.8])) == ([0.0, 1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 0.5, 0.7, 0.8])


def test_ptable_matches_cellkeys_test_table(ck_ptab):
    assert ck_ptab.shape == (66, 7) and ck_ptab["i"].max() == 8
    assert [round(ck_ptab[c].mean(), 3) for c in ("p", "p_int_lb", "p_int_ub", "v")] == [0.136, 0.562, 0.698, 1.045]
    assert (ck_ptab.loc[(ck_ptab["v"] == 0) & (ck_ptab["i"] > 2), "p"].round(8) == 0.5).all()


def test_ptable_refuses_what_ptable_refuses():
    with pytest.raises(ParameterError, match="No perturbation table"):
        ptable(5, 3, js=3)
    for bad in ({"D": 0, "V": 1}, {"D": 2, "V": -1}, {"D": 2.5, "V": 1}, {"D": 2, "V": 1, "js": -1},
                {"D": 2, "V": 1, "pstay": 1.0}, {"D": 2, "V": 1, "optim": 7}, {"D": 2, "V": 1, "mono": [True]}):
        with pytest.raises(ParameterError):
            ptable(**bad)


@pytest.mark.parametrize("D,V,js", [(3, 1.0, 0), (4, 2.0, 1), (5, 2.5, 2)])
def test_ptable_rows_meet_the_constraints(D, V, js):
    t = ptable(D, V, js=js)
    assert t["i"].max() == (D if js == 0 else D + js + 1)
    for i, row in t.groupby("i"):
        p, v = row["p"].to_numpy(), row["v"].to_numpy()
        assert abs(p.sum() - 1) < 1e-12 and row["p_int_ub"].iloc[-1] == 1.0 and row["p_int_lb"].iloc[0] == 0.0
        assert abs(p @ v) < 1e-6 and p @ v ** 2 <= V + 1e-6
        assert (np.abs(v) <= D).all() and not row["j"].between(1, js).any()
        if i > 0:
            assert (p >= 1e-8 - 1e-12).all()
    # the last row has the full symmetric support: the maximum-entropy law with variance V is the
    # discretised Gaussian p ~ exp(-lam v^2), lam solving the variance (independent oracle)
    last = t[t["i"] == t["i"].max()]
    v = last["v"].to_numpy(dtype=float)
    lam = brentq(lambda x: (np.exp(-x * v ** 2) @ v ** 2) / np.exp(-x * v ** 2).sum() - V, 1e-9, 50)
    gauss = np.exp(-lam * v ** 2) / np.exp(-lam * v ** 2).sum()
    np.testing.assert_allclose(last["p"], gauss, atol=2e-8)


def test_write_ptable_writes_pt_exports_format_and_reads_back(ex_cnts, tmp_path):
    path = write_ptable(ex_cnts, tmp_path / "pt.txt", sdctool="TauArgus")
    lines = path.read_text().splitlines()
    # R's format(pTable, digits = 8): common decimals per column, right-justified
    assert lines[:4] == ["i;j;p;v;p_int_ub", "0;0;1.00000000; 0;1.00000000",
                         "1;0;0.50833333;-1;0.50833333", "1;2;0.47500000; 1;0.98333333"]
    back = read_ptable(path)
    assert back[["i", "j", "v"]].equals(ex_cnts[["i", "j", "v"]])
    np.testing.assert_allclose(back["p_int_lb"], ex_cnts["p_int_lb"], atol=1e-12)
    sas = read_ptable(write_ptable(ex_cnts, tmp_path / "sas.txt"))
    np.testing.assert_allclose(sas["p"], ex_cnts["p"], atol=1e-12)
    (tmp_path / "bad.txt").write_text("i;v;p\n0;0;1\n")
    with pytest.raises(DataError, match="lacks"):
        read_ptable(tmp_path / "bad.txt")


def test_record_keys_are_reproducible_with_digits_decimals():
    a, b = record_keys(1000, STRONG), record_keys(1000, STRONG)
    assert np.array_equal(a, b) and not np.array_equal(a, record_keys(1000, STRONG[::-1]))
    assert a.min() >= 0 and a.max() < 1
    assert np.allclose(a * 1e8, np.rint(a * 1e8), atol=1e-6, rtol=0)
    five = record_keys(50, STRONG, digits=5) * 1e5
    assert np.allclose(five, np.rint(five), atol=1e-6, rtol=0)
    with pytest.warns(SecurityWarning):
        record_keys(3, 42)
    with pytest.raises(ParameterError, match="digits"):
        record_keys(3, STRONG, digits=3)


def _pt_two_rows():
    # a hand-made p-table: count 1 -> 0 / 1 / 2, counts >= 2 -> -1 / 0 / +1
    return pd.DataFrame({"i": [0, 1, 1, 1, 2, 2, 2], "j": [0, 0, 1, 2, 1, 2, 3], "v": [0, -1, 0, 1, -1, 0, 1],
                         "p": [1, .25, .5, .25, .2, .6, .2],
                         "p_int_lb": [0, 0, .25, .75, 0, .2, .8], "p_int_ub": [1, .25, .75, 1, .2, .8, 1]})


def test_cell_key_counts_by_hand():
    f = pd.DataFrame({"a": ["x", "x", "y", "y", "y"], "b": ["p", "q", "p", "p", "p"],
                      "rk": [0.125, 0.625, 0.1, 0.05, 0.05]})
    c = cell_key_counts(f, ["a", "b"], "rk", _pt_two_rows()).set_index(["a", "b"])
    assert list(c.index) == [("Total", "Total"), ("Total", "p"), ("Total", "q"), ("x", "Total"), ("x", "p"),
                             ("x", "q"), ("y", "Total"), ("y", "p"), ("y", "q")]
    # (x, p): n 1, key 0.125 < 0.25 -> -1; (x, q): key 0.625 in [0.25, 0.75) -> 0
    # (y, p): n 3 uses the last row, key 0.2 equals the bound 0.2 -> the next interval, 0
    # (x, Total): n 2, key 0.75 < 0.8 -> 0; (Total, p): n 4, key 0.325 -> 0; (Total, Total): key 0.95 -> +1
    # (y, q): empty, never perturbed
    expect = {("x", "p"): (1, 0.125, -1), ("x", "q"): (1, 0.625, 0), ("y", "p"): (3, 0.2, 0),
              ("x", "Total"): (2, 0.75, 0), ("Total", "p"): (4, 0.325, 0), ("Total", "Total"): (5, 0.95, 1),
              ("y", "q"): (0, 0.0, 0), ("Total", "q"): (1, 0.625, 0), ("y", "Total"): (3, 0.2, 0)}
    for cell, (n, key, pert) in expect.items():
        assert (c.loc[cell, "n"], c.loc[cell, "cell_key"], c.loc[cell, "pert"]) == (n, key, pert), cell
        assert c.loc[cell, "n_pert"] == n + pert


def test_cell_keys_are_exact_sums_mod_1():
    # 0.1 + 0.2 + 0.7 is 1.0000000000000002 in floating point: its fraction is not the cell key 0
    f = pd.DataFrame({"a": ["x"] * 3, "rk": [0.1, 0.2, 0.7]})
    c = cell_key_counts(f, ["a"], "rk", _pt_two_rows())
    assert c["cell_key"].tolist() == [0.0, 0.0] and c["pert"].tolist() == [-1, -1]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("pq"), st.sampled_from("uv"),
                          st.integers(0, 10 ** 8 - 1)), min_size=1, max_size=40))
def test_margins_and_the_same_cell_in_other_tables(rows):
    f = pd.DataFrame(rows, columns=["a", "b", "c", "k"])
    f["rk"] = f["k"] / 1e8
    pt = _pt_two_rows()
    abc = cell_key_counts(f, ["a", "b", "c"], "rk", pt)
    ab = cell_key_counts(f, ["a", "b"], "rk", pt)
    a = cell_key_counts(f, ["a"], "rk", pt)
    # the key of a cell is the sum of its records' keys mod 1, computed exactly
    for _, cell in ab.iterrows():
        sel = np.ones(len(f), bool)
        for d in ("a", "b"):
            if cell[d] != "Total":
                sel &= (f[d] == cell[d]).to_numpy()
        assert cell["n"] == sel.sum() and round(cell["cell_key"] * 1e8) == f["k"][sel].sum() % 10 ** 8
    # the same cell in three tables gets the same perturbation
    m = abc[abc["c"] == "Total"].drop(columns="c").merge(ab, on=["a", "b"], suffixes=("", "_2"))
    assert len(m) == len(ab) and (m["pert"] == m["pert_2"]).all() and (m["cell_key"] == m["cell_key_2"]).all()
    m = ab[ab["b"] == "Total"].drop(columns="b").merge(a, on="a", suffixes=("", "_2"))
    assert (m["pert"] == m["pert_2"]).all()


def test_empirical_perturbations_follow_the_ptable(ex_cnts):
    keys = np.random.default_rng(7).integers(0, 10 ** 8, size=40_000)
    for i in (1, 2, 9):
        pert = lookup(ex_cnts, np.full(len(keys), i), keys, 8)
        row = ex_cnts[ex_cnts["i"] == min(i, 4)]
        freq = np.array([(pert == v).mean() for v in row["v"]])
        p = row["p"].to_numpy()
        # within 5 standard errors of a binomial share
        assert (np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / len(keys)) + 1e-12).all(), (i, freq, p)
        assert set(np.unique(pert)) <= set(row["v"])


def test_measures_and_the_posterior_by_hand(ex_cnts):
    # counts 0, 0, 1, 4 (prior 2/4, 1/4, 1/4); the count-1 cell published as 0
    cells = pd.DataFrame({"a": ["w", "x", "y", "z"], "n": [0, 0, 1, 4], "pert": [0, 0, -1, 1]})
    cells["n_pert"] = cells["n"] + cells["pert"]
    m = cell_key_measures(cells, ex_cnts)
    assert (m.cells, m.nonempty, m.changed, m.mean_abs, m.max_abs, m.false_zero) == (4, 2, 1.0, 1.0, 1, 1)
    assert m.mean_rel == pytest.approx((1 + 0.25) / 2)
    d = m.disclosure.set_index("i")
    assert list(d.index) == [1, 2, 3]  # js + 2 with js = 1
    # P(1 | 0) = 1 * 0.50833333 / (2 * 1 + 1 * 0.50833333 + 1 * 0): not inferred
    assert d.loc[1, "mean_posterior"] == pytest.approx(0.50833333 / 2.50833333)
    assert d.loc[1, "inferred"] == 0.0
    # published 2: P(1 | 2) = 0.475 / (0.475 + 0.07012498) > 0.5; published 3: 0.0167 / (0.0167 + 0.2445) < 0.5
    assert d.loc[1, "expected"] == pytest.approx(0.475)
    assert d.loc[2, "cells"] == 0


def test_measures_on_a_table_report_additivity():
    f = pd.DataFrame({"a": ["x", "x", "y", "y", "y"], "b": ["p", "q", "p", "p", "p"],
                      "rk": [0.125, 0.625, 0.1, 0.05, 0.05]})
    m = cell_key_measures(cell_key_counts(f, ["a", "b"], "rk", _pt_two_rows()), _pt_two_rows())
    # published (rows a = Total, x, y; columns b = Total, p, q): 6 4 1 / 2 0 1 / 3 3 0
    # along a: 6 vs 2 + 3, 4 vs 0 + 3, 1 vs 1 + 0 -> gaps 1, 1, 0; along b: 6 vs 5, 2 vs 1, 3 vs 3 -> 1, 1, 0
    assert m.additivity == {"a": pytest.approx(2 / 3), "b": pytest.approx(2 / 3)}


def test_cell_key_counts_refuses_bad_input():
    f = pd.DataFrame({"a": ["x", "Total"], "rk": [0.1, 0.2]})
    pt = _pt_two_rows()
    with pytest.raises(ParameterError, match="total="):
        cell_key_counts(f, ["a"], "rk", pt)
    with pytest.raises(DataError, match="lack"):
        cell_key_counts(f, ["a"], "nokey", pt)
    with pytest.raises(DataError, match="decimals"):
        cell_key_counts(f.assign(rk=[0.123456789, 0.2]), ["a"], "rk", pt, total="All")
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        cell_key_counts(f.assign(rk=[1.5, 0.2]), ["a"], "rk", pt, total="All")
    with pytest.raises(DataError, match="missing"):
        cell_key_counts(f.assign(a=["x", None]), ["a"], "rk", pt)


def test_a_4d_table_from_1e5_records_is_fast_and_consistent(ck_ptab):
    n = 100_000
    rng = np.random.default_rng(3)
    f = pd.DataFrame({d: rng.integers(0, k, n) for d, k in zip("abcd", (10, 6, 5, 4))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f["rk"] = record_keys(n, STRONG)
    c = cell_key_counts(f, list("abcd"), "rk", ck_ptab)
    assert len(c) == 11 * 7 * 6 * 5 and c["n"].iloc[0] == n
    assert (c["n_pert"] >= 0).all() and not c.loc[c["n"] > 0, "n_pert"].isin([1, 2]).any()
    assert (c.loc[c["n"] == 0, "pert"] == 0).all()


def r_mersenne_twister(seed: int) -> np.random.MT19937:
    """R's Mersenne-Twister after ``set.seed(seed)``: 50 scramblings by ``69069 s + 1``, then the
    624 words of the state, the next word at position 624 (R's RNG.c, ``RNG_Init``)."""
    s = seed & 0xFFFFFFFF
    for _ in range(50):
        s = (69069 * s + 1) & 0xFFFFFFFF
    state = []
    for _ in range(625):
        s = (69069 * s + 1) & 0xFFFFFFFF
        state.append(s)
    mt = np.random.MT19937()
    mt.state = {"bit_generator": "MT19937", "state": {"key": np.array(state[1:], dtype=np.uint32), "pos": 624}}
    return mt


def r_runif_keys(seed: int, n: int, digits: int) -> list[int]:
    """``round(runif(n), digits) * 10**digits`` after R's ``set.seed(seed)``, exactly."""
    mt = r_mersenne_twister(seed)
    # runif = y / 2**32; round to `digits` decimals (no tie can occur at these digits)
    return [(int(y) * 10 ** digits * 2 + 2 ** 32) // 2 ** 33 for y in mt.random_raw(n)]


def test_r_record_keys_emulation_matches_cellkeys_test():
    ck1 = r_runif_keys(1474937517, 4580, 8)
    assert (ck1[0], ck1[-1], round(sum(ck1) / 4580 / 1e8, 3)) == (97131759, 88019983, 0.501)
    ck2 = r_runif_keys(5, 4580, 10)
    assert (ck2[0], ck2[-1], round(sum(ck2) / 4580 / 1e10, 3)) == (2002144526, 1878750164, 0.508)


def _cellkey_testdata() -> pd.DataFrame:
    """cellKey's ck_create_testdata() (sex, age groups) with test_countvars.R's record keys."""
    f = ck_create_testdata()[["sex", "age"]]
    f["rec_key"] = np.array(r_runif_keys(1474937517, len(f), 5)) / 1e5
    return f


def test_perturbed_counts_equal_cellkeys_on_its_test_data(ck_ptab):
    c = cell_key_counts(_cellkey_testdata(), ["sex", "age"], "rec_key", ck_ptab, digits=5)
    assert len(c) == 21
    cell = c[(c["sex"] == "Total") & (c["age"] == "age_group2")].iloc[0]
    assert (cell["n"], cell["n_pert"]) == (1143, 1147)
    assert round(c["n_pert"].mean(), 3) == 872.333
    assert round(c["cell_key"].mean(), 3) == 0.456 and round(c["pert"].mean(), 3) == -0.048
    # the original counts are the ones the cellKey vignette prints (uwc)
    assert c.set_index(["sex", "age"]).loc[("male", "age_group6"), "n"] == 7


REGION = {"A1": "A", "A2": "A", "B1": "B", "A": "Total", "B": "Total"}


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["A1", "A2", "B1"]), st.sampled_from("xy"), st.integers(0, 10 ** 8 - 1)),
                min_size=1, max_size=30))
def test_hierarchies_give_tables_cells_and_keys_summed_over_descendants(rows):
    f = pd.DataFrame(rows, columns=["r", "s", "k"])
    f["rk"] = f["k"] / 1e8
    c = cell_key_counts(f, ["r", "s"], "rk", _pt_two_rows(), hierarchies={"r": REGION})
    t = Table.from_microdata(f, ["r", "s"], {"r": REGION})
    assert c[["r", "s"]].equals(t.cells[["r", "s"]]) and (c["n"].to_numpy() == t.cells["freq"].to_numpy()).all()
    below = {"Total": {"A1", "A2", "B1"}, "A": {"A1", "A2"}, "B": {"B1"}}
    for _, cell in c.iterrows():
        sel = f["r"].isin(below.get(cell["r"], {cell["r"]}))
        if cell["s"] != "Total":
            sel &= f["s"] == cell["s"]
        assert round(cell["cell_key"] * 1e8) == f.loc[sel, "k"].sum() % 10 ** 8
    m = cell_key_measures(c, _pt_two_rows())
    published = c.set_index(["r", "s"])["n_pert"]
    gaps = [abs(published[(p, s)] - sum(published[(ch, s)] for ch in kids))
            for p, kids in {"Total": ["A", "B"], "A": ["A1", "A2"], "B": ["B1"]}.items() for s in c["s"].unique()]
    assert m.additivity["r"] == pytest.approx(np.mean(gaps))


def test_hierarchy_refuses_subtotal_codes_in_records():
    f = pd.DataFrame({"r": ["A1", "A"], "rk": [0.1, 0.2]})
    with pytest.raises(DataError, match="subtotal"):
        cell_key_counts(f, ["r"], "rk", _pt_two_rows(), hierarchies={"r": REGION})
    with pytest.raises(ParameterError, match="not among the dimensions"):
        cell_key_counts(f, ["r"], "rk", _pt_two_rows(), hierarchies={"q": REGION})


# ptable's vignette (cran/ptable dd96b89, inst/doc/introduction.html): mod_ptab_new@pTable, the
# table of create_cnt_ptable(D = 2, V = 0.9) after modify_cnt_ptable(threshold = 0.2, seed = 123),
# whose rows split a perturbation value into several intervals out of v order; as pt_export (SAS)
MODIFIED = """i;j;p;v;p_int_lb;p_int_ub
0;0;1.00000000; 0;0.0000000;1.0000000
1;3;0.08750000; 2;0.0000000;0.0875000
1;1;0.20000000; 0;0.0875000;0.2875000
1;0;0.20000000;-1;0.2875000;0.4875000
1;1;0.16250000; 0;0.4875000;0.6500000
1;2;0.18750000; 1;0.6500000;0.8375000
1;0;0.16250000;-1;0.8375000;1.0000000
2;2;0.20000000; 0;0.0000000;0.2000000
2;2;0.00927654; 0;0.2000000;0.2092765
2;3;0.20000000; 1;0.2092765;0.4092765
2;1;0.20000000;-1;0.4092765;0.6092765
2;0;0.05154609;-2;0.6092765;0.6608226
2;1;0.04381564;-1;0.6608226;0.7046383
2;2;0.20000000; 0;0.7046383;0.9046383
2;3;0.04381564; 1;0.9046383;0.9484539
2;4;0.05154609; 2;0.9484539;1.0000000
"""


def test_a_modified_ptable_is_read_and_looked_up_in_interval_order(tmp_path):
    (tmp_path / "mod.txt").write_text(MODIFIED)
    t = read_ptable(tmp_path / "mod.txt")
    assert len(t) == 16 and t.groupby("i")["p"].sum().round(8).eq(1).all()
    n = np.array([1, 1, 1, 2, 2, 5, 0])
    keys = np.array([0.05, 0.3, 0.9, 0.205, 0.65, 0.93, 0.5]) * 1e8
    assert lookup(t, n, keys.astype(np.int64), 8).tolist() == [2, -1, -1, 0, -2, 1, 0]


def r_sample_int(seed: int, n: int, size: int) -> list[int]:
    """R's ``set.seed(seed, sample.kind = "Rejection"); sample.int(n, size, replace = TRUE) - 1``:
    ``R_unif_index`` draws ``ceil(log2(n))`` bits from the top 16 of each Mersenne-Twister word
    (``floor(unif_rand() * 65536)``) and rejects values >= n."""
    mt = r_mersenne_twister(seed)
    bits, out = int(np.ceil(np.log2(n))), []
    assert bits <= 16
    while len(out) < size:
        v = (int(mt.random_raw()) >> 16) & ((1 << bits) - 1)
        if v < n:
            out.append(v)
    return out


def test_weighted_counts_equal_cellkeys_on_its_test_data(ck_ptab):
    # test_countvars.R: set.seed(120, sample.kind = "Reject"); ck_create_testdata() draws
    # sampling_weight <- sample(20:100, 4580, replace = TRUE); mean 59.719; mean(pwc) 52096.24
    f = _cellkey_testdata()
    f["sampling_weight"] = 20 + np.array(r_sample_int(120, 81, len(f)))
    assert round(f["sampling_weight"].mean(), 3) == 59.719
    c = cell_key_counts(f, ["sex", "age"], "rec_key", ck_ptab, digits=5, weight="sampling_weight")
    assert round(c["weighted_pert"].mean(), 3) == 52096.24
    assert c["weighted"].iloc[0] == f["sampling_weight"].sum()
