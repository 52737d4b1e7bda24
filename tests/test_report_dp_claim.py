"""The report never publishes aggregates of the original data beside a release that claims
differential privacy, and labels them as not differentially private elsewhere (issue 19 item 2).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdckit import AdditiveNoise, protect
from sdckit.core.random import new_seed
from sdckit.dp import LaplaceNoise
from sdckit.report import build_report, render_report
from sdckit.report.model import DP_RELEASE_NOTE, NOT_DP_LABEL


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame({"age": rng.integers(18, 90, 300), "income": rng.normal(40_000, 9_000, 300)})


BOUNDS = {"age": (18, 90), "income": (0.0, 100_000.0)}


def test_a_dp_release_gets_a_report_without_original_aggregates():
    data = _data()
    release = protect(data, [LaplaceNoise(epsilon=1.0, bounds=BOUNDS)], seed=new_seed())
    assert release.manifest["claims_dp"] is True
    report = build_report(data, release.data, manifest=release.manifest, n_random=300, n_null=5, seed=1)
    assert [s.anchor for s in report.sections] == ["summary", "transparency"]
    html = render_report(report)
    assert DP_RELEASE_NOTE.split(",")[0] in html
    for word in ("Hellinger", "Record linkage", "IL1", "pMSE", "Equivalence classes"):
        assert word not in html
    assert "permutation" not in report.data and "utility" not in report.data


def test_a_release_that_does_not_claim_dp_labels_every_original_aggregate():
    data = _data()
    release = protect(data, [AdditiveNoise(alpha=0.1)], seed=new_seed())
    assert release.manifest["claims_dp"] is False
    report = build_report(data, release.data, manifest=release.manifest, n_random=300, n_null=5, seed=1)
    labelled = [s.anchor for s in report.sections if s.from_original]
    assert labelled and "summary" not in labelled and "transparency" not in labelled
    assert render_report(report).count(NOT_DP_LABEL) == len(labelled)


def test_dp_claim_needs_every_method_and_every_column():
    data = _data()
    partial = protect(data, [LaplaceNoise(epsilon=1.0, bounds={"age": (18, 90)}, columns=["age"])], seed=new_seed())
    assert partial.manifest["claims_dp"] is False  # income is released as it was
    mixed = protect(data, [LaplaceNoise(epsilon=1.0, bounds=BOUNDS), AdditiveNoise(alpha=0.1)], seed=new_seed())
    assert mixed.manifest["claims_dp"] is False
    from_data = protect(data, [LaplaceNoise(epsilon=1.0, bounds="data")], seed=new_seed())
    assert from_data.manifest["claims_dp"] is False  # bounds taken from the data
