"""Partitioned MDAV past 1e5 records (issue 17): KD cells, exact MDAV inside each, classes never
crossing a cell, and its information loss against exact MDAV reported."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdckit.masking.microaggregation as micro
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.grouping import group_means, kd_cells, mdav_groups, partitioned_mdav_groups, sse_ratio
from sdckit.masking import Microaggregation


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 400), st.integers(2, 60), st.integers(0, 1000))
def test_kd_cells_cover_every_row_once_and_split_at_the_median(n, cell, seed):
    data = np.random.default_rng(seed).normal(size=(n, 3))
    cells = kd_cells(data, cell)
    rows = np.concatenate(cells)
    assert sorted(rows.tolist()) == list(range(n))
    assert all(len(c) <= cell for c in cells)
    if n > cell:
        assert all(len(c) >= cell // 2 for c in cells)


def test_kd_cells_split_on_the_widest_attribute():
    data = np.column_stack([np.arange(8.0), np.arange(8.0) * 0.01])
    left, right = kd_cells(data, 4)
    assert sorted(left.tolist()) == [0, 1, 2, 3] and sorted(right.tolist()) == [4, 5, 6, 7]


@settings(max_examples=10, deadline=None)
@given(st.integers(30, 600), st.integers(2, 5), st.integers(0, 1000))
def test_partitioned_groups_have_k_to_2k_minus_1_records_and_stay_in_their_cell(n, k, seed):
    values = np.random.default_rng(seed).lognormal(size=(n, 2))
    cell = max(2 * k, 25)
    labels = partitioned_mdav_groups(values, k, cell_size=cell)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    from sdckit.core.arrays import standardize

    cell_of = np.empty(n, dtype=int)
    for i, rows in enumerate(kd_cells(standardize(values), cell)):
        cell_of[rows] = i
    for g in range(labels.max() + 1):
        assert len(set(cell_of[labels == g])) == 1


def test_within_one_cell_partitioned_is_exact_mdav():
    values = np.random.default_rng(2).normal(size=(300, 3))
    np.testing.assert_array_equal(partitioned_mdav_groups(values, 3, cell_size=300),
                                  mdav_groups(values, 3, exact_limit=None))


def test_below_the_limit_mdav_stays_exact_and_above_it_partitions():
    values = np.random.default_rng(4).normal(size=(1000, 2))
    exact = mdav_groups(values, 3, exact_limit=None)
    np.testing.assert_array_equal(mdav_groups(values, 3, exact_limit=1000), exact)
    split = mdav_groups(values, 3, exact_limit=999, cell_size=200)
    np.testing.assert_array_equal(split, partitioned_mdav_groups(values, 3, cell_size=200))
    # the partitioned loss is close to the exact one (a few boundary records are grouped less well)
    loss_exact = sse_ratio(values, group_means(values, exact))[0]
    loss_split = sse_ratio(values, group_means(values, split))[0]
    assert loss_exact <= loss_split * 1.05 and loss_split < 1.5 * loss_exact


def test_bad_cell_size_and_data_are_refused():
    values = np.zeros((50, 2))
    with pytest.raises(ParameterError, match="'cell_size'"):
        partitioned_mdav_groups(values, 5, cell_size=9)
    with pytest.raises(DataError, match="k=5"):
        partitioned_mdav_groups(np.zeros((3, 2)), 5)


def test_microaggregation_reports_the_loss_of_partitioning_against_exact_mdav(monkeypatch):
    monkeypatch.setattr(micro, "EXACT_LIMIT", 1500)
    monkeypatch.setattr(micro, "CELL_SIZE", 400)
    monkeypatch.setattr(micro, "LOSS_SAMPLE", 1200)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(size=(3000, 3)), columns=list("abc"))
    info = Microaggregation(k=3).run(frame, seed="ab" * 16).info
    loss = info["partitioned_mdav"]
    assert loss["cells"] == 8 and loss["sample"] == 1200 and loss["samples"] == 3
    # the partitioned SSE on a sample is never far below the exact one (exact MDAV is not optimal,
    # so it may be slightly above), and the increase is small at 400 records per cell
    assert -0.05 < loss["loss_increase"] < 0.5 and loss["loss_increase_standard_error"] >= 0
    assert loss["sample_sse_ratio_partitioned"] == pytest.approx(
        loss["sample_sse_ratio_exact"] * (1 + loss["loss_increase"]), rel=0.2)
    small = Microaggregation(k=3).run(frame.head(1000), seed="ab" * 16).info
    assert "partitioned_mdav" not in small
