"""The command line tells the truth at the terminal (issue 27 part 5): ``sdckit protect`` prints
the report's verdict and ``--fail-unsafe`` (or the recipe's ``fail_unsafe``) exits 1 when the
release is not shown safe; ``sdckit table protect`` does the same for unprotected sensitive cells;
a recoded column keeps the report's verdict; a streamed release leaves no stale report and rank
swapping creates its output folder; weak seeds warn only where they protect a release."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from markupsafe import escape
from typer.testing import CliRunner

from sdckit import AdditiveNoise, protect
from sdckit.cli import app
from sdckit.core.errors import ParameterError, SecurityWarning
from sdckit.masking import GlobalRecoding
from sdckit.recipe import load_recipe
from sdckit.report.model import build_report
from sdckit.tabular.recipe import load_table_recipe

DATA = Path(__file__).resolve().parent / "data" / "tabular"
SEED = "3f9a0c1e7b2d4f6a8c0e1a3b5d7f9e2c"

# Two numeric columns with additive noise of 1% of their variance: the intruder links nearly every
# record (not deniable); noise of 400% leaves nothing to link (deniable). Small settings: fast.
RECIPE = f"""
seed = "{SEED}"
{{extra}}
[input]
path = "data.csv"
[schema]
confidential = ["X", "Y"]
[[method]]
name = "additive_noise"
alpha = {{alpha}}
[output]
dir = "out"
[report]
n_random = 2000
n_null = 20
"""


def _project(tmp_path: Path, alpha: float, extra: str = "") -> Path:
    rng = np.random.default_rng(5)
    x = rng.normal(50, 10, 300)
    pd.DataFrame({"X": x.round(3), "Y": (0.5 * x + rng.normal(0, 8, 300)).round(3)}).to_csv(tmp_path / "data.csv", index=False)
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(RECIPE.format(alpha=alpha, extra=extra))
    return recipe


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _verdict_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("Verdict: ")]
    assert len(lines) == 1, stdout
    return lines[0].removeprefix("Verdict: ")


@pytest.mark.parametrize("alpha, deniable", [(0.01, False), (4.0, True)])
def test_protect_prints_the_reports_verdict_and_fail_unsafe_exits_1_only_when_unsafe(tmp_path, alpha, deniable):
    recipe = _project(tmp_path, alpha)
    done = _invoke("protect", str(recipe), "--fail-unsafe", "--json", str(tmp_path / "run.json"))
    assert done.exit_code == (0 if deniable else 1), done.output
    line = _verdict_line(done.stdout)
    assert line.startswith("plausibly deniable (p = " if deniable else "NOT plausibly deniable (p = ")
    # one source of truth: the line is the report's own summary row
    html = (tmp_path / "out" / "data_protected.report.html").read_text(encoding="utf-8")
    assert f'<td class="num">{escape(line)}</td>' in html
    figures = json.loads((tmp_path / "run.json").read_text())["verdict"]
    assert figures["text"] == line and figures["safe"] is deniable
    assert (tmp_path / "out" / "data_protected.csv").exists()  # the outputs are written either way
    if not deniable:
        assert "--fail-unsafe" in done.stderr and "were written" in done.stderr


def test_recipe_key_fail_unsafe_and_its_override(tmp_path):
    recipe = _project(tmp_path, 4.0, extra="fail_unsafe = true")
    assert load_recipe(recipe).extra["fail_unsafe"] is True
    # a release without a report is not shown safe: not assessed, so the key exits 1 ...
    skipped = _invoke("protect", str(recipe), "--no-report")
    assert skipped.exit_code == 1 and _verdict_line(skipped.stdout) == "not assessed: no report was computed for this release"
    # ... unless the command line turns it off; without the key the status is 0 whatever the verdict
    assert _invoke("protect", str(recipe), "--no-report", "--no-fail-unsafe").exit_code == 0
    assert _invoke("protect", str(_project(tmp_path, 4.0)), "--no-report").exit_code == 0
    bad = _project(tmp_path, 0.01, extra='fail_unsafe = "yes"')
    with pytest.raises(ParameterError, match="'fail_unsafe' must be true or false"):
        load_recipe(bad)


def test_table_protect_says_when_rounding_leaves_sensitive_cells_unprotected(tmp_path):
    recipe = DATA / "rounding.toml"
    plain = _invoke("table", "protect", str(recipe), "--out", str(tmp_path / "a"))
    assert plain.exit_code == 0, plain.output
    cells = pd.read_csv(tmp_path / "a" / "cells.csv")
    assert int(cells["sensitive"].sum()) == 7  # the table: "1 of 7 protected"
    assert _verdict_line(plain.stdout) == (
        "UNSAFE: 6 of 7 sensitive cells unprotected (the interval an intruder "
        "deduces from the release is narrower than their protection levels)")
    strict = _invoke("table", "protect", str(recipe), "--out", str(tmp_path / "b"), "--fail-unsafe")
    assert strict.exit_code == 1 and (tmp_path / "b" / "report.html").exists()
    # the recipe key, with the same verdict
    keyed = tmp_path / "keyed.toml"
    keyed.write_text("fail_unsafe = true\n" + recipe.read_text())
    for name in ("enterprises.csv", "region.hrc"):
        shutil.copy(DATA / name, tmp_path / name)
    assert load_table_recipe(keyed).fail_unsafe is True
    assert _invoke("table", "protect", str(keyed), "--out", str(tmp_path / "c")).exit_code == 1
    # suppression protects every primary cell (audited): safe, exit 0 even with --fail-unsafe
    safe = _invoke("table", "protect", str(DATA / "enterprises.toml"), "--out", str(tmp_path / "d"), "--fail-unsafe")
    assert safe.exit_code == 0, safe.output
    assert _verdict_line(safe.stdout).startswith("safe: ")


def test_table_recipe_key_must_be_a_bool(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('fail_unsafe = 1\n' + (DATA / "rounding.toml").read_text())
    with pytest.raises(ParameterError, match="fail_unsafe must be true or false"):
        load_table_recipe(bad)


def _ages(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    age = rng.integers(18, 90, n)
    return pd.DataFrame({"AGE": age, "INCOME": (500 * age + rng.normal(0, 5000, n)).round(2)})


def test_global_recoding_keeps_the_reports_verdict():
    original = _ages()
    recoding = GlobalRecoding(bins=[0, 30, 50, np.inf], labels=["young", "middle", "old"], columns=["AGE"])
    release = protect(original, [AdditiveNoise(alpha=0.5, columns=["INCOME"]), recoding],
                      schema={"quasi": ["AGE"], "confidential": ["INCOME"]}, seed=SEED)
    report = build_report(original, release.data, schema=release.schema, manifest=release.manifest,
                          n_random=2000, n_null=10, seed=1)
    assert report.verdict is not None and report.verdict.state != "not assessed", report.verdict
    assert "permutation" in report.data and report.data["columns"] == ["AGE", "INCOME"]
    # the original on the release's scale is the recoding of the original, by hand
    from sdckit.report.model import on_release_scale

    scaled = on_release_scale(original, release.data, ["AGE", "INCOME"], release.schema, release.manifest)
    by_hand = np.where(original["AGE"] < 30, "young", np.where(original["AGE"] < 50, "middle", "old"))
    assert scaled["AGE"].tolist() == by_hand.tolist()
    assert scaled["INCOME"].equals(original["INCOME"])  # a column the release did not recode


def test_on_release_scale_with_fewer_released_records_takes_quantiles():
    from sdckit.report.model import on_release_scale

    original = pd.DataFrame({"v": [1, 2, 3, 4, 5, 6, 7, 8]})
    released = pd.DataFrame({"v": pd.Categorical(["lo", "hi", "lo", "hi"], categories=["lo", "hi"], ordered=True)})
    schema = protect(released, [], schema={"kinds": {"v": "ordinal"}, "orders": {"v": ["lo", "hi"]}}).schema
    scaled = on_release_scale(original, released, ["v"], schema)
    # rank r of 8 -> lower quantile (r - 0.5) / 8 of the 4 released values lo, lo, hi, hi
    assert scaled["v"].tolist() == ["lo"] * 4 + ["hi"] * 4
    # a suppressed (missing) released cell is left to the verification, which names it
    suppressed = released.assign(v=released["v"].astype(object).where([True, True, False, True]))
    scaled = on_release_scale(original, suppressed, ["v"], schema)
    # 3 released values lo, hi, hi: rank r of 8 -> position ceil(3 (r - 0.5) / 8) - 1
    assert scaled["v"].tolist() == ["lo"] * 3 + ["hi"] * 5


def _swap_recipe(tmp_path: Path) -> Path:
    rng = np.random.default_rng(9)
    pd.DataFrame({"A": rng.normal(size=200).round(4), "B": rng.normal(size=200).round(4)}).to_csv(tmp_path / "d.csv", index=False)
    recipe = tmp_path / "swap.toml"
    recipe.write_text(f'seed = "{SEED}"\n[input]\npath = "d.csv"\n[[method]]\nname = "rank_swapping"\np = 10\n'
                      '[output]\ndir = "new/folder"\nformat = "parquet"\n')
    return recipe


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_rank_swapping_on_a_streaming_engine_creates_the_output_folder(tmp_path, engine):
    recipe = _swap_recipe(tmp_path)
    done = _invoke("protect", str(recipe), "--engine", engine)
    assert done.exit_code == 0, done.output
    out = tmp_path / "new" / "folder"
    assert sorted(p.name for p in out.iterdir()) == ["d_protected.manifest.json", "d_protected.parquet"]


def test_a_streamed_or_reportless_release_leaves_no_stale_report(tmp_path):
    recipe = _swap_recipe(tmp_path)
    out = tmp_path / "new" / "folder"
    report = out / "d_protected.report.html"
    for engine in ("duckdb", "memory"):
        out.mkdir(parents=True, exist_ok=True)
        report.write_text("the report of a previous release")
        done = _invoke("protect", str(recipe), "--engine", engine, "--no-report")
        assert done.exit_code == 0, done.output
        assert not report.exists()  # it described another release


def _security_warnings(run) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, SecurityWarning)]


def test_weak_seeds_warn_only_where_they_protect_a_release():
    from sdckit.permutation import assess
    from sdckit.risk import permutation_risk
    from sdckit.tune import tune

    original = _ages(120)[["INCOME"]].assign(X=lambda f: f["INCOME"] * 0.01)
    released = protect(original, [AdditiveNoise(alpha=1.0)], seed=SEED).data
    assert not _security_warnings(lambda: assess(original, released, seed=1, n_random=200, n_null=5))
    assert not _security_warnings(lambda: permutation_risk(original, released, seed=1, n_random=200, n_null=5))
    assert not _security_warnings(lambda: tune(original, AdditiveNoise(alpha=0.5), n_random=200, n_null=5, steps=1))
    # a seed that protects a release still warns, at the caller's line
    warned = _security_warnings(lambda: protect(original, [AdditiveNoise(alpha=0.1)], seed=1))
    assert len(warned) == 1 and warned[0].filename == __file__
