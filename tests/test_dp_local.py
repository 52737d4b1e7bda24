"""LaplaceNoise: data-set-wide DP noise with public bounds; fail closed on bounds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, Schema, protect
from sdckit.dp import LaplaceNoise


def frame_and_schema(n: int = 4000):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(20, 60, n), "height": rng.uniform(150, 190, n)})
    return frame, Schema.infer(frame, quasi=["age", "height"])


def test_scale_is_columns_times_range_over_epsilon_and_integers_stay_integers():
    frame, schema = frame_and_schema()
    out = LaplaceNoise(epsilon=4.0, bounds={"age": [0, 100], "height": [140.0, 200.0]}).apply(frame, schema, 1)
    # Two columns share epsilon 4: each gets 2. Height: scale 60/2 = 30 = E|Y|.
    assert np.abs(out["height"] - frame["height"]).mean() == pytest.approx(30.0, rel=0.05)
    # Age (integer column, integer bounds): geometric mechanism, scale 100/2 = 50.
    assert pd.api.types.is_integer_dtype(out["age"])
    assert np.abs(out["age"] - frame["age"]).mean() == pytest.approx(50.0, rel=0.05)


def test_values_outside_the_bounds_are_clamped_and_counted():
    frame = pd.DataFrame({"x": [0.0, 5.0, 10.0, 50.0]})
    outcome = LaplaceNoise(epsilon=1e6, bounds={"x": [1.0, 20.0]}).run(frame, Schema.infer(frame), 0)
    assert outcome.info["clamped"] == {"x": 2}
    np.testing.assert_allclose(outcome.data["x"], [1.0, 5.0, 10.0, 20.0], atol=1e-3)


def test_bounds_from_the_data_only_on_request_and_recorded():
    frame, schema = frame_and_schema(200)
    release = protect(frame, [LaplaceNoise(epsilon=1.0, bounds="data")], schema=schema, seed=2)
    entry = release.manifest["methods"][0]
    assert entry["params"]["bounds"] == "data"
    assert entry["info"]["bounds_from_data"] is True
    assert entry["info"]["bounds"]["age"] == [int(frame["age"].min()), int(frame["age"].max())]
    assert any("taken from the data" in w for w in entry["warnings"])
    assert entry["info"]["budget"]["spent"] == pytest.approx(1.0)
    assert [s["label"] for s in entry["info"]["budget"]["spends"]] == ["age", "height"]


@pytest.mark.parametrize("bounds", [None, {}, {"height": [2, 1]}, {"height": [0, math.inf]},
                                    {"height": ["0", "1"]}, {"height": [1]}, "min-max"])
def test_bad_or_missing_bounds_are_refused(bounds):
    with pytest.raises(ParameterError, match="The 'bounds' parameter of LaplaceNoise must be"):
        LaplaceNoise(epsilon=1.0, bounds=bounds)


def test_bounds_must_cover_every_protected_column():
    frame, schema = frame_and_schema(20)
    with pytest.raises(ParameterError, match=r"missing: \['age'\]"):
        LaplaceNoise(epsilon=1.0, bounds={"height": [140, 200]}).apply(frame, schema, 0)


@pytest.mark.parametrize("epsilon", [None, 0, -1.0, math.nan])
def test_missing_or_bad_epsilon_is_refused(epsilon):
    with pytest.raises(ParameterError, match="The 'epsilon' parameter of LaplaceNoise must be"):
        LaplaceNoise(epsilon=epsilon, bounds="data")


def test_missing_values_are_refused():
    frame = pd.DataFrame({"x": [1.0, np.nan]})
    with pytest.raises(DataError, match="'x'"):
        LaplaceNoise(epsilon=1.0, bounds={"x": [0, 2]}).apply(frame, Schema.infer(frame), 0)
