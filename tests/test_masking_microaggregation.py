"""MDAV and optimal univariate microaggregation (seed 002 section 4.6.3)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import DataError, ParameterError, Schema, protect
from sdckit.datasets import load_casc
from sdckit.masking import Microaggregation, mdav_groups, univariate_groups
from sdckit.core.arrays import standardize


def partition(labels) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for i, g in enumerate(np.asarray(labels).tolist()):
        groups.setdefault(g, set()).add(i)
    return {frozenset(s) for s in groups.values()}


def naive_mdav(x: np.ndarray, k: int) -> set[frozenset[int]]:
    """MDAV written out plainly from Domingo-Ferrer & Mateo-Sanz (2002), as the oracle."""
    left = list(range(len(x)))
    groups = []

    def d2(i, point):
        return float(((x[i] - point) ** 2).sum())

    def take_group(center):
        chosen = sorted(left, key=lambda i: d2(i, center))[:k]
        for i in chosen:
            left.remove(i)
        groups.append(frozenset(chosen))

    while len(left) >= 3 * k:
        centroid = x[left].mean(axis=0)
        r = max(left, key=lambda i: d2(i, centroid))
        s = max(left, key=lambda i: d2(i, x[r]))
        xr, xs = x[r].copy(), x[s].copy()
        take_group(xr)
        take_group(xs)
    if len(left) >= 2 * k:
        centroid = x[left].mean(axis=0)
        r = max(left, key=lambda i: d2(i, centroid))
        take_group(x[r].copy())
    groups.append(frozenset(left))
    return set(groups)


def test_mdav_hand_worked_example():
    # 1-D, k=2, values 0 1 2 10 11 12 20 21 (standardizing does not change the order of
    # distances). 8 >= 3k: centroid 9.625; farthest r = 21 (11.375 away; 0 is 9.625 away);
    # farthest from 21 is s = 0. Groups {21, 20} and {0, 1}. Left 2 10 11 12: 4 < 3k but
    # >= 2k: centroid 8.75, farthest 2 (6.75 away), its nearest is 10: group {2, 10}; the
    # rest {11, 12} is the last group.
    x = np.array([0, 1, 2, 10, 11, 12, 20, 21], dtype=float)
    labels = mdav_groups(x, 2)
    assert partition(labels) == {frozenset({6, 7}), frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 5})}
    assert labels.tolist() == [1, 1, 2, 2, 3, 3, 0, 0]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), m=st.integers(1, 4), k=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_mdav_matches_the_plain_algorithm_and_group_sizes(n, m, k, seed):
    if n < k:
        with pytest.raises(DataError, match=f"at least k={k} records"):
            mdav_groups(np.zeros((n, m)), k)
        return
    x = np.random.default_rng(seed).normal(size=(n, m))  # continuous: no ties
    labels = mdav_groups(x, k)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= max(2 * k - 1, k)
    assert (sizes > k).sum() <= 1  # only the last group may be larger than k
    assert partition(labels) == naive_mdav(standardize(x), k)


def test_microaggregation_output_is_k_anonymous_with_group_means():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.exponential(size=200) * 1000})
    k = 4
    out = Microaggregation(k=k).run(frame, seed=0)
    counts = out.data.groupby(["a", "b"]).size()
    assert counts.min() >= k
    labels = mdav_groups(frame.to_numpy(), k)
    expected = frame.groupby(labels).transform("mean")
    pd.testing.assert_frame_equal(out.data, expected)
    assert out.info["groups"] == labels.max() + 1


def brute_sse_ratio(values: np.ndarray, labels: np.ndarray) -> float:
    """SSE / SST on standardized columns, with plain loops over records and groups."""
    n, m = values.shape
    ratios = []
    for j in range(m):
        col = [float(v) for v in values[:, j]]
        mean = sum(col) / n
        sst = sum((v - mean) ** 2 for v in col)
        if sst == 0:
            continue
        sse = 0.0
        for g in set(labels.tolist()):
            members = [col[i] for i in range(n) if labels[i] == g]
            gm = sum(members) / len(members)
            sse += sum((v - gm) ** 2 for v in members)
        ratios.append(sse / sst)
    return sum(ratios) / len(ratios)


def test_mdav_on_the_casc_census_file_k3():
    casc = load_casc()
    assert casc.shape == (1080, 13)
    values = casc.to_numpy(dtype=float)
    release = protect(casc, [Microaggregation(k=3)], seed=1)
    step = release.steps[0]
    labels = mdav_groups(values, 3)
    sizes = np.bincount(labels)
    assert sizes.min() == 3 and sizes.max() <= 5 and len(sizes) == 1080 // 3
    assert step.info["groups"] == len(sizes)
    # the released values are the group means, and the reported information loss is the
    # within-group SSE over total SSE recomputed by brute force from the groups
    for g in (0, 17, len(sizes) - 1):
        members = labels == g
        np.testing.assert_allclose(release.data.to_numpy()[members], np.tile(values[members].mean(axis=0), (members.sum(), 1)))
    assert step.info["sse_ratio"] == pytest.approx(brute_sse_ratio(values, labels), rel=1e-9)
    assert 0 < step.info["sse_ratio"] < 0.2
    assert release.data.groupby(list(casc.columns)).size().min() >= 3


# ----------------------------------------------------------------------------- univariate
def best_partition_sse(values: list[float], k: int) -> float:
    """Minimum SSE over ALL partitions of the values into groups of at least k (brute force)."""
    best = math.inf

    def sse(group):
        m = sum(group) / len(group)
        return sum((v - m) ** 2 for v in group)

    def rec(rest, acc):
        nonlocal best
        if not rest:
            best = min(best, acc)
            return
        if len(rest) < k or acc >= best:
            return
        first, others = rest[0], rest[1:]
        for size in range(k - 1, len(others) + 1):
            for combo in combinations(range(len(others)), size):
                group = [first] + [others[i] for i in combo]
                remaining = [others[i] for i in range(len(others)) if i not in combo]
                if 0 < len(remaining) < k:
                    continue
                rec(remaining, acc + sse(group))

    rec(list(values), 0.0)
    return best


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-20, 20), min_size=1, max_size=8),
    k=st.integers(1, 4),
)
def test_univariate_is_optimal_against_all_partitions(values, k):
    if len(values) < k:
        with pytest.raises(DataError):
            univariate_groups(np.array(values, dtype=float), k)
        return
    labels = univariate_groups(np.array(values, dtype=float), k)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    ours = sum(
        float(((np.array(values)[labels == g] - np.array(values)[labels == g].mean()) ** 2).sum())
        for g in range(labels.max() + 1)
    )
    assert ours == pytest.approx(best_partition_sse(values, k), abs=1e-9)


def test_univariate_hand_worked_example():
    # sorted 1 2 5 9 10, k=2: {1,2}{5,9,10} costs 0.5 + 14 = 14.5; {1,2,5}{9,10} costs
    # 8.667 + 0.5 = 9.167 (the optimum).
    assert univariate_groups(np.array([5.0, 1.0, 2.0, 9.0, 10.0]), 2).tolist() == [0, 0, 0, 1, 1]


def test_univariate_method_aggregates_each_column_on_its_own():
    frame = pd.DataFrame({"a": [5.0, 1.0, 2.0, 9.0, 10.0], "b": [1.0, 1.0, 1.0, 1.0, 4.0]})
    out = Microaggregation(k=2, method="univariate").run(frame, seed=0)
    # a: groups {1,2,5} -> 8/3 and {9,10} -> 9.5. b: {1,1,1} and {1,4} (SSE 4.5) beats
    # {1,1}{1,1,4} (SSE 6).
    np.testing.assert_allclose(out.data["a"], [8 / 3, 8 / 3, 8 / 3, 9.5, 9.5])
    np.testing.assert_allclose(out.data["b"], [1, 1, 1, 2.5, 2.5])
    # SSE/SST: a: (4/9 + 25/9 + 49/9 + 1/4 + 1/4) / 62.8 = 9.1667 / 65.2; b: 4.5 / 7.2
    sst_a = 65.2  # a: mean 5.4; 0.16 + 19.36 + 11.56 + 12.96 + 21.16
    sse_a = (2 / 3) ** 2 + (5 / 3) ** 2 + (7 / 3) ** 2 + 0.25 + 0.25
    assert out.info["sse_ratio_by_column"]["a"] == pytest.approx(sse_a / sst_a)
    assert out.info["sse_ratio_by_column"]["b"] == pytest.approx(4.5 / 7.2)
    assert out.info["sse_ratio"] == pytest.approx((sse_a / sst_a + 4.5 / 7.2) / 2)
    assert out.info["groups"] == [2, 2]


def test_constant_column_loses_nothing():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "c": [7.0] * 4})
    out = Microaggregation(k=2).run(frame, seed=0)
    assert out.info["sse_ratio_by_column"]["c"] == 0.0
    assert (out.data["c"] == 7.0).all()
    assert out.info["sse_ratio"] == pytest.approx(out.info["sse_ratio_by_column"]["a"])


def test_progress_is_reported():
    calls = []
    mdav_groups(np.random.default_rng(0).normal(size=(300, 2)), 3, progress=lambda d, t, label: calls.append((d, t, label)))
    assert calls[-1] == (300, 300, "MDAV") and all(d <= t for d, t, _ in calls)


def test_schema_roles_choose_the_columns():
    frame = pd.DataFrame({"q": [1.0, 2.0, 3.0, 4.0], "nc": [5.0, 6.0, 7.0, 8.0]})
    schema = Schema.infer(frame, quasi=["q"], non_confidential=["nc"])
    out = Microaggregation(k=2).apply(frame, schema, 0)
    assert out["q"].tolist() == [1.5, 1.5, 3.5, 3.5] and out["nc"].tolist() == [5.0, 6.0, 7.0, 8.0]


# ----------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("bad", [1, 0, 2.5, "3", None, True])
def test_k_rejected(bad):
    with pytest.raises(ParameterError, match=r"The 'k' parameter of Microaggregation must be an int >= 2\. Got .* instead\."):
        Microaggregation(k=bad)


def test_method_rejected():
    with pytest.raises(ParameterError, match=r"The 'method' parameter of Microaggregation must be one of \{'mdav', 'univariate'\}"):
        Microaggregation(k=3, method="kmeans")


def test_fewer_records_than_k():
    with pytest.raises(DataError, match=r"k=5 needs at least 5 records; the data has 3"):
        Microaggregation(k=5).apply(pd.DataFrame({"a": [1.0, 2.0, 3.0]}), seed=0)


def test_missing_value_refused():
    with pytest.raises(DataError, match=r"column 'a' is missing"):
        Microaggregation(k=2).apply(pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0]}), seed=0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.zeros((4, 2)), 0), r"The 'k' parameter of mdav_groups must be an int >= 1"),
        ((np.zeros((4, 2)), 2.0), r"The 'k' parameter of mdav_groups must be an int >= 1"),
        ((np.zeros((2, 2, 2)), 2), r"needs a 2-D array"),
        ((np.array([[1.0], [np.nan], [2.0]]), 1), r"row 1 holds a missing or infinite value"),
        ((np.array([[1.0], [np.inf]]), 1), r"row 1 holds a missing or infinite value"),
    ],
)
def test_mdav_groups_bad_inputs(args, match):
    with pytest.raises((DataError, ParameterError), match=match):
        mdav_groups(*args)


def test_mdav_groups_standardize_flag_checked():
    with pytest.raises(ParameterError, match=r"'standardize_columns' parameter of mdav_groups must be a bool"):
        mdav_groups(np.zeros((4, 1)), 2, standardize_columns="yes")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.zeros(4), 0), r"The 'k' parameter of univariate_groups"),
        ((np.zeros((4, 2)), 2), r"needs a 1-D array"),
        ((np.array([1.0, np.nan, 2.0]), 1), r"needs finite values"),
    ],
)
def test_univariate_groups_bad_inputs(args, match):
    with pytest.raises((DataError, ParameterError), match=match):
        univariate_groups(*args)
