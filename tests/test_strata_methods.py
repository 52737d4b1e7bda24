"""Masking methods per stratum (issue 16): one generic mechanism (core.method.StratifiedMethod)
used by Microaggregation and PRAM."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import ParameterError, SchemaError
from sdckit.masking.microaggregation import Microaggregation
from sdckit.masking.pram import Pram


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame({
        "region": np.repeat(["a", "b", "c"], [7, 9, 6]),
        "income": rng.normal(100, 30, 22).round(1),
        "age": rng.integers(18, 90, 22).astype(float),
        "job": np.concatenate([rng.choice(["x", "y"], 7), rng.choice(["p", "q", "r"], 9), rng.choice(["u", "v"], 6)]),
    })


def test_microaggregation_per_stratum_equals_each_stratum_alone():
    f = frame().sample(frac=1, random_state=1)  # strata interleaved
    m = Microaggregation(k=3, columns=["income", "age"], strata=["region"])
    out = m.apply(f, seed=1)
    assert out.index.equals(f.index) and (out["region"] == f["region"]).all()
    for region, part in f.groupby("region"):
        alone = Microaggregation(k=3, columns=["income", "age"]).apply(part, seed=1)
        pd.testing.assert_frame_equal(out.loc[part.index], alone)
    assert m.run(f, seed=1).info["strata"] == 3


def test_pram_per_stratum_keeps_categories_within_strata():
    f = frame()
    out = Pram(p_keep=0.2, columns=["job"], strata=["region"]).apply(f, seed=7)
    for region, part in f.groupby("region"):
        assert set(out.loc[part.index, "job"]) <= set(part["job"])
    assert (out["job"] != f["job"]).any()
    again = Pram(p_keep=0.2, columns=["job"], strata=["region"]).apply(f, seed=7)
    pd.testing.assert_frame_equal(out, again)


def test_strata_in_the_manifest_and_bad_strata():
    m = Microaggregation(k=3, columns=["income"], strata=["region"])
    assert m.to_manifest()["params"]["strata"] == ["region"]
    with pytest.raises(ParameterError, match="The 'strata' parameter of Microaggregation must be"):
        Microaggregation(k=3, strata=5)
    with pytest.raises(SchemaError, match="'nope'"):
        Microaggregation(k=3, columns=["income"], strata=["nope"]).apply(frame(), seed=1)
    with pytest.raises(SchemaError, match="both protect"):
        Microaggregation(k=3, columns=["income"], strata=["income"]).apply(frame(), seed=1)
