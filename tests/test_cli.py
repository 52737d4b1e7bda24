import json

import pandas as pd
import pytest

RECIPE = """
seed = 11
allow_weak_seed = true  # a readable test seed; releases need 128 bits
[input]
path = "census.csv"
[schema]
identifier = ["ID"]
quasi = ["AGE"]
confidential = ["INCOME"]
[[method]]
name = "additive_noise"
alpha = 0.1
columns = ["INCOME"]
[output]
dir = "out"
"""


@pytest.fixture
def project(tmp_path, small_frame):
    frame = small_frame.rename(columns={"id": "ID", "age": "AGE", "income": "INCOME", "region": "REGION"})
    frame.to_csv(tmp_path / "census.csv", index=False)
    (tmp_path / "recipe.toml").write_text(RECIPE)
    return tmp_path


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("sdckit ")


def test_demo_writes_release_manifest_and_report(cli, tmp_path):
    # its speed (issue 2: under 10 s, report included) is measured by benchmarks/bench_demo.py
    result = cli("demo", "--out", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "demo" / "casc_protected.report.html").exists()
    data = pd.read_csv(tmp_path / "demo" / "casc_protected.csv")
    assert data.shape == (1080, 13)
    manifest = json.loads((tmp_path / "demo" / "casc_protected.manifest.json").read_text())
    assert manifest["methods"][0]["name"] == "additive_noise"
    assert manifest["methods"][0]["params"] == {"alpha": 0.1, "columns": None}
    assert "AFNLWGT" in result.stdout


def test_protect_runs_a_recipe_relative_to_its_folder(cli, project, tmp_path):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    result = cli("protect", str(project / "recipe.toml"), cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(project / "out" / "census_protected.csv")
    original = pd.read_csv(project / "census.csv")
    assert list(out.columns) == ["AGE", "INCOME", "REGION"]  # ID dropped
    assert out["AGE"].tolist() == original["AGE"].tolist()
    assert not out["INCOME"].equals(original["INCOME"])
    manifest = json.loads((project / "out" / "census_protected.manifest.json").read_text())
    assert manifest["methods"][0]["params"] == {"alpha": 0.1, "columns": ["INCOME"]}
    assert manifest["input"]["file"] == "census.csv"
    assert manifest["seed"] == "given by the user" and manifest["seed_strength"] == "weak"
    assert 11 not in _leaf_values(manifest)  # the seed itself is never written
    assert not list(elsewhere.iterdir())


def _leaf_values(tree):
    if isinstance(tree, dict):
        return [v for value in tree.values() for v in _leaf_values(value)]
    if isinstance(tree, list):
        return [v for value in tree for v in _leaf_values(value)]
    return [tree]


def test_protect_same_seed_same_bytes(cli, project, tmp_path):
    cli("protect", str(project / "recipe.toml"), "--out", str(tmp_path / "a"))
    cli("protect", str(project / "recipe.toml"), "--out", str(tmp_path / "b"))
    assert (tmp_path / "a" / "census_protected.csv").read_bytes() == (tmp_path / "b" / "census_protected.csv").read_bytes()


@pytest.mark.parametrize("fmt, name", [("parquet", "census_protected.parquet"), ("duckdb", "census_protected.duckdb"), ("stata", "census_protected.dta")])
def test_protect_format_option(cli, project, fmt, name):
    result = cli("protect", str(project / "recipe.toml"), "--format", fmt, "--out", str(project / fmt))
    assert result.returncode == 0, result.stderr
    assert (project / fmt / name).exists()


def test_recipe_output_format_and_json(cli, project):
    (project / "recipe.toml").write_text(RECIPE.replace('dir = "out"', 'dir = "out"\nformat = "parquet"'))
    result = cli("protect", str(project / "recipe.toml"), "--json", str(project / "run.json"))
    assert result.returncode == 0, result.stderr
    assert pd.read_parquet(project / "out" / "census_protected.parquet").shape == (50, 3)
    assert json.loads((project / "run.json").read_text())["manifest"]["output"]["format"] == "parquet"


BAD = {
    "missing recipe": (None, None, "nope.toml"),
    "malformed toml": ("seed = = 3\n", None, "recipe.toml"),
    "missing input": (RECIPE.replace("census.csv", "absent.csv"), None, "absent.csv"),
    "empty input": (None, "", "census.csv"),
    "undecodable input": (None, b"A,B\n\xff\xfe,1\n", "Cannot decode"),
    "unknown column": (RECIPE.replace('columns = ["INCOME"]', 'columns = ["SALARY"]'), None, "'SALARY'"),
    "unknown schema column": (RECIPE.replace('quasi = ["AGE"]', 'quasi = ["AGE", "ZIP"]'), None, "'ZIP'"),
    "wrong type": (RECIPE.replace('columns = ["INCOME"]', 'columns = ["REGION"]'), None, "'REGION'"),
    "declared kind misfit": (RECIPE.replace("[[method]]", '[schema.kinds]\nREGION = "numeric"\n[[method]]'), None, "'REGION'"),
    "bad parameter": (RECIPE.replace("alpha = 0.1", "alpha = -2"), None, "'alpha'"),
    "missing parameter": (RECIPE.replace("alpha = 0.1", ""), None, "'alpha'"),
    "unknown parameter": (RECIPE.replace("alpha = 0.1", "alpha = 0.1\nbeta = 2"), None, "'beta'"),
    "unknown method": (RECIPE.replace('"additive_noise"', '"magic"'), None, "'magic'"),
    "unknown key": (RECIPE.replace("seed = 11", "seed = 11\nsede = 2"), None, "'sede'"),
    "bad seed": (RECIPE.replace("seed = 11", 'seed = "x"'), None, "'seed'"),
    "no method": (RECIPE.split("[[method]]")[0], None, "no method"),
    "unknown format": (RECIPE.replace('dir = "out"', 'dir = "out"\nformat = "xls"'), None, "'xls'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_with_one_line(cli, project, case):
    recipe, data, culprit = BAD[case]
    if recipe is not None:
        (project / "recipe.toml").write_text(recipe)
    if data is not None:
        path = project / "census.csv"
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    target = "nope.toml" if case == "missing recipe" else "recipe.toml"
    result = cli("protect", str(project / target))
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sdckit: error: ")
    assert culprit in lines[0]
    assert "Traceback" not in result.stderr
    assert not (project / "out").exists()  # nothing half-written


def test_protect_never_overwrites_its_input(cli, project):
    (project / "recipe.toml").write_text(RECIPE.replace('dir = "out"', 'dir = "."\nname = "census"'))
    before = (project / "census.csv").read_bytes()
    result = cli("protect", str(project / "recipe.toml"))
    assert result.returncode == 2 and "input file" in result.stderr
    assert (project / "census.csv").read_bytes() == before
    assert not (project / "census.manifest.json").exists()


def test_usage_errors_exit_2(cli):
    assert cli("protect").returncode == 2
    assert cli("frobnicate").returncode == 2
