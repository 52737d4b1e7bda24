"""Magnitude tables of the cell key method equal the R package cellKey's (issue 30 sections 2 and 5).

The reference values were produced by cellKey 1.0.2 (sdcTools/cellKey, commit 80bb032) with
ptable 1.0.0 (cran/ptable, commit dd96b89) under R 4.2.2 and are kept in tests/data/cellkey/
(provenance: tests/data/PROVENANCE.txt). Three examples, all on sdcMicro's testdata (our
tests/data/sdcmicro/testdata.csv.gz, the shared test data; cellKey's ``ck_create_testdata()`` is
it with ``age`` in 6 groups and the amounts divided by 10,000):

* ``vignette``: the vignette's flex-function example (``top_contr``, ``top_k = 3``, a small-cell
  p-table, ``same_key = FALSE``, ``mu_c = 2`` on the cells of at most 15 records), savings and
  income by sex x age;
* ``numvars``: tests/testthat/test_numvars.R (its income with two values x 25, ``q = 2``,
  ``mu_c = 2.5``; savings with ``ck_simpleparams`` and ``type = "mean"``);
* ``shared``: the testdata as it is, roof x water (54 cells, 16 of them empty), six variables
  covering ``type`` sum / mean / range / top_contr, even/odd and small-cell p-tables,
  ``same_key`` and ``use_zero_rkeys`` both ways, negative values and ``ck_simpleparams``.

What is compared: the weighted sums exactly, the perturbed sums and each component's
``x_delta`` to a relative 1e-12 (they agree to the last bit on these data), the sensitive
cells, the p-table looked up, and the first component's cell key (to 1e-9; rotated by ``same_key =
FALSE``, to the weight ``10 ** (1 - d)`` of the digit moved to the last of its ``d`` decimals). The 2nd and 3rd components' keys are not compared: R rotates the 15 printed digits of its floating-point sum,
sdckit the exact key's digits, and where R's sum falls just below the exact key (0.0645 printed
0.0644999999999669) the rotations differ by up to 1e-2 (DESIGN.md); on these data the
perturbation values looked up are the same all the same. One intended difference: cellKey's ``.get_max_contributions`` shrinks
``top_k`` to the smallest cell seen so far (``top_k <- min(top_k, nrow(xx))`` inside its loop
over cells), so after an empty or small cell every later cell keeps fewer contributions; sdckit
keeps each cell's own ``top_k``. Those cells are checked with R's truncated contributions
(``k_used`` in the data) through :func:`sdckit.tabular.cellkey_sums.perturb_cell`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.tabular import CellKeySumParams, cell_key_sums, ptable_numeric, read_ptable
from sdckit.tabular.cellkey_sums import NumericLookup, perturb_cell, scrambled_keys
from tabular_helpers import SDCMICRO_TESTDATA, ck_create_testdata

CK = Path(__file__).parent / "data" / "cellkey"
REL = 1e-12


@pytest.fixture(scope="module")
def keys() -> pd.DataFrame:
    return pd.read_csv(CK / "record_keys.csv.gz", dtype=str)


@pytest.fixture(scope="module")
def ptabs() -> pd.DataFrame:
    return pd.read_csv(CK / "pt_ex_nums.csv")


def pt(ptabs: pd.DataFrame, *types: str) -> pd.DataFrame:
    return ptabs[ptabs["type"].isin(types)].reset_index(drop=True)


def r_cells(name: str, dims: list[str]) -> pd.DataFrame:
    return pd.read_csv(CK / f"{name}_cells.csv", dtype={d: str for d in dims} | {f"ckey_{j}": str for j in (1, 2, 3)})


def assert_unweighted_sums(cells: pd.DataFrame, f: pd.DataFrame, dims: list[str], var: str) -> None:
    """R's unweighted sums of the interior cells are ours: the records are R's."""
    inner = cells[(cells[dims] != "Total").all(axis=1)].set_index(dims)["uws"]
    mine = f.groupby(dims)[var].sum()
    assert np.allclose(inner.to_numpy(), mine.reindex(inner.index, fill_value=0).to_numpy(), rtol=1e-14)


def compare(r: pd.DataFrame, out: pd.DataFrame, dims: list[str], params: CellKeySumParams, digits: int) -> int:
    """Assert sdckit's cells equal R's; return how many were compared through R's truncated top k."""
    m = r.merge(out, on=dims, how="outer", validate="1:1", indicator=True)
    assert (m["_merge"] == "both").all()
    assert (m["ws"] == m["sum"]).all()
    assert (m["sensitive_x"] == m["sensitive_y"]).all()
    assert (m["lookup_x"] == m["lookup_y"]).all()
    k = params.top_k
    own = m["k_used"] == np.minimum(k, m["n"]).clip(lower=1)  # R kept the cell's own top k
    assert np.allclose(m.loc[own, "pws"], m.loc[own, "sum_pert"], rtol=REL, atol=0)
    look = NumericLookup(params.table)
    truncated = 0
    for _, c in m.iterrows():
        ck = scrambled_keys(int(round(c["cell_key"] * 10 ** digits)), digits, k, params.same_key)
        first = ck[0][0] / 10 ** ck[0][1]  # R's first key: its double sum, rotated when not same_key
        assert first == pytest.approx(float(c["ckey_1"]), abs=1e-9 if params.same_key else 10.0 ** (1 - ck[0][1]))
        if c["k_used"] < min(k, c["n"]):  # R's shrunken top k: perturb R's contributions
            truncated += 1
            xs = [c[f"x_{j}"] for j in range(1, int(c["k_used"]) + 1)]
            kind = ("even" if c["n"] % 2 == 0 else "odd") if params.even_odd else "all"
            got = perturb_cell(c["ws"], xs, ck, kind, bool(c["sensitive_y"]), params, look)
            assert c["ws"] + got["pert"] == pytest.approx(c["pws"], rel=REL, abs=0)
            deltas = got["x_delta"]
        else:
            deltas = [c[f"x_delta_{j}_y"] for j in range(1, k + 1)]
        for j in range(1, k + 1):
            if not np.isnan(c[f"x_delta_{j}_x"]):
                assert deltas[j - 1] == pytest.approx(c[f"x_delta_{j}_x"], rel=REL, abs=0)
    return truncated


def test_the_vignettes_magnitude_table(keys, ptabs):
    f = ck_create_testdata()
    f["w"] = keys["vignette_w"].astype(float)
    f["rk"] = keys["vignette_rkey"].astype(float)
    params = CellKeySumParams(ptab=pt(ptabs, "all", "small_cells"), type="top_contr", top_k=3, fp=1000, p_small=0.3,
                              p_large=0.03, epsilon=(1, 0.5, 0.2), mu_c=2, same_key=False, use_zero_rkeys=True)
    assert params.zs == pytest.approx(2.9348364324853926, rel=1e-15)  # printed by cellKey (m1^2 = 1.0000000532)
    r = r_cells("vignette", ["sex", "age"])
    for var, supp in (("savings", None), ("income", 15)):
        out = cell_key_sums(f, ["sex", "age"], "rk", var, params, digits=7, weight="w", supp_freq=supp)
        cells = r[r["vname"] == var]
        assert len(cells) == 21
        assert_unweighted_sums(cells, f, ["sex", "age"], var)
        assert compare(cells, out, ["sex", "age"], params, 7) == 0
    assert r.loc[r["vname"] == "income", "sensitive"].sum() == 3  # "freq-rule: 3 new sensitive cells"


def numvars_records(keys: pd.DataFrame) -> pd.DataFrame:
    """test_numvars.R's records: its weights ``sample(1:5)`` and keys, two incomes x 25."""
    f = ck_create_testdata()
    f.loc[[1296, 3502], "income"] *= 25  # x$income[1297], x$income[3503]
    f["w"] = keys["numvars_w"].astype(float)
    f["rk"] = keys["numvars_rkey"].astype(float)
    return f


def test_cellkeys_test_numvars_income(keys, ptabs):
    f = numvars_records(keys)
    params = CellKeySumParams(ptab=pt(ptabs, "all"), type="top_contr", top_k=3, fp=1000, p_small=0.2, p_large=0.03,
                              q=2, epsilon=(1, 0.5, 0.3), mu_c=2.5, same_key=False, use_zero_rkeys=True)
    assert (params.E, params.zs, params.even_odd, params.separation) == (1.34, 0, False, False)
    out = cell_key_sums(f, ["sex", "age"], "rk", "income", params, digits=8, weight="w")
    r = r_cells("numvars", ["sex", "age"])
    cells = r[r["vname"] == "income"]
    assert_unweighted_sums(cells, f, ["sex", "age"], "income")
    assert compare(cells, out, ["sex", "age"], params, 8) == 0
    # test_numvars.R's own assertions: expect_equal(round(mean(pws), 3), ...) (testthat's tolerance 1.5e-8)
    assert round(out["sum_pert"].mean(), 3) == pytest.approx(13181967.1, rel=1.5e-8)
    assert round(out["sum"].mean(), 3) == pytest.approx(13184145.52, rel=1.5e-8)


def test_cellkeys_test_numvars_savings_with_the_simple_approach(keys, ptabs):
    # ck_params_nums(type = "mean", top_k = 3 (ignored), ptab, mult_params = ck_simpleparams(p = 0.1,
    # epsilon = 1), mu_c = 2.5, same_key = TRUE, use_zero_rkeys = FALSE)
    f = numvars_records(keys)
    params = CellKeySumParams(ptab=pt(ptabs, "all"), p=0.1, type="mean", mu_c=2.5, same_key=True, use_zero_rkeys=False)
    out = cell_key_sums(f, ["sex", "age"], "rk", "savings", params, digits=8, weight="w")
    r = r_cells("numvars", ["sex", "age"])
    cells = r[r["vname"] == "savings"]
    assert_unweighted_sums(cells, f, ["sex", "age"], "savings")
    assert compare(cells, out, ["sex", "age"], params, 8) == 0
    assert round(out["sum_pert"].mean(), 3) == pytest.approx(1306306.6, rel=1.5e-8)


def shared_records(keys: pd.DataFrame) -> pd.DataFrame:
    f = pd.read_csv(SDCMICRO_TESTDATA, usecols=["roof", "water", "income", "expend", "savings", "sampling_weight"],
                    dtype={"roof": str, "water": str})
    f["bal"] = f["income"] - f["expend"]
    f["inc_hi"] = np.where(f["income"] >= 9e7, f["income"], 0.0)
    f["exp_s"] = f["expend"]
    f["rk"] = keys["shared_rkey"].astype(float)
    return f


SHARED = {  # variable: ck_params_nums(...) as run in R, p-table types, supp_freq(n, weighted = FALSE)
    "income": (dict(type="top_contr", top_k=3, fp=1e7, p_small=0.25, p_large=0.05, epsilon=(1, 0.5, 0.3), q=3,
                    mu_c=3, same_key=False, use_zero_rkeys=False), ("all", "small_cells"), 10),
    "expend": (dict(type="sum", fp=1e8, p_small=0.2, p_large=0.02, q=2, same_key=True, use_zero_rkeys=True),
               ("even", "odd", "small_cells"), None),
    "savings": (dict(type="mean", fp=1e6, p_small=0.3, p_large=0.05, q=3, mu_c=1.5, same_key=False,
                     use_zero_rkeys=False), ("even", "odd"), 20),
    "bal": (dict(type="top_contr", top_k=2, fp=1e6, p_small=0.15, p_large=0.02, epsilon=(1, 0.4), q=3,
                 same_key=False, use_zero_rkeys=True), ("all", "small_cells"), None),
    "inc_hi": (dict(type="range", fp=1e7, p_small=0.25, p_large=0.05, q=3, same_key=True, use_zero_rkeys=False),
               ("all", "small_cells"), None),
    "exp_s": (dict(type="mean", p=0.05, mu_c=1, same_key=True, use_zero_rkeys=True), ("even", "odd"), 20),
}


@pytest.mark.parametrize("var", list(SHARED))
def test_the_shared_test_data_by_roof_and_water(keys, ptabs, var):
    f = shared_records(keys)
    kw, types, supp = SHARED[var]
    params = CellKeySumParams(ptab=pt(ptabs, *types), **kw)
    out = cell_key_sums(f, ["roof", "water"], "rk", var, params, digits=8, weight="sampling_weight", supp_freq=supp)
    r = r_cells("shared", ["roof", "water"])
    cells = r[r["vname"] == var]
    assert len(cells) == 54 and (cells["uws"] == 0).sum() == (23 if var == "inc_hi" else 16)  # 16 empty cells
    assert_unweighted_sums(cells, f, ["roof", "water"], var)
    truncated = compare(cells, out, ["roof", "water"], params, 8)
    # R's top_k shrinks to 0 at the first empty cell, (2, 6): the 23 cells after it with 2 records or more
    # keep one contribution (R takes x[1:0], the first)
    assert truncated == (23 if params.top_k > 1 else 0)


PT_EX_NUMS = {  # ptable::pt_ex_nums' create_num_ptable calls (R/pt_examples.R)
    "small_cells": dict(D=5, V=1, optim=[4, 1, 1], step=5, icat=[1, 3, 5]),
    "all": dict(D=10, V=3, step=2, optim=[4, 1, 1], icat=[1, 5, 10]),
    "even": dict(D=8, V=1, step=2, icat=[1, 5, 8]),
    "odd": dict(D=10, V=2, optim=[4, 1], step=2, icat=[1, 10]),
}


@pytest.mark.parametrize("kind", ["odd", pytest.param("small_cells", marks=pytest.mark.slow),
                                  pytest.param("all", marks=pytest.mark.slow), pytest.param("even", marks=pytest.mark.slow)])
def test_ptable_numeric_equals_ptables_pt_ex_nums(ptabs, kind):
    # ptable stops NLopt's SLSQP at xtol_rel = 1e-8; SciPy's optimum differs by at most a few 1e-7
    # (both meet the constraints to 1e-7): i, j, v equal, p and the interval bounds to 5e-7
    r = pt(ptabs, kind)
    mine = ptable_numeric(type=kind, **PT_EX_NUMS[kind])
    assert len(mine) == len(r)
    for col in ("i", "j", "v"):
        assert np.array_equal(mine[col].to_numpy(dtype=float), r[col].to_numpy(dtype=float))
    for col in ("p", "p_int_lb", "p_int_ub"):
        assert np.abs(mine[col].to_numpy() - r[col].to_numpy()).max() <= 5e-7
    assert (mine["type"] == r["type"]).all()
    if kind != "small_cells":  # the same table read from ptable's own file (pt_export; read_ptable)
        name = "pt_export_nums_all.txt" if kind == "all" else "pt_export_nums_even_odd.txt"
        read = read_ptable(CK / name)
        read = read[read["type"] == kind].reset_index(drop=True)
        for col in ("i", "j", "v", "type"):
            assert read[col].tolist() == mine[col].tolist()
        for col in ("p", "p_int_lb", "p_int_ub"):
            assert np.abs(mine[col].to_numpy() - read[col].to_numpy()).max() <= 5e-7
