"""k-anonymity by microaggregation of the quasi-identifiers (seed 003 section 6; Domingo-Ferrer
and Mateo-Sanz 2002).

MDAV groups the records into clusters of ``k`` to ``2k - 1`` similar records on all the
quasi-identifiers together; every quasi-identifier of a record is then replaced by one value
per cluster, so the release is k-anonymous without any suppression. The equivalence classes
are the groups of identical released values: a cluster, or several clusters that received the
same values (which happens with nominal and ordinal quasi-identifiers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.anonymity.partition import Partition
from sdckit.core.arrays import class_labels, standardize
from sdckit.core.errors import DataError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, StrList
from sdckit.core.ranks import order_values
from sdckit.core.schema import Kind, Role, Schema
from sdckit.core.grouping import group_means, mdav_groups, sse_ratio


@register
@dataclass(frozen=True)
class MicroaggregationAnonymity(Method):
    """k-anonymity by MDAV microaggregation of the quasi-identifiers, all together.

    Parameters
    ----------
    k : int >= 2
        Every MDAV cluster holds ``k`` to ``2k - 1`` records; an equivalence class is one or
        more clusters with the same released values, so it holds at least ``k``.
    quasi : list of str
        The quasi-identifiers.

    Notes
    -----
    Distances: numeric, date and ordinal quasi-identifiers enter MDAV by their values (ordinal
    ones by their position in the order), standardized; a nominal one by 0/1 indicator
    columns. Replacement: numeric columns by the cluster mean, dates by the mean date, ordinal
    columns by the cluster's median category, nominal ones by the cluster's most frequent
    value (first in data order on ties). Missing values are refused (``nan_policy="error"``).
    The report gives ``sse_ratio`` (within-cluster over total SSE of the standardized
    distance columns), the number of ``clusters`` and of equivalence ``classes`` of the release
    and the smallest and largest class. Deterministic: the seed is not used.

    References
    ----------
    Seed 003, section 6 ("k-Anonymity with Micro-Aggregation"); seed 002 section 4.6.3.
    """

    k: int
    quasi: tuple[str, ...]
    name: ClassVar[str] = "microaggregation_anonymity"
    constraints: ClassVar = {"k": Interval(int, 2, None), "quasi": StrList()}
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    example: ClassVar = {"k": 3, "quasi": ("age", "education", "sex")}

    def default_columns(self) -> tuple[str, ...]:
        return tuple(self.quasi)

    def partition(self, frame: pd.DataFrame, schema: Schema | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> Partition:
        """The microaggregated release and its equivalence classes (identical released values)."""
        schema, quasi = self.prepare(frame, schema)  # the method's checks and missing-value policy
        if len(frame) < self.k:
            raise DataError(f"MicroaggregationAnonymity with k={self.k} needs at least {self.k} records; got {len(frame)}.")
        blocks = []
        for name in quasi:
            column = schema[name]
            if column.kind is Kind.NOMINAL:
                codes = pd.factorize(frame[name])[0]
                blocks.append(np.eye(codes.max() + 1)[codes] / np.sqrt(2))
            else:
                blocks.append(standardize(order_values(frame[name], column))[:, None])
        distance = np.column_stack(blocks)
        labels = mdav_groups(distance, self.k, standardize_columns=False, progress=progress)
        data = frame.copy()
        for name in quasi:
            data[name] = _replace(frame[name], schema[name], labels)
        ratio, _ = sse_ratio(distance, group_means(distance, labels))
        # Two clusters can receive the same values (e.g. the same modes): the equivalence
        # classes are the groups of identical released quasi-identifiers, not the clusters.
        classes, sizes = class_labels(data, list(quasi), sort=False)
        info = {"classes": int(len(sizes)), "clusters": int(labels.max()) + 1,
                "smallest_class": int(sizes.min()), "largest_class": int(sizes.max()),
                "sse_ratio": ratio, "suppressed": 0, "warnings": []}
        return Partition(data, classes, info)

    def transform(self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                  rng: np.random.Generator) -> Outcome:
        part = self.partition(frame, schema)
        return Outcome(part.data, schema, part.info)  # every column keeps its kind


def _replace(series: pd.Series, column, labels: np.ndarray) -> pd.Series:
    """One value per cluster: mean (numeric, date), median category (ordinal), mode (nominal)."""
    if column.kind is Kind.NUMERIC:
        return pd.Series(group_means(series.to_numpy(dtype=float)[:, None], labels)[:, 0], index=series.index)
    if column.kind is Kind.DATE:
        ns = order_values(series, column)
        return pd.Series(pd.to_datetime(group_means(ns[:, None], labels)[:, 0].astype(np.int64)), index=series.index)
    codes, uniques = (pd.factorize(series) if column.kind is Kind.NOMINAL else
                      (order_values(series, column).astype(np.int64), None))
    g = int(labels.max()) + 1
    if column.kind is Kind.NOMINAL:
        counts = np.zeros((g, len(uniques)), dtype=np.int64)
        np.add.at(counts, (labels, codes), 1)
        choice = uniques.take(counts.argmax(axis=1))  # argmax: first code (data order) on ties
        return pd.Series(np.asarray(choice, dtype=object)[labels], index=series.index)
    order = list(column.order) if column.order is not None else list(series.cat.categories)
    sorter = np.lexsort((codes, labels))
    starts = np.searchsorted(labels[sorter], np.arange(g))
    sizes = np.bincount(labels, minlength=g)
    median = codes[sorter][starts + (sizes - 1) // 2]
    values = np.asarray(order, dtype=object)[median][labels]
    if isinstance(series.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical(values, categories=series.cat.categories, ordered=series.cat.ordered), index=series.index)
    return pd.Series(values, index=series.index)
