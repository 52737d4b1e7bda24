"""Issue 27 (part 4): tau-ARGUS jobs in sdckit.tabular — the "missing is safe" option
(tau-ARGUS ``TableSet.missingIsSafe``: cells whose code in some dimension is a declared missing
code are never primary by a rule), a tabular job from a ``.tab`` + ``.rda`` (the flat dimension
whose cells carry the total's code), and ``Table.from_cells``'s ``top`` checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit import ParameterError
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
