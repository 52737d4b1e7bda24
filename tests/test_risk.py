"""sdckit.risk (linkage, interval disclosure, equivalence classes): hand-worked cases,
brute-force oracles and every bad-input path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.core.schema import Schema
from sdckit.risk import distance_linkage, equivalence_classes, interval_disclosure, true_originals


# ------------------------------------------------------------------ distance-based linkage
def test_distance_linkage_hand_worked():
    # X = (0,0),(10,0),(0,10),(10,10); Y moves record 3 next to record 0. Standardizing each file
    # by its own mean/sd keeps the geometry of X; Y's record 3 at (1,1) is nearest X's record 0.
    x = pd.DataFrame({"a": [0.0, 10.0, 0.0, 10.0], "b": [0.0, 0.0, 10.0, 10.0]})
    y = pd.DataFrame({"a": [0.5, 9.0, 0.0, 1.0], "b": [0.0, 0.5, 9.0, 1.0]})
    r = distance_linkage(x, y)
    assert r.records["nearest"].tolist() == [0, 1, 2, 0]
    assert r.correct == 3 and r.rate == 0.75


def test_distance_linkage_ties_are_credited_fractionally():
    # X = 0, 2, 2 holds a duplicate: released records 1 and 2 (value 2) are equally near
    # originals 1 and 2, so each is credited 1/2; record 0 is linked uniquely (credit 1)
    x = pd.DataFrame({"a": [0.0, 2.0, 2.0]})
    y = pd.DataFrame({"a": [0.0, 2.0, 2.0]})
    r = distance_linkage(x, y)
    assert r.records["tied"].tolist() == [1, 2, 2]
    assert r.records["credit"].tolist() == [1.0, 0.5, 0.5]
    assert r.rate == pytest.approx(2 / 3)


def test_distance_linkage_many_ties_fall_back_to_ball_query():
    x = pd.DataFrame({"a": [1.0] * 12 + [5.0]})
    y = x.copy()
    r = distance_linkage(x, y)
    assert r.records["tied"].tolist()[:12] == [12] * 12
    assert r.correct == pytest.approx(12 / 12 + 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 25), st.integers(1, 3))
def test_distance_linkage_matches_brute_force(seed, n, m):
    rng = np.random.default_rng(seed)
    x = pd.DataFrame(rng.normal(size=(n, m)))
    y = x + rng.normal(scale=0.5, size=(n, m))
    r = distance_linkage(x, y)
    xs = (x - x.mean()) / x.std()
    ys = (y - y.mean()) / y.std()
    d = np.sqrt(((ys.to_numpy()[:, None, :] - xs.to_numpy()[None, :, :]) ** 2).sum(axis=2))
    # the documented tie rule: originals at the minimum distance (up to rounding) are tied, the
    # lowest position is reported and the true one earns 1/ties (n = 2 always ties: the
    # standardized values are +-0.707, so plain argmin would pick by rounding error)
    tied = d <= d.min(axis=1, keepdims=True) * (1 + 1e-9) + 1e-12
    assert r.records["nearest"].tolist() == tied.argmax(axis=1).tolist()
    assert r.records["tied"].tolist() == tied.sum(axis=1).tolist()
    expected = np.where(tied[np.arange(n), np.arange(n)], 1.0 / tied.sum(axis=1), 0.0)
    assert r.correct == pytest.approx(float(expected.sum()))


def test_distance_linkage_with_truth_and_bad_truth():
    x = pd.DataFrame({"a": [0.0, 10.0, 20.0]})
    y = pd.DataFrame({"a": [20.0, 0.0]})  # original 2 released first, original 0 second, 1 dropped
    assert true_originals([1, -1, 0], 3, 2).tolist() == [2, 0]
    assert distance_linkage(x, y, truth=[1, -1, 0]).rate == 1.0
    with pytest.raises(DataError, match="give truth"):
        distance_linkage(x, y)
    with pytest.raises(DataError, match="3 integers"):
        distance_linkage(x, y, truth=[0, 1])
    with pytest.raises(DataError, match="distinct"):
        distance_linkage(x, y, truth=[0, 0, 1])
    with pytest.raises(DataError, match="distinct"):
        distance_linkage(x, y, truth=[5, 0, 1])


def test_distance_linkage_bad_columns():
    x = pd.DataFrame({"a": [0.0, 1.0], "s": ["u", "v"]})
    with pytest.raises(SchemaError, match="not numeric"):
        distance_linkage(x, x, ["s"])
    with pytest.raises(DataError, match="missing"):
        distance_linkage(x, x.assign(a=[np.nan, 1.0]), ["a"])


# ------------------------------------------------------------------ interval disclosure
def test_interval_disclosure_rank_hand_worked():
    # n = 10, p = 20 -> w = floor(0.2 * 10 / 2) = 1. Y = 1..10 (sorted already).
    # record 0: y = 1, interval [1, 2], x = 2 -> inside; record 9: y = 10, interval [9, 10],
    # x = 8 -> outside; record 4: y = 5, interval [4, 6], x = 6 -> inside. Others x = y.
    y = pd.DataFrame({"a": np.arange(1.0, 11.0)})
    x = y.copy()
    x.loc[0, "a"], x.loc[9, "a"], x.loc[4, "a"] = 2.0, 8.0, 6.0
    r = interval_disclosure(x, y, p=20)
    assert r.share == pytest.approx(0.9) and r.by_column["a"] == pytest.approx(0.9)
    # p = 10 -> w = 0: only exact values are disclosed (records 0, 4 and 9 are not)
    assert interval_disclosure(x, y, p=10).share == pytest.approx(0.7)


def test_interval_disclosure_ties_share_one_interval():
    # Y = 1, 3, 3, 3, 5 with w = floor(0.4*5/2) = 1: the tied 3s get [1, 5] (below the first, above the last)
    y = pd.DataFrame({"a": [1.0, 3.0, 3.0, 3.0, 5.0]})
    x = pd.DataFrame({"a": [3.0, 5.0, 1.0, 4.9, 4.0]})
    # record 0: [1,3] holds 3 -> in; 1..3: [1,5] holds 5, 1, 4.9 -> in; record 4: [3,5] holds 4 -> in
    assert interval_disclosure(x, y, p=40).share == 1.0


def test_interval_disclosure_sd_hand_worked():
    # S of X = sqrt(2.5) ~ 1.581; p = 50 -> half-width 0.79: |x - y| = 0, 0.5, 1 -> 2 of 3... per record
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0]})
    y = x + np.array([[0.0], [0.5], [1.0], [0.7], [-0.8]])
    r = interval_disclosure(x, y, p=50, method="sd")
    assert r.share == pytest.approx(3 / 5)


def test_interval_disclosure_bad_inputs():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="'p' parameter of interval_disclosure"):
        interval_disclosure(x, x, p=0)
    with pytest.raises(ParameterError, match="'p' parameter"):
        interval_disclosure(x, x, p=150)
    with pytest.raises(ParameterError, match="'method' parameter"):
        interval_disclosure(x, x, method="range")
    with pytest.raises(DataError, match="same records"):
        interval_disclosure(x, x.iloc[:2])


# ------------------------------------------------------------------ equivalence classes
def test_equivalence_classes_hand_worked_and_missing_values():
    f = pd.DataFrame({
        "sex": ["f", "f", "m", "m", "m", None, None],
        "zip": ["1", "1", "1", "2", "2", "2", "2"],
        "income": [1, 2, 3, 4, 5, 6, 7],
    })
    r = equivalence_classes(f, ["sex", "zip"])
    # classes: (f,1)x2, (m,1)x1, (m,2)x2, (None,2)x2
    assert r.sizes.tolist() == [2, 2, 1, 2, 2, 2, 2]
    assert r.labels.tolist() == [0, 0, 1, 2, 2, 3, 3]
    assert r.size_counts.to_dict() == {1: 1, 2: 3}
    assert (r.n_classes, r.uniques, r.k, r.below(3)) == (4, 1, 1, 7)
    assert r.share_unique == pytest.approx(1 / 7)
    assert r.to_dict()["size_counts"] == {1: 1, 2: 3}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 2)), min_size=1, max_size=30))
def test_equivalence_classes_match_brute_force(rows):
    f = pd.DataFrame(rows, columns=["s", "z"])
    r = equivalence_classes(f, ["s", "z"])
    assert r.sizes.tolist() == [rows.count(row) for row in rows]


def test_equivalence_classes_from_schema_and_bad_inputs():
    f = pd.DataFrame({"sex": ["f", "m"], "age": [30, 40]})
    schema = Schema.infer(f, quasi=["sex", "age"])
    assert equivalence_classes(f, schema=schema).quasi == ("sex",)
    with pytest.raises(SchemaError, match="pass quasi"):
        equivalence_classes(f)
    with pytest.raises(SchemaError, match="no nominal or ordinal"):
        equivalence_classes(f, schema=Schema.infer(f, quasi=["age"]))
    with pytest.raises(SchemaError, match="'zip' is not in the data"):
        equivalence_classes(f, ["zip"])
    with pytest.raises(SchemaError, match="empty list"):
        equivalence_classes(f, [])
    with pytest.raises(DataError, match="empty data set"):
        equivalence_classes(f.iloc[:0], ["sex"])
    with pytest.raises(DataError, match="DataFrame"):
        equivalence_classes([1, 2], ["sex"])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 30), st.sampled_from([1.0, 10.0, 25.0, 60.0, 100.0]))
def test_interval_disclosure_matches_brute_force(seed, n, p):
    # oracle: for each record, collect the released values whose rank position lies within w of
    # any position holding the record's released value, and test the original against their range
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, n).astype(float)  # many ties on purpose
    x = y + rng.normal(scale=1.0, size=n)
    w = int(np.floor(p / 100 * n / 2))
    s = np.sort(y)
    expected = []
    for i in range(n):
        positions = np.flatnonzero(s == y[i])
        window = s[max(positions.min() - w, 0): min(positions.max() + w, n - 1) + 1]
        expected.append(window.min() <= x[i] <= window.max())
    got = interval_disclosure(pd.DataFrame({"a": x}), pd.DataFrame({"a": y}), p=p).share
    assert got == pytest.approx(np.mean(expected))
