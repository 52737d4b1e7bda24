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
from sdckit.core.grouping import group_means, mdav_groups, sse_ratio, univariate_groups
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
    number of MDAV groups, or a list per column) and ``largest_group``. MDAV is deterministic:
    the seed is not used.

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
        if self.method == "mdav":
            labels = mdav_groups(values, self.k)
            aggregated = group_means(values, labels)
            groups: int | list[int] = int(labels.max()) + 1
            largest = int(np.bincount(labels).max())
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
        return Outcome(frame, schema, info)
