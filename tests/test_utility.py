"""sdckit.utility: every measure against hand-computed cases, plus each bad-input path."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.utility import (
    categorical_precision,
    correlation_difference,
    discernibility,
    il1,
    il1_columns,
    mean_abs_correlation_difference,
    moment_differences,
    numerical_precision,
    pmse,
    quantile_differences,
    utility_loss,
    utility_summary,
)


# ------------------------------------------------------------------ moments
def test_moment_differences_hand_computed():
    # X = 1,2,3 (mean 2, var 1); Y = 2,3,7 (mean 4, var ((-2)^2+(-1)^2+3^2)/2 = 7)
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": [5.0, 5.0, 5.0]})
    y = pd.DataFrame({"a": [2.0, 3.0, 7.0], "c": [5.0, 5.0, 6.0]})
    m = moment_differences(x, y)
    assert m.loc["a", "mean_difference"] == pytest.approx(2.0)
    assert m.loc["a", "standardized_mean_difference"] == pytest.approx(2.0)  # sd of X is 1
    assert m.loc["a", "var_released"] == pytest.approx(7.0)
    assert m.loc["a", "var_ratio"] == pytest.approx(7.0)
    # constant original column: mean diff 1/3 scaled by 1; variance ratio infinite
    assert m.loc["c", "standardized_mean_difference"] == pytest.approx(1 / 3)
    assert math.isinf(m.loc["c", "var_ratio"])


def test_quantile_differences_hand_computed():
    # X = 0..4: median 2, q0.25 = 1; Y = X*2: median 4, q0.25 = 2
    x = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0]})
    y = pd.DataFrame({"a": [0.0, 2.0, 4.0, 6.0, 8.0]})
    q = quantile_differences(x, y, q=[0.25, 0.5])
    assert q.loc["a"].tolist() == [1.0, 2.0]


def test_quantile_differences_rejects_bad_probabilities():
    x = pd.DataFrame({"a": [0.0, 1.0]})
    with pytest.raises(ParameterError, match="'q' parameter of quantile_differences"):
        quantile_differences(x, x, q=[1.5])
    with pytest.raises(ParameterError):
        quantile_differences(x, x, q=[])


def test_correlation_difference_hand_computed():
    # X: b = a (corr 1); Y: b reversed against a (corr -1): difference -2 off the diagonal
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]})
    y = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 2.0, 1.0]})
    d = correlation_difference(x, y)
    assert d.loc["a", "b"] == pytest.approx(-2.0) and d.loc["a", "a"] == pytest.approx(0.0)
    assert mean_abs_correlation_difference(d) == pytest.approx(2.0)
    with pytest.raises(ParameterError, match="'method' parameter"):
        correlation_difference(x, y, method="kendal")


# ------------------------------------------------------------------ IL1
def test_il1_hand_computed():
    # |diff| sums to 2 over 5 records; S = sqrt(2.5); IL1s = 2 / (5 * sqrt(2) * sqrt(2.5)) = 2/(5*sqrt(5))
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.0, 1.0, 1.0, 1.0, 1.0]})
    y = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 7.0], "b": [1.0, 1.0, 1.0, 1.0, 2.0]})
    per = il1_columns(x, y)
    assert per["a"] == pytest.approx(2 / (5 * math.sqrt(5)))
    # constant column b: scaled by 1 instead of 0 -> |1| / (sqrt 2) / 5
    assert per["b"] == pytest.approx(1 / (5 * math.sqrt(2)))
    assert il1(x, y) == pytest.approx((per["a"] + per["b"]) / 2)
    assert il1(x, x) == 0.0


def test_il1_of_independent_copy_is_about_0_8():
    # E|X - X'| = 2 S / sqrt(pi) for normal data, so IL1s -> sqrt(2/pi) ~ 0.798
    rng = np.random.default_rng(1)
    x = pd.DataFrame({"a": rng.normal(size=20_000)})
    y = pd.DataFrame({"a": rng.normal(size=20_000)})
    assert il1(x, y) == pytest.approx(math.sqrt(2 / math.pi), abs=0.02)


def test_il1_needs_record_correspondence():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match="same records"):
        il1(x, x.iloc[:2])


# ------------------------------------------------------------------ bad inputs shared by all
@pytest.mark.parametrize("measure", [moment_differences, quantile_differences, correlation_difference, il1])
def test_column_checks(measure):
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0], "s": ["u", "v", "w"]})
    with pytest.raises(SchemaError, match="'zz' is not in the original"):
        measure(x, x, ["zz"])
    with pytest.raises(SchemaError, match="not numeric"):
        measure(x, x, ["s"])
    with pytest.raises(SchemaError, match="empty list"):
        measure(x, x, [])
    with pytest.raises(SchemaError, match="no numeric column"):
        measure(x[["s"]], x[["s"]])
    nan = x.assign(a=[1.0, np.nan, 3.0])
    with pytest.raises(DataError, match="'a'.*1 record"):
        measure(x, nan, ["a"])
    with pytest.raises(DataError, match="DataFrame"):
        measure(x.to_numpy(), x)
    with pytest.raises(DataError, match="at least"):
        measure(x.iloc[:0], x)


# ------------------------------------------------------------------ pMSE
def test_pmse_hand_computed_single_binary_attribute():
    # a=0: 3 original, 1 released -> p = 1/4; a=1: 1 original, 3 released -> p = 3/4
    # pMSE = mean((p - 1/2)^2) = 1/16; k = 2 parameters: null = 1 * (1/2) * (1/2) / 8 = 1/32
    x = pd.DataFrame({"a": [0, 0, 0, 1]})
    y = pd.DataFrame({"a": [0, 1, 1, 1]})
    result = pmse(x, y)
    # (the negligible ridge penalty, C = 1e4, moves it by less than 1e-4 on 8 records)
    assert result.pmse == pytest.approx(1 / 16, abs=1e-4)
    assert result.n_parameters == 2
    assert result.null_pmse == pytest.approx(1 / 32)
    assert result.ratio == pytest.approx(2.0, abs=1e-2)


def test_pmse_identical_data_is_zero_and_separated_data_near_quarter():
    rng = np.random.default_rng(3)
    x = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    assert pmse(x, x).pmse == pytest.approx(0.0, abs=1e-8)
    assert pmse(x, x, model="tree").pmse == pytest.approx(0.0, abs=1e-12)
    far = x + 100.0
    assert pmse(x, far).pmse == pytest.approx(0.25, abs=0.01)
    assert pmse(x, far, model="tree").pmse == pytest.approx(0.25, abs=1e-9)


def test_pmse_sees_variance_change_through_squares():
    # same means, variance x4: only the squared terms can see it
    rng = np.random.default_rng(4)
    x = pd.DataFrame({"a": rng.normal(size=2000)})
    y = pd.DataFrame({"a": rng.normal(scale=2.0, size=2000)})
    assert pmse(x, y).ratio > 20
    assert pmse(x, y, interactions=False).ratio < 10


def test_pmse_null_ratio_about_one_for_same_distribution():
    rng = np.random.default_rng(5)
    ratios = []
    for _ in range(40):
        x = pd.DataFrame(rng.normal(size=(500, 3)), columns=list("abc"))
        y = pd.DataFrame(rng.normal(size=(500, 3)), columns=list("abc"))
        ratios.append(pmse(x, y).ratio)
    # k - 1 = 3 + 3 + 3 = 9 features: each ratio ~ chi2_9 / 9 (sd 0.47), the mean of 40 has
    # sd 0.075; a null of half the size (Snoke et al.'s at c = 1/2) would give about 2
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.25)


def test_pmse_handles_categorical_columns():
    x = pd.DataFrame({"r": ["n", "s", "n", "s"] * 10})
    y = pd.DataFrame({"r": ["n", "n", "n", "s"] * 10})
    # n: 20 original, 30 released -> p = 0.6; s: 20 and 10 -> p = 1/3; c = 1/2
    expected = (50 * 0.1**2 + 30 * (1 / 6) ** 2) / 80
    assert pmse(x, y).pmse == pytest.approx(expected, abs=1e-6)


def test_pmse_bad_inputs():
    x = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ParameterError, match="'model' parameter of pmse"):
        pmse(x, x, model="forest")
    with pytest.raises(ParameterError, match="'interactions' parameter"):
        pmse(x, x, interactions="yes")
    with pytest.raises(SchemaError, match="'b' is not in the original"):
        pmse(x, x, ["b"])
    with pytest.raises(SchemaError, match="no column shared"):
        pmse(x, pd.DataFrame({"z": [1.0]}))
    with pytest.raises(DataError, match="missing values"):
        pmse(x, pd.DataFrame({"a": [1.0, np.nan]}))
    with pytest.raises(DataError, match="DataFrame"):
        pmse([1, 2], x)
    with pytest.raises(DataError, match="no"):
        pmse(x.iloc[:0], x)


# ------------------------------------------------------------------ generalized data
def test_categorical_precision_hand_computed_and_bounds():
    levels = pd.DataFrame({"zip": [0, 2, 5], "age": [1, 1, 0]})
    # zip height 5: 0, 2/5, 1; age height 2: 1/2, 1/2, 0 -> mean loss (0+.4+1+.5+.5+0)/6 = 0.4
    assert categorical_precision(levels, {"zip": 5, "age": 2}) == pytest.approx(0.6)
    assert categorical_precision(np.zeros((2, 2)), [3, 3]) == 1.0
    with pytest.raises(DataError, match="between 0"):
        categorical_precision(np.array([[4]]), [3])
    with pytest.raises(ParameterError, match="height"):
        categorical_precision(levels, {"zip": 5})
    with pytest.raises(ParameterError, match=">= 1"):
        categorical_precision(levels, [0, 2])
    with pytest.raises(ParameterError, match="2 columns"):
        categorical_precision(levels, [3])
    with pytest.raises(DataError, match="missing"):
        categorical_precision(pd.DataFrame({"a": [np.nan]}), [1])


def test_numerical_precision_hand_computed_and_bad_inputs():
    # height range 100 (140..240): [160,180) loses 0.2, exact value 0, [140,240] loses 1 -> mean 0.4
    lo = pd.DataFrame({"h": [160.0, 170.0, 140.0]})
    hi = pd.DataFrame({"h": [180.0, 170.0, 240.0]})
    assert numerical_precision(lo, hi, {"h": 100.0}) == pytest.approx(0.6)
    with pytest.raises(DataError, match="shape"):
        numerical_precision(lo, hi.iloc[:2], [100.0])
    with pytest.raises(DataError, match="below"):
        numerical_precision(hi, lo, [100.0])
    with pytest.raises(ParameterError, match="range"):
        numerical_precision(lo, hi, [-1.0])
    assert numerical_precision(lo, lo, [0.0]) == 1.0


def test_discernibility_hand_computed_and_bad_inputs():
    # classes a:1, b:2, c:3 and 4 suppressed of 10: 1 + 4 + 9 + 4*10 = 54
    assert discernibility(["a", "b", "b", "c", "c", "c"], n_suppressed=4) == 54
    assert discernibility([1, 1], n_suppressed=1, n_total=5) == 4 + 5
    with pytest.raises(ParameterError, match="n_suppressed"):
        discernibility([1], n_suppressed=-1)
    with pytest.raises(ParameterError, match="n_total"):
        discernibility([1, 2], n_suppressed=1, n_total=2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_discernibility_matches_brute_force(labels):
    # brute force: each record costs the size of its own class
    expected = sum(labels.count(v) for v in labels)
    assert discernibility(labels) == expected


# ------------------------------------------------------------------ summaries
def test_utility_loss_and_summary():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [2.0, 1.0, 4.0, 3.0, 6.0]})
    y = x.assign(a=[1.0, 2.0, 3.0, 4.0, 7.0])
    assert utility_loss(x, y) == pytest.approx(il1(x, y))
    assert utility_loss(x, y, measure="correlation") == pytest.approx(
        abs(y.corr().loc["a", "b"] - x.corr().loc["a", "b"]))
    with pytest.raises(ParameterError, match="'measure' parameter of utility_loss"):
        utility_loss(x, y, measure="mse")
    s = utility_summary(x, y)
    assert s["il1"] == pytest.approx(il1(x, y)) and s["columns"] == ["a", "b"]
    assert utility_summary(x, y.iloc[:4])["il1"] is None
