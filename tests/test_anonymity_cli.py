"""``sdckit check`` through the command line."""

from __future__ import annotations

import json

import pandas as pd


def write(tmp_path):
    path = tmp_path / "data.csv"
    pd.DataFrame({
        "zip": ["1"] * 4 + ["2"] * 4 + ["3"],
        "sex": ["F"] * 9,
        "disease": ["flu", "flu", "cancer", "asthma", "flu", "flu", "flu", "none", "flu"],
    }).to_csv(path, index=False)
    return path


def test_check_reports_and_writes_json(tmp_path, cli):
    path = write(tmp_path)
    out = tmp_path / "verdict.json"
    result = cli("check", str(path), "--quasi", "zip,sex", "--k", "2", "--l", "3", "--sensitive", "disease",
                     "--t", "0.5", "--json", str(out))
    assert result.returncode == 0, result.stderr
    verdict = json.loads(out.read_text())
    assert verdict["satisfied"] is False and verdict["classes"] == 3 and verdict["records"] == 9
    k, l, t = verdict["criteria"]
    # k=2: class zip=3 has 1 record; distinct 3-diversity: zip 2 (flu, none) and zip 3 fail
    assert (k["violating_classes"], k["violating_records"]) == (1, 1)
    assert (l["violating_classes"], l["violating_records"]) == (2, 5)
    assert "Some criteria are violated" in result.stdout


def test_check_satisfied(tmp_path, cli):
    path = write(tmp_path)
    result = cli("check", str(path), "--quasi", "sex", "--k", "9")
    assert result.returncode == 0 and "All criteria hold" in result.stdout


def test_check_bad_input(tmp_path, cli):
    path = write(tmp_path)
    for args, message in [
        (("--quasi", "zip", "--l", "2"), "need --sensitive"),
        (("--quasi", "zip"), "at least one criterion"),
        (("--quasi", "nope", "--k", "2"), "'nope' is not in the data"),
        (("--quasi", "zip", "--k", "1"), "'k' parameter of KAnonymity"),
        (("--quasi", "zip", "--l", "2", "--l-kind", "recursive", "--sensitive", "disease"), "needs --c"),
        (("--quasi", "zip", "--l", "2", "--l-kind", "weird", "--sensitive", "disease"), "--l-kind"),
    ]:
        result = cli("check", str(path), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = cli("check", str(tmp_path / "missing.csv"), "--quasi", "zip", "--k", "2")
    assert result.returncode == 2 and "not found" in result.stderr
