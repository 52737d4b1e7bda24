"""Issue 27 (part 4): tau-ARGUS jobs in sdckit.tabular — the "missing is safe" option
(tau-ARGUS ``TableSet.missingIsSafe``: cells whose code in some dimension is a declared missing
code are never primary by a rule), a tabular job from a ``.tab`` + ``.rda`` (the flat dimension
whose cells carry the total's code), and ``Table.from_cells``'s ``top`` checked."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError
from sdckit.io import tauargus as ta
from sdckit.tabular import MinFrequency, PPercent, Table, link_tables, sensitivity
from sdckit.tabular.recipe import build_table, load_table_recipe, run_table_recipe

DATA = Path(__file__).parent / "data"
TAU = DATA / "tauargus"


def small():
    """Records over region (A, B, and the missing code 99) x size (s, l), one value each:
    A/s 3 records, A/l 1, B/s 2, B/l 4, 99/s 1, 99/l 3."""
    rows = ([("A", "s")] * 3 + [("A", "l")] + [("B", "s")] * 2 + [("B", "l")] * 4
            + [("99", "s")] + [("99", "l")] * 3)
    f = pd.DataFrame(rows, columns=["region", "size"])
    f["y"] = 10.0
    return Table.from_microdata(f, ["region", "size"], response="y")


def primaries(t, rules):
    s = sensitivity(t, rules)
    return sorted(map(tuple, t.cells.loc[s.primary, ["region", "size"]].to_numpy()))


def test_missing_is_safe_hand_worked():
    # MinFrequency(3): primary when 0 < contributors < 3: A/l (1), B/s (2), 99/s (1).
    t = small()
    assert primaries(t, MinFrequency(3)) == [("99", "s"), ("A", "l"), ("B", "s")]
    # 99 declared missing but the option off: the same (tau-ARGUS's default)
    assert primaries(t.with_missing({"region": ["99"]}, missing_is_safe=False), MinFrequency(3)) == \
        [("99", "s"), ("A", "l"), ("B", "s")]
    # option on: the cell 99/s (code 99 in region) is safe; the others stay primary
    u = t.with_missing({"region": "99"})
    assert u.missing == {"region": ("99",)} and u.missing_is_safe
    assert primaries(u, MinFrequency(3)) == [("A", "l"), ("B", "s")]
    # a cell given as primary stays primary
    s = sensitivity(u, MinFrequency(3), primary=[("99", "s")])
    assert s.primary[u.locate([("99", "s")])[0]]
    # the option travels into linked tables
    assert link_tables([u, u.with_missing({"region": ["99"]})]).missing_is_safe


def test_with_missing_checks_its_parameters():
    t = small()
    with pytest.raises(ParameterError, match="'codes' parameter of Table.with_missing names 'nope'"):
        t.with_missing({"nope": ["99"]})
    with pytest.raises(ParameterError, match="must map dimensions"):
        t.with_missing(["99"])
    with pytest.raises(ParameterError, match="missing_is_safe"):
        t.with_missing({"region": ["99"]}, missing_is_safe="yes")


def test_enterprise_job_with_missing_is_safe_has_tau_argus_primaries():
    # tau-ARGUS's own primaries of act x product (p% rule, p = 10, per holding, missing code 00
    # of act declared safe): 283 cells. Without the option sdckit flagged the 7 cells of act 00
    # as well.
    rda = ta.read_rda(TAU / "enterprise" / "example_enterprise.rda")
    f = ta.read_asc(TAU / "enterprise" / "example_enterprise.asc.gz", rda)
    dims = ["act", "product"]
    hier = {d: ta.hierarchy(rda, d, f[d].unique()) for d in dims}
    t = Table.from_microdata(f, dims, hier, response="turnover", holding="h_id")
    want = pd.read_csv(DATA / "tabular" / "tau_ent_act_product_primary.csv", dtype=str)
    want = set(map(tuple, want[dims].to_numpy()))
    off = sensitivity(t, PPercent(10)).primary
    u = t.with_missing({d: rda.variable(d).missing for d in dims})
    on = sensitivity(u, PPercent(10)).primary
    got = set(map(tuple, t.cells.loc[on, dims].to_numpy()))
    assert got == want and len(want) == 283
    extra = t.cells.loc[off & ~on, dims]
    assert len(extra) == 7 and (extra["act"] == "00").all() and not (on & ~off).any()


def _pp_job(tmp_path: Path, extra: str = "") -> Path:
    for f in ("pp.tab", "pp.rda", "region2.hrc"):
        shutil.copy(TAU / "tableinput" / f, tmp_path / f)
    recipe = tmp_path / "pp.toml"
    recipe.write_text('[table]\ninput = "pp.tab"\nrda = "pp.rda"\ndimensions = ["Size", "Region"]\n'
                      f'response = "Var2"\n{extra}\n[[rule]]\ntype = "p"\np = 10\n\n'
                      '[suppression]\nmethod = "fast"\n', encoding="utf-8")
    return recipe


def test_tau_argus_tabular_job_runs(tmp_path):
    # pp.tab lists every cell, totals included, with the total's code "Total" in each dimension;
    # Size has no hierarchy in pp.rda (flat), so "Total" is its root, not a child of itself.
    # 9 Size codes (Total, 2, 4-9 and the missing code 99) x 18 Region codes (region2.hrc: Total,
    # 4 groups, 12 regions, 99) = 162 cells.
    recipe = _pp_job(tmp_path)
    t, _ = build_table(load_table_recipe(recipe))
    assert len(t.cells) == 162 and t.hierarchies[0].codes[0] == "Total"
    assert sorted(t.hierarchies[0].codes[1:]) == ["2", "4", "5", "6", "7", "8", "9", "99"]
    assert t.missing == {"Size": ("99",), "Region": ("99",)} and not t.missing_is_safe
    result, paths = run_table_recipe(recipe, tmp_path / "out")
    assert result.audit.safe and result.primaries > 0 and paths["published"].exists()


def test_tau_argus_tabular_job_with_missing_is_safe(tmp_path):
    recipe = _pp_job(tmp_path, "missing_is_safe = true\n")
    t, _ = build_table(load_table_recipe(recipe))
    assert t.missing_is_safe
    # the 99 cells are empty in pp.tab (status E): never primary anyway, so the same primaries
    off, _ = build_table(load_table_recipe(_pp_job(tmp_path)))
    assert np.array_equal(sensitivity(t, PPercent(10)).primary, sensitivity(off, PPercent(10)).primary)


def test_recipe_missing_codes_checked(tmp_path):
    recipe = _pp_job(tmp_path, 'missing_is_safe = "yes"\n')
    with pytest.raises(ParameterError, match="missing_is_safe must be true or false"):
        load_table_recipe(recipe)
    recipe = _pp_job(tmp_path, 'missing_codes = { Nope = ["1"] }\n')
    with pytest.raises(ParameterError, match="missing_codes name 'Nope'"):
        load_table_recipe(recipe)


@pytest.mark.parametrize("top", [None, "top1", 3, ["top1", 2]])
def test_from_cells_top_must_be_a_list_of_columns(top):
    cells = pd.DataFrame({"d": ["a", "b", "Total"], "value": [3.0, 4.0, 7.0], "freq": [1, 2, 3],
                          "top1": [3.0, 4.0, 4.0]})
    with pytest.raises(ParameterError, match="'top' parameter of Table.from_cells must be a list"):
        Table.from_cells(cells, ["d"], top=top)
    assert Table.from_cells(cells, ["d"], top=["top1"]).n_top == 1


def test_flat_hierarchy_from_rda_leaves_the_total_code_out():
    # the codes of a .tab column include the <TOTCODE> ("Total"): the root, never its own child
    rda = ta.read_rda(TAU / "tableinput" / "pp.rda")
    h = ta.hierarchy(rda, "Size", ["Total", " 2", "4", "99"])
    assert h == {"2": "Total", "4": "Total", "99": "Total"}


# ------------------------------------------------------------ the .tab's status column and levels
# the 9 lines of pp.tab with status U (grep ';U;' pp.tab), with their protection levels
PP_UNSAFE = {("2", "Nr"): 0.75, ("2", "1"): 0.75, ("2", "4"): 0.75, ("2", "6"): 0.75, ("4", "Nr"): 0.75,
             ("4", "1"): 0.75, ("4", "Os"): 0.75, ("4", "6"): 0.75, ("9", "4"): 1288.15}


def test_tab_status_column_and_levels_decide_the_primaries(tmp_path):
    """tau-ARGUS takes a .tab's status codes (S safe, U unsafe, P protected) and protection levels
    as given: the primaries are exactly the 9 U cells, with the file's levels, whatever the p% rule
    says of the S cells (it would flag others: a cell of one contributor is p%-sensitive)."""
    recipe = _pp_job(tmp_path)
    t, _ = build_table(load_table_recipe(recipe))
    s = sensitivity(t, PPercent(10))
    got = {(a, b): (u, lo) for a, b, u, lo in zip(t.cells["Size"], t.cells["Region"], s.upper, s.lower)
           if s.primary[t.locate([(a, b)])[0]]}
    assert set(got) == set(PP_UNSAFE)
    for key, level in PP_UNSAFE.items():
        assert got[key] == pytest.approx((level, level))
    plain = dataclasses.replace(t, apriori=None)
    assert set(map(tuple, plain.cells.loc[sensitivity(plain, PPercent(10)).primary, ["Size", "Region"]].to_numpy())) \
        != set(PP_UNSAFE)  # the rule alone decides otherwise
    result, _ = run_table_recipe(recipe, tmp_path / "out")
    assert result.audit.safe and result.primaries == 9


def test_tab_status_codes_checked():
    rda = ta.read_rda(TAU / "tableinput" / "pp.rda")
    cells = ta.read_tab(TAU / "tableinput" / "pp.tab", rda)
    status, lower, upper = ta.tab_status(cells, rda)
    assert status.count("unsafe") == 9 and status.count("safe") == 110 and status.count(None) == 43  # E: empty
    assert lower[24] == upper[24] == 0.75
    cells.loc[0, rda.status] = "X"  # the grand total is not empty
    with pytest.raises(DataError, match="row 1 of the .tab has status 'X'"):
        ta.tab_status(cells, rda)


def _cross():
    """2 x 2 cells with margins: ax 3, ay 4, bx 50, by 60 (TT 117)."""
    f = pd.DataFrame({"r": list("aabb"), "c": list("xyxy"), "y": [3.0, 4.0, 50.0, 60.0]})
    return Table.from_microdata(f, ["r", "c"], response="y")


def test_status_protected_is_never_suppressed_and_safe_overrides_the_rule():
    from sdckit.tabular import suppress
    t = _cross()
    # ax primary (MinFrequency(2): one record each, so all four interior cells are flagged, unless
    # their status says safe). Without protection the cheapest pattern is the rectangle ax ay bx by
    # (4 + 50 + 60 = 114); with ay protected it is ax aT bx bT (7 + 50 + 110 = 167, hand-worked)
    keys = [("a", "y"), ("b", "x"), ("b", "y")]
    free = t.with_status(keys, ["safe"] * 3)
    r = suppress(free, MinFrequency(2), method="optimal")
    assert r.primaries == 1 and r.secondary_cost == pytest.approx(114.0) and r.audit.safe
    held = t.with_status(keys, ["protected", "safe", "safe"])
    r = suppress(held, MinFrequency(2), method="optimal")
    status = dict(zip(zip(r.cells["r"], r.cells["c"]), r.cells["status"]))
    assert status[("a", "y")] == "safe" and r.secondary_cost == pytest.approx(167.0) and r.audit.safe
    assert suppress(held, MinFrequency(2), method="fast").cells["status"].to_numpy()[held.locate([("a", "y")])[0]] == "safe"
    # unsafe with given levels: they replace the rule's
    lv = t.with_status([("b", "x")], ["unsafe"], lower=[20.0], upper=[30.0])
    s = sensitivity(lv, None)
    i = lv.locate([("b", "x")])[0]
    assert s.primary.sum() == 1 and (s.upper[i], s.lower[i]) == (30.0, 20.0)


def test_with_status_checked():
    t = _cross()
    with pytest.raises(ParameterError, match="takes 'safe', 'unsafe', 'protected' or None"):
        t.with_status([("a", "x")], ["S"])
    with pytest.raises(ParameterError, match="one entry per cell key"):
        t.with_status([("a", "x")], ["safe", "safe"])
    with pytest.raises(ParameterError, match="is given as primary but has the status 'protected'"):
        sensitivity(t.with_status([("a", "x")], ["protected"]), None, primary=[("a", "x")])
