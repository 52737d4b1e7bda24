"""Additive, correlated and multiplicative noise (seed 002 section 4.6.3, seed 001 section 3).

Statistical checks use tolerances of 5 standard deviations of the statistic under the method's
own model (derived in each test), so a correct method fails with probability below 1e-6, while
a method that does something else (e.g. uncorrelated noise where correlated noise is asked)
lands far outside them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, SchemaError
from sdckit.masking import AdditiveNoise, CorrelatedNoise, MultiplicativeNoise
from sdckit.core.arrays import covariance_root

N = 20_000
SIGMA = np.array([[4.0, 2.4, -1.0], [2.4, 9.0, 1.5], [-1.0, 1.5, 1.0]])


def correlated_frame(n: int = N, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal([10.0, -5.0, 100.0], SIGMA, size=n)
    return pd.DataFrame(x, columns=["a", "b", "c"])


def cov(frame: pd.DataFrame) -> np.ndarray:
    return np.cov(frame.to_numpy(dtype=float), rowvar=False)


@pytest.mark.parametrize("method", [AdditiveNoise(alpha=0.5), CorrelatedNoise(alpha=0.5)])
def test_noise_preserves_means(method):
    # The mean of column j moves by the mean of n noise draws of variance alpha * var_j:
    # sd = sqrt(alpha * var_j / n); tolerance 5 sd (about 0.15 for var_j = 9).
    x = correlated_frame()
    y = method.apply(x, seed=1)
    sd = np.sqrt(0.5 * x.var().to_numpy() / N)
    assert np.all(np.abs(y.mean().to_numpy() - x.mean().to_numpy()) < 5 * sd)


def test_correlated_noise_preserves_the_correlation_matrix():
    # E[cov(Y)] = (1 + alpha) Sigma, so corr(Y) = corr(X) in expectation. Sampling error of a
    # correlation entry here is about sqrt((alpha + 2 alpha^2) / n) / (1 + alpha) = 0.005
    # (alpha = 0.5, n = 20000); tolerance 0.03. Uncorrelated noise of the same size shrinks
    # every correlation by the factor 1/(1 + alpha): corr 0.4 -> 0.27, far outside.
    x = correlated_frame()
    y = CorrelatedNoise(alpha=0.5).apply(x, seed=2)
    assert np.abs(y.corr().to_numpy() - x.corr().to_numpy()).max() < 0.03
    np.testing.assert_allclose(np.diag(cov(y)), 1.5 * np.diag(cov(x)), rtol=0.05)
    uncorrelated = AdditiveNoise(alpha=0.5).apply(x, seed=2)
    assert np.abs(uncorrelated.corr().to_numpy() - x.corr().to_numpy()).max() > 0.1


def test_preserve_covariance_makes_covariance_unbiased():
    # y = c z + (1 - c) mean(x), c = 1/sqrt(1 + alpha): E[cov(Y)] = Sigma_hat. The error of an
    # entry is at most about sqrt((2 alpha + 2 alpha^2) / n) / (1 + alpha) * s_i s_j = 0.0058
    # s_i s_j (alpha = 0.5, n = 20000); tolerance 0.03 s_i s_j. Without the transformation the
    # covariance is 1.5 times larger, far outside.
    x = correlated_frame()
    s = cov(x)
    scale = np.sqrt(np.outer(np.diag(s), np.diag(s)))
    y = CorrelatedNoise(alpha=0.5, preserve_covariance=True).apply(x, seed=3)
    assert np.abs((cov(y) - s) / scale).max() < 0.03
    # the mean moves by c times the noise mean: sd c sqrt(alpha var_j / n)
    c = 1 / np.sqrt(1.5)
    assert np.all(np.abs(y.mean() - x.mean()).to_numpy() < 5 * c * np.sqrt(0.5 * np.diag(s) / N))
    plain = CorrelatedNoise(alpha=0.5).apply(x, seed=3)
    assert np.abs((cov(plain) - s) / scale).max() > 0.3


def test_preserve_covariance_unbiased_over_repeats_on_a_small_file():
    # Unbiasedness is a statement about the expectation: averaged over 400 maskings of the
    # same 30 records the covariance must approach Sigma_hat (error sd about
    # 0.25 s_i s_j / sqrt(400) = 0.0125 s_i s_j; tolerance 0.07).
    x = correlated_frame(n=30, seed=5)
    s = cov(x)
    scale = np.sqrt(np.outer(np.diag(s), np.diag(s)))
    rng = np.random.default_rng(7)
    mean_cov = np.mean(
        [cov(CorrelatedNoise(alpha=1.0, preserve_covariance=True).apply(x, seed=rng)) for _ in range(400)],
        axis=0,
    )
    assert np.abs((mean_cov - s) / scale).max() < 0.07


def test_correlated_noise_on_a_singular_covariance():
    # A constant column has zero variance, so its noise is zero and it stays constant; a copy
    # of a column gets the same noise as the column and stays an exact copy.
    x = correlated_frame(n=500)
    x["const"] = 3.0
    x["copy"] = x["a"]
    y = CorrelatedNoise(alpha=0.3).apply(x, seed=4)
    assert (y["const"] == 3.0).all()
    np.testing.assert_allclose(y["copy"], y["a"], atol=1e-9)
    assert not np.allclose(y["a"], x["a"])


def test_covariance_root_reproduces_the_matrix():
    root = covariance_root(SIGMA)
    np.testing.assert_allclose(root @ root.T, SIGMA, atol=1e-12)


def test_one_record_is_left_unchanged():
    x = pd.DataFrame({"a": [1.0], "b": [2.0]})
    pd.testing.assert_frame_equal(CorrelatedNoise(alpha=1.0).apply(x, seed=0), x)


@pytest.mark.parametrize("distribution", ["uniform", "lognormal"])
def test_multiplicative_noise_preserves_means(distribution):
    # y = x e with E[e] = 1, var(e) = a^2 / 3 for both distributions: the mean moves by
    # sum_i x_i (e_i - 1) / n, sd sqrt(sum_i x_i^2 a^2 / 3) / n; tolerance 5 sd.
    x = correlated_frame()
    a = 0.4
    y = MultiplicativeNoise(a=a, distribution=distribution).apply(x, seed=5)
    sd = np.sqrt((x**2).sum().to_numpy() * a**2 / 3) / N
    assert np.all(np.abs(y.mean().to_numpy() - x.mean().to_numpy()) < 5 * sd)


@pytest.mark.parametrize("distribution", ["uniform", "lognormal"])
def test_multiplicative_factors_have_mean_one_and_variance_a2_over_3(distribution):
    # On a column of ones y is the factor itself. Mean: sd sqrt(a^2/3/n) = 0.0026 (a = 0.8,
    # n = 20000), tolerance 5 sd. Variance: its sd is at most sqrt(var^2 (2 + kurtosis) / n),
    # well under 10% of a^2/3 here; tolerance 10%.
    a = 0.8
    x = pd.DataFrame({"one": np.ones(N)})
    e = MultiplicativeNoise(a=a, distribution=distribution).apply(x, seed=6)["one"].to_numpy()
    assert abs(e.mean() - 1) < 5 * np.sqrt(a**2 / 3 / N)
    assert abs(e.var() / (a**2 / 3) - 1) < 0.10
    if distribution == "uniform":
        assert e.min() >= 1 - a and e.max() <= 1 + a
    else:
        assert e.min() > 0


def test_multiplicative_noise_keeps_zeros_and_signs():
    x = pd.DataFrame({"v": [0.0, -5.0, 5.0, 0.0]})
    y = MultiplicativeNoise(a=0.5).apply(x, seed=0)["v"].to_numpy()
    assert y[0] == 0 and y[3] == 0 and y[1] < 0 and y[2] > 0


# ----------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("bad", [0, -0.1, "0.1", None, True, float("nan")])
def test_correlated_alpha_rejected(bad):
    with pytest.raises(ParameterError, match=r"The 'alpha' parameter of CorrelatedNoise must be a float > 0"):
        CorrelatedNoise(alpha=bad)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_preserve_covariance_must_be_bool(bad):
    with pytest.raises(ParameterError, match=r"The 'preserve_covariance' parameter of CorrelatedNoise must be a bool"):
        CorrelatedNoise(alpha=0.1, preserve_covariance=bad)


@pytest.mark.parametrize("bad", [0, -1, "0.1", None])
def test_multiplicative_a_rejected(bad):
    with pytest.raises(ParameterError, match=r"The 'a' parameter of MultiplicativeNoise must be a float > 0"):
        MultiplicativeNoise(a=bad)


def test_multiplicative_distribution_rejected():
    with pytest.raises(ParameterError, match=r"The 'distribution' parameter of MultiplicativeNoise must be one of"):
        MultiplicativeNoise(a=0.1, distribution="normal")


def test_uniform_factor_above_one_is_refused_but_lognormal_allows_it():
    with pytest.raises(ParameterError, match=r"The 'a' parameter of MultiplicativeNoise must be <= 1 with distribution='uniform'.*Got 1.5 instead"):
        MultiplicativeNoise(a=1.5)
    assert MultiplicativeNoise(a=1.5, distribution="lognormal").a == 1.5


@pytest.mark.parametrize("method", [CorrelatedNoise(alpha=0.1), MultiplicativeNoise(a=0.1)])
def test_missing_values_refused(method):
    x = correlated_frame(n=10)
    x.loc[4, "b"] = np.nan
    with pytest.raises(DataError, match=r"column 'b' is missing in 1 record\(s\), first at row 4"):
        method.apply(x, seed=0)


@pytest.mark.parametrize("method", [CorrelatedNoise(alpha=0.1, columns=["s"]), MultiplicativeNoise(a=0.1, columns=["s"])])
def test_text_column_refused(method):
    x = pd.DataFrame({"s": ["a", "b"], "v": [1.0, 2.0]})
    with pytest.raises(SchemaError, match=r"cannot protect column 's'"):
        method.apply(x, seed=0)
