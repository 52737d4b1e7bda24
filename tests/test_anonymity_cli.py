"""``sdckit check`` through the command line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sdckit import ParameterError
from sdckit.cli.check import build_criteria


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
        (("--quasi", "nope", "--k", "2"), "'nope' is not in the data"),
    ]:
        result = cli("check", str(path), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_criteria_options_are_checked():
    for args, message in [
        ((None, None, "distinct", None, None, "equal", None), "at least one criterion"),
        ((1, None, "distinct", None, None, "equal", None), "'k' parameter of KAnonymity"),
        ((None, 2, "recursive", None, None, "equal", "disease"), "needs --c"),
        ((None, 2, "weird", None, None, "equal", "disease"), "--l-kind"),
        ((None, None, "distinct", None, 0.3, "nearest", "disease"), "'distance' parameter of TCloseness"),
    ]:
        with pytest.raises(ParameterError, match=message):
            build_criteria(*args)
    assert [type(c).__name__ for c in build_criteria(3, 2, "entropy", None, 0.2, "ordered", "d")] == [
        "KAnonymity", "EntropyLDiversity", "TCloseness"]
    assert build_criteria(None, 2, "recursive", 3.0, None, "equal", "d")[0].c == 3.0


def test_recipe_with_hierarchy_files_and_criteria(tmp_path, cli):
    from pathlib import Path

    adult = Path(__file__).parent / "data" / "adult"
    frame = pd.read_csv(adult / "adult.csv.gz", sep=";").head(3000)
    frame.to_csv(tmp_path / "adult.csv", index=False)
    hier = {q: str(adult / f"adult_hierarchy_{q}.csv.gz") for q in ("age", "sex", "race", "education")}
    (tmp_path / "recipe.toml").write_text(
        '[input]\npath = "adult.csv"\n'
        '[schema]\nquasi = ["age", "sex", "race", "education"]\nconfidential = ["occupation"]\n'
        '[[method]]\nname = "full_domain_generalization"\nk = 5\nmax_suppression = 0.02\n'
        'criteria = [{criterion = "distinct_l_diversity", l = 2, sensitive = "occupation"}]\n'
        "[method.hierarchies]\n" + "".join(f'{q} = "{p}"\n' for q, p in hier.items()) +
        '[output]\ndir = "out"\n'
    )
    result = cli("protect", str(tmp_path / "recipe.toml"))
    assert result.returncode == 0, result.stderr
    manifest = json.loads(next((tmp_path / "out").glob("*.manifest.json")).read_text())
    step = manifest["methods"][0]
    assert step["params"]["hierarchies"]["age"]["levels"] == 5
    assert step["params"]["criteria"][0]["class"] == "DistinctLDiversity"
    info = json.dumps(manifest)
    assert '"node"' in info and '"suppressed"' in info
