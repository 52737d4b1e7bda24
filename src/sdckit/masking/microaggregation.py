"""Microaggregation: MDAV and optimal univariate microaggregation (seed 002 section 4.6.3).

Records are partitioned into groups of at least ``k`` similar records and each value is
replaced by its group's mean. Two partitions are offered (both in :mod:`sdckit.core.grouping`,
which k-anonymity shares):

* **MDAV** (Maximum Distance to Average Vector; Domingo-Ferrer & Mateo-Sanz 2002, the fixed-size
  heuristic for the microaggregation seed 002 describes) on standardized attributes — every group
  has exactly ``k`` records except one of ``k..2k-1``. :func:`mdav_groups` exposes the
  partition on its own (k-anonymity reuses it, seed 002: "microaggregation on the projection
  of records on their quasi-identifiers").
* **Optimal univariate** microaggregation (Hansen & Mukherjee 2003): per attribute, the
  partition of minimum within-group sum of squares, found as a shortest path over the sorted
  values where every group is a run of ``k..2k-1`` consecutive values; ``O(n k)`` after sorting.

Information loss is reported as ``SSE / SST``: the within-group sum of squares over the total
sum of squares, on standardized attributes (0 = nothing lost, 1 = everything averaged away).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.arrays import numeric_block, write_block
from sdckit.core.errors import DataError
from sdckit.core.arrays import standardize
from sdckit.core.grouping import (CELL_SIZE, EXACT_LIMIT, group_means, kd_cells, mdav_groups, partitioned_mdav_groups,
                                  sse_ratio, univariate_groups)
from sdckit.core.method import Outcome, StratifiedMethod, register
from sdckit.core.params import Interval, Options
from sdckit.core.schema import Schema


# --------------------------------------------------------------------------- method
@register
@dataclass(frozen=True)
class Microaggregation(StratifiedMethod):
    """Microaggregation: groups of at least ``k`` similar records, values replaced by group means.

    Parameters
    ----------
    k : int >= 2
        Minimum group size. Groups have ``k..2k-1`` records.
    method : {"mdav", "univariate"}, default "mdav"
        ``"mdav"``: MDAV on the standardized columns together (:func:`mdav_groups`); each
        record's values are replaced by its group's mean in original units, so the output is
        k-anonymous on the aggregated columns. ``"univariate"``: each column aggregated on its
        own by optimal univariate microaggregation (:func:`univariate_groups`); least
        information loss per column, but no k-anonymity across columns.
    columns : list of str, optional
        Columns to aggregate; default: the numeric quasi-identifiers and confidential columns
        (every numeric column when no roles are declared).
    strata : list of str, optional
        Aggregate within each stratum of these columns (groups never mix strata; each stratum
        needs at least ``k`` records); see :class:`~sdckit.core.method.StratifiedMethod`.

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). Integer columns come out as floats.
    The report (``Outcome.info``) holds ``sse_ratio`` (within-group SSE / total SSE on
    standardized columns: the information loss), ``sse_ratio_by_column``, ``groups`` (the
    number of MDAV groups, or a list per column) and ``largest_group``. MDAV is deterministic.
    Past 100,000 records MDAV is partitioned (:func:`~sdckit.core.grouping.partitioned_mdav_groups`:
    exact MDAV within cells of a KD partition of at most 10,000 records, classes never crossing a
    cell; 1e6 x 5 in seconds, where exact MDAV takes minutes) and the report's
    ``partitioned_mdav`` gives its information loss against exact MDAV measured on random
    samples (drawn with the seed), with its standard error.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "Microaggregation" and
    "k-Anonymity, generalisation and microaggregation"; Domingo-Ferrer & Mateo-Sanz (2002),
    "Practical data-oriented microaggregation for statistical disclosure control", IEEE TKDE
    14(1) (MDAV); Hansen & Mukherjee (2003), "A polynomial algorithm for optimal univariate
    microaggregation", IEEE TKDE 15(4).
    """

    k: int
    method: str = "mdav"
    name: ClassVar[str] = "microaggregation"
    constraints: ClassVar = {"k": Interval(int, 2, None), "method": Options(("mdav", "univariate"))}
    example: ClassVar = {"k": 3}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        values = numeric_block(frame, columns)
        if len(values) < self.k:
            raise DataError(
                f"Microaggregation with k={self.k} needs at least {self.k} records; the data "
                f"has {len(values)}. Lower k or use more records."
            )
        partitioned = None
        if self.method == "mdav":
            labels = mdav_groups(values, self.k, exact_limit=EXACT_LIMIT, cell_size=CELL_SIZE)
            aggregated = group_means(values, labels)
            groups: int | list[int] = int(labels.max()) + 1
            largest = int(np.bincount(labels).max())
            if len(values) > EXACT_LIMIT:
                partitioned = partition_loss(values, self.k, rng)
        else:
            aggregated = np.empty_like(values)
            groups, largest = [], 0
            for j in range(values.shape[1]):
                labels = univariate_groups(values[:, j], self.k)
                aggregated[:, j] = group_means(values[:, [j]], labels)[:, 0]
                groups.append(int(labels.max()) + 1)
                largest = max(largest, int(np.bincount(labels).max()))
        write_block(frame, columns, aggregated)
        ratio, per = sse_ratio(values, aggregated)
        info = {
            "sse_ratio": ratio,
            "sse_ratio_by_column": dict(zip(columns, per, strict=True)),
            "groups": groups,
            "largest_group": largest,
        }
        if partitioned is not None:
            info["partitioned_mdav"] = partitioned
        return Outcome(frame, schema, info)


#: Records per sample, and samples, on which partitioned MDAV is compared with exact MDAV.
LOSS_SAMPLE, LOSS_SAMPLES = 4 * CELL_SIZE, 3


def partition_loss(values: np.ndarray, k: int, rng: np.random.Generator,
                   sample: int | None = None, repeats: int | None = None) -> dict[str, float | int]:
    """The information loss of partitioned MDAV against exact MDAV, measured on samples.

    Exact MDAV on all ``n`` records is what partitioning avoids, so it is compared on
    ``repeats`` random samples of ``sample`` records: on each, exact MDAV and partitioned MDAV
    with cells of the same size as the full run's (what drives the loss is the share of records
    near a cell's boundary, which depends on the records per cell), and the relative increase
    of the SSE ratio. Reported: the mean increase and its standard error over the samples, the
    mean SSE ratios, the sample size and the number of cells of the full run.
    """
    sample = LOSS_SAMPLE if sample is None else sample
    repeats = LOSS_SAMPLES if repeats is None else repeats
    n = len(values)
    cells = len(kd_cells(standardize(values), CELL_SIZE))
    cell = CELL_SIZE
    increases, exact_r, part_r = [], [], []
    for _ in range(repeats):
        rows = np.sort(rng.choice(n, size=min(sample, n), replace=False))
        part = values[rows]
        exact = sse_ratio(part, group_means(part, mdav_groups(part, k, exact_limit=None)))[0]
        split = sse_ratio(part, group_means(part, partitioned_mdav_groups(part, k, cell_size=cell)))[0]
        exact_r.append(exact)
        part_r.append(split)
        increases.append(split / exact - 1.0 if exact > 0 else 0.0)
    inc = np.asarray(increases)
    return {
        "cells": cells, "cell_size": cell, "sample": int(min(sample, n)), "samples": repeats,
        "sample_sse_ratio_exact": float(np.mean(exact_r)), "sample_sse_ratio_partitioned": float(np.mean(part_r)),
        "loss_increase": float(inc.mean()),
        "loss_increase_standard_error": float(inc.std(ddof=1) / np.sqrt(repeats)) if repeats > 1 else float("nan"),
    }
