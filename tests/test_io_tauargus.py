"""tau-ARGUS readers (issue 13): real files from sdcTools/tauargus and checkTauArgus (see
tests/data/PROVENANCE.txt), facts checked by hand against the files, and every bad-input path."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdckit
from sdckit import DataError, ParameterError
from sdckit.io import tauargus as ta

DATA = Path(__file__).parent / "data" / "tauargus"
TABLE = DATA / "tableinput"
MICRO = DATA / "microdata"
ENTERPRISE = DATA / "enterprise"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ============================================================================ .rda
def test_rda_of_tabular_input_has_every_role():
    rda = ta.read_rda(TABLE / "pp.rda")
    assert rda.kind == "table" and rda.separator == ";"
    assert rda.names == ["Size", "Region", "Var2", "FreqVar", "Var2_Shadow", "Var2_Cost", "Top1",
                         "Top2", "StatusVar", "LowerProtLevel", "UpperProtLevel"]
    assert rda.explanatory == ["Size", "Region"]
    assert rda.response == ["Var2"] and rda.frequency == "FreqVar"
    assert rda.top == ["Top1", "Top2"] and rda.status == "StatusVar"
    assert [rda.variable(n).role for n in ("Var2_Shadow", "Var2_Cost", "LowerProtLevel",
                                           "UpperProtLevel")] == ["shadow", "cost", "lower_pl", "upper_pl"]
    assert (rda.safe, rda.unsafe, rda.protect) == ("S", "U", "P")
    region = rda.variable("Region")
    assert region.missing == ("99",) and region.totcode == "Total"
    assert region.hierarchy == "file" and region.hiercodelist == "region2.hrc"
    assert region.hierleadstring == "@" and region.codelist == "REGION.CDL"
    assert region.distance == (2, 4, 4, 4, 4)
    assert rda.variable("Var2").decimals == 2
    assert region.start is None and region.length is None


def test_rda_of_fixed_width_microdata_has_positions_and_roles():
    rda = ta.read_rda(MICRO / "Tau_TestW.rda")
    assert rda.kind == "fixed"
    layout = {v.name: (v.start, v.length) for v in rda.variables}
    assert layout["Year"] == (1, 2) and layout["IndustryCode"] == (4, 5)
    assert layout["Var8"] == (88, 10) and layout["Request"] == (99, 1)
    industry = rda.variable("IndustryCode")
    assert industry.hierarchy == "levels" and industry.hierlevels == (3, 1, 1)
    assert industry.missing == ("99999",) and industry.distance == (1, 3, 5, 7, 9)
    assert rda.variable("Region").hiercodelist == "region2.hrc"
    wgt = rda.variable("Wgt")
    assert rda.weight == "Wgt" and wgt.decimals == 1 and wgt.missing == ("9999",)
    assert rda.variable("Request").role == "request" and rda.variable("Request").request == ("1", "2")
    assert rda.variable("Request").missing == ()
    assert rda.explanatory == ["Year", "IndustryCode", "Size", "Region"]
    assert rda.response == [f"Var{i}" for i in range(1, 9)]


def test_rda_with_windows_paths_and_holding():
    rda = ta.read_rda(ENTERPRISE / "example_enterprise.rda")
    assert rda.holding == "h_id" and rda.variable("act").missing == ("00",)
    assert rda.variable("mun").hiercodelist.endswith(r"Testni_podatki\NUTS.hrc")
    # the Windows path does not exist here: tau-ARGUS's rule finds the file beside the .rda
    assert ta.read_rda(ENTERPRISE / "example_enterprise.rda").referenced_file(
        rda.variable("region").hiercodelist) == ENTERPRISE / "KohStatReg.hrc"


def test_rda_keeps_unknown_keywords_and_comments(tmp_path):
    path = _write(tmp_path / "x.rda", '// a comment\n<FUTURE> 1 "two words"\nA 1 2 "9"\n'
                  "  <RECODEABLE>\n  <BRANDNEW> x y // trailing comment\nB 3 4\n  <NUMERIC>\n")
    rda = ta.read_rda(path)
    assert rda.keywords == (ta.Keyword("<FUTURE>", ("1", "two words"), 2),)
    assert rda.variable("A").keyword("<brandnew>") == ta.Keyword("<BRANDNEW>", ("x", "y"), 5)
    assert rda.variable("A").missing == ("9",) and rda.variable("B").role == "response"


def test_rda_free_format_microdata(tmp_path):
    rda = ta.read_rda(_write(tmp_path / "f.rda", '<SEPARATOR> ","\nA 2 "99"\n <RECODEABLE>\n'
                             "B 6\n <NUMERIC>\n"))
    assert rda.kind == "free" and rda.separator == ","
    assert (rda.variable("A").start, rda.variable("A").length) == (None, 2)
    frame = ta.read_asc(_write(tmp_path / "f.asc", '1,2.5\n"99",\n2,99\n'), rda)
    assert frame["A"].tolist() == ["1", "99", "2"]
    assert frame["B"].tolist() == [2.5, 0, 99]  # blank -> 0; "99" is a missing code of A, not of B


RDA_ERRORS = [
    ("  <RECODEABLE>\nA 1 2\n", "line 1", "before any variable"),
    ("A x 2\n", "line 1", "start column"),
    ("A 1 0\n", "line 1", "width"),
    ("A 1\n", "line 1", "a start column and a width"),
    ('A 1 2 "123"\n', "line 1", "wider than the variable"),
    ("A 1 2 1 2 3\n", "line 1", "more than 2 missing codes"),
    ("A 1 5\n <HIERLEVELS> 2 2\n", "line 2", "add up to 4"),
    ("A 1 2\nB 3 2\na 5 2\n", "line 3", "declared twice (first at line 1)"),
    ('A 1 2 "9\n', "line 1", "not closed"),
    ("A 1 2\n <DECIMALS> two\n", "line 2", "whole numbers"),
    ("A 1 2\n <TOTCODE>\n", "line 2", "needs a value"),
    ("// only a comment\n", "", "holds no variable"),
    ('<SEPARATOR> ""\nA 2\n', "line 1", "needs one value"),
]


@pytest.mark.parametrize(("text", "line", "message"), RDA_ERRORS)
def test_rda_errors_name_file_and_line(tmp_path, text, line, message):
    path = _write(tmp_path / "bad.rda", text)
    with pytest.raises(DataError) as err:
        ta.read_rda(path)
    text_of = str(err.value)
    assert "bad.rda" in text_of and line in text_of and message in text_of
    assert "\n" not in text_of


def test_missing_files_are_named(tmp_path):
    for call in (lambda p: ta.read_rda(p), lambda p: ta.read_hrc(p),
                 lambda p: ta.read_asc(p, MICRO / "Tau_TestW.rda"),
                 lambda p: ta.read_tab(p, TABLE / "pp.rda")):
        with pytest.raises(DataError, match="not found.*nothere"):
            call(tmp_path / "nothere")
    with pytest.raises(DataError, match="empty"):
        ta.read_rda(_write(tmp_path / "empty.rda", "\n  \n"))
    with pytest.raises(ParameterError, match="kind"):
        ta.read_rda(TABLE / "pp.rda", kind="tab")


# ============================================================================ .asc
def test_asc_records_match_the_file():
    frame = ta.read_asc(MICRO / "tau_testW_head.asc", MICRO / "Tau_TestW.rda")
    assert frame.shape == (500, 14)
    # record 1 and record 500, read by hand from the file with a column ruler
    first = frame.iloc[0]
    assert (first.Year, first.IndustryCode, first.Size, first.Region) == ("84", "34100", "8", "9")
    assert first.Wgt == pytest.approx(2.2) and first.Var1 == 9272 and first.Var2 == pytest.approx(28.26)
    assert [first[f"Var{i}"] for i in range(3, 9)] == [166760, 279434, 2009571, 367159, 527645, 216851]
    assert first.Request == "0"
    last = frame.iloc[-1]
    assert (last.IndustryCode, last.Size, last.Region, last.Wgt) == ("15000", "7", "6", 2.2)
    assert [last[f"Var{i}"] for i in range(1, 9)] == [3, 5, 8, 12, 1, 7, 6, 11]
    assert frame["Var1"].dtype.kind == "i" and frame["Region"].dtype == object


def test_asc_gz_enterprise_holdings_and_sdckit_read():
    frame = sdckit.read(ENTERPRISE / "example_enterprise.asc.gz")  # finds the .rda beside it
    assert frame.shape == (8169, 6) and frame["h_id"].nunique() == 5100
    first, last = frame.iloc[0], frame.iloc[-1]
    assert list(first) == ["101010008", "20", "08", "12", "050", 206.57]
    assert list(last) == ["294062377", "49", "12", "09", "041", 139.42]
    same = sdckit.read(MICRO / "tau_testW_head.asc", rda=MICRO / "Tau_TestW.rda")
    assert same.shape == (500, 14)


def test_asc_missing_codes_become_nan_for_numbers_only(tmp_path):
    rda = ta.read_rda(_write(tmp_path / "m.rda", "K 1 2 99\n <RECODEABLE>\nV 3 4 9999 -1\n <NUMERIC>\n"))
    frame = ta.read_asc(_write(tmp_path / "m.asc", "99  12\n 1  -1\n 2    \n 39999\n 4 2.5\n"), rda)
    assert frame["K"].tolist() == ["99", "1", "2", "3", "4"]  # an explanatory missing code stays a code
    values = frame["V"].tolist()  # missing codes -> NaN; a blank field is 0 as tau-ARGUS reads it
    assert values[0] == 12 and math.isnan(values[1]) and values[2] == 0 and math.isnan(values[3])
    assert values[4] == 2.5


def test_asc_errors_name_line_and_variable_never_the_value(tmp_path):
    rda = ta.read_rda(_write(tmp_path / "m.rda", "K 1 2\n <RECODEABLE>\nV 3 4\n <NUMERIC>\n"))
    with pytest.raises(DataError, match=r"m\.asc' line 2: the record has 4 characters but variable 'V' ends at column 6"):
        ta.read_asc(_write(tmp_path / "m.asc", " 1  12\n 1 1\n"), rda)
    with pytest.raises(DataError, match=r"line 3: the value of variable 'V' is not a number") as err:
        ta.read_asc(_write(tmp_path / "m.asc", " 1  12\n\n 2 7x9\n"), rda)
    assert "7x9" not in str(err.value)
    wide = ta.read_rda(_write(tmp_path / "w.rda", "V 1 21\n <NUMERIC>\n"))
    assert ta.read_asc(_write(tmp_path / "w.asc", "100000000000000000000\n"), wide)["V"][0] == 1e20
    for word in ("inf", "nan", "1_00", "0x1"):  # Python would parse some; tau-ARGUS does not
        with pytest.raises(DataError, match=r"line 2: the value of variable 'V'"):
            ta.read_asc(_write(tmp_path / "m.asc", f" 1   1\n 1{word:>4}\n"), rda)
    with pytest.raises(DataError, match="tabular input"):
        ta.read_asc(_write(tmp_path / "m.asc", " 1  12\n"), TABLE / "pp.rda")
    free = ta.read_rda(_write(tmp_path / "f.rda", '<SEPARATOR> ";"\nA 2\n <RECODEABLE>\n'))
    with pytest.raises(DataError, match=r"f\.asc' line 2: has 2 fields separated by ';' but the \.rda declares 1"):
        ta.read_asc(_write(tmp_path / "f.asc", "1\n2;3\n"), free)


def test_sdckit_read_needs_an_rda(tmp_path):
    data = _write(tmp_path / "lonely.asc", "12\n")
    with pytest.raises(DataError, match="No single .rda file beside"):
        sdckit.read(data)
    _write(tmp_path / "LONELY.rda", "A 1 2\n <NUMERIC>\n")
    assert sdckit.read(data)["A"].tolist() == [12]
    with pytest.raises(ParameterError, match="only rda="):
        sdckit.read(data, nrows=3)


# ============================================================================ .tab
def test_tab_cells_match_the_file():
    rda = ta.read_rda(TABLE / "pp.rda")
    cells = ta.read_tab(TABLE / "pp.tab", rda)
    assert len(cells) == 162 and list(cells.columns) == rda.names
    top = cells.iloc[0]  # line 1: "Total";"Total";16847646,84;42723;...;175677,00;141482,00;S;0,01;0,01
    assert (top.Size, top.Region, top.FreqVar, top.StatusVar) == ("Total", "Total", 42723, "S")
    assert top.Var2 == pytest.approx(16847646.84) and (top.Top1, top.Top2) == (175677, 141482)
    cell = cells.iloc[24]  # line 25: " 2";" 4";4,00;1;5,00;5,00;4,00;0,00;U;0,75;0,75
    assert (cell.Size, cell.Region, cell.Var2, cell.FreqVar, cell.Var2_Shadow) == ("2", "4", 4, 1, 5)
    assert (cell.StatusVar, cell.LowerProtLevel, cell.UpperProtLevel) == ("U", 0.75, 0.75)
    assert cells["FreqVar"].dtype.kind == "i"
    assert (cells["StatusVar"] == rda.unsafe).sum() == 9  # grep -c ';U;' pp.tab


def test_tab_errors(tmp_path):
    rda = ta.read_rda(_write(tmp_path / "t.rda", 'A\n <RECODEABLE>\n <TOTCODE> "T"\nV\n <NUMERIC>\nF\n <FREQUENCY>\n'))
    assert rda.kind == "table" and rda.separator == ";"  # tau-ARGUS's default separator
    assert ta.read_tab(_write(tmp_path / "t.tab", '"T";3,5;2\na;3,5;2\n'), rda)["V"].tolist() == [3.5, 3.5]
    with pytest.raises(DataError, match=r"t\.tab' line 2: has 2 fields"):
        ta.read_tab(_write(tmp_path / "t.tab", "a;1;1\nb;1\n"), rda)
    with pytest.raises(DataError, match=r"t\.tab' line 1: the value of variable 'F' is not a number"):
        ta.read_tab(_write(tmp_path / "t.tab", "a;1;zwei\n"), rda)
    with pytest.raises(DataError, match="not tabular input"):
        ta.read_tab(tmp_path / "t.tab", MICRO / "Tau_TestW.rda")


# ============================================================================ .hrc
def test_hrc_parents_written_out():
    assert ta.read_hrc(TABLE / "region2.hrc") == {
        "Nr": "Total", "1": "Nr", "2": "Nr", "3": "Nr",
        "Os": "Total", "4": "Os", "5": "Os", "6": "Os", "7": "Os",
        "Ws": "Total", "8": "Ws", "9": "Ws", "10": "Ws",
        "Zd": "Total", "11": "Zd", "12": "Zd"}
    assert ta.read_hrc(MICRO / "Region.hrc", total="NL") == {
        "A": "NL", "1": "A", "2": "A", "B": "NL", "3": "B", "4": "B", "5": "B",
        "C": "NL", "6": "C", "7": "C", "8": "C"}


def test_hierarchy_from_rda_files_levels_and_flat():
    rda = ta.read_rda(TABLE / "pp.rda")
    assert ta.hierarchy(rda, "Region")["12"] == "Zd" and "99" not in ta.hierarchy(rda, "Region")
    assert ta.hierarchy(rda, "Region", codes=["1", "99"])["99"] == "Total"  # its missing code
    assert ta.hierarchy(rda, "Size", codes=[" 1", "2", "2"]) == {"1": "Total", "2": "Total"}
    micro = ta.read_rda(MICRO / "Tau_TestW.rda")
    levels = ta.hierarchy(micro, "IndustryCode", codes=["34100", "34101", "29240", "99999"])
    assert levels == {"341": "Total", "3410": "341", "34100": "3410", "34101": "3410",
                      "292": "Total", "2924": "292", "29240": "2924", "99999": "Total"}
    enterprise = ta.read_rda(ENTERPRISE / "example_enterprise.rda")
    act = ta.hierarchy(enterprise, "act")
    assert act["01"] == "A" and act["35"] == "D" and act["A"] == "Total"
    assert ta.hierarchy(enterprise, "region", total="SI")["11"] == "RegB"
    with pytest.raises(ParameterError, match="codes"):
        ta.hierarchy(micro, "IndustryCode")


def test_hierarchy_levels_errors():
    micro = ta.read_rda(MICRO / "Tau_TestW.rda")
    with pytest.raises(DataError, match=r"'IndustryCode'.*6 characters long but the <HIERLEVELS> allow 5"):
        ta.hierarchy(micro, "IndustryCode", codes=["341000"])
    with pytest.raises(DataError, match="leaves its first <HIERLEVELS> level blank"):
        ta.levels_hierarchy(["12"], [3, 1, 1])


HRC_ERRORS = [
    ("A\n@@1\n", "line 2", "2 levels deeper"),
    ("@A\n", "line 1", "2 levels deeper"),
    ("A\n@\n", "line 2", "no code after"),
    ("A\n@1\nB\n@1\n", "line 4", "already listed at line 2"),
    ("Total\n", "line 1", "total's code"),
]


@pytest.mark.parametrize(("text", "line", "message"), HRC_ERRORS)
def test_hrc_errors_name_file_and_line(tmp_path, text, line, message):
    with pytest.raises(DataError, match=message) as err:
        ta.read_hrc(_write(tmp_path / "bad.hrc", text))
    assert "bad.hrc" in str(err.value) and line in str(err.value)


def test_real_hrc_with_a_repeated_code_is_refused():
    with pytest.raises(DataError, match=r"NUTS\.hrc' line 204: repeats a code already listed at line 150"):
        ta.hierarchy(ta.read_rda(ENTERPRISE / "example_enterprise.rda"), "mun")


def test_unknown_referenced_file(tmp_path):
    rda = ta.read_rda(_write(tmp_path / "r.rda", 'R 1 2\n <RECODEABLE>\n <HIERARCHICAL>\n'
                             ' <HIERCODELIST> "C:\\jobs\\gone.hrc"\nS 3 1\n <HIERARCHICAL>\n'))
    with pytest.raises(DataError, match=r"r\.rda' line 4: the file .*gone\.hrc.* neither where it says nor beside"):
        ta.hierarchy(rda, "R")
    with pytest.raises(DataError, match=r"r\.rda' line 6: variable 'S' is <HIERARCHICAL> but names no"):
        ta.hierarchy(rda, "S")
    with pytest.raises(ParameterError, match="has no variable 'Q'"):
        rda.variable("Q")


# ============================================================================ properties
@st.composite
def trees(draw):
    """A random forest of distinct codes as (depth, code) lines in depth-first order."""
    lines, depth = [], 0
    for i in range(draw(st.integers(1, 30))):
        depth = draw(st.integers(0, depth + 1)) if lines else 0
        lines.append((depth, f"c{i}"))
    return lines


@given(trees(), st.sampled_from(["@", "#", "--"]))
@settings(max_examples=60, deadline=None)
def test_hrc_round_trip(tmp_path_factory, lines, lead):
    path = tmp_path_factory.mktemp("hrc") / "t.hrc"
    path.write_text("\n".join(lead * d + code for d, code in lines) + "\n", encoding="utf-8")
    parents = ta.read_hrc(path, leadstring=lead)
    # oracle: a code's parent is the nearest earlier line one level up
    for k, (depth, code) in enumerate(lines):
        expected = next((c for d, c in reversed(lines[:k]) if d == depth - 1), "Total") if depth else "Total"
        assert parents[code] == expected
    assert list(parents) == [c for _, c in lines]


@given(st.lists(st.tuples(st.integers(0, 99), st.integers(-9999, 99999)), min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_asc_round_trip(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("asc")
    rda = _write(folder / "d.rda", "K 1 2\n <RECODEABLE>\nV 3 6\n <NUMERIC>\n")
    gz = folder / "d.asc.gz"
    gz.write_bytes(gzip.compress("".join(f"{k:>2}{v:>6}\r\n" for k, v in rows).encode()))
    frame = ta.read_asc(gz, rda)
    assert frame["K"].tolist() == [str(k) for k, _ in rows]
    np.testing.assert_array_equal(frame["V"].to_numpy(), [v for _, v in rows])


# The usage snippet proposed for README (the lead merges it); it must work exactly as written.
README_SNIPPET = """\
from sdckit.io import tauargus
rda = tauargus.read_rda("pp.rda"); cells = tauargus.read_tab("pp.tab", rda)
regions = tauargus.hierarchy(rda, "Region")   # {child: parent}, root = <TOTCODE>
"""


def test_readme_snippet(monkeypatch):
    monkeypatch.chdir(TABLE)
    scope: dict = {}
    exec(README_SNIPPET, scope)
    assert len(scope["cells"]) == 162 and scope["regions"]["Nr"] == "Total"
    assert scope["rda"].explanatory == ["Size", "Region"]


def test_referenced_file_relative_absolute_and_windows(tmp_path):
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub" / "h.hrc", "A\n@1\n")
    _write(tmp_path / "elsewhere.hrc", "B\n@2\n")
    rda = ta.read_rda(_write(tmp_path / "r.rda", 'R 1 1\n <RECODEABLE>\n <HIERARCHICAL>\n'
                             ' <HIERCODELIST> "sub/h.hrc"\n <HIERLEADSTRING> "@"\n'
                             f'S 2 1\n <RECODEABLE>\n <HIERARCHICAL>\n <HIERCODELIST> "{tmp_path / "elsewhere.hrc"}"\n'
                             'T 3 1\n <RECODEABLE>\n <HIERARCHICAL>\n <HIERCODELIST> "D:\\old\\sub\\..\\elsewhere.hrc"\n'))
    assert ta.hierarchy(rda, "R") == {"A": "Total", "1": "A"}
    assert ta.hierarchy(rda, "S") == ta.hierarchy(rda, "T") == {"B": "Total", "2": "B"}
