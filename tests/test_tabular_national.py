"""Tables at national scale (issue 14): small cells beside huge totals keep their own protection
levels and are audited to them, and the flow heuristic finds every protecting flow on a
neighbourhood of the primary (the whole-table LP is never needed for them)."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from tabular_helpers import table2d

from sdckit.tabular import Manual, MinFrequency, Table, audit_pattern, sensitivity, suppress
from sdckit.tabular.precision import AUDIT_TOL, LEVEL_FLOOR, value_scale
from sdckit.tabular.suppress import SuppressionProblem, cell_costs

L = importlib.import_module("sdckit.tabular.suppress.limits")


RECT = [("r0", "c0"), ("r0", "c1"), ("r1", "c0"), ("r1", "c1")]


def test_a_small_cell_beside_a_huge_total_keeps_its_rule_level():
    # interior [[30, 20], [4e8, 1e8]]: the grand total is 5e8 + 50. The frequency rule's level of
    # the cell of 30 is 10% = 3 (the former floor of 1e-6 x 5e8 made it 500, 17 times the cell)
    t = table2d([[30, 20], [4e8, 1e8]])
    t.cells["contributors"] = np.where(t.cells["value"] == 30, 1, 5)
    s = sensitivity(t, MinFrequency(3))
    p = t.locate([("r0", "c0")])[0]
    assert s.primary.sum() == 1 and s.primary[p]
    assert s.upper[p] == pytest.approx(3.0) and s.lower[p] == pytest.approx(3.0)


def test_a_zero_or_tiny_level_is_raised_to_the_floor():
    t = table2d([[30, 20], [4e8, 1e8]])
    s = sensitivity(t, Manual([("r0", "c0")], share=1e-15))
    p = t.locate([("r0", "c0")])[0]
    scale = 5e8 + 50
    assert value_scale(t.cells["value"].to_numpy()) == pytest.approx(scale)
    assert s.upper[p] == pytest.approx(LEVEL_FLOOR * scale)  # 0.5: above the audit's tolerance
    assert LEVEL_FLOOR >= 10 * AUDIT_TOL


def test_the_audit_sees_a_shortfall_of_5_beside_a_total_of_5e8():
    # suppressing the rectangle r0/r1 x c0/c1, x00 = 30 lies in [30 - min(30, 1e8), 30 + min(20, 4e8)]
    # = [0, 50] (Fischetti & Salazar's attacker problem, the 2-D closed form). Level 25 needs 55:
    # short by 5, which the former tolerance (1e-7 x 5e8 = 50) let pass. Level 20 needs 50: met.
    t = table2d([[30, 20], [4e8, 1e8]])
    m = np.zeros(len(t.cells), bool)
    m[t.locate(RECT)] = True
    short = audit_pattern(t, m, sensitivity(t, Manual([("r0", "c0")], share=25 / 30)))
    row = short.cells.iloc[t.locate([("r0", "c0")])[0]]
    # (each equation keeps a slack of 1e-12 x 5e8 for float sums: hi may exceed 50 by 5e-4)
    assert row["lo"] == pytest.approx(0.0, abs=1e-3) and row["hi"] == pytest.approx(50.0, abs=1e-3)
    assert not short.safe and short.unprotected == 1
    met = audit_pattern(t, m, sensitivity(t, Manual([("r0", "c0")], share=20 / 30)))
    assert met.safe


HIER = {"a": {**{f"a{i}": "A1" for i in range(4)}, **{f"a{i}": "A2" for i in range(4, 8)}},
        "b": {**{f"b{i}": "B1" for i in range(3)}, **{f"b{i}": "B2" for i in range(3, 6)}}}


def _national(seed: int = 3, n: int = 6000) -> Table:
    """A 3-D table (11 x 9 x 4 codes) of skewed records with one contribution of 1e9: small cells
    beside a grand total of about 1e9."""
    rng = np.random.default_rng(seed)
    za = 1.0 / np.arange(1, 9) ** 1.3
    zb = 1.0 / np.arange(1, 7) ** 1.5
    f = pd.DataFrame({"a": rng.choice([f"a{i}" for i in range(8)], n, p=za / za.sum()),
                      "b": rng.choice([f"b{i}" for i in range(6)], n, p=zb / zb.sum()),
                      "c": rng.choice(["c0", "c1", "c2"], n, p=[0.6, 0.3, 0.1]),
                      "y": rng.lognormal(3.0, 1.0, n).round(2)})
    f.loc[0, ["a", "b", "c", "y"]] = ["a0", "b0", "c0", 1e9]
    return Table.from_microdata(f, ["a", "b", "c"], HIER, response="y")


def test_fast_protects_every_primary_on_its_neighbourhood_beside_a_huge_total(monkeypatch):
    """The table is treated as large (local flows first); the whole-table flow LP is forbidden:
    with levels of 10% of the small cells every primary has a protecting flow on its
    neighbourhood. (With the former floor, 1e-6 x 1e9 = 1,000 above cells worth ~20, none
    had, and every primary went to the whole-table LP.)"""
    t = _national()
    rules = [MinFrequency(3)]
    s = sensitivity(t, rules)
    v = np.abs(t.cells["value"].to_numpy())
    P = np.flatnonzero(s.primary)
    assert len(P) > 20 and v.max() > 1e9 and np.median(v[P]) < 100
    assert np.allclose(s.upper[P], np.maximum(0.1 * v[P], LEVEL_FLOOR * v.max()))

    def whole_table(*args, **kwargs):
        raise AssertionError("whole-table flow LP used")

    monkeypatch.setattr(L, "LOCAL_ABOVE", 100)
    monkeypatch.setattr(L, "POLISH_WHOLE", 100)
    monkeypatch.setattr(L, "REDUNDANCY_LPS", 500)
    monkeypatch.setattr(SuppressionProblem, "flow", whole_table)
    r = suppress(t, rules, method="fast")
    assert r.audit.safe and r.primaries == len(P)
    rows = r.audit.cells.iloc[P]
    assert (rows["hi"] >= rows["value"] + rows["upper"] - 1e-6).all()
    assert (rows["lo"] <= rows["value"] - rows["lower"] + 1e-6).all()
    # the grand total is never needed to protect a small cell here
    assert r.cells.iloc[t.locate([("Total", "Total", "Total")])[0]]["status"] == "safe"


def _problem(table: Table, primary) -> object:
    s = sensitivity(table, None, primary=primary)
    return SuppressionProblem(table, s, cell_costs(table, "value"))


def test_neighbourhoods_grow_from_the_siblings_to_the_grandparents_subtree():
    # a: Total -> A1 (a0..a3), A2 (a4..a7); b: Total -> B1 (b0..b2), B2 (b3..b5); c flat (c0..c2)
    t = _national()
    prob = _problem(t, [("a1", "b4", "c2")])
    p = int(prob.prim[0])
    codes = t.cells.iloc[prob.cand][["a", "b", "c"]]

    def cells(sub):
        return {tuple(r) for r in codes.iloc[sub].itertuples(index=False)}

    def grid(a, b, c):
        return {(x, y, z) for x in a for y in b for z in c} & cells(np.arange(len(prob.cand)))

    A1 = ["Total", "A1", "a0", "a1", "a2", "a3"]
    B2 = ["Total", "B2", "b3", "b4", "b5"]
    C = ["Total", "c0", "c1", "c2"]
    assert cells(prob.neighbourhood(p)) == grid(A1, B2, C)
    # one sibling each: the largest by its one-way margin (a0 and b3 carry the most records)
    assert cells(prob.neighbourhood(p, siblings=1)) == grid(["Total", "A1", "a1", "a0"], ["Total", "B2", "b4", "b3"],
                                                            ["Total", "c2", "c0"])
    every_a = ["Total", "A1", "A2"] + [f"a{i}" for i in range(8)]
    assert cells(prob.neighbourhood(p, up=(2, 1, 1))) == grid(every_a, B2, C)
    assert prob.reaches == [(3, None), (None, None), (None, (2, 1, 1)), (None, (1, 2, 1)), (None, (2, 2, 1))]


# ------------------------------------------------------------------ recipe input through DuckDB
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_recipe_builds_its_table_from_a_file_of_records_through_duckdb(tmp_path, monkeypatch, fmt):
    """``[table] input`` = a CSV/Parquet file of records is aggregated by DuckDB
    (``Table.from_file``), never read into pandas; a hierarchy by code lengths takes its codes
    from the file. Same cells as ``Table.from_microdata`` on the records (codes '011', '012',
    '021' -> '01', '02' -> Total)."""
    from sdckit.tabular import recipe as recipe_module
    from sdckit.tabular.hierarchy import DimensionHierarchy
    from sdckit.tabular.recipe import build_tables, load_table_recipe

    records = pd.DataFrame({"region": ["011", "011", "012", "021", "021", "021"],
                            "size": ["s", "l", "s", "s", "l", "l"],
                            "turnover": [10.0, 200.0, 15.0, 7.0, 90.0, 60.0]})
    data = tmp_path / f"records.{fmt}"
    if fmt == "csv":
        records.to_csv(data, index=False)
    else:
        records.to_parquet(data)
    (tmp_path / "r.toml").write_text(
        f'[table]\ninput = "records.{fmt}"\ndimensions = ["region", "size"]\nresponse = "turnover"\n'
        '[table.hierarchies]\nregion = {lengths = [2, 1]}\n[[rule]]\ntype = "frequency"\nn = 2\n')

    def no_pandas(*args, **kwargs):
        raise AssertionError("the records were read into pandas")

    monkeypatch.setattr(recipe_module, "read", no_pandas)
    table = build_tables(load_table_recipe(tmp_path / "r.toml"))
    hier = DimensionHierarchy.from_lengths(["011", "012", "021"], [2, 1], name="region")
    expected = Table.from_microdata(records, ["region", "size"], {"region": hier}, response="turnover")
    got = table.cells.set_index(["region", "size"]).sort_index()
    want = expected.cells.set_index(["region", "size"]).sort_index()
    assert list(got.index) == list(want.index)
    assert np.allclose(got["value"], want["value"]) and (got["freq"] == want["freq"]).all()
    assert got.loc[("01", "s"), "value"] == pytest.approx(25.0)  # 011 s + 012 s, by hand
    assert got.loc[("Total", "l"), "value"] == pytest.approx(350.0)
