"""Seed 004 section V: expected relative error (eqs. 6-8), linking risk (V-B) and
alpha-confident k-anonymity (V-C), against hand-worked examples and brute-force oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import DataError, ParameterError
from sdckit.dp import confidence_suppression, expected_relative_error, linking_risk
from sdckit.dp.measures import class_diameters, record_diameters, record_scales
from sdckit.dp.mechanisms import laplace_randomise


# --------------------------------------------------------------------------- error (V-A)
def test_expected_error_hand_worked_one_class():
    # values 1, 2, 4; epsilon 1: diameter 3, mean of 1/|x| = (1 + 1/2 + 1/4)/3 = 7/12,
    # harmonic mean 12/7; eq. 7: 3 / (1 * 12/7) = 1.75.
    pred = expected_relative_error([1.0, 2.0, 4.0], None, 1.0)
    assert pred.total == pytest.approx(1.75)
    assert pred.per_class["harmonic_mean"][0] == pytest.approx(12 / 7)
    assert pred.per_class["scale"][0] == 3.0


def test_expected_error_hand_worked_two_classes():
    # Class a = {1, 2}: diameter 1, mean 1/x = 0.75 -> 0.75 / eps.
    # Class b = {4, 8, -8}: diameter 16, mean 1/|x| = (1/4 + 1/8 + 1/8)/3 = 1/6 -> 16/6 / eps.
    # Eq. 8 with eps = 0.5: (2 * 1.5 + 3 * 16/3) / 5 = (3 + 16) / 5 = 3.8.
    pred = expected_relative_error([1, 2, 4, 8, -8], ["a", "a", "b", "b", "b"], 0.5)
    assert pred.per_class["error"].tolist() == pytest.approx([1.5, 16 / 3])
    assert pred.total == pytest.approx(3.8)


def test_a_constant_class_has_no_error_and_a_zero_value_an_infinite_one():
    pred = expected_relative_error([5.0, 5.0, 0.0, 1.0], [0, 0, 1, 1], 1.0)
    assert pred.per_class["error"][0] == 0.0
    assert math.isinf(pred.per_class["error"][1]) and math.isinf(pred.total)


def test_predicted_error_matches_30_seeded_runs():
    # Eq. 8 before any noise, against the mean relative error of 30 runs of the sampler.
    rng = np.random.default_rng(0)
    x = rng.normal(170, 8, 3000)
    classes = rng.integers(0, 60, 3000)
    epsilon = 0.7
    predicted = expected_relative_error(x, classes, epsilon).total
    sens = record_diameters(x, classes)[:, 0]
    runs = [np.mean(np.abs(laplace_randomise(x, sens, epsilon, np.random.default_rng(s)) - x) / np.abs(x))
            for s in range(30)]
    assert np.mean(runs) == pytest.approx(predicted, rel=0.10)
    assert np.mean(runs) == pytest.approx(predicted, rel=0.02)  # in fact much closer


def test_per_class_noise_beats_noise_scaled_to_the_whole_data_set():
    # Seed 004 section III-B: diameter(class) <= diameter(data), so per-class noise is smaller.
    rng = np.random.default_rng(1)
    x = np.sort(rng.normal(170, 8, 2000))
    classes = np.repeat(np.arange(100), 20)  # classes of neighbouring values
    per_class = expected_relative_error(x, classes, 1.0).total
    whole = expected_relative_error(x, None, 1.0).total
    assert per_class < whole / 5
    seed = np.random.default_rng(2)
    empirical_class = np.mean(np.abs(laplace_randomise(x, record_diameters(x, classes)[:, 0], 1.0, seed) - x) / x)
    empirical_whole = np.mean(np.abs(laplace_randomise(x, np.ptp(x), 1.0, seed) - x) / x)
    assert empirical_class < empirical_whole / 5


def test_diameters_and_scales():
    x = np.array([[1.0, 10.0], [3.0, 10.0], [2.0, 40.0], [7.0, 0.0]])
    assert class_diameters(x, [0, 0, 1, 1]).tolist() == [[2.0, 0.0], [5.0, 40.0]]
    # Two epsilon-quasis share epsilon = 2 equally: scale = 2 * diameter / 2.
    assert record_scales(x, [0, 0, 1, 1], 2.0).tolist() == [[2, 0], [2, 0], [5, 40], [5, 40]]


# --------------------------------------------------------------------------- linking (V-B)
def linking_oracle(x, y, classes):
    """Record i is linked when its own original is strictly closest within its class
    (Chebyshev on columns divided by their range)."""
    x, y = np.atleast_2d(x.T).T, np.atleast_2d(y.T).T
    span = np.ptp(x, axis=0)
    span[span == 0] = 1
    linked = []
    for i in range(len(x)):
        d = np.max(np.abs(y[i] / span - x / span), axis=1)
        same = np.flatnonzero(classes == classes[i])
        others = same[same != i]
        linked.append(all(d[i] < d[j] for j in others))
    return np.array(linked, dtype=int)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.sampled_from([1, 2]), ties=st.booleans())
def test_linking_risk_against_brute_force(seed, m, ties):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    x = rng.integers(0, 6, (n, m)).astype(float) if ties else rng.normal(0, 1, (n, m))
    y = x + rng.laplace(0, rng.choice([0.01, 0.3, 3.0]), (n, m))
    classes = rng.integers(0, 4, n)
    if m == 1:
        x, y = x[:, 0], y[:, 0]
    result = linking_risk(x, y, classes)
    np.testing.assert_array_equal(result["linked"], linking_oracle(x, y, classes))
    assert result["risk"] == pytest.approx(result["linked"].mean())


def test_linking_hand_worked():
    # One class {0, 10, 20}: released 1 (own 0: linked), 14 (own 10; 20 is 6 away, 10 is 4:
    # linked), 11 (own 20: 10 is closer, not linked). Second class {5, 5}: equal values, never linked.
    out = linking_risk([0, 10, 20, 5, 5], [1, 14, 11, 5, 5], [0, 0, 0, 1, 1])
    assert out["linked"].tolist() == [1, 1, 0, 0, 0]
    assert out["count"] == 2 and out["risk"] == 0.4


def test_no_noise_links_every_distinct_value_and_huge_noise_links_about_one_in_class_size():
    rng = np.random.default_rng(3)
    x = rng.normal(170, 8, 4000)
    classes = np.repeat(np.arange(200), 20)
    assert linking_risk(x, x, classes)["risk"] == 1.0
    noisy = x + rng.laplace(0, 1e4, 4000)
    assert linking_risk(x, noisy, classes)["risk"] == pytest.approx(1 / 20, abs=0.015)


# --------------------------------------------------------------------------- confidence (V-C)
def confidence_oracle(x, y, classes, epsilon, alpha, k, keep_outlying):
    """Brute force: count originals of the class inside each record's alpha-box, suppress
    records with a count below k (but above 0 when keep_outlying), then classes left below k."""
    x, y = np.atleast_2d(x.T).T, np.atleast_2d(y.T).T
    m = x.shape[1]
    suppressed = np.zeros(len(x), dtype=bool)
    for c in np.unique(classes):
        members = np.flatnonzero(classes == c)
        diameter = x[members].max(axis=0) - x[members].min(axis=0)
        radius = (m * diameter / epsilon) * math.log(1 / (1 - alpha ** (1 / m)))
        for i in members:
            count = sum(np.all(np.abs(x[j] - y[i]) <= radius) for j in members)
            suppressed[i] = count < k and not (keep_outlying and count == 0)
        if len(members) - suppressed[members].sum() < k:
            suppressed[members] = True
    return suppressed


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), m=st.sampled_from([1, 2]), keep=st.booleans())
def test_confidence_suppression_against_brute_force(seed, m, keep):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    x = rng.normal(0, 1, (n, m))
    classes = rng.integers(0, 4, n)
    epsilon, alpha, k = float(rng.choice([0.5, 2.0, 20.0])), float(rng.choice([0.5, 0.9, 0.99])), int(rng.integers(2, 5))
    sens = record_diameters(x, classes)
    y = np.column_stack([laplace_randomise(x[:, j], sens[:, j], epsilon / m, rng) for j in range(m)])
    if m == 1:
        x, y = x[:, 0], y[:, 0]
    result = confidence_suppression(x, y, classes, epsilon, alpha, k, keep_outlying=keep)
    np.testing.assert_array_equal(result.suppressed, confidence_oracle(x, y, classes, epsilon, alpha, k, keep))
    assert result.total == result.suppressed.sum()


def test_confidence_hand_worked():
    # Class {0, 10, 20}: diameter 20, epsilon 20 -> scale 1; alpha = 1 - e^-1 -> radius exactly 1.
    # Released 0.5 holds {0} (1 < k=2: suppressed), 15 holds none (outlying: kept),
    # 10.5 holds {10} (suppressed). One record is left (< k): the whole class goes.
    # Class {100, 100.5, 101, 200}: diameter 100, epsilon 20 -> scale 5, radius 5:
    # released 100, 101, 100.4 hold 3 originals (kept); 150 holds none (kept).
    x = [0, 10, 20, 100, 100.5, 101, 200]
    y = [0.5, 10.5, 15, 100, 101, 100.4, 150]
    classes = [0, 0, 0, 1, 1, 1, 1]
    alpha = 1 - math.exp(-1)
    out = confidence_suppression(x, y, classes, 20.0, alpha, 2)
    assert out.counts.tolist() == [1, 1, 0, 3, 3, 3, 0]
    assert out.suppressed.tolist() == [True, True, True, False, False, False, False]
    assert (out.records, out.classes, out.total) == (2, 1, 3)
    strict = confidence_suppression(x, y, classes, 20.0, alpha, 2, keep_outlying=False)
    assert strict.suppressed.tolist() == [True, True, True, False, False, False, True]


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("epsilon", [0, -1.0, math.nan, math.inf, None, "1"])
def test_bad_epsilon_in_measures(epsilon):
    with pytest.raises(ParameterError, match="'epsilon' parameter of expected_relative_error"):
        expected_relative_error([1.0, 2.0], None, epsilon)
    with pytest.raises(ParameterError, match="'epsilon' parameter of record_scales"):
        confidence_suppression([1.0, 2.0], [1.0, 2.0], [0, 0], epsilon, 0.9, 2)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("alpha", {"alpha": 0.0}), ("alpha", {"alpha": 1.0}), ("alpha", {"alpha": "high"}),
    ("k", {"k": 1}), ("k", {"k": 2.5}), ("keep_outlying", {"keep_outlying": "yes"}),
])
def test_bad_confidence_parameters(name, kwargs):
    args = {"epsilon": 1.0, "alpha": 0.9, "k": 2, **kwargs}
    with pytest.raises(ParameterError, match=f"'{name}' parameter of confidence_suppression"):
        confidence_suppression([1.0, 2.0], [1.0, 2.0], [0, 0], **args)


def test_bad_arrays_are_refused():
    with pytest.raises(DataError, match="same shape"):
        linking_risk([1.0, 2.0], [1.0], [0, 0])
    with pytest.raises(DataError, match="one label per record"):
        linking_risk([1.0, 2.0], [1.0, 2.0], [0])
    with pytest.raises(DataError, match="missing or infinite"):
        expected_relative_error([1.0, np.nan], None, 1.0)
    with pytest.raises(DataError, match="non-empty"):
        linking_risk([], [], [])
    with pytest.raises(DataError, match="one column at a time"):
        expected_relative_error(np.ones((3, 2)), None, 1.0)
    with pytest.raises(DataError, match="same shape"):
        confidence_suppression([1.0, 2.0], [1.0], [0, 0], 1.0, 0.9, 2)
