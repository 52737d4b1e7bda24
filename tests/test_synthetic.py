"""Synthesizers: means and covariances reproduced within derived tolerances, copula
marginals kept exactly, CART keeps a simple dependence; every bad input (seed 001 section 5;
seed 002 section 4.6.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, Schema, SchemaError, protect
from sdckit.synthetic import CartSynthesizer, GaussianCopulaSynthesizer, MultivariateNormalSynthesizer
from sdckit.synthetic.cart import sample_from_leaves
from sdckit.synthetic.copula import quantile_positions

SYNTHESIZERS = [MultivariateNormalSynthesizer, GaussianCopulaSynthesizer, CartSynthesizer]


def correlated_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Three numeric columns with covariance [[4, 2, 1], [2, 9, -3], [1, -3, 16]]."""
    cov = np.array([[4.0, 2.0, 1.0], [2.0, 9.0, -3.0], [1.0, -3.0, 16.0]])
    x = np.random.default_rng(seed).multivariate_normal([10.0, -5.0, 100.0], cov, size=n)
    return pd.DataFrame(x, columns=["a", "b", "c"])


def assert_moments_close(original: pd.DataFrame, synthetic: pd.DataFrame) -> None:
    """Synthetic draws are independent of each other given the fitted model, whose moments are
    the original sample's. So a synthetic mean differs from the original mean by sampling
    error with sd sqrt(s_jj / n_syn), and a synthetic covariance s*_jk from s_jk with sd
    sqrt((s_jj s_kk + s_jk^2) / n_syn) (normal theory). Tolerance: 4 sd of each."""
    s = original.cov().to_numpy()
    n = len(synthetic)
    mean_tol = 4 * np.sqrt(np.diag(s) / n)
    assert np.all(np.abs(synthetic.mean().to_numpy() - original.mean().to_numpy()) <= mean_tol)
    cov_tol = 4 * np.sqrt((np.outer(np.diag(s), np.diag(s)) + s**2) / n)
    assert np.all(np.abs(synthetic.cov().to_numpy() - s) <= cov_tol)


# ----------------------------------------------------------------------------- normal
def test_multivariate_normal_reproduces_means_and_covariances():
    original = correlated_frame(3000)
    synthetic = MultivariateNormalSynthesizer().apply(original, seed=1)
    assert synthetic.shape == original.shape and list(synthetic.index) == list(range(3000))
    assert_moments_close(original, synthetic)
    # no original record is carried over
    assert not np.isin(synthetic["a"].to_numpy(), original["a"].to_numpy()).any()


def test_multivariate_normal_with_another_n_and_one_column():
    original = correlated_frame(500)[["b"]]
    synthetic = MultivariateNormalSynthesizer(n=4000).apply(original, seed=2)
    assert len(synthetic) == 4000
    assert_moments_close(original, synthetic)


def test_singular_covariance_draws_stay_in_the_subspace():
    frame = correlated_frame(400)
    frame["total"] = frame["a"] + frame["b"]
    out = MultivariateNormalSynthesizer().apply(frame, seed=3)
    np.testing.assert_allclose(out["total"], out["a"] + out["b"], atol=1e-6)


# ----------------------------------------------------------------------------- copula
def test_copula_keeps_every_marginal_exactly_and_the_dependence():
    original = correlated_frame(3000)
    original["a"] = np.exp(original["a"] / 3)  # skewed marginal: kept exactly anyway
    original["k"] = np.random.default_rng(4).integers(0, 5, 3000)  # ties
    out = GaussianCopulaSynthesizer().apply(original, seed=5)
    for c in original:
        np.testing.assert_array_equal(np.sort(out[c].to_numpy()), np.sort(original[c].to_numpy()))
    assert out["k"].dtype == original["k"].dtype
    # Spearman correlations: sd of a sample correlation about (1 - rho^2) / sqrt(n); the
    # synthetic and original sample estimates each carry it, so allow 4 * sqrt(2) of it
    rho = original[["a", "b", "c"]].corr("spearman").to_numpy()
    got = out[["a", "b", "c"]].corr("spearman").to_numpy()
    assert np.all(np.abs(got - rho) <= 4 * np.sqrt(2) * (1 - rho**2) / np.sqrt(3000) + 1e-12)
    # and the records are new: the rows are not the original rows in another order
    rows = set(original[["a", "b", "c"]].itertuples(index=False))
    assert sum(row in rows for row in out[["a", "b", "c"]].itertuples(index=False)) <= 30


def test_copula_with_another_n_uses_original_quantiles():
    original = pd.DataFrame({"x": np.arange(1.0, 11.0), "y": np.arange(10.0, 0.0, -1.0)})
    out = GaussianCopulaSynthesizer(n=20).apply(original, seed=6)
    # ranks 1..20 map to quantiles (r - 0.5)/20: positions ceil((r - 0.5)/2) - 1 = 0,0,1,1,...
    assert sorted(out["x"]) == sorted(list(np.arange(1.0, 11.0)) * 2)
    # perfect negative dependence survives: y = 11 - x in every synthetic record
    assert (out["x"] + out["y"] == 11.0).all()


def test_quantile_positions_hand_worked():
    assert quantile_positions(np.arange(1, 5), 4).tolist() == [0, 1, 2, 3]
    assert quantile_positions(np.arange(1, 3), 4).tolist() == [0, 2]  # (0.5, 1.5) * 2 -> ceil 1, 3
    assert quantile_positions(np.arange(1, 7), 3).tolist() == [0, 0, 1, 1, 2, 2]


def test_copula_on_ordinal_and_date_columns():
    levels = ("low", "mid", "high")
    rng = np.random.default_rng(8)
    frame = pd.DataFrame(
        {
            "level": rng.choice(levels, 200),
            "when": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, 200), unit="D"),
        }
    )
    schema = Schema.infer(frame, kinds={"level": "ordinal"}, orders={"level": levels})
    out = GaussianCopulaSynthesizer().apply(frame, schema, seed=9)
    assert sorted(out["level"]) == sorted(frame["level"])
    assert (np.sort(out["when"].to_numpy()) == np.sort(frame["when"].to_numpy())).all()


# ----------------------------------------------------------------------------- CART
def test_cart_reproduces_a_linear_dependence_and_a_categorical_one():
    rng = np.random.default_rng(10)
    n = 2000
    x = rng.normal(0, 1, n)
    frame = pd.DataFrame(
        {
            "x": x,
            "y": 2 * x + rng.normal(0, 1, n),  # corr(x, y) = 2 / sqrt(5) = 0.894
            "g": np.where(x > 0, "hi", "lo"),  # a function of x
        }
    )
    out = CartSynthesizer(order=["x", "y", "g"]).apply(frame, seed=11)
    # The first column is a bootstrap: its mean is within 4 sd = 4 sqrt(1/n) of the original.
    assert abs(out["x"].mean() - frame["x"].mean()) <= 4 * np.sqrt(1 / n)
    # Sampling y from the leaf of x (>= 5 records, leaves about 0.01 wide in x) keeps the
    # correlation up to the bootstrap's sampling error (sd (1 - rho^2)/sqrt(n) = 0.0045 for
    # each of the two estimates) and a small attenuation from the within-leaf spread of x:
    # tolerance 0.03.
    assert abs(out[["x", "y"]].corr().iloc[0, 1] - frame[["x", "y"]].corr().iloc[0, 1]) < 0.03
    # g is a deterministic function of x: a classification tree on x finds the split, so
    # (almost) every synthetic record has g = hi exactly when x > 0; an independent draw of g
    # would agree half of the time.
    assert ((out["x"] > 0) == (out["g"] == "hi")).mean() >= 0.99
    # values are original values
    assert out["y"].isin(frame["y"]).all() and set(out["g"]) <= {"hi", "lo"}


def test_cart_with_a_nominal_predictor_keeps_conditional_means():
    rng = np.random.default_rng(12)
    n = 3000
    group = rng.choice(["a", "b", "c"], n)
    shift = pd.Series(group).map({"a": 0.0, "b": 5.0, "c": -5.0}).to_numpy()
    frame = pd.DataFrame({"group": group, "value": shift + rng.normal(0, 1, n)})
    out = CartSynthesizer().apply(frame, seed=13)
    # conditional mean of value given group: sd of each estimate sqrt(1/n_g), n_g about 1000;
    # the synthetic one adds the same again: tolerance 4 * sqrt(2 / n_g)
    for g in "abc":
        n_g = (frame["group"] == g).sum()
        got = out.loc[out["group"] == g, "value"].mean()
        want = frame.loc[frame["group"] == g, "value"].mean()
        assert abs(got - want) <= 4 * np.sqrt(2 / n_g)


def test_sample_from_leaves_draws_only_from_the_same_leaf():
    train = np.array([3, 5, 3, 5, 5, 7])
    new = np.array([5, 3, 7, 5, 5, 3, 7])
    picked = sample_from_leaves(train, new, np.random.default_rng(0))
    assert (train[picked] == new).all()
    # leaf 5 holds rows 1, 3, 4: over many draws each is picked about a third of the time
    many = sample_from_leaves(train, np.full(30_000, 5), np.random.default_rng(1))
    shares = np.bincount(many, minlength=6)[[1, 3, 4]] / 30_000
    assert np.all(np.abs(shares - 1 / 3) < 4 * np.sqrt(2 / 9 / 30_000))


def test_cart_order_and_n():
    frame = pd.DataFrame({"u": np.arange(50.0), "v": np.arange(50.0) * 2})
    out = CartSynthesizer(order=["v"], n=120, min_samples_leaf=1).apply(frame, seed=14)
    assert list(out.columns) == ["u", "v"] and len(out) == 120
    # with leaves of one record and v drawn first, u is v / 2 exactly
    assert (out["u"] * 2 == out["v"]).all()


def test_cart_bad_order():
    frame = pd.DataFrame({"u": np.arange(10.0), "v": np.arange(10.0)})
    with pytest.raises(SchemaError, match=r"'w'"):
        CartSynthesizer(order=["w"]).apply(frame)


@pytest.mark.parametrize(
    ("params", "name"),
    [({"min_samples_leaf": 0}, "min_samples_leaf"), ({"max_depth": 0}, "max_depth"), ({"order": []}, "order"),
     ({"n": 0}, "n"), ({"n": 2.5}, "n")],
)
def test_cart_bad_parameters(params, name):
    with pytest.raises(ParameterError, match=rf"The '{name}' parameter of CartSynthesizer must be"):
        CartSynthesizer(**params)


# ----------------------------------------------------------------------------- all
@pytest.mark.parametrize("cls", SYNTHESIZERS)
def test_every_synthesizer_reproduces_means_and_covariances(cls):
    # The same derived tolerances (4 standard errors of the synthetic moments) hold for all
    # three on multivariate normal data: the copula keeps the means exactly and approximates
    # the covariances; CART's bootstrap and leaf draws have the sampling error of n draws
    # plus a small attenuation from leaves of >= 5 records (measured: within 0.65 of the
    # tolerance over 4 seeds when written).
    original = correlated_frame(3000)
    assert_moments_close(original, cls().apply(original, seed=21))


@pytest.mark.parametrize("cls", SYNTHESIZERS)
def test_untargeted_columns_are_dropped_and_reported(cls):
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 5.0], "y": [2.0, 1.0, 4.0, 3.0], "note": list("abcd")})
    schema = Schema.infer(frame, identifier=["id"], confidential=["x", "y"], non_confidential=["note"])
    method = cls(columns=["x", "y"])
    release = protect(frame, [method], schema=schema, seed=1)
    assert list(release.data.columns) == ["x", "y"] and release.schema.names == ("x", "y")
    assert release.steps[0].info["dropped_columns"] == ["note"]
    assert any("'note'" in w for w in release.steps[0].warnings)


@pytest.mark.parametrize("cls", SYNTHESIZERS)
def test_reproducible_and_seed_dependent(cls):
    frame = correlated_frame(100)
    first, again, other = (cls().apply(frame, seed=s) for s in (1, 1, 2))
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(other)


@pytest.mark.parametrize("cls", SYNTHESIZERS)
def test_bad_inputs(cls):
    with pytest.raises(DataError, match="at least 2 records"):
        cls().apply(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(DataError, match="'x'"):
        cls().apply(pd.DataFrame({"x": [1.0, np.nan, 3.0]}))
    with pytest.raises(ParameterError, match=rf"The 'n' parameter of {cls.__name__} must be"):
        cls(n=-3)


@pytest.mark.parametrize("cls", [MultivariateNormalSynthesizer, GaussianCopulaSynthesizer])
def test_numeric_synthesizers_refuse_a_nominal_column(cls):
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "sex": ["F", "M", "F"]})
    with pytest.raises(SchemaError, match="'sex'"):
        cls(columns=["x", "sex"]).apply(frame)
