"""The workbench's Tables screen with hierarchies, weights and the cell key method on sums
(issue 31, screen 5).

A region dimension with subtotals (north: n1, n2; south: s1, s2) crossed with a flat kind. With
MinFrequency(3) only (n1, p) (one record) is primary, and the cheapest protection (cost: the
cells' values) is worked by hand: a suppressed cell needs a suppressed partner in each equation
it is in — row n1 (n1 = p + q) and column p under north (north = n1 + n2) — so the rectangle
{(n1,p), (n1,q), (n2,p), (n2,q)} costs 1 + 5 + 4 + 6 = 16, and going through the subtotal
{(n1,p), (n1,q), (north,p), (north,q)} costs 1 + 5 + 5 + 11 = 22. The screen must show that
pattern, and the same as the library's own calls on a hierarchy built here by hand
(:meth:`DimensionHierarchy.from_parents`, :meth:`Table.from_microdata`, :class:`CellSuppression`).
The cell key method's sums and weighted counts are compared with :func:`cell_key_sums` and
:func:`cell_key_counts` on the same record keys. A bad hierarchy is one line, the form kept.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from app_browser_support import bench, browser, open_by_path, page, shot, unlabelled  # noqa: F401 (fixtures)

from sdckit.app.tables import CELL_KEY_STREAM, KEY_COLUMN, pattern, protect_table, table_request
from sdckit.core.errors import SdcError
from sdckit.core.random import parse_seed
from sdckit.tabular import CellKey, CellSuppression, DimensionHierarchy, MinFrequency, Table, cell_key_counts, ptable
from sdckit.tabular import cell_key_sums, record_keys

COUNTS = {("n1", "p"): 1, ("n1", "q"): 5, ("n2", "p"): 4, ("n2", "q"): 6,
          ("s1", "p"): 7, ("s1", "q"): 4, ("s2", "p"): 3, ("s2", "q"): 8}
PARENTS = {"north": "Total", "south": "Total", "n1": "north", "n2": "north", "s1": "south", "s2": "south"}
HRC = "north\n@n1\n@n2\nsouth\n@s1\n@s2\n"  # the same hierarchy as a tau-ARGUS .hrc file
MAPPING = "north: n1, n2\nsouth: s1, s2"  # and as the screen's level mapping
#: The hand-worked pattern (rows: region, columns: Total, p, q) and the suppressed cells' statuses.
HAND_SHOWN = {"Total": ["38", "15", "23"], "north": ["16", "5", "11"], "n1": ["6", "x", "x"],
              "n2": ["10", "x", "x"], "south": ["22", "10", "12"], "s1": ["11", "7", "4"], "s2": ["11", "3", "8"]}
HAND_STATUS = {("n1", 1): "primary", ("n1", 2): "secondary", ("n2", 1): "secondary", ("n2", 2): "secondary"}
SEED = "0x" + "5e" * 16


def shops() -> pd.DataFrame:
    rows = [(a, b, 10.0 + 3 * i + k, 1.0 + (i % 3) / 2) for k, ((a, b), n) in enumerate(COUNTS.items())
            for i in range(n)]
    return pd.DataFrame(rows, columns=["region", "kind", "turnover", "w"])


def library_pattern(frame: pd.DataFrame) -> tuple[dict[str, list[tuple[str, str]]], str]:
    """The oracle: the library's own calls on the hand-built hierarchy; (row -> [(text, status)], verdict)."""
    table = Table.from_microdata(frame, ["region", "kind"], {"region": DimensionHierarchy.from_parents(PARENTS)})
    protection = CellSuppression((MinFrequency(3),), method="optimal")
    result = protection.apply(table)
    rows: dict[str, list[tuple[str, str]]] = {}
    for _, cell in result.cells.iterrows():
        hidden = cell["status"] in ("primary", "secondary")
        rows.setdefault(cell["region"], []).append(("x" if hidden else f"{cell['value']:,.10g}", cell["status"]))
    return rows, protection.verdict(result)[1]


def test_the_hierarchical_pattern_is_the_hand_worked_one_and_the_librarys(page, bench, tmp_path):
    frame = shops()
    path = tmp_path / "shops.csv"
    frame.to_csv(path, index=False)
    (tmp_path / "region.hrc").write_text(HRC)
    expected, verdict = library_pattern(frame)
    assert {code: [t for t, _ in cells] for code, cells in expected.items()} == HAND_SHOWN
    assert verdict == "safe: 1 of 1 primary cells protected"
    open_by_path(page, bench, path)
    page.goto(f"{bench.base}/tables")
    page.click("#hierarchies summary")
    assert unlabelled(page) == []
    page.check("input[name=dimension][value=region]")
    page.check("input[name=dimension][value=kind]")
    page.fill("textarea[name='hierarchy:region']", "region.hrc")  # beside the data file
    page.fill("#min_frequency", "3")
    page.select_option("#protection", "suppression-optimal")
    page.click("#protect-table")
    page.wait_for_url("**/tables")
    page.locator("#pattern").wait_for()
    shot(page, "5-tables-hierarchy", at="#pattern-heading")
    rows = page.locator("#pattern tbody tr")
    assert rows.count() == len(HAND_SHOWN)
    for i, code in enumerate(HAND_SHOWN):  # depth-first: Total, north, n1, n2, south, s1, s2
        row = rows.nth(i)
        assert row.locator("th").inner_text() == code
        depth = 0 if code == "Total" else 1 if code in ("north", "south") else 2
        assert row.locator("th").get_attribute("class") == f"depth-{depth}"  # indented by level
        cells = row.locator("td")
        shown = [(cells.nth(j).inner_text(), cells.nth(j).get_attribute("data-status")) for j in range(3)]
        assert shown == expected[code]
        assert [s for _, s in shown] == [HAND_STATUS.get((code, j), "safe") for j in range(3)]
    assert page.locator("#table-verdict").inner_text() == verdict
    assert "region.hrc" in page.locator("#table-description").inner_text()
    assert page.locator("textarea[name='hierarchy:region']").input_value() == "region.hrc"  # the form kept


def test_a_bad_hierarchy_is_one_line_and_the_form_is_kept(page, bench, tmp_path):
    path = tmp_path / "shops.csv"
    shops().to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.goto(f"{bench.base}/tables")
    page.click("#hierarchies summary")
    page.check("input[name=dimension][value=region]")
    bad = "north: n1\nsouth: s1, s2"  # n2 is in the data but not in the hierarchy
    page.fill("textarea[name='hierarchy:region']", bad)
    page.fill("#min_frequency", "3")
    page.click("#protect-table")
    error = page.locator("#error")
    assert error.is_visible() and "\n" not in error.inner_text().strip()
    assert "The hierarchy of 'region'" in error.inner_text() and "not in its hierarchy" in error.inner_text()
    assert page.locator("textarea[name='hierarchy:region']").input_value() == bad
    assert page.locator("input[name=dimension][value=region]").is_checked()
    assert page.locator("#min_frequency").input_value() == "3"
    assert page.locator("#pattern").count() == 0  # nothing was protected


@pytest.mark.parametrize("text, folder, message", [
    ("north: n1, n2\nsouth s1, s2", True, "line 2"),
    ("north: n1, n2\nsouth: n2, s1, s2", True, "'n2' has two parents"),
    ("north: n1, n2\nsouth: s1", True, "not in its hierarchy"),
    ("Total: north, south\nnorth: n1, n2, s1\nsouth: s2", True, None),  # another valid hierarchy
    ("missing.hrc", True, "no file at"),
    ("region.hrc", False, "give the full path"),  # an uploaded data set has no folder
    ("1", True, "HIERLEVELS"),  # code lengths: n1 is 2 characters
    ("bad.hrc", True, "levels deeper"),
    ("nested.csv", True, "needs columns child and parent"),
])
def test_hierarchy_inputs_are_checked_in_one_line(tmp_path, text, folder, message):
    (tmp_path / "region.hrc").write_text(HRC)
    (tmp_path / "bad.hrc").write_text("north\n@@n1\n")
    (tmp_path / "nested.csv").write_text("code,up\nn1,north\n")
    form = {"protection": "suppression-fast", "min_frequency": "3", "hierarchy:region": text}
    call = lambda: table_request(shops(), {}, form, ["region", "kind"], tmp_path if folder else None)  # noqa: E731
    if message is None:
        assert call().trees[0].parent("s1") == "north"
        return
    with pytest.raises(SdcError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value) and str(caught.value).startswith("The hierarchy of 'region'")


def test_the_typed_hrc_and_lengths_hierarchies_give_the_same_table(tmp_path):
    frame = shops()
    (tmp_path / "region.hrc").write_text(HRC)
    seen = []
    for text in (MAPPING, str(tmp_path / "region.hrc")):
        form = {"protection": "suppression-optimal", "min_frequency": "3", "hierarchy:region": text}
        outcome = protect_table(frame, table_request(frame, {}, form, ["region", "kind"]))
        seen.append({code: [(c.text, c.status) for c in cells] for code, cells in pattern(outcome)["rows"]})
    assert seen[0] == seen[1] == library_pattern(frame)[0]
    coded = frame.assign(region=frame["region"].map({"n1": "N1", "n2": "N2", "s1": "S1", "s2": "S2"}))
    lengths = table_request(coded, {}, {"protection": "suppression-fast", "min_frequency": "3",
                                        "hierarchy:region": "1, 1"}, ["region"])
    assert lengths.trees[0].to_parents() == {"N": "Total", "S": "Total", "N1": "N", "N2": "N", "S1": "S", "S2": "S"}


def keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """The records with the keys the workbench draws for a session of seed SEED."""
    stream = np.random.SeedSequence([parse_seed(SEED), CELL_KEY_STREAM])
    return frame.assign(**{KEY_COLUMN: record_keys(len(frame), stream)})


def test_cell_key_sums_on_a_hierarchy_are_the_librarys(tmp_path):
    frame = shops()
    form = {"protection": "cell-key", "response": "turnover", "ckm_d": "3", "ckm_v": "2", "ckm_fp": "20",
            "ckm_p_small": "0.3", "ckm_p_large": "0.05", "ckm_epsilon": "1, 0.5", "ckm_top_k": "2",
            "ckm_supp_freq": "2", "ckm_mu_c": "1.5", "hierarchy:region": MAPPING}
    request = table_request(frame, {}, form, ["region", "kind"])
    assert dict(request.cell_key) == {"D": 3, "V": 2.0, "fp": 20.0, "p_small": 0.3, "p_large": 0.05,
                                      "epsilon": (1.0, 0.5), "top_k": 2, "supp_freq": 2, "mu_c": 1.5}
    outcome = protect_table(frame, request, seed=SEED)
    # the oracle: cell_key_sums with the flex function of the recipe's [cell_key] and the hand-built hierarchy
    method = CellKey(record_key="k", D=3, V=2.0, fp=20.0, p_small=0.3, p_large=0.05, epsilon=(1.0, 0.5), top_k=2,
                     supp_freq=2, mu_c=1.5)
    cells = cell_key_sums(keyed(frame).rename(columns={KEY_COLUMN: "k"}), ["region", "kind"], "k", "turnover",
                          method.sum_params(), hierarchies={"region": DimensionHierarchy.from_parents(PARENTS)},
                          supp_freq=2)
    expected = {(r, k): f"{v:,.10g}" for r, k, v in zip(cells["region"], cells["kind"], cells["sum_pert"])}
    shown = pattern(outcome)
    got = {(code, col): c.text for code, row in shown["rows"] for col, c in zip(shown["columns"], row)}
    assert got == expected and (cells["pert"] != 0).any()
    assert [code for code, _ in shown["rows"]] == list(HAND_SHOWN)
    assert dict(outcome.figures)["cells"] == str(len(cells))
    assert outcome.disclosure == ()  # the counts' disclosure table is for counts
    refused = dict(form, ckm_epsilon="0.5, 1")  # the flex function's own rule: descending from 1
    with pytest.raises(SdcError, match="epsilon") as caught:
        table_request(frame, {}, refused, ["region", "kind"])
    assert "\n" not in str(caught.value)


def test_weighted_cell_key_counts_and_weighted_suppression_are_the_librarys():
    frame = shops()
    form = {"protection": "cell-key", "ckm_d": "3", "ckm_v": "2", "ckm_js": "1", "weight": "w",
            "hierarchy:region": MAPPING}
    outcome = protect_table(frame, table_request(frame, {}, form, ["region"]), seed=SEED)
    cells = cell_key_counts(keyed(frame), ["region"], KEY_COLUMN, ptable(3, 2, js=1),
                            hierarchies={"region": PARENTS}, weight="w")
    rows = pattern(outcome)["rows"]
    assert [codes[0] for codes, _ in rows] == list(cells["region"])
    assert [c.text for _, c in rows] == [f"{v:,.10g}" for v in cells["weighted_pert"]]
    suppressed = protect_table(frame, table_request(frame, {}, {"protection": "suppression-optimal",
                                                                "min_frequency": "3", "weight": "w"}, ["region"]))
    table = Table.from_microdata(frame, ["region"], weight="w")
    assert np.allclose(suppressed.result.cells["value"], table.cells["value"])
    assert suppressed.request.describe().startswith("counts weighted by w by region")
    with pytest.raises(SdcError, match="cannot weight"):
        table_request(frame, {}, dict(form, weight="region"), ["region"])
