"""Reverse mapping, decomposition and rank correlation (seed 000 sections 2-3)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdckit import Schema
from sdckit.permutation import decompose, rank_correlation, reverse_map


def test_reverse_map_by_hand():
    # X_a = 10, 20, 30, 40; Y_a = 3.1, 0.2, 9.9, 1.5 has ranks 3, 1, 4, 2, so
    # z = the X values of ranks 3, 1, 4, 2 = 30, 10, 40, 20 (Algorithm 1)
    # and E = Y - Z = -26.9, -9.8, -30.1, -18.5.
    x = pd.DataFrame({"a": [10.0, 20.0, 30.0, 40.0]}, index=list("pqrs"))
    y = pd.DataFrame({"a": [3.1, 0.2, 9.9, 1.5]}, index=[7, 8, 9, 10])
    z, e = decompose(x, y, ties="first")
    assert z["a"].tolist() == [30.0, 10.0, 40.0, 20.0]
    assert list(z.index) == [7, 8, 9, 10]  # indexed like the release
    assert e["a"].to_numpy() == pytest.approx([-26.9, -9.8, -30.1, -18.5])
    assert reverse_map(x, y, ties="first").equals(z)


def test_reverse_map_different_sizes_uses_quantiles():
    # n_X = 4 (sorted 1, 2, 3, 4), n_Y = 2: ranks 1, 2 -> quantiles (r - 0.5) / 2 = 0.25, 0.75
    # -> lower empirical quantile positions ceil(0.25 * 4) - 1 = 0 and ceil(0.75 * 4) - 1 = 2
    # -> values 1 and 3; Y = (5, -1) has ranks (2, 1), so Z = (3, 1).
    x = pd.DataFrame({"a": [4.0, 2.0, 1.0, 3.0]})
    y = pd.DataFrame({"a": [5.0, -1.0]})
    assert reverse_map(x, y, ties="first")["a"].tolist() == [3.0, 1.0]


def test_reverse_map_ordinal_and_date_columns():
    # ordinal by the schema's order low < mid < high: Y ranks (3, 1, 2) -> Z = high, low, mid
    order = ["low", "mid", "high"]
    x = pd.DataFrame({"level": ["mid", "low", "high"],
                      "day": pd.to_datetime(["2020-01-03", "2020-01-01", "2020-01-02"])})
    y = pd.DataFrame({"level": ["high", "low", "mid"],
                      "day": pd.to_datetime(["2021-05-01", "2021-01-01", "2021-03-01"])})
    schema = Schema.infer(x, kinds={"level": "ordinal"}, orders={"level": order})
    z = reverse_map(x, y, schema=schema, ties="first")
    assert z["level"].tolist() == ["high", "low", "mid"]
    assert z["day"].tolist() == list(pd.to_datetime(["2020-01-03", "2020-01-01", "2020-01-02"]))
    # the same with a plain mapping of orders, and with ordered Categoricals
    assert reverse_map(x, y, ["level"], schema={"level": order}, ties="first").equals(z[["level"]])
    cat = pd.CategoricalDtype(order, ordered=True)
    zc = reverse_map(x.astype({"level": cat}), y.astype({"level": cat}), ["level"], ties="first")
    assert zc["level"].tolist() == ["high", "low", "mid"]


def test_rank_correlation_identity_and_reversal():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0]})
    y = pd.DataFrame({"a": [1.5, 2.5, 3.5, 4.5], "b": [4.0, 3.0, 2.0, 1.0]})
    rho = rank_correlation(x, y)
    assert rho["a"] == pytest.approx(1.0) and rho["b"] == pytest.approx(-1.0)


frames = st.integers(2, 12).flatmap(
    lambda n: st.tuples(
        arrays(np.int64, (n, 2), elements=st.integers(0, 5)),
        arrays(np.float64, (n, 2), elements=st.floats(-5, 5, allow_nan=False)),
    )
)


@settings(max_examples=60, deadline=None)
@given(frames, st.integers(0, 2**31))
def test_reverse_map_properties(data, seed):
    xv, yv = data
    x = pd.DataFrame(xv.astype(float), columns=["a", "b"])
    y = pd.DataFrame(yv, columns=["a", "b"])
    z = reverse_map(x, y, seed=seed)
    for c in ("a", "b"):
        # Z_j is a permutation of X_j
        assert sorted(z[c]) == sorted(x[c])
        # Z_j has the ranks of Y_j: y_i < y_k implies z_i <= z_k (ties in Y are ranked
        # randomly, ties in X give equal z)
        yc, zc = y[c].to_numpy(), z[c].to_numpy()
        assert not np.any((yc[:, None] < yc[None, :]) & (zc[:, None] > zc[None, :]))
    # with distinct values and ties="first", the ranks of Z equal those of Y exactly
    xd = pd.DataFrame({"a": np.arange(len(x), dtype=float)})
    yd = pd.DataFrame({"a": y["a"].to_numpy()})
    zd = reverse_map(xd, yd, ties="first")
    assert (zd["a"].rank(method="first").to_numpy() == yd["a"].rank(method="first").to_numpy()).all()


@settings(max_examples=40, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(2, 15), st.just(3)), elements=st.integers(0, 4)),
       st.integers(0, 2**31))
def test_pure_permutation_has_no_residual_noise(xv, seed):
    rng = np.random.default_rng(seed)
    x = pd.DataFrame(xv.astype(float), columns=list("abc"))
    y = pd.DataFrame({c: rng.permutation(x[c].to_numpy()) for c in x.columns})
    z, e = decompose(x, y, seed=seed)
    assert (e.to_numpy() == 0).all()
    assert z.equals(y)
