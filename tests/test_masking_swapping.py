"""Rank swapping (Moore 1996) and data shuffling (Muralidhar & Sarathy 2006)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from sdckit import DataError, ParameterError, Schema, SchemaError, protect
from sdckit.core.ranks import ranks
from sdckit.masking import DataShuffling, RankSwapping
from sdckit.masking.rankswap import rank_swap_source


# ----------------------------------------------------------------------------- rank swapping
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 200),
    p=st.floats(0.1, 100),
    seed=st.integers(0, 10**6),
    tied=st.booleans(),
)
def test_rank_swapping_keeps_multisets_and_rank_window(n, p, seed, tied):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 5, n).astype(float) if tied else rng.permutation(n) * 1.5 - 7
    frame = pd.DataFrame({"v": values, "w": rng.normal(size=n)})
    out = RankSwapping(p=p).run(frame, seed=seed)
    window = int(np.floor(p * n / 100))
    assert out.info["max_rank_difference"] == window
    for col in ("v", "w"):
        assert sorted(out.data[col]) == sorted(frame[col])
    # distinct values: the rank of every record's value moves by at most the window
    w = frame["w"].to_numpy()
    moved = np.abs(ranks(out.data["w"].to_numpy(), ties="first") - ranks(w, ties="first"))
    assert moved.max(initial=0) <= window
    if not tied:
        moved = np.abs(ranks(out.data["v"].to_numpy(), ties="first") - ranks(values, ties="first"))
        assert moved.max(initial=0) <= window


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300), window=st.integers(0, 300), seed=st.integers(0, 10**6))
def test_swaps_are_pairs_within_the_window(n, window, seed):
    values = np.random.default_rng(seed).permutation(n).astype(float)  # value = rank - 1
    source = rank_swap_source(values, window, np.random.default_rng(seed))
    assert np.array_equal(source[source], np.arange(n))  # an involution: swaps and fixed points
    assert np.abs(values[source] - values).max(initial=0) <= window
    # greedy pairing leaves no two unswapped values within the window of each other
    fixed = np.sort(values[source == np.arange(n)])
    assert window == 0 or np.all(np.diff(fixed) > window)


def test_partner_is_uniform_over_the_window():
    # n = 10, window 3: the smallest value is swapped first, with ranks 2, 3 or 4 each with
    # probability 1/3. Over 3000 draws each count is Binomial(3000, 1/3): mean 1000, sd 25.8;
    # tolerance 5 sd = 130.
    values = np.arange(10.0)
    rng = np.random.default_rng(0)
    partners = [int(values[rank_swap_source(values, 3, rng)][0]) for _ in range(3000)]
    counts = np.bincount(partners, minlength=10)
    assert counts[0] == 0 and counts[4:].sum() == 0
    assert np.all(np.abs(counts[1:4] - 1000) < 130)


def test_seed_001_setting_swaps_within_six_ranks():
    # seed 001: n = 40, p = 15% -> values within a rank of 6 are swapped.
    frame = pd.DataFrame({"x": np.arange(40.0)})
    out = RankSwapping(p=15).run(frame, seed=4)
    assert out.info["max_rank_difference"] == 6
    assert np.abs(out.data["x"] - frame["x"]).max() <= 6
    assert out.info["swapped_share"]["x"] >= 0.9


def test_tiny_p_swaps_nothing_and_warns():
    frame = pd.DataFrame({"x": np.arange(40.0)})
    release = protect(frame, [RankSwapping(p=1)], seed=0)  # floor(0.4) = 0
    pd.testing.assert_frame_equal(release.data, frame)
    assert "nothing was swapped" in release.steps[0].warnings[0]


def test_ordinal_and_date_columns_are_swapped_by_their_order():
    order = ("low", "mid", "high")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "level": rng.choice(order, 60),
            "when": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 400, 60), unit="D"),
        }
    )
    schema = Schema.infer(frame, kinds={"level": "ordinal"}, orders={"level": order})
    out = RankSwapping(p=10).apply(frame, schema, 2)
    assert out["when"].dtype == frame["when"].dtype
    assert sorted(out["level"]) == sorted(frame["level"]) and sorted(out["when"]) == sorted(frame["when"])
    assert not out["level"].equals(frame["level"])
    # window floor(6) ranks: a date moves to one within the 6 nearest ranks
    assert np.abs(out["when"].rank(method="min") - frame["when"].rank(method="min")).max() <= 6 + frame["when"].value_counts().max()


@pytest.mark.parametrize("bad", [0, -5, 100.5, "15", None, float("nan")])
def test_p_rejected(bad):
    with pytest.raises(ParameterError, match=r"The 'p' parameter of RankSwapping must be a float in \(0, 100\]"):
        RankSwapping(p=bad)


def test_rank_swapping_refuses_missing_and_nominal():
    with pytest.raises(DataError, match="column 'x' is missing"):
        RankSwapping(p=10).apply(pd.DataFrame({"x": [1.0, np.nan, 2.0]}), seed=0)
    with pytest.raises(SchemaError, match=r"RankSwapping cannot protect column 's': its kind is 'nominal'"):
        RankSwapping(p=10, columns=["s"]).apply(pd.DataFrame({"s": ["a", "b"]}), seed=0)


# ----------------------------------------------------------------------------- shuffling
def shuffle_frame(n: int = 4000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, 0.5, 0.6, -0.3], [0.5, 1.0, 0.4, 0.2], [0.6, 0.4, 1.0, 0.0], [-0.3, 0.2, 0.0, 1.0]])
    z = rng.multivariate_normal(np.zeros(4), cov, size=n)
    frame = pd.DataFrame(
        {
            "income": np.round(np.exp(10 + z[:, 0]), 0),  # skewed, rounded: ties
            "wealth": z[:, 1] ** 3,
            "age": np.round(40 + 10 * z[:, 2]).astype(int),
            "hours": z[:, 3],
            "region": rng.choice(["n", "s"], n),
        }
    )
    schema = Schema.infer(frame, confidential=["income", "wealth"], quasi=["age", "region"], non_confidential=["hours"])
    return frame, schema


def test_shuffling_permutes_confidential_values_and_keeps_the_rest():
    frame, schema = shuffle_frame()
    out = DataShuffling().run(frame, schema, 1)
    assert out.info["conditioning_columns"] == ["age", "hours"]
    for col in ("income", "wealth"):
        assert sorted(out.data[col]) == sorted(frame[col])
        assert (out.data[col] != frame[col]).mean() > 0.5
    pd.testing.assert_frame_equal(out.data[["age", "hours", "region"]], frame[["age", "hours", "region"]])


def test_shuffling_keeps_rank_correlations():
    # The perturbed scores have the normal scores' correlation matrix in expectation, so the
    # Spearman correlations of the shuffled columns with each other and with the conditioning
    # columns stay those of the original (sampling sd about (1 - rho^2)/sqrt(n) < 0.016 at
    # n = 4000, plus the draw's own noise of the same size; tolerance 0.06).
    frame, schema = shuffle_frame()
    out = DataShuffling().apply(frame, schema, 2)
    cols = ["income", "wealth", "age", "hours"]
    before = spearmanr(frame[cols]).statistic
    after = spearmanr(out[cols]).statistic
    assert np.abs(after - before).max() < 0.06
    # and the link of a record to its own confidential value is broken (not an identity)
    assert spearmanr(frame["wealth"], out["wealth"]).statistic < 0.9


def test_perfectly_predicted_column_is_not_moved():
    # A confidential column that is a monotone function of a non-confidential one has the same
    # normal scores: R = [[1, 1], [1, 1]], the conditional variance is 0 and Y* equals the
    # conditioning scores, so the reverse mapping puts every value back in place.
    x = np.random.default_rng(0).normal(size=100)
    frame = pd.DataFrame({"conf": np.exp(x), "nc": x})
    schema = Schema.infer(frame, confidential=["conf"], non_confidential=["nc"])
    pd.testing.assert_frame_equal(DataShuffling().apply(frame, schema, 3), frame)


def test_shuffling_without_conditioning_columns_warns_and_keeps_joint_ranks():
    frame, _ = shuffle_frame(n=3000)
    data = frame[["income", "wealth"]]
    release = protect(data, [DataShuffling()], seed=4)
    assert "no non-confidential" in release.steps[0].warnings[0]
    assert release.steps[0].info["conditioning_columns"] == []
    before = spearmanr(data).statistic
    after = spearmanr(release.data).statistic
    assert abs(after - before) < 0.06
    assert spearmanr(data["income"], release.data["income"]).statistic < 0.2


def test_shuffling_refuses_missing_conditioning_value():
    frame, schema = shuffle_frame(n=50)
    frame.loc[7, "hours"] = np.nan
    with pytest.raises(DataError, match=r"Column 'hours' is missing in 1 record\(s\), first at row 7"):
        DataShuffling().apply(frame, schema, 0)


def test_shuffling_of_a_single_record_changes_nothing():
    frame = pd.DataFrame({"a": [3.0]})
    pd.testing.assert_frame_equal(DataShuffling().apply(frame, seed=0), frame)


def test_shuffling_refuses_nominal_and_needs_a_confidential_column():
    frame, schema = shuffle_frame(n=30)
    with pytest.raises(SchemaError, match=r"DataShuffling cannot protect column 'region': its kind is 'nominal'"):
        DataShuffling(columns=["region"]).apply(frame, schema, 0)
    quasi_only = Schema.infer(frame, quasi=["age"], non_confidential=["hours"])
    with pytest.raises(SchemaError, match=r"DataShuffling found no column to protect: it works on .* role confidential"):
        DataShuffling().apply(frame, quasi_only, 0)
    with pytest.raises(SchemaError, match="no_such"):
        DataShuffling(columns=["no_such"]).apply(frame, schema, 0)
