"""Tabular on the one contract (issue 29 items 2, 3 and 7): the results are :class:`Result`s whose
``to_dict()`` keeps its published keys and is plain JSON (no NaN, no ``default=``), their
``summary()`` rows are what ``sdckit table protect`` prints, and the public functions and rule
classes check their parameters through :mod:`sdckit.core.params` with the one template
(``The 'x' parameter of f must be ... Got ... instead.``), at their boundaries."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result
from sdckit.tabular import (PQ, CellKeySumParams, Dominance, GroupDisclosure, Manual, MinFrequency, PPercent, Table,
                            adjust_table, audit_rounding, cell_key_counts, cell_key_measures, cell_key_sums, ptable,
                            ptable_numeric, record_keys, round_table, sensitivity, write_ptable)
from sdckit.tabular.cellkey import Lookup

TEMPLATE = r"The '{param}' parameter of {owner} must be .+\. Got {got} instead\."


def template(param: str, owner: str, got: str = ".+") -> str:
    return TEMPLATE.format(param=param, owner=owner, got=got)


def table2(X, rows="ab", cols="xy") -> Table:
    """A 2-D table (flat dimensions r and c, margins 'Total', 5 contributors a cell)."""
    X = np.asarray(X, float)
    recs = []
    for i, r in enumerate(list(rows) + ["Total"]):
        for j, c in enumerate(list(cols) + ["Total"]):
            v = X[i, j] if i < X.shape[0] and j < X.shape[1] else (
                X[i].sum() if i < X.shape[0] else X[:, j].sum() if j < X.shape[1] else X.sum())
            recs.append({"r": r, "c": c, "value": v, "freq": 5})
    return Table.from_cells(pd.DataFrame(recs), ["r", "c"])


HAND = table2([[3, 6, 12], [7, 10, 4], [11, 2, 9]], rows="abc", cols="xyz")


# ------------------------------------------------------------------------------- results
def test_the_rounding_result_keeps_its_published_keys_through_the_base():
    """The hand-worked 3x3 table to base 5 (tests/test_tabular_rounding.py): 16 cells, 14 moved,
    total change 22, largest 3; the manifest's keys in their order, plain JSON."""
    res = round_table(HAND, 5, mip_gap=0, rules=MinFrequency(6))
    assert isinstance(res, Result) and isinstance(res.audit, Result)
    d = res.to_dict()
    assert list(d) == ["method", "base", "cells", "additive", "equations_violated", "cells_moved", "max_abs_change",
                       "mean_abs_change", "total_abs_change", "optimal", "gap", "seconds", "audit"]
    assert (d["cells"], d["cells_moved"], d["total_abs_change"], d["max_abs_change"]) == (16, 14, 22, 3)
    assert d["mean_abs_change"] == pytest.approx(22 / 16) and d["base"] == 5.0 and d["additive"] is True
    assert d["audit"] == {"safe": res.audit.safe, "sensitive_cells": 16, "unprotected_cells": res.audit.unprotected,
                          "lps_solved": 32}
    json.dumps(d, allow_nan=False)
    rows = dict(res.summary())
    assert rows["cells"] == "16" and rows["cells moved"] == "14" and rows["largest absolute change"] == "3"
    assert rows["additive"] == "yes" and rows["sensitive cells protected"].endswith("of 16") and "time" in rows


def test_random_rounding_says_it_is_not_additive():
    d = round_table(HAND, 5, method="random", seed=7).to_dict()
    assert d["note"] == "random rounding is unbiased but not additive" and d["optimal"] is False


def test_the_adjustment_result_keeps_its_keys_and_writes_no_nan():
    """One sensitive cell, (a,x) = 3, given as primary: the fast method proves no bound, so its
    gap is NaN, which the JSON writes as null."""
    res = adjust_table(HAND, primary=[("a", "x")], method="fast")
    d = res.to_dict()
    assert list(d)[:4] == ["method", "cost", "cells", "sensitive"] and d["cells"] == 16 and d["sensitive"] == 1
    assert d["gap"] is None and d["method"] == "fast" and "table" not in d and "sensitivity" not in d
    json.dumps(d, allow_nan=False)
    rows = dict(res.summary())
    assert rows["sensitive cells"] == "1" and rows["optimality"] == "not proved"


def test_the_cell_key_measures_are_plain_json():
    """Counts 1 and 3 only: the disclosure rows of i = 2 have no cell (NaN shares), which the
    manifest used to write as the non-JSON token NaN; now null."""
    frame = pd.DataFrame({"g": ["a", "b", "b", "b"], "rk": [0.1, 0.2, 0.3, 0.4]})
    pt = ptable(2, 1.0)
    cells = cell_key_counts(frame, ["g"], "rk", pt)
    m = cell_key_measures(cells, pt, small=2)
    d = m.to_dict()
    assert isinstance(m, Result) and d["cells"] == 3 and d["nonempty"] == 3
    assert d["disclosure"][1] == {"i": 2, "cells": 0, "inferred": None, "expected": None, "mean_posterior": None}
    json.dumps(d, allow_nan=False)
    assert dict(m.summary())["cells"] == "3"


# ------------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("call, param, owner", [
    (lambda: round_table(HAND, float("inf")), "base", "round_table"),
    (lambda: round_table(HAND, 5, time_limit=-1), "time_limit", "round_table"),
    (lambda: round_table(HAND, 5, mip_gap=1), "mip_gap", "round_table"),
    (lambda: adjust_table(HAND, cost="relative"), "cost", "adjust_table"),
    (lambda: adjust_table(HAND, integer=1), "integer", "adjust_table"),
    (lambda: adjust_table(HAND, time_limit=0), "time_limit", "adjust_table"),
    (lambda: audit_rounding(HAND), "result", "audit_rounding"),
    (lambda: sensitivity(HAND, MinFrequency(3), floor=-1.0), "floor", "sensitivity"),
    (lambda: record_keys(-1, 2**128), "n", "record_keys"),
    (lambda: record_keys(3, 2**128, digits=13), "digits", "record_keys"),
    (lambda: ptable(2, float("inf")), "V", "ptable"),
    (lambda: ptable(2, 1, pstay=[0.5, 1.0]), "pstay", "ptable"),
    (lambda: ptable(2, 1, optim=[1, 7]), "optim", "ptable"),
    (lambda: ptable(2, 1, mono="yes"), "mono", "ptable"),
    (lambda: ptable_numeric(2, 1, [1, 2], step=0), "step", "ptable_numeric"),
    (lambda: write_ptable(ptable(2, 1), "x.csv", sdctool="R"), "sdctool", "write_ptable"),
    (lambda: Lookup(ptable(2, 1), 4), "digits", "Lookup"),
])
def test_bad_parameters_are_refused_in_the_template(call, param, owner):
    with pytest.raises(ParameterError, match=template(param, owner)):
        call()


def test_a_frame_given_for_a_table_is_named_by_its_type_on_one_line():
    frame = pd.DataFrame({"value": range(50)})
    with pytest.raises(ParameterError, match=template("table", "round_table", "DataFrame")) as info:
        round_table(frame, 5)
    assert "\n" not in str(info.value)
    with pytest.raises(ParameterError, match=template("table", "adjust_table", "DataFrame")):
        adjust_table(frame)


@pytest.fixture(scope="module")
def cells_frame():
    return pd.DataFrame({"g": ["a", "b", "b"], "x": [10.0, 20.0, 30.0], "rk": [0.1, 0.2, 0.3]})


def test_cell_key_functions_check_total_digits_supp_freq_and_small(cells_frame):
    pt = ptable(2, 1.0)
    with pytest.raises(ParameterError, match=template("total", "cell_key_counts", "5")):
        cell_key_counts(cells_frame, ["g"], "rk", pt, total=5)
    with pytest.raises(ParameterError, match=template("digits", "cell_key_counts", "4")):
        cell_key_counts(cells_frame, ["g"], "rk", pt, digits=4)
    with pytest.raises(ParameterError, match=template("small", "cell_key_measures", "0")):
        cell_key_measures(cell_key_counts(cells_frame, ["g"], "rk", pt), pt, small=0)
    params = CellKeySumParams(ptab=ptable_numeric(2, 1, [1, 2]), fp=10, top_k=1)
    with pytest.raises(ParameterError, match=template("supp_freq", "cell_key_sums", "-1")):
        cell_key_sums(cells_frame, ["g"], "rk", "x", params, supp_freq=-1)
    with pytest.raises(ParameterError, match=template("params", "cell_key_sums")):
        cell_key_sums(cells_frame, ["g"], "rk", "x", {"fp": 10})


@pytest.mark.parametrize("make, param, owner", [
    (lambda: MinFrequency(0), "n", "MinFrequency"),
    (lambda: MinFrequency(3, share=1.5), "share", "MinFrequency"),
    (lambda: Dominance(2, 0), "k", "Dominance"),
    (lambda: Dominance(2.0, 80), "n", "Dominance"),
    (lambda: PQ(0, 50), "p", "PQ"),
    (lambda: PQ(10, 101), "q", "PQ"),
    (lambda: PPercent(float("nan")), "p", "PPercent"),
    (lambda: Manual([("a",)], share=0), "share", "Manual"),
    (lambda: GroupDisclosure(share="x"), "share", "GroupDisclosure"),
])
def test_the_rules_check_their_parameters_in_the_template(make, param, owner):
    with pytest.raises(ParameterError, match=template(param, owner)):
        make()


def test_cell_key_sum_params_check_in_the_template():
    pt = ptable_numeric(2, 1, [1, 2])
    for bad, param in [({"fp": float("inf")}, "fp"), ({"q": 0.5}, "q"), ({"epsilon": (0.5,)}, "epsilon"),
                       ({"same_key": 1}, "same_key"), ({"top_k": 7}, "top_k"),
                       ({"p_small": 0.1, "p_large": 0.2}, "p_large")]:
        with pytest.raises(ParameterError, match=template(param, "CellKeySumParams")):
            CellKeySumParams(**{"ptab": pt, "fp": 10.0, "top_k": 1, **bad})
    # top_k matters only with type="top_contr" (then it is 1, as cellKey)
    assert CellKeySumParams(ptab=pt, fp=10.0, type="sum", top_k=99).top_k == 1
