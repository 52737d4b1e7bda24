"""``sdckit table protect`` / ``audit`` and the README's Tables section, as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.tabular.recipe import load_table_recipe, run_table_recipe

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "tabular"


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Tables: cell suppression")
    return text[start:text.index("\n## ", start + 3)]


def test_readme_python_example_runs(monkeypatch):
    code = re.search(r"<!-- tables-example -->\n```python\n(.*?)```", _section(), re.S).group(1)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "32 8 4 True True"
    stated = [ln[2:] for ln in code.splitlines() if ln.startswith("# ")][1:]
    assert [ln.rstrip() for ln in lines[1:]] == [ln.rstrip() for ln in stated]


def test_readme_cli_protect_and_audit(tmp_path, cli):
    line = re.search(r"```\n(sdckit table protect .*?)\n```", _section(), re.S).group(1)
    args = shlex.split(line)[1:]
    args = [str(ROOT / a) if a.startswith("tests/") else a for a in args]
    args[args.index("--out") + 1] = str(tmp_path / "out")
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    cells = pd.read_csv(out / "cells.csv", dtype={"region": str, "size": str})
    assert set(cells["status"]) == {"safe", "primary", "secondary"}
    pub = pd.read_csv(out / "published.csv", dtype=str)
    suppressed = cells[cells.status != "safe"]
    for _, r in suppressed.iterrows():
        assert pub.loc[pub["region"] == r["region"], r["size"]].item() == "x"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["result"]["audit"]["safe"] and manifest["result"]["optimal"]
    page = (out / "report.html").read_text()
    assert 'class="primary"' in page and 'class="secondary"' in page
    coloured = re.findall(r'<td class="(primary|secondary)">(.*?)</td>', page)
    assert len(coloured) == len(suppressed) and {text for _, text in coloured} == {"x"}  # no suppressed value shown
    done = cli("table", "audit", str(out / "cells.csv"), "-d", "region,size",
               "--hierarchy", f"region={DATA / 'region.hrc'}", "--json", str(tmp_path / "a.json"))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "a.json").read_text())["safe"] is True


def test_audit_finds_an_unsafe_pattern(tmp_path, cli):
    result, paths = run_table_recipe(DATA / "enterprises.toml", tmp_path / "o")
    cells = pd.read_csv(paths["cells"], dtype={"region": str, "size": str})
    # publish every secondary cell again: the primaries can then be recomputed
    cells.loc[cells.status == "secondary", "status"] = "safe"
    cells.to_csv(tmp_path / "bad.csv", index=False)
    done = cli("table", "audit", str(tmp_path / "bad.csv"), "--recipe", str(DATA / "enterprises.toml"))
    assert done.returncode == 1
    assert "unprotected: (region=" in done.stdout


def test_recipe_errors_name_the_key(tmp_path, cli):
    bad = tmp_path / "r.toml"
    bad.write_text('[table]\ninput = "x.csv"\ndimensions = ["a"]\n[[rule]]\ntype = "magic"\n')
    with pytest.raises(ParameterError, match="type 'magic'"):
        load_table_recipe(bad)
    bad.write_text('[table]\ninput = "x.csv"\ndimensions = ["a"]\n[[rule]]\ntype = "p"\np = 10\nq = 3\n')
    with pytest.raises(ParameterError, match="unknown key 'q'"):
        load_table_recipe(bad)
    bad.write_text('[table]\ndimensions = ["a"]\n')
    with pytest.raises(ParameterError, match="needs 'input'"):
        load_table_recipe(bad)
    bad.write_text('[table]\ninput = "x.csv"\ndimensions = ["a"]\n')
    done = cli("table", "protect", str(bad))
    assert done.returncode == 2 and "x.csv" in done.stderr


def test_tau_argus_job_comes_over(tmp_path):
    """A tau-ARGUS microdata job (.asc + .rda, hierarchy from the .rda's .hrc) as a recipe."""
    tau = ROOT / "tests" / "data" / "tauargus" / "microdata"
    recipe = tmp_path / "job.toml"
    recipe.write_text(f"""
[table]
input = "{tau / 'tau_testW_head.asc'}"
rda = "{tau / 'Tau_TestW.rda'}"
dimensions = ["Size", "Region"]
response = "Var2"

[[rule]]
type = "p"
p = 15

[suppression]
method = "optimal"
time_limit = 30
""")
    result, paths = run_table_recipe(recipe, tmp_path / "out")
    region = result.table.hierarchies[1]
    assert region.total == "Total" and len(region.subtotals) > 0  # from region2.hrc
    assert result.primaries > 0 and result.audit.safe
    assert set(result.cells["status"]) == {"safe", "primary", "secondary"}
