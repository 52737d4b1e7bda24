"""The report tells the truth (issue 12 section 3): every quasi-identifier is covered, numeric
ones by their exact values, and a release whose unique combinations went out unchanged is never
called plausibly deniable."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdckit import AdditiveNoise, protect
from sdckit.core.random import new_seed
from sdckit.report import build_report, render_report


def _census(n: int = 200) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({
        "AGE": rng.integers(18, 90, n), "ZIP": rng.integers(10_000, 10_100, n),
        "SEX": rng.choice(["F", "M"], n), "INCOME": rng.lognormal(10, 0.5, n).round(2),
    })
    return frame, {"quasi": ["AGE", "ZIP", "SEX"], "confidential": ["INCOME"]}


def test_unchanged_numeric_quasi_identifiers_are_counted_and_not_deniable():
    original, schema = _census()
    # AGE and ZIP are left unchanged: noise on the income only (the release).
    release = protect(original, [AdditiveNoise(alpha=1.0, columns=["INCOME"])], schema=schema, seed=new_seed())
    report = build_report(original, release.data, schema=release.schema, manifest=release.manifest,
                          n_random=400, n_null=5, seed=2)
    classes = report.data["classes"]
    assert classes["columns"] == ["AGE", "ZIP", "SEX"]
    # Brute force: records alone on (AGE, ZIP, SEX) in the release, released exactly as they were.
    combos = original[["AGE", "ZIP", "SEX"]].apply(tuple, axis=1)
    expected = int((combos.map(combos.value_counts()) == 1).sum())
    assert expected > 50 and classes["unchanged_uniques"] == expected
    summary = report.sections[0]
    assert summary.context["deniable"] is False
    html = render_report(report)
    assert "NOT plausibly deniable" in html and "AGE, ZIP, SEX" in html


def test_perturbed_quasi_identifiers_leave_no_unchanged_unique():
    original, schema = _census()
    release = protect(original, [AdditiveNoise(alpha=0.5, columns=["AGE", "ZIP", "INCOME"])],
                      schema={"quasi": ["AGE", "ZIP"], "confidential": ["INCOME"]}, seed=new_seed())
    report = build_report(original.drop(columns="SEX"), release.data.drop(columns="SEX"), schema=release.schema.subset(["AGE", "ZIP", "INCOME"]),
                          n_random=400, n_null=5, seed=2)
    assert report.data["classes"]["unchanged_uniques"] == 0
