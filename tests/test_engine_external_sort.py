"""Global ranks out of core by DuckDB's external sort (issue 17): reverse mapping equal to the
in-memory one with ties broken by order of appearance or at random from the seed; rank swapping
equal to the in-memory method's release for the same seed, whatever the window and batch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.engine.external_sort import rank_swap_file, reverse_map_file
from sdckit.masking import RankSwapping
from sdckit.permutation import reverse_map
from sdckit.pipeline import protect

SEED = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def test_reverse_map_file_equals_reverse_map_with_ties_first(tmp_path):
    rng = np.random.default_rng(4)
    n = 5000
    x = pd.DataFrame({"a": rng.integers(0, 50, n).astype(float), "b": rng.normal(size=n), "c": rng.integers(0, 9, n)})
    y = pd.DataFrame({"a": x["a"] + rng.normal(0, 5, n), "b": np.round(x["b"] + rng.normal(0, 1, n), 1),
                      "c": rng.integers(0, 9, n)})
    x.to_parquet(tmp_path / "x.parquet", row_group_size=700)
    y.to_csv(tmp_path / "y.csv", index=False)
    out = reverse_map_file(tmp_path / "x.parquet", tmp_path / "y.csv", tmp_path / "z.parquet", ["a", "b", "c"],
                           memory=50_000_000)
    expected = reverse_map(x, y, ["a", "b", "c"], ties="first")
    got = pd.read_parquet(out)
    for name in "abc":
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy())


def test_a_hand_worked_reverse_mapping(tmp_path):
    pd.DataFrame({"a": [10.0, 20.0, 30.0]}).to_parquet(tmp_path / "x.parquet")
    pd.DataFrame({"a": [2.5, 0.1, 2.5]}).to_parquet(tmp_path / "y.parquet")  # a tie: first comes first
    out = reverse_map_file(tmp_path / "x.parquet", tmp_path / "y.parquet", tmp_path / "z.parquet", ["a"])
    assert pd.read_parquet(out)["a"].tolist() == [20.0, 10.0, 30.0]


def test_reverse_map_file_refusals(tmp_path):
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_parquet(tmp_path / "x.parquet")
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "short.parquet")
    pd.DataFrame({"a": [1.0, None, 2.0]}).to_parquet(tmp_path / "nan.parquet")
    args = (tmp_path / "x.parquet",)
    with pytest.raises(DataError, match="as many released records"):
        reverse_map_file(*args, tmp_path / "short.parquet", tmp_path / "z.parquet", ["a"])
    with pytest.raises(DataError, match="'a' is missing in 1"):
        reverse_map_file(*args, tmp_path / "nan.parquet", tmp_path / "z.parquet", ["a"])
    with pytest.raises(DataError, match="'q' is not in"):
        reverse_map_file(*args, tmp_path / "x.parquet", tmp_path / "z.parquet", ["q"])
    with pytest.raises(ParameterError, match="'ties'"):
        reverse_map_file(*args, tmp_path / "x.parquet", tmp_path / "z.parquet", ["a"], ties="average")
    assert not (tmp_path / "z.parquet").exists()


# --------------------------------------------------------------------------- random ties
def test_reverse_map_file_breaks_ties_at_random_as_reverse_map_does_for_the_seed(tmp_path):
    rng = np.random.default_rng(9)
    n = CHUNK_ROWS + 3000  # two logical chunks of tie keys
    x = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    # "a" and "c" released with many ties (each draws a key from the seed, in column order); "b" without
    y = pd.DataFrame({"a": rng.integers(0, 40, n), "b": rng.permutation(n) * 0.5, "c": np.round(rng.normal(size=n), 1)})
    x.to_parquet(tmp_path / "x.parquet", row_group_size=20_000)
    y.to_parquet(tmp_path / "y.parquet", row_group_size=20_000)
    out = reverse_map_file(tmp_path / "x.parquet", tmp_path / "y.parquet", tmp_path / "z.parquet", ["a", "b", "c"],
                           ties="random", seed=SEED)
    expected = reverse_map(x, y, ["a", "b", "c"], ties="random", seed=SEED)
    got = pd.read_parquet(out)
    for name in "abc":
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy())
    # and the ties were broken at random, not by order: order of appearance gives another Z
    first = reverse_map(x, y, ["a"], ties="first")
    assert not np.array_equal(got["a"].to_numpy(), first["a"].to_numpy())


def test_random_ties_order_tied_records_uniformly():
    # 4 tied records: each of the 24 orders has probability 1/24; over 2400 seeds each count is
    # Binomial(2400, 1/24): mean 100, sd 9.8; tolerance 5 sd = 49
    from collections import Counter

    from sdckit.core.ranks import sort_order

    values = np.array([1.0, 1.0, 1.0, 1.0])
    counts = Counter(tuple(sort_order(values, seed=np.random.default_rng(s))) for s in range(2400))
    assert len(counts) == 24 and all(abs(c - 100) < 49 for c in counts.values())


# --------------------------------------------------------------------------- rank swapping
@pytest.fixture(scope="module")
def swap_data(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 2 * CHUNK_ROWS + 321
    frame = pd.DataFrame({"a": rng.integers(0, 300, n), "b": rng.normal(size=n), "g": rng.choice(list("xyz"), n)})
    folder = tmp_path_factory.mktemp("swap")
    frame.to_parquet(folder / "in.parquet", row_group_size=25_000)
    return frame, folder


@pytest.mark.parametrize("p, batch_rows", [(0.01, CHUNK_ROWS), (2.0, 5_003), (15.0, 40_000), (70.0, 100_000)])
def test_rank_swap_file_is_the_in_memory_release(swap_data, tmp_path, p, batch_rows):
    # windows of 13 records (far below a logical chunk), 2,637 (a stretch of one chunk), 19,778
    # and 92,299 (stretches of 1 and 2 chunks, the window reaching into the next stretch)
    frame, folder = swap_data
    out = rank_swap_file(folder / "in.parquet", tmp_path / "out.parquet", p, ["a", "b"], seed=SEED,
                         batch_rows=batch_rows)
    memory = RankSwapping(p=p, columns=["a", "b"]).run(frame, seed=SEED)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out.parquet"), memory.data, check_exact=True,
                                  check_dtype=False)
    assert pd.read_parquet(tmp_path / "out.parquet")["a"].dtype == np.int64
    assert out.info == memory.info and out.records == len(frame)
    release = protect(frame, [RankSwapping(p=p, columns=["a", "b"])], seed=SEED)
    assert out.fingerprint == release.manifest["output"]["fingerprint"]


def test_rank_swap_file_reads_csv_and_writes_csv(swap_data, tmp_path):
    frame, _ = swap_data
    small = frame.head(20_000)
    small.to_csv(tmp_path / "in.csv", index=False)
    rank_swap_file(tmp_path / "in.csv", tmp_path / "out.csv", 5.0, ["b", "a"], seed=SEED)
    memory = RankSwapping(p=5.0, columns=["b", "a"]).run(pd.read_csv(tmp_path / "in.csv"), seed=SEED)
    memory.data.to_csv(tmp_path / "expected.csv", index=False)
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()


def test_rank_swap_file_hand_worked_window_and_multiset(tmp_path):
    # 6 distinct values, p = 34: window floor(0.34 * 6) = 2; every value moves by at most 2
    # ranks, the multiset is kept and the swaps are pairs
    values = np.array([60.0, 10.0, 50.0, 20.0, 40.0, 30.0])
    pd.DataFrame({"v": values}).to_parquet(tmp_path / "in.parquet")
    out = rank_swap_file(tmp_path / "in.parquet", tmp_path / "out.parquet", 34.0, ["v"], seed=SEED)
    got = pd.read_parquet(tmp_path / "out.parquet")["v"].to_numpy()
    assert sorted(got) == sorted(values) and out.info["max_rank_difference"] == 2
    assert np.abs(got - values).max() <= 20.0  # rank = value / 10
    source = {v: g for v, g in zip(values, got)}
    assert all(source[source[v]] == v for v in values)  # an involution: pairs and fixed points


def test_rank_swap_file_refusals(tmp_path):
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "g": ["x", "y", "z"]}).to_parquet(tmp_path / "in.parquet")
    pd.DataFrame({"a": [1.0, None, 3.0]}).to_parquet(tmp_path / "nan.parquet")
    target = tmp_path / "o.parquet"
    with pytest.raises(ParameterError, match="'p' parameter of RankSwapping"):
        rank_swap_file(tmp_path / "in.parquet", target, 0.0, ["a"], seed=SEED)
    with pytest.raises(DataError, match="'q' is not in"):
        rank_swap_file(tmp_path / "in.parquet", target, 10.0, ["q"], seed=SEED)
    with pytest.raises(DataError, match="'g' is not numeric"):
        rank_swap_file(tmp_path / "in.parquet", target, 10.0, ["g"], seed=SEED)
    with pytest.raises(DataError, match="'a' is missing in 1"):
        rank_swap_file(tmp_path / "nan.parquet", target, 10.0, ["a"], seed=SEED)
    with pytest.raises(ParameterError, match="'columns'"):
        rank_swap_file(tmp_path / "in.parquet", target, 10.0, [], seed=SEED)
    assert not target.exists()


def test_protect_file_runs_rank_swapping_between_row_wise_steps(swap_data, tmp_path):
    from sdckit.engine import protect_file
    from sdckit.masking import AdditiveNoise, Pram

    frame, folder = swap_data
    data = frame.assign(id=np.arange(len(frame)))
    data.to_parquet(tmp_path / "in.parquet", row_group_size=30_000)
    methods = [RankSwapping(p=3.0, columns=["a"]), AdditiveNoise(alpha=0.1, columns=["b"]),
               Pram(p_keep=0.9, columns=["g"]), RankSwapping(p=10.0, columns=["b"])]
    schema = {"identifier": ["id"]}
    streamed = protect_file(tmp_path / "in.parquet", tmp_path / "out.csv", methods, seed=SEED, schema=schema)
    memory = protect(data, methods, seed=SEED, schema=schema)
    memory.data.to_csv(tmp_path / "expected.csv", index=False)
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()
    assert streamed.manifest["output"]["fingerprint"] == memory.manifest["output"]["fingerprint"]
    assert streamed.manifest["dropped_identifiers"] == ["id"]
    for a, b in zip(streamed.manifest["methods"], memory.manifest["methods"], strict=True):
        assert a["name"] == b["name"] and a["info"] == b["info"]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 400), window=st.integers(0, 120), extra=st.integers(0, 100), seed=st.integers(0, 10**6))
def test_partners_by_stretches_are_the_whole_columns_partners(n, window, extra, seed):
    # any stretch of at least the window gives the partners of the whole column at once
    from sdckit.core.swapping import swap_partners
    from sdckit.engine.external_sort import partners_by_stretches

    draws = np.random.default_rng(seed).random(n)
    whole = swap_partners(n, window, draws)
    stretch = max(window, 1) + extra
    got = np.concatenate([p for _, _, p in partners_by_stretches(n, window, stretch, lambda a, b: draws[a:b])])
    np.testing.assert_array_equal(got, whole)


def test_a_stretch_shorter_than_the_window_is_refused():
    from sdckit.engine.external_sort import partners_by_stretches

    with pytest.raises(ParameterError, match="at least the window"):
        list(partners_by_stretches(10, 5, 4, lambda a, b: np.zeros(b - a)))
