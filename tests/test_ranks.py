"""core/ranks.py: ranks, tie rules, ordering of kinds, nearest-value rank."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import DataError, ParameterError, SchemaError
from sdckit.core.ranks import nearest_rank, order_values, rank_matrix, ranks
from sdckit.core.schema import Column, Kind


def test_ranks_hand_worked_first():
    # values 30, 10, 30, 20: 10 is rank 1, 20 rank 2, the two 30s ranks 3 and 4 in order of appearance
    assert ranks(np.array([30.0, 10.0, 30.0, 20.0]), ties="first").tolist() == [3, 1, 4, 2]


def test_random_ties_use_both_orders_and_are_seeded():
    values = np.array([5.0, 5.0, 1.0])
    seen = {tuple(ranks(values, seed=s)) for s in range(40)}
    assert seen == {(2, 3, 1), (3, 2, 1)}
    assert ranks(values, seed=7).tolist() == ranks(values, seed=7).tolist()


@given(st.lists(st.integers(-5, 5), min_size=1, max_size=30), st.integers(0, 2**31))
@settings(max_examples=60, deadline=None)
def test_ranks_are_a_permutation_consistent_with_order(values, seed):
    x = np.array(values, dtype=float)
    r = ranks(x, seed=seed)
    assert sorted(r.tolist()) == list(range(1, len(x) + 1))
    for i in range(len(x)):
        for j in range(len(x)):
            if x[i] < x[j]:
                assert r[i] < r[j]


def test_rank_matrix_column_wise():
    m = rank_matrix(np.array([[1.0, 9.0], [3.0, 2.0], [2.0, 5.0]]), ties="first")
    assert m.tolist() == [[1, 3], [3, 1], [2, 2]]


def test_bad_tie_rule():
    with pytest.raises(ParameterError, match="'ties'"):
        ranks(np.array([1.0]), ties="last")


def test_nearest_rank_hand_worked():
    s = np.array([1.0, 2.0, 2.0, 4.0])
    # 2.1 -> value 2 (ranks 2 and 3): lowest, 2; 3.0 is as close to 2 as to 4: the lower rank, 2;
    # 0.0 -> 1 (rank 1); 9.0 -> 4 (rank 4); 3.5 -> 4 (rank 4)
    assert nearest_rank(s, np.array([2.1, 3.0, 0.0, 9.0, 3.5])).tolist() == [2, 2, 1, 4, 4]


@given(st.lists(st.integers(0, 8), min_size=1, max_size=15), st.lists(st.integers(-2, 10), min_size=1, max_size=10))
@settings(max_examples=80, deadline=None)
def test_nearest_rank_matches_brute_force(values, queries):
    s = np.sort(np.array(values, dtype=float))
    for q in queries:
        dist = np.abs(s - q)
        expected = int(np.flatnonzero(dist == dist.min())[0]) + 1
        assert nearest_rank(s, np.array([float(q)]))[0] == expected


def test_order_values_of_each_kind():
    ordinal = pd.Series(["low", "high", "mid"], name="level")
    assert order_values(ordinal, Column("level", Kind.ORDINAL, order=("low", "mid", "high"))).tolist() == [0, 2, 1]
    dates = pd.Series(pd.to_datetime(["2020-01-02", "2020-01-01"]), name="d")
    v = order_values(dates, Column("d", Kind.DATE))
    assert v[0] > v[1]
    cat = pd.Series(pd.Categorical(["b", "a"], categories=["b", "a"], ordered=True), name="c")
    assert order_values(cat).tolist() == [0.0, 1.0]


def test_order_values_errors_name_the_column():
    with pytest.raises(SchemaError, match="'town'.*nominal"):
        order_values(pd.Series(["a", "b"], name="town"), Column("town", Kind.NOMINAL))
    with pytest.raises(DataError, match="'age'.*row 1"):
        order_values(pd.Series([1.0, np.nan], name="age"))
    with pytest.raises(SchemaError, match="'level'.*'top'"):
        order_values(pd.Series(["low", "top"], name="level"), Column("level", Kind.ORDINAL, order=("low",)))


def test_average_ranks_hand_worked():
    from sdckit.core.ranks import average_ranks

    # 10, 30, 30, 20: the two 30s share ranks 3 and 4, so each gets 3.5
    assert average_ranks(np.array([10.0, 30.0, 30.0, 20.0])).tolist() == [1.0, 3.5, 3.5, 2.0]
    assert average_ranks(np.array([[1.0, 5.0], [2.0, 5.0]])).tolist() == [[1.0, 1.5], [2.0, 1.5]]


def test_normal_scores_hand_worked():
    from sdckit.core.ranks import normal_scores

    # n = 2: (1 - 0.5)/2 = 0.25 and 0.75, whose standard-normal quantiles are -/+0.674490
    assert normal_scores(np.array([1, 2]), 2) == pytest.approx([-0.6744898, 0.6744898])
