"""Measures that sample on large data say so and stay within their stated error (issue 12
section 3; issue 17): distance-based record linkage, pMSE, and the intruder's linkage and
verification of :func:`sdckit.permutation.assess`; the report uses them above a size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.permutation import assess
from sdckit.risk import distance_linkage
from sdckit.utility import pmse


def _pair(n: int, m: int, noise: float, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    x = pd.DataFrame(rng.standard_normal((n, m)), columns=[f"c{j}" for j in range(m)])
    return x, x + rng.standard_normal((n, m)) * noise


def test_sampled_linkage_rate_within_its_standard_error():
    x, y = _pair(4000, 3, 0.15)
    exact = distance_linkage(x, y)
    assert 0.2 < exact.rate < 0.8 and exact.sampled is None and exact.standard_error == 0.0
    est = distance_linkage(x, y, sample=1000, seed=3)
    assert est.sampled == 1000 and len(est.records) == 1000
    # SE by hand: credits are 0/1 here, so var = r (1 - r) s/(s - 1); finite-population factor
    r = est.rate
    se = np.sqrt(r * (1 - r) / 999 * (1 - 1000 / 4000))
    assert est.standard_error == pytest.approx(se, rel=1e-9)
    assert abs(est.rate - exact.rate) < 4 * est.standard_error
    assert est.correct == pytest.approx(est.rate * 4000)
    # the sampled rows are those of the exact run
    assert (est.records["credit"] == exact.records.loc[est.records.index, "credit"]).all()


def test_linkage_sample_larger_than_the_release_is_exact():
    x, y = _pair(300, 2, 0.2)
    assert distance_linkage(x, y, sample=5000).to_dict() == distance_linkage(x, y).to_dict()


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10"])
def test_bad_sample_sizes_are_refused(bad):
    x, y = _pair(50, 2, 0.2)
    with pytest.raises(ParameterError, match="sample"):
        distance_linkage(x, y, sample=bad)
    with pytest.raises(ParameterError, match="sample"):
        pmse(x, y, sample=bad)
    with pytest.raises(ParameterError, match="sample"):
        assess(x, y, sample=bad, seed=1)


def test_pmse_on_samples():
    x, y = _pair(3000, 2, 0.0, seed=1)
    full = pmse(x, y)
    same = pmse(x, y, sample=10_000)
    assert same.sampled is None and same.pmse == full.pmse
    part = pmse(x, y, sample=500, seed=2)
    assert part.sampled == 1000
    # null expectation of the samples: (k - 1) c (1 - c) / N with N = 1000, k = 6 parameters
    assert part.null_pmse == pytest.approx(5 * 0.25 / 1000)
    assert part.pmse < 0.01      # identical distributions (y is x): the classifier learns nothing


def test_assess_on_a_sample_of_originals():
    x, y = _pair(3000, 3, 0.02)
    full = assess(x, y, seed=4, max_batches=8)
    part = assess(x, y, seed=4, max_batches=8, sample=600)
    assert part.sampled == 600 and full.sampled is None
    assert len(part.linkage.records) == 600 and len(part.verification.records) == 600
    assert part.linkage.correct + part.linkage.multiple + part.linkage.wrong == 600
    share_full = full.linkage.correct / 3000
    share = part.linkage.correct / 600
    assert abs(share - share_full) < 4 * np.sqrt(share_full * (1 - share_full) / 600) + 1e-9
    # the data-set-level distance of a sample is an upper bound (a minimum over fewer records)
    assert part.dataset_distance >= full.dataset_distance
    assert part.verification.p_value == 0.0 and any("sample" in k for k, _ in part.summary())


def test_report_states_its_samples(monkeypatch, tmp_path):
    import sdckit.report.model as model
    from sdckit.report import assess_report

    monkeypatch.setattr(model, "DBRL_SAMPLE", 200)
    monkeypatch.setattr(model, "LINKAGE_SAMPLE", 300)
    monkeypatch.setattr(model, "PMSE_SAMPLE", 250)
    x, y = _pair(1000, 3, 0.3)
    path = tmp_path / "r.html"
    assess_report(x, y, path, seed=1)
    html = path.read_text(encoding="utf-8")
    assert "estimated from 200 of 1,000 released records" in html
    assert "fitted on a random sample of 500 records" in html
    assert "300 of 1,000" in html and "Monte-Carlo standard error" in html
