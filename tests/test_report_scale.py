"""Issue 28 item 6: the report and the permutation assessment on data too large to rank whole are
computed on a stated simple random sample of record pairs (seeded by the assessment's
seed), and inputs below the threshold are assessed exactly as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.core.random import as_generator
from sdckit.core.ranks import nearest_rank
from sdckit.permutation import assess, sample_pairs
from sdckit.permutation.sample import sample_rows
from sdckit.permutation.randomset import random_query
from sdckit.report import build_report, figures, model, render_report
from sdckit.risk import permutation_risk


def pair(n: int, seed: int = 0, noise: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    x = pd.DataFrame(rng.standard_normal((n, 3)) @ (0.7 * np.eye(3) + 0.3), columns=["a", "b", "c"])
    return x, x + noise * rng.standard_normal(x.shape)


FAST = {"n_random": 2_000, "max_replicates": 20}


def test_sample_pairs_keeps_the_same_rows_of_both_and_is_reproducible():
    x, y = pair(500)
    xs, ys, kept, rng = sample_pairs(x, y, 120, seed=7)
    assert kept == 120 and len(xs) == len(ys) == 120
    assert list(xs.index) == list(ys.index) and xs.index.is_monotonic_increasing
    assert isinstance(rng, np.random.Generator)
    again = sample_pairs(x, y, 120, seed=7)[0]
    assert list(again.index) == list(xs.index)
    assert list(sample_pairs(x, y, 120, seed=8)[0].index) != list(xs.index)
    # the rows are those a generator seeded alike draws first
    assert list(xs.index) == list(sample_rows(500, 120, as_generator(7, secret=False)))


def test_sample_pairs_below_the_threshold_returns_the_inputs_untouched():
    x, y = pair(100)
    xs, ys, kept, state = sample_pairs(x, y, 100, seed=5)
    assert xs is x and ys is y and kept is None and state == 5


def test_sample_pairs_of_different_counts_samples_each_at_the_same_rate():
    x, y = pair(400)
    xs, ys, kept, _ = sample_pairs(x, y.iloc[:200], 100, seed=1)
    assert (len(xs), len(ys), kept) == (100, 50, 100)


def test_sample_pairs_refuses_truth_and_a_too_small_sample():
    x, y = pair(50)
    with pytest.raises(ParameterError, match="truth"):
        sample_pairs(x, y, 10, truth=np.arange(50))
    with pytest.raises(ParameterError, match="records"):
        sample_pairs(x, y, 1)


def test_assess_on_records_is_the_assessment_of_the_sampled_pairs():
    x, y = pair(600)
    got = assess(x, y, records=150, seed=3, **FAST)
    assert (got.records, got.n_original, got.n_released) == (150, 600, 600)
    # oracle: draw the rows by hand from the same seed, then assess those records alone
    rng = as_generator(3, secret=False)
    rows = sample_rows(600, 150, rng)
    want = assess(x.iloc[rows], y.iloc[rows], seed=rng, **FAST)
    v, w = got.verification, want.verification
    assert (v.p_value, v.hellinger, v.replicates) == (w.p_value, w.hellinger, w.replicates)
    assert got.dataset_distance == want.dataset_distance
    assert got.linkage.correct == want.linkage.correct
    assert ("everything on a random sample of record pairs (the sub-release)", "150 of 600") in got.summary()
    again = assess(x, y, records=150, seed=3, **FAST)
    assert again.verification.p_value == v.p_value and again.linkage.correct == got.linkage.correct


def test_assess_below_records_is_exact():
    x, y = pair(200)
    got = assess(x, y, records=200, seed=4, **FAST)
    want = assess(x, y, seed=4, **FAST)
    assert got.records is None
    assert got.verification.p_value == want.verification.p_value
    assert got.verification.hellinger == want.verification.hellinger
    assert got.linkage.correct == want.linkage.correct


def test_random_query_equals_the_lookup_of_every_value():
    rng = np.random.default_rng(0)
    src = [np.sort(rng.integers(0, 50, 400).astype(float)) for _ in range(3)]  # ties
    ref = [np.sort(rng.integers(0, 50, 300).astype(float)) for _ in range(3)]
    positions = rng.integers(0, 400, (1_000, 3))
    brute = np.column_stack([nearest_rank(ref[j], src[j])[positions[:, j]] for j in range(3)])
    assert np.array_equal(random_query(src, ref, positions), brute)


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(model, "PERMUTATION_RECORDS", 150)
    # the figures are not what is tested here: drawing them is most of a small report's time
    for name in ("distance_distributions", "plausibility", "integer_histogram", "column_bars", "heatmap"):
        monkeypatch.setattr(figures, name, lambda *args, **kwargs: "<svg></svg>")


def test_report_on_large_data_states_the_sample_of_pairs(small_threshold):
    x, y = pair(400)
    report = build_report(x, y, seed=2, n_random=2_000)
    assert report.data["permutation_records"] == 150
    sections = {s.anchor: s for s in report.sections}
    for anchor in ("distances", "plausibility", "displacement"):
        assert "150 of 400 record pairs" in sections[anchor].note
    assert "Monte-Carlo error" in sections["distances"].note
    assert ("permutation paradigm computed on", "150 of 400 record pairs (a simple random sample)") \
        in sections["summary"].context["rows"]
    html = render_report(report)
    assert "150 of 400 record pairs" in html and "sub-release" in html
    again = build_report(x, y, seed=2, n_random=2_000)
    assert again.data["permutation"]["p_value"] == report.data["permutation"]["p_value"]
    assert again.data["permutation"]["hellinger"] == report.data["permutation"]["hellinger"]


def test_report_below_the_threshold_is_exact_and_says_nothing_of_samples(small_threshold):
    x, y = pair(150)
    report = build_report(x, y, seed=2, n_random=2_000)
    assert report.data["permutation_records"] is None
    assert all(s.note is None or "record pairs" not in s.note for s in report.sections)
    # the same figures as the measure on every record, from the same seed
    risk = permutation_risk(x, y, ["a", "b", "c"], n_random=2_000, seed=as_generator(2, secret=False))
    assert report.data["permutation"]["p_value"] == risk.p_value
    assert report.data["permutation"]["hellinger"] == risk.hellinger
    assert report.data["permutation"]["linkage"] == risk.linkage


def test_rank_interval_disclosure_matches_its_definition_with_ties():
    # oracle: the definition record by record (tied released values share one interval, from
    # w ranks below the first of them to w ranks above the last)
    from sdckit.risk import interval_disclosure

    rng = np.random.default_rng(3)
    y = pd.DataFrame({"a": rng.integers(0, 40, 300).astype(float), "b": rng.standard_normal(300)})
    x = y + rng.normal(scale=[3.0, 0.2], size=y.shape)
    p, n = 10.0, 300
    w = int(np.floor(p / 100 * n / 2))
    hits = []
    for c in ("a", "b"):
        s = np.sort(y[c].to_numpy())
        for xi, yi in zip(x[c], y[c]):
            first, last = np.flatnonzero(s == yi)[[0, -1]]
            hits.append(s[max(first - w, 0)] <= xi <= s[min(last + w, n - 1)])
    assert interval_disclosure(x, y, p=p).share == pytest.approx(np.mean(hits), abs=1e-15)
