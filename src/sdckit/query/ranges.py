"""Range answers of dp COUNT/SUM queries on an integer column with many values: sorted values
and prefix sums (the second fast path, next to :mod:`sdckit.query.cube`).

A column with too many values for the cube (an income, say) gets, when the service starts, its
non-missing values of the dp relation sorted, and the prefix sums of every clamped column whose
sums are exact in any order (:func:`~sdckit.query.cube.summable_columns`) in that order. A query
without GROUP BY whose WHERE is one condition on that column — a comparison, ``[NOT] IN``,
``[NOT] BETWEEN``, or ``NOT`` of one of these — selects a union of integer intervals of the
column; each interval is two binary searches (:func:`numpy.searchsorted`) and one difference of
prefix sums. Missing values are in no interval: SQL's comparison with a missing value is unknown
and so is its negation, and WHERE keeps neither.

The same true answer as DuckDB: an integer ``x`` satisfies ``x < v`` exactly when
``x <= ceil(v) - 1`` (and so on), with Python's exact integers; prefix sums of values that are
integers (or multiples of 2**-10) with magnitudes summing below 2**53 (2**43) are exact, and so
are their differences. Columns are indexed while the memory stays under :data:`MAX_BYTES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.core.result import Result, plain
from sdckit.query.config import TableConfig
from sdckit.query.cube import EXACT, integer_columns, literals_exact
from sdckit.query.generate import clamp_column, relation_name, summed_columns
from sdckit.query.sql import Between, Compare, InList, Not, Predicate, Query

#: Names in the SQL below.
_q = quote_identifier

#: Memory the range indexes of one table may take (sorted values and prefix sums, 8 bytes each).
MAX_BYTES = 256 * 2**20

_INF = 2**62  # beyond every indexed value (|x| < 2**53)

Interval = tuple[int, int]  # inclusive integer bounds


@dataclass(frozen=True)
class RangeIndex(Result):
    """One column's sorted non-missing values and, per summable column, the prefix sums (length
    n + 1, starting at 0) of its clamped values in that order."""

    column: str
    values: np.ndarray
    prefix: dict[str, np.ndarray]

    def to_dict(self) -> dict[str, Any]:
        """The column, the number of values indexed and the summed columns (not the values)."""
        return plain({"column": self.column, "values": self.values.size, "summed": list(self.prefix)})

    def covers(self, query: Query) -> bool:
        """Whether ``query`` is a COUNT/SUM/AVG without GROUP BY whose WHERE is one condition on
        this column (with literals within +/-2**53) and whose sums this index holds."""
        if query.group_by or any(o.kind not in ("count", "sum", "avg") for o in query.outputs):
            return False
        if any(c not in self.prefix for c in summed_columns(query)):
            return False
        leaf = query.where.item if isinstance(query.where, Not) else query.where
        return (isinstance(leaf, Compare | InList | Between) and leaf.column == self.column
                and literals_exact(query.where))

    def cells(self, query: Query) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """True count and clamped sums of the one answer cell (as :func:`~sdckit.query.noisy.exact_cells`)."""
        count, sums = 0, {c: 0.0 for c in summed_columns(query)}
        for low, high in intervals(query.where):
            a = int(np.searchsorted(self.values, low, side="left"))
            b = int(np.searchsorted(self.values, high, side="right"))
            if b <= a:
                continue
            count += b - a
            for c in sums:
                sums[c] += float(self.prefix[c][b] - self.prefix[c][a])
        return np.array([count], dtype=np.int64), {c: np.array([v]) for c, v in sums.items()}


def build(con: Any, table: TableConfig, skip: set[str], summable: list[str], max_bytes: int = MAX_BYTES) -> dict[str, RangeIndex]:
    """Range indexes of ``table``'s integer columns not in ``skip`` (those the cube holds), fewest
    bytes first, while they fit in ``max_bytes``."""
    relation = _q(relation_name(table, "dp"))
    columns = [c for c in integer_columns(con, table) if c not in skip]
    if not columns:
        return {}
    stats = con.execute("SELECT " + ", ".join(
        f"COUNT({_q(c)}), CAST(MIN({_q(c)}) AS HUGEINT), CAST(MAX({_q(c)}) AS HUGEINT)" for c in columns)
        + f" FROM {relation}").fetchone()
    out: dict[str, RangeIndex] = {}
    used = 0
    for i, column in enumerate(columns):
        present, low, high = stats[3 * i: 3 * i + 3]
        if not present or abs(int(low)) >= EXACT or abs(int(high)) >= EXACT:
            continue
        size = 8 * (int(present) + (int(present) + 1) * len(summable))
        if used + size > max_bytes:
            continue
        selects = [_q(column)] + [_q(clamp_column(c)) for c in summable]
        result = con.execute(f"SELECT {', '.join(selects)} FROM {relation} WHERE {_q(column)} IS NOT NULL "
                             f"ORDER BY {_q(column)}").fetchnumpy()
        values = np.asarray(result[column], dtype=np.int64)
        prefix = {}
        for c in summable:
            prefix[c] = np.concatenate([[0.0], np.cumsum(np.asarray(result[clamp_column(c)], dtype=float))])
        out[column] = RangeIndex(column, values, prefix)
        used += size
    return out


def intervals(p: Predicate) -> list[Interval]:
    """The disjoint, sorted integer intervals of the values that make ``p`` true (a condition on
    one integer column, or ``NOT`` of one); missing values are in none."""
    if isinstance(p, Not):
        return _complement(intervals(p.item))
    if isinstance(p, Compare):
        return _compare(p.op, p.value)
    if isinstance(p, InList):
        points = sorted({int(v) for v in p.values if float(v).is_integer()})
        inside = [(v, v) for v in points]
        return _complement(inside) if p.negated else inside
    inside = []
    low, high = math.ceil(p.low), math.floor(p.high)
    if low <= high:
        inside = [(low, high)]
    return _complement(inside) if p.negated else inside


def _compare(op: str, value: Any) -> list[Interval]:
    if op in ("=", "<>"):
        equal = [(int(value), int(value))] if float(value).is_integer() else []
        return equal if op == "=" else _complement(equal)
    if op == "<":
        return [(-_INF, math.ceil(value) - 1)]
    if op == "<=":
        return [(-_INF, math.floor(value))]
    if op == ">":
        return [(math.floor(value) + 1, _INF)]
    return [(math.ceil(value), _INF)]  # >=


def _complement(inside: list[Interval]) -> list[Interval]:
    out, start = [], -_INF
    for low, high in inside:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _INF:
        out.append((start, _INF))
    return out
