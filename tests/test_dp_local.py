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


def test_values_outside_the_bounds_are_clamped_and_not_counted():
    frame = pd.DataFrame({"x": [0.0, 5.0, 10.0, 50.0]})
    outcome = LaplaceNoise(epsilon=1e6, bounds={"x": [1.0, 20.0]}).run(frame, Schema.infer(frame), 0)
    np.testing.assert_allclose(outcome.data["x"], [1.0, 5.0, 10.0, 20.0], atol=1e-3)
    # Issue 19 item 2: how many values lay outside the bounds is a statistic of the data.
    assert "clamped" not in outcome.info


def manifest_numbers(value) -> list[float]:
    """Every number in a manifest entry (strings of exact numbers included)."""
    from fractions import Fraction

    if isinstance(value, dict):
        return [x for v in value.values() for x in manifest_numbers(v)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in manifest_numbers(v)]
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(Fraction(value))]
        except (ValueError, ZeroDivisionError):
            return []
    return []


def test_the_manifest_holds_parameters_never_data_derived_numbers():
    # Issue 19 item 2, the attack: the manifest gave the exact number of values outside the
    # bounds, and with bounds="data" the exact minimum and maximum. Plant distinctive values
    # and look for them (and for the clamped count) anywhere in the manifest entry.
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": np.r_[rng.uniform(10, 20, 97), [3.14159, 27.18281, 99.5]]})
    for bounds in ({"x": [10.0, 20.0]}, "data"):
        release = protect(frame, [LaplaceNoise(epsilon=1.0, bounds=bounds)], seed=1)
        entry = release.manifest["methods"][0]
        numbers = manifest_numbers({"params": entry["params"], "info": entry["info"]})
        assert 3.14159 not in numbers and 99.5 not in numbers  # data minimum and maximum
        assert 3.0 not in numbers  # values outside [10, 20]
        assert entry["info"]["claims_dp"] is (bounds != "data")


def test_bounds_from_the_data_only_on_request_and_recorded_as_not_dp():
    frame, schema = frame_and_schema(200)
    method = LaplaceNoise(epsilon=1.0, bounds="data")
    release = protect(frame, [method], schema=schema, seed=2)
    entry = release.manifest["methods"][0]
    assert entry["params"]["bounds"] == "data"
    assert entry["info"]["bounds"] == "taken from the data"
    assert any("not differentially private" in w for w in entry["warnings"])
    assert method.claims_dp is False
    assert LaplaceNoise(epsilon=1.0, bounds={"x": [0, 1]}).claims_dp is True
    assert entry["info"]["budget"]["spent"] == "1"
    assert [s["label"] for s in entry["info"]["budget"]["spends"]] == ["LaplaceNoise: age, height"]


def test_repeated_releases_are_refused_past_the_callers_budget():
    # Issue 19 item 8, the attack: 200 releases at epsilon = 1 on the same data, averaged, cut
    # the error tenfold. With the accountant the data protector holds, the fourth is refused.
    from sdckit.dp import BudgetAccountant, BudgetExceeded

    frame = pd.DataFrame({"x": np.linspace(0.0, 10.0, 50)})
    acct = BudgetAccountant(3.0)
    method = LaplaceNoise(epsilon=1.0, bounds={"x": [0.0, 10.0]}, accountant=acct)
    releases = []
    for _ in range(200):
        try:
            releases.append(protect(frame, [method]).data["x"].to_numpy())
        except BudgetExceeded:
            break
    assert len(releases) == 3 and acct.remaining == 0
    # What the attacker can average: three releases, error scale 10 / sqrt(3), not 10 / sqrt(200).
    error = np.abs(np.mean(releases, axis=0) - frame["x"].to_numpy()).mean()
    assert error > 2.0
    # The manifest shows the holder's budget (parameters of the release, not data).
    entry = protect(pd.DataFrame({"x": [1.0, 2.0]}), [LaplaceNoise(epsilon=0.5, bounds={"x": [0, 5]},
                    accountant=BudgetAccountant(1))], seed=1).manifest["methods"][0]
    assert "accountant" not in entry["params"] and entry["info"]["budget"]["spent"] == "0.5"


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
