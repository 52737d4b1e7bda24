"""Tables from microdata and from given cells: every subtotal cell, contributions, equations."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import DimensionHierarchy, Table

DATA = Path(__file__).parent / "data" / "tabular"
REGION = {"A1": "A", "A2": "A", "B1": "B", "A": "Total", "B": "Total"}

MICRO = pd.DataFrame({
    "region": ["A1", "A1", "A2", "B1", "B1", "B1"],
    "size":   ["s",  "l",  "s",  "s",  "s",  "l"],
    "turnover": [10.0, 50.0, 5.0, 7.0, 3.0, 100.0],
    "firm":   ["f1", "f2", "f1", "f3", "f3", "f4"],
    "w":      [1.0, 2.0, 1.0, 1.0, 1.0, 0.5],
})


def cell(t, **codes):
    c = t.cells
    m = np.ones(len(c), bool)
    for k, v in codes.items():
        m &= (c[k] == v).to_numpy()
    (i,) = np.flatnonzero(m)
    return c.iloc[i]


def test_every_cell_including_subtotals_hand_worked():
    t = Table.from_microdata(MICRO, ["region", "size"], {"region": REGION}, response="turnover")
    assert t.shape == (6, 3)  # Total, A, A1, A2, B, B1  x  Total, l, s
    assert len(t.cells) == 18
    assert cell(t, region="Total", size="Total")["value"] == 175.0
    a = cell(t, region="A", size="s")
    assert (a["value"], a["freq"], a["top1"], a["top2"]) == (15.0, 2, 10.0, 5.0)
    b = cell(t, region="B", size="Total")
    assert (b["value"], b["freq"], b["top1"], b["top2"], b["top3"]) == (110.0, 3, 100.0, 7.0, 3.0)
    e = cell(t, region="A2", size="l")
    assert (e["value"], e["freq"], e["top1"]) == (0.0, 0, 0.0)
    assert t.empty.sum() == 1  # A2 x l only: A x l holds A1 x l
    assert not t.negative


def test_frequency_table_and_weights():
    t = Table.from_microdata(MICRO, ["region"], {"region": REGION})
    assert cell(t, region="B1")["value"] == 3 and cell(t, region="Total")["value"] == 6
    tw = Table.from_microdata(MICRO, ["region"], {"region": REGION}, response="turnover", weight="w")
    b = cell(tw, region="B1")
    assert b["value"] == 7 + 3 + 50 and b["freq"] == 3 and b["top1"] == 50.0


def test_holding_groups_contributions():
    t = Table.from_microdata(MICRO, ["region"], {"region": REGION}, response="turnover", holding="firm")
    b1 = cell(t, region="B1")
    assert (b1["top1"], b1["top2"], b1["contributors"], b1["freq"]) == (100.0, 10.0, 2, 3)  # f3 = 7 + 3
    tot = cell(t, region="Total")
    assert (tot["top1"], tot["top2"], tot["top3"], tot["contributors"]) == (100.0, 50.0, 15.0, 4)  # f1 = 10 + 5 across A1, A2
    a = cell(t, region="A")
    assert (a["top1"], a["top2"], a["contributors"]) == (50.0, 15.0, 2)


def test_equations_hold_and_count():
    t = Table.from_microdata(MICRO, ["region", "size"], {"region": REGION}, response="turnover")
    A = t.equations()
    # region: 3 parents (Total, A, B) x 3 size codes; size: 1 parent x 6 region codes
    assert A.shape == (15, 18)
    assert np.allclose(A @ t.cells["value"].to_numpy(), 0)
    row = A.getrow(0).toarray().ravel()
    assert sorted(row[row != 0]) == [-1, -1, 1]


def test_top_contributions_match_brute_force():
    rng = np.random.default_rng(5)
    n = 300
    f = pd.DataFrame({"a": rng.choice(["x1", "x2", "y1"], n), "b": rng.choice(["p", "q"], n),
                      "v": rng.integers(1, 1000, n).astype(float)})
    h = {"x1": "x", "x2": "x", "y1": "y", "x": "Total", "y": "Total"}
    t = Table.from_microdata(f, ["a", "b"], {"a": h}, response="v", top=3)
    for _, c in t.cells.iterrows():
        m = np.ones(n, bool)
        if c["a"] != "Total":
            m &= f["a"].isin([c["a"]] if c["a"] not in ("x", "y") else [k for k, p in h.items() if p == c["a"]]).to_numpy()
        if c["b"] != "Total":
            m &= (f["b"] == c["b"]).to_numpy()
        vals = np.sort(f["v"].to_numpy()[m])[::-1]
        assert c["value"] == vals.sum() and c["freq"] == m.sum()
        assert list(c[["top1", "top2", "top3"]]) == list(np.r_[vals, 0, 0, 0][:3])


def test_from_microdata_bad_inputs_named():
    with pytest.raises(DataError, match="'nope'"):
        Table.from_microdata(MICRO, ["nope"])
    with pytest.raises(DataError, match="response column 'x'"):
        Table.from_microdata(MICRO, ["size"], response="x")
    with pytest.raises(DataError, match="'region' has 1 code\\(s\\) that are not in its hierarchy") as e:
        Table.from_microdata(MICRO.assign(region=["C9"] * 6), ["region"], {"region": REGION})
    assert "C9" not in str(e.value)  # a code outside the published hierarchy is data
    with pytest.raises(DataError, match="subtotal"):
        Table.from_microdata(MICRO.assign(region=["A"] * 6), ["region"], {"region": REGION})
    bad = MICRO.assign(turnover=[1, 2, None, 4, 5, 6])
    with pytest.raises(DataError, match="'turnover'.*row 2"):
        Table.from_microdata(bad, ["size"], response="turnover")
    with pytest.raises(ParameterError, match="top"):
        Table.from_microdata(MICRO, ["size"], top=0)
    with pytest.raises(ParameterError, match="repeats"):
        Table.from_microdata(MICRO, ["size", "size"])
    with pytest.raises(ParameterError, match="not a dimension"):
        Table.from_microdata(MICRO, ["size"], {"region": REGION})


def test_from_cells_checks_additivity_and_names_the_cell():
    cells = pd.DataFrame({"r": ["a", "b", "Total"], "value": [3.0, 4.0, 7.0], "freq": [1, 2, 3]})
    t = Table.from_cells(cells, ["r"])
    assert list(t.cells["value"]) == [7.0, 3.0, 4.0]
    bad = cells.assign(value=[3.0, 4.0, 8.0])
    with pytest.raises(DataError, match=r"\(r=Total\)") as e:
        Table.from_cells(bad, ["r"])
    assert "8" not in str(e.value)  # never a data value
    with pytest.raises(DataError, match="more than once"):
        Table.from_cells(pd.concat([cells, cells.iloc[:1]]), ["r"])
    with pytest.raises(DataError, match="'b'.*'r'"):
        Table.from_cells(cells, ["r"], {"r": {"a": "Total", "zz": "Total"}})


def test_from_cells_missing_combinations_are_empty():
    cells = pd.DataFrame({"r": ["a", "a", "Total", "Total", "b", "b"], "c": ["x", "Total", "x", "Total", "y", "Total"],
                          "value": [2.0, 2.0, 2.0, 7.0, 5.0, 5.0], "freq": [1, 1, 1, 3, 2, 2]})
    cells = pd.concat([cells, pd.DataFrame({"r": ["Total"], "c": ["y"], "value": [5.0], "freq": [2]})])
    t = Table.from_cells(cells, ["r", "c"])
    assert len(t.cells) == 9 and t.empty.sum() == 2


def test_published_instance_tau_simple2d_adds_up():
    d = DATA / "tau_simple2d"
    hier = {dim: {r.child: r.parent for r in pd.read_csv(d / f"hierarchy_{dim}.csv", dtype=str).dropna().itertuples()}
            for dim in ("Size", "Region")}
    cells = pd.read_csv(d / "cells.csv", dtype={"Size": str, "Region": str})
    t = Table.from_cells(cells, ["Size", "Region"], hier, top=["top1", "top2"], rtol=1e-6)
    assert len(t.cells) == 9 * 17 and int((~t.empty).sum()) == 119
    assert isinstance(t.hierarchies[1], DimensionHierarchy) and t.hierarchies[1].total == "Total"
