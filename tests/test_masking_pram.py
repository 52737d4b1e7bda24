"""PRAM and invariant PRAM (Gouweleeuw et al. 1998; seed 002 section 4.6.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, Schema, SchemaError, protect
from sdckit.masking import Pram
from sdckit.masking.pram import invariant_matrix, keep_matrix

P = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]]
CATS = ["a", "b", "c"]


def frame_with(counts: dict[str, int], seed: int = 0) -> pd.DataFrame:
    values = np.concatenate([[k] * v for k, v in counts.items()])
    return pd.DataFrame({"x": np.random.default_rng(seed).permutation(values)})


def test_empirical_transitions_match_the_matrix():
    # Each cell's frequency among the n_k records of category k is Binomial(n_k, P[k,l]) / n_k:
    # sd sqrt(P (1 - P) / n_k) <= 0.0087 at n_k = 10000; tolerance 5 sd of each cell.
    x = frame_with({"a": 10_000, "b": 10_000, "c": 10_000})
    y = Pram(matrix={"x": P}).apply(x, seed=1)
    table = pd.crosstab(x["x"], y["x"], normalize="index").reindex(index=CATS, columns=CATS).to_numpy()
    p = np.array(P)
    assert np.all(np.abs(table - p) < 5 * np.sqrt(p * (1 - p) / 10_000) + 1e-12)


def test_mapping_spec_with_text_keys_on_integer_codes():
    # a recipe's keys are strings; the column holds ints 1 and 2. "2" -> "1" always, 1 stays.
    x = pd.DataFrame({"code": [1, 2, 2, 1, 2]})
    schema = Schema.infer(x, kinds={"code": "nominal"})
    y = Pram(matrix={"code": {"1": {"1": 1.0}, "2": {"1": 1.0}}}).apply(x, schema, 0)
    assert y["code"].tolist() == [1, 1, 1, 1, 1] and y["code"].dtype == x["code"].dtype


def test_p_keep_keeps_that_share_and_moves_uniformly():
    # p_keep = 0.6 with 4 categories: stay 0.6, each other category 0.4/3 = 0.1333.
    # n = 40000 records of "a": sd of a share <= sqrt(0.25/40000) = 0.0025; tolerance 0.0125.
    x = pd.DataFrame({"x": ["a"] * 40_000 + ["b", "c", "d"]})
    out = Pram(p_keep=0.6).run(x, seed=2)
    shares = out.data["x"][:40_000].value_counts(normalize=True)
    assert abs(shares["a"] - 0.6) < 0.0125
    for other in "bcd":
        assert abs(shares[other] - 0.4 / 3) < 0.0125
    np.testing.assert_allclose(out.info["transitions"]["x"]["matrix"], keep_matrix(4, 0.6))


def test_invariant_matrix_hand_worked():
    # pi = (0.75, 0.25), P = [[0.8, 0.2], [0.2, 0.8]]: lambda = pi P = (0.65, 0.35);
    # Q = [[0.6/0.65, 0.05/0.65], [0.15/0.35, 0.2/0.35]] = [[.923077, .076923], [.428571, .571429]];
    # R = P Q = [[.824176, .175824], [.527473, .472527]], and pi R = (0.75, 0.25).
    r = invariant_matrix(np.array([[0.8, 0.2], [0.2, 0.8]]), np.array([75.0, 25.0]))
    np.testing.assert_allclose(r, [[0.824176, 0.175824], [0.527473, 0.472527]], atol=1e-6)
    np.testing.assert_allclose(np.array([0.75, 0.25]) @ r, [0.75, 0.25])


def test_invariant_pram_keeps_marginals_in_expectation():
    # Skewed marginal 70/20/10 % of n = 50000. Plain PRAM with P moves the expected shares to
    # pi P = (0.535, 0.325, 0.14); invariant PRAM keeps pi. The share of a category after PRAM
    # is a sum of independent Bernoulli draws: sd <= sqrt(0.25 / n) = 0.0022; tolerance 0.011.
    counts = {"a": 35_000, "b": 10_000, "c": 5_000}
    x = frame_with(counts, seed=3)
    pi = np.array(list(counts.values())) / 50_000
    plain = Pram(matrix={"x": P}).apply(x, seed=4)["x"].value_counts(normalize=True)[CATS].to_numpy()
    out = Pram(matrix={"x": P}, invariant=True).run(x, seed=4)
    inv = out.data["x"].value_counts(normalize=True)[CATS].to_numpy()
    assert np.abs(plain - pi @ np.array(P)).max() < 0.011
    assert np.abs(plain - pi).max() > 0.1  # the plain marginals do move
    assert np.abs(inv - pi).max() < 0.011
    r = np.array(out.info["transitions"]["x"]["matrix"])
    np.testing.assert_allclose(pi @ r, pi, atol=1e-9)
    np.testing.assert_allclose(r.sum(axis=1), 1.0)


def test_nested_list_follows_ordinal_order_and_sorted_nominal_values():
    order = ("low", "mid", "high")
    x = pd.DataFrame({"lvl": ["low", "high", "mid"] * 4, "nom": ["z", "y", "x"] * 4})
    schema = Schema.infer(x, kinds={"lvl": "ordinal"}, orders={"lvl": order})
    shift = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]  # each category to the next one, cyclically
    y = Pram(matrix={"lvl": shift, "nom": shift}).apply(x, schema, 0)
    assert y["lvl"].tolist() == ["mid", "low", "high"] * 4  # low->mid, high->low, mid->high
    assert y["nom"].tolist() == ["x", "z", "y"] * 4  # sorted x, y, z: z->x, y->z, x->y


def test_missing_values_pass_through_and_categorical_dtype_is_kept():
    x = pd.DataFrame({"c": pd.Categorical(["a", None, "b", "a"], categories=["a", "b"])})
    y = Pram(p_keep=0.0).apply(x, seed=0)
    assert y["c"].dtype == x["c"].dtype
    assert pd.isna(y["c"][1]) and y["c"].tolist()[::2] == ["b", "a"]  # p_keep 0: always the other


def test_methods_are_hashable_values():
    assert hash(Pram(matrix={"x": P})) == hash(Pram(matrix={"x": [list(r) for r in P]}))
    assert Pram(matrix={"x": P}) == Pram(matrix={"x": P}) != Pram(matrix={"x": P}, invariant=True)


def test_matrix_in_the_manifest():
    x = frame_with({"a": 5, "b": 5, "c": 5})
    release = protect(x, [Pram(matrix={"x": P})], seed=1)
    assert release.manifest["methods"][0]["params"]["matrix"] == {"x": P}
    assert 0 <= release.steps[0].info["transitions"]["x"]["changed_share"] <= 1


# ----------------------------------------------------------------------------- bad inputs
def test_exactly_one_way_of_giving_the_matrix():
    for kwargs in ({}, {"matrix": {"x": P}, "p_keep": 0.5}):
        with pytest.raises(ParameterError, match=r"The 'p_keep' parameter of Pram must be given when 'matrix' is not, and only then"):
            Pram(**kwargs)


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        ({"x": [[0.5, 0.4], [0.5, 0.5]]}, r"row 0 of column 'x' sums to 0.9"),
        ({"x": [[1.2, -0.2], [0.5, 0.5]]}, r"row 0 of column 'x' sums to 1"),
        ({"x": {"a": {"a": 0.5}, "b": {"b": 1.0}}}, r"row 'a' of column 'x' sums to 0.5"),
    ],
)
def test_rows_must_be_probabilities(matrix, match):
    with pytest.raises(ParameterError, match=r"The 'matrix' parameter of Pram must be made of non-negative rows that sum to 1 \(" + match):
        Pram(matrix=matrix)


@pytest.mark.parametrize(
    "matrix",
    [
        [[1.0]],  # not per column
        {"x": [[0.5, 0.5]]},  # not square
        {"x": [[1.0, 0.0], [0.0]]},
        {"x": {"a": {"b": 1.0}}},  # to-category that is no from-category
        {"x": {"a": {"a": "1"}}},
        {"x": []},
        {1: [[1.0]]},
        {"x": [[True]]},
        {"x": [[float("nan")]]},
    ],
)
def test_malformed_matrix_rejected(matrix):
    with pytest.raises(ParameterError, match=r"The 'matrix' parameter of Pram must be None or a mapping from column name to a square transition matrix"):
        Pram(matrix=matrix)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True])
def test_p_keep_rejected(bad):
    with pytest.raises(ParameterError, match=r"The 'p_keep' parameter of Pram must be None or a float in \[0, 1\]"):
        Pram(p_keep=bad)


def test_invariant_must_be_bool():
    with pytest.raises(ParameterError, match=r"The 'invariant' parameter of Pram must be a bool"):
        Pram(p_keep=0.5, invariant="yes")


def test_value_outside_the_matrix_refused():
    x = pd.DataFrame({"x": ["a", "b", "zz"]})
    with pytest.raises(DataError, match=r"no transition for a value of column 'x'"):
        Pram(matrix={"x": {"a": {"a": 1.0}, "b": {"b": 1.0}}}).apply(x, seed=0)


def test_nested_list_of_the_wrong_size_refused():
    x = pd.DataFrame({"x": ["a", "b", "c"]})
    with pytest.raises(DataError, match=r"matrix for column 'x' is 2 x 2, but the column has 3 categories"):
        Pram(matrix={"x": [[1, 0], [0, 1]]}).apply(x, seed=0)


def test_matrix_for_an_unknown_or_numeric_column_refused():
    x = pd.DataFrame({"x": ["a", "b"], "v": [1.0, 2.0]})
    with pytest.raises(SchemaError, match="nope"):
        Pram(matrix={"nope": [[1.0]]}).apply(x, seed=0)
    with pytest.raises(SchemaError, match=r"cannot protect column 'v'"):
        Pram(p_keep=0.5, columns=["v"]).apply(x, seed=0)


def test_column_without_a_matrix_refused():
    x = pd.DataFrame({"x": ["a", "b"], "y": ["c", "d"]})
    with pytest.raises(DataError, match=r"no transition matrix for column 'y'"):
        Pram(matrix={"x": [[1, 0], [0, 1]]}, columns=["x", "y"]).apply(x, seed=0)
