"""The HTML report: structure, self-containment, escaping, non-disclosure, and its hooks into
recipes, ``sdckit protect``, ``sdckit demo`` and ``sdckit assess --html``."""

from __future__ import annotations

import json
import re

import pytest

from report_helpers import census, census_schema, disclosed_values, release
from sdckit import protect
from sdckit.core.errors import ParameterError
from sdckit.recipe import load_recipe, run_recipe
from sdckit.report import assess_report, build_report, render_report

SECTIONS = ("summary", "distances", "plausibility", "displacement", "linkage", "utility", "classes", "risk", "transparency")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    original = census()
    rel = release(original)
    path = tmp_path_factory.mktemp("report") / "report.html"
    report = assess_report(original, rel.data, path, schema=rel.schema, manifest=rel.manifest,
                           n_random=5000, n_null=20, seed=3)
    return original, rel, report, path.read_text(encoding="utf-8")


def test_report_has_every_section_and_figure(made):
    _, _, report, html = made
    assert [s.anchor for s in report.sections] == list(SECTIONS)
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in html
    # distances, plausibility, displacement, utility (3), classes, risk
    assert html.count("<svg") == 8
    assert report.data["permutation"]["hellinger"] > 0
    assert report.data["classes"]["quasi"] == ["AGE", "SEX", "REGION"]  # every quasi-identifier (issue 12 §3)
    # classes on every quasi-identifier of the release (the noisy AGE by its exact values):
    # discernibility = sum of squared sizes
    sizes = made[1].data.groupby(["AGE", "SEX", "REGION"]).size()
    assert report.data["classes"]["discernibility"] == int((sizes**2).sum())


def test_report_is_self_contained(made):
    html = made[3]
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html, re.I)
    assert "@import" not in html and "url(http" not in html
    assert "<link" not in html.lower()


def test_report_discloses_no_original_value(made):
    original, rel, _, html = made
    assert "PERSON-" not in html  # identifiers are never shown
    assert disclosed_values(html, original, rel.data) == []


def test_disclosure_check_can_fail(made):
    # the checker must find an original value smuggled into the report (e.g. by a method's info)
    original, rel, _, _ = made
    manifest = dict(rel.manifest)
    leaked = float(original["INCOME"].iloc[7])
    manifest["methods"] = [{**manifest["methods"][0], "info": {"top_value": leaked}}]
    html = render_report(build_report(original, rel.data, schema=rel.schema, manifest=manifest,
                                      n_random=500, n_null=5, seed=1))
    assert any(item.startswith("INCOME=") for item in disclosed_values(html, original, rel.data))


def test_transparency_lists_every_parameter_and_no_seed(made):
    _, rel, _, html = made
    section = html.split('<section id="transparency">')[1]
    assert "additive_noise" in section and "AdditiveNoise" in section
    assert "<td>alpha</td><td>0.5</td>" in section
    assert "<td>columns</td><td>none (default)</td>" in section
    assert rel.manifest["input"]["fingerprint"] in section
    assert rel.manifest["seed"] == "given by the user"  # where it came from, never its value
    assert rel.manifest["seed_strength"] == "weak"
    assert "The random seed is never shown" in section


def test_report_escapes_names():
    original = census(120)
    evil = "<script>alert(1)</script>"
    original = original.rename(columns={"INCOME": evil})
    schema = census_schema(original.rename(columns={evil: "INCOME"}))
    rel = release(original.rename(columns={evil: "INCOME"}))
    rel_data = rel.data.rename(columns={"INCOME": evil})
    html = render_report(build_report(original, rel_data, n_random=500, n_null=5, seed=1))
    assert evil not in html and "&lt;script&gt;" in html
    assert schema is not None


def test_report_of_a_release_with_other_records_notes_what_it_skips():
    original = census(200)
    rel = release(original)
    sample = rel.data.sample(150, random_state=0)
    report = build_report(original, sample, schema=rel.schema, n_random=500, n_null=5, seed=1)
    anchors = [s.anchor for s in report.sections]
    assert "displacement" not in anchors  # needs the record correspondence
    linkage = next(s for s in report.sections if s.anchor == "linkage")
    assert "same records" in linkage.note
    assert report.data["utility"]["il1"] is None


def test_report_without_numeric_columns_still_renders():
    original = census(60)[["SEX", "REGION"]]
    html = render_report(build_report(original, original.copy(), seed=1))
    assert "was not computed" in html and "<svg" not in html


# ----------------------------------------------------------------------------- hooks
RECIPE = """
seed = 5
allow_weak_seed = true  # a readable test seed; releases need 128 bits
[input]
path = "census.csv"
[schema]
identifier = ["ID"]
quasi = ["AGE", "SEX", "REGION"]
confidential = ["INCOME", "WEALTH"]
[[method]]
name = "additive_noise"
alpha = 0.5
[output]
dir = "out"
[report]
n_random = 2000
n_null = 10
"""


@pytest.fixture
def project(tmp_path):
    census(150).to_csv(tmp_path / "census.csv", index=False)
    (tmp_path / "recipe.toml").write_text(RECIPE)
    return tmp_path


def test_run_recipe_writes_report_reproducibly(project):
    first = run_recipe(load_recipe(project / "recipe.toml"))
    assert first.report_path == project / "out" / "census_protected.report.html"
    html = first.report_path.read_text()
    assert "<svg" in html
    again = run_recipe(load_recipe(project / "recipe.toml"), output_dir=project / "again")
    strip = lambda t: re.sub(r"<td>20\d\d-[^<]*</td>", "", t)  # the manifest's creation time
    assert strip(again.report_path.read_text()) == strip(html)


def test_run_recipe_report_can_be_switched_off(project):
    text = (project / "recipe.toml").read_text().replace("[report]", "[report]\nenabled = false")
    (project / "off.toml").write_text(text)
    result = run_recipe(load_recipe(project / "off.toml"))
    assert result.report_path is None and not (project / "out" / "census_protected.report.html").exists()
    result = run_recipe(load_recipe(project / "recipe.toml"), output_dir=project / "x", report=False)
    assert result.report_path is None


@pytest.mark.parametrize("bad, message", [
    ("[report]\nspeed = 3", "unknown key"),
    ("[report]\nenabled = 3", "'enabled' must be true or false"),
])
def test_bad_report_table_is_refused(project, bad, message):
    text = RECIPE.split("[report]")[0] + bad + "\n"
    (project / "bad.toml").write_text(text)
    with pytest.raises(ParameterError, match=message):
        load_recipe(project / "bad.toml")


@pytest.mark.parametrize("old, new, message", [
    ("n_null = 10", "n_null = 0", "'n_null' parameter of the report must be an int >= 1"),
    ("n_null = 10", "null = 'uniform'", "'null' parameter"),
    ("n_null = 10", "alpha = 1.5", "'alpha' parameter"),
    ("n_null = 10", "interval_p = 0.0", "'interval_p' parameter"),
])
def test_bad_report_setting_fails_before_reading(project, old, new, message):
    (project / "bad.toml").write_text(RECIPE.replace(old, new))
    with pytest.raises(ParameterError, match=message):
        load_recipe(project / "bad.toml")
    with pytest.raises(ParameterError, match="'n_random' parameter of the report"):
        build_report(census(20), census(20), n_random=0)


def test_cli_protect_no_report_and_json(cli, project):
    # (the CLI writing the report is checked by tests/test_report_browser.py through `sdckit demo`)
    result = cli("protect", str(project / "recipe.toml"), "--no-report", "--json", str(project / "p.json"))
    assert result.returncode == 0, result.stderr
    assert json.loads((project / "p.json").read_text())["report_path"] is None
    assert not (project / "out" / "census_protected.report.html").exists() and "report:" not in result.stdout


def test_cli_assess_html(cli, project, tmp_path):
    original = census(150)
    rel = release(original)
    original.to_csv(tmp_path / "orig.csv", index=False)
    rel.data.to_csv(tmp_path / "rel.csv", index=False)
    (tmp_path / "manifest.json").write_text(json.dumps(rel.manifest))
    result = cli("assess", str(tmp_path / "orig.csv"), str(tmp_path / "rel.csv"), "--random", "2000", "--columns", "AGE,INCOME,WEALTH",
                 "--seed", "1", "--html", str(tmp_path / "a.html"), "--manifest", str(tmp_path / "manifest.json"))
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "a.html").read_text()
    assert html.count("<svg") >= 5 and "additive_noise" in html
    assert disclosed_values(html, original, rel.data) == []


def test_assess_manifest_bad_inputs(tmp_path):
    from sdckit.cli.assess import _read_manifest
    from sdckit.core.errors import DataError
    from sdckit.report.assess import schema_from_manifest

    with pytest.raises(DataError, match="nope.json"):
        _read_manifest(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        _read_manifest(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="JSON object"):
        _read_manifest(tmp_path / "list.json")
    with pytest.raises(ParameterError, match="malformed"):
        schema_from_manifest({"schema": {"columns": [{"kind": "numeric"}]}}, census(5))
    assert schema_from_manifest({}, census(5)) is None
    schema = schema_from_manifest(release(census(30)).manifest, census(30).drop(columns="ID"))
    assert schema["SEX"].role.value == "quasi" and "ID" not in schema


# ----------------------------------------------------------------------------- every method
from test_common_checks import METHODS, build, common_frame  # noqa: E402


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_report_builds_for_every_registered_method(name, cls):
    # protect() now ends with the report, so the report must cope with every method's output:
    # other record counts (sampling, suppression, synthesis), NaN cells, generalized strings.
    frame, schema = common_frame()
    rel = protect(frame, [build(cls)], schema=schema, seed=3)
    report = build_report(frame, rel.data, schema=rel.schema, manifest=rel.manifest, n_random=300, n_null=3,
                          seed=1)
    html = render_report(report)
    assert '<section id="transparency">' in html and name in html
    assert disclosed_values(html, frame, rel.data) == []
