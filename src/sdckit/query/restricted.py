"""Exact answers under classical protection: query-set-size control and an auditor (seed 002
section 4.6.2; Denning 1980 for trackers, Chin & Ozsoyoglu 1982 for auditing).

A condition and a GROUP BY may name only the table's *public dimensions* (a binned GROUP BY column,
:mod:`sdckit.query.derived`, one of them: each bin is the set of records its expression maps
there, a predicate on that dimension, and its membership vector is what the auditor sees; a
derived value is a 400) and SUM/AVG only its
confidential columns (:func:`check_dimensions`, a 400 decided from the text: issue 27), so every
query set is a union of cells of the dimensions and no decision below but the interval audit
(3.) depends on a confidential value. For each query the service computes, over the table's
records in their fixed order (``__sdc_row``), the membership vector of the query set (one per
group of a GROUP BY). Then

1. **query-set-size control**: a query set (any group) with fewer than ``k`` records or more
   than ``N - k`` is refused (``k = [restricted] min_query_set``);
2. **audit**: :class:`~sdckit.query.audit.auditor.Auditor` decides, from what the knowledge holder
   has already been told, whether these answers would let a total over fewer than k records (a
   single record's value or membership, a total or difference of a few records) be derived,
   by trackers or differencing included. COUNT is audited as kind
   ``"count"``, SUM(col) as ``"sum"`` of ``col``, AVG(col) as both;
3. **interval audit** (``[restricted] p_percent``, 0 turns it off): for SUM(col) and AVG(col),
   :class:`~sdckit.query.audit.interval.IntervalAudit` refuses an answer that, with the holder's
   earlier sums of ``col``, would let someone estimate a person's value closer than the p% rule
   allows within the declared bounds (LP audit over all answered sums). Its refusals depend on
   the values (DESIGN.md section 7 says what they reveal).

**Whose knowledge is audited** (``[restricted] collusion``): ``false`` (the default) keeps one
auditor per analyst and table, so each analyst's own answers are audited; ``true`` keeps one
per table for all analysts together, so colluding analysts who pool their answers cannot derive
a value either (each analyst is then refused what another's answers would complete).

The answered queries are stored in the state database, with a SHA-256 fingerprint of the data
file, and replayed into the auditors when the service starts, so a restart keeps what was learned;
if the data changed, restricted answers on that table stop (fail closed).
Missing values count as 0 in SUM; AVG is SUM / COUNT(*).

**Several rows per person** (a ``privacy_unit`` with repeated values): every query set (every
group) must keep or leave out *all* rows of each person, or it is refused. Then a COUNT(*) or
SUM is a sum over the persons in the set of each person's own total (rows, or the column's sum
over the person's rows), the same unknown in every query, so the audit runs over persons exactly
as over records: memberships are vectors over persons, query-set-size control counts persons,
and COUNT(*) (rows) is audited as the COUNT knowledge over persons. A set that splits a person
would reveal a part of that person's total, an unknown the audit does not model.

"""

from __future__ import annotations

import itertools
import math
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.core.errors import SdcError
from sdckit.query.config import ServiceConfig, TableConfig
from sdckit.query.data import Database
from sdckit.query.derived import dp_table, find
from sdckit.query.generate import (COUNT_ALIAS, ROW, aggregate_sql, cell_indices, membership_sql, sum_alias,
                                   summed_columns, values_sql)
from sdckit.query.sql import Query, UnsupportedQuery, parse, predicate_columns
from sdckit.query.state import State

if TYPE_CHECKING:
    from sdckit.query.audit.interval import IntervalAudit
    from sdckit.query.audit.auditor import Auditor


#: Largest number of membership cells (groups x records) one restricted query may need.
MAX_MEMBERSHIP_CELLS = 400_000_000


class Refused(SdcError):
    """The service will not give this answer (HTTP 403)."""


def check_dimensions(query: Query, table: TableConfig) -> None:
    """Restricted mode's rule on names (DESIGN.md section 7), decided from the query text alone:
    WHERE and GROUP BY name only the table's public dimensions, and SUM/AVG only confidential
    columns (declared, not dimensions). So every query set is a union of cells of the public
    dimensions, and no decision of the service depends on a confidential value.
    :class:`~sdckit.query.sql.UnsupportedQuery` (400) otherwise."""
    dimensions = table.public_dimensions
    allowed = ", ".join(dimensions) or "none declared"
    named = [("a condition", c) for c in sorted(predicate_columns(query.where))]
    named += [("GROUP BY", c if find(query, c, "bin") is None else find(query, c, "bin").column)  # a bin: its column
              for c in query.group_by]
    for where, column in named:
        if column not in dimensions:
            raise UnsupportedQuery(
                f"In restricted mode {where} may name only the public dimensions of table {table.name!r} "
                f"({allowed}); {column!r} is confidential (SUM or AVG of it only). The operator declares "
                "dimensions with 'dimensions = [...]' in the table's configuration.")
    for o in query.outputs:
        if o.kind in ("sum", "avg") and o.column in dimensions:
            raise UnsupportedQuery(
                f"In restricted mode {o.kind.upper()}({o.column}) is not answered: {o.column!r} is a public "
                f"dimension of table {table.name!r}; SUM and AVG are of confidential columns (declared, not "
                f"among {allowed}).")


def sum_bounds(query: Query, table: TableConfig, p_percent: float) -> dict[str, tuple[float, float]]:
    """The public bounds ``(lo, hi)`` of each summed column, for the interval audit (empty when
    ``p_percent`` is 0). A column whose declared lower bound is negative is refused (400): the
    p% rule of the audit is stated for values >= a lower bound >= 0. Without declared bounds the
    audit assumes values >= 0 (``hi`` infinite)."""
    if not p_percent:
        return {}
    out = {}
    for column in summed_columns(query):
        lo, hi = table.bounds.get(column, (0.0, math.inf))
        if lo < 0:
            raise UnsupportedQuery(
                f"In restricted mode SUM and AVG of {column!r} are not answered: its declared lower bound {lo:g} is "
                "negative, and the interval audit (p% rule, [restricted] p_percent) protects values >= 0. Declare "
                "bounds with a lower bound >= 0 (e.g. shift the column), or set p_percent = 0 (no interval "
                "protection), or use dp mode.")
        out[column] = (float(lo), float(hi))
    return out


def audited_kinds(query: Query) -> list[tuple[str, str | None]]:
    """``(kind, column)`` pairs the auditor must allow: COUNT -> count, SUM -> sum, AVG -> both."""
    kinds: list[tuple[str, str | None]] = []
    if any(o.kind in ("count", "avg") for o in query.outputs):
        kinds.append(("count", None))
    kinds.extend(("sum", c) for c in summed_columns(query))
    return kinds


class Restricted:
    """The restricted mode over one loaded database and one state database."""

    def __init__(self, db: Database, state: State, config: ServiceConfig) -> None:
        self.db = db
        self.state = state
        self.config = config
        self._auditors: dict[tuple[str, str], Auditor] = {}
        self._intervals: dict[tuple[str, str, str], IntervalAudit] = {}
        self._values: dict[tuple[str, str], np.ndarray] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def _holder(self, analyst: str) -> str:
        return "*" if self.config.collusion else analyst

    def _lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def n_units(self, table: TableConfig) -> int:
        """Number of audited units: records, or persons on a table with several rows per person."""
        units = self.db.units(table)
        return self.db.n_rows[table.name] if units is None else int(units.max()) + 1 if units.size else 0

    def memberships(self, query: Query, table: TableConfig) -> list[np.ndarray]:
        """One boolean vector per cell (one without GROUP BY) over the audited units: records, or
        persons on a table with several rows per person (:class:`Refused` when a set splits a
        person's rows)."""
        rows = self._row_memberships(query, table)
        units = self.db.units(table)
        if units is None:
            return rows
        total = np.bincount(units, minlength=self.n_units(table))
        out = []
        for m in rows:
            inside = np.bincount(units[m], minlength=total.size)
            if np.any((inside > 0) & (inside < total)):
                what = "a group of the GROUP BY" if query.group_by else "the query set"
                raise Refused(f"Refused: {what} takes some but not all rows of a person (table {table.name!r} has "
                              f"several rows per {table.privacy_unit!r}); in restricted mode a condition must keep "
                              "or leave out each person's rows together: condition on columns that are the same "
                              "for all rows of a person.")
            out.append(inside > 0)
        return out

    def _row_memberships(self, query: Query, table: TableConfig) -> list[np.ndarray]:
        """One boolean vector over the table's records per cell (one without GROUP BY)."""
        n = self.db.n_rows[table.name]
        result = self.db.aggregate(membership_sql(query, table))
        rows = np.asarray(result[ROW], dtype=np.int64)
        if not query.group_by:
            m = np.zeros(n, dtype=bool)
            m[rows] = True
            return [m]
        n_cells = math.prod(len(table.domains[c]) for c in query.group_by)
        if n_cells * n > MAX_MEMBERSHIP_CELLS:
            raise Refused(f"The GROUP BY has {n_cells} groups over {n} records: too many for the auditor's "
                          "membership vectors; group on fewer columns or values.")
        cells = cell_indices(table, query.group_by, result, rows.size)
        out = [np.zeros(n, dtype=bool) for _ in range(n_cells)]
        keep = cells >= 0
        order = np.argsort(cells[keep], kind="stable")
        sorted_cells, sorted_rows = cells[keep][order], rows[keep][order]
        bounds = np.searchsorted(sorted_cells, np.arange(n_cells + 1))
        for i in range(n_cells):
            out[i][sorted_rows[bounds[i]:bounds[i + 1]]] = True
        return out

    def _auditor(self, holder: str, table: TableConfig) -> Auditor:
        """The holder's auditor for ``table``, built on first use by replaying its answered queries."""
        key = (holder, table.name)
        auditor = self._auditors.get(key)
        if auditor is not None:
            return auditor
        from sdckit.query.audit.auditor import Auditor  # numba: loaded by the first audited query, not at start

        auditor = Auditor(self.n_units(table), self.config.min_query_set)
        for _, sql, data in self.state.answered(table.name, None if holder == "*" else holder):
            if data != self.db.fingerprints[table.name]:
                raise Refused(f"The data of table {table.name!r} changed since queries on it were answered "
                              "and audited; what those answers revealed cannot be replayed on other data, so "
                              "the service refuses restricted answers on it (restore the data, or start a new "
                              "state database).")
            try:
                past = parse(sql, self.config)
                past_table = dp_table(past, self.config.tables[table.name])
                check_dimensions(past, past_table)
                past_bounds = sum_bounds(past, past_table, self.config.p_percent)
            except SdcError:
                raise Refused("The audit history holds a query the current configuration no longer "
                              "accepts; the service refuses restricted answers on this table until "
                              "the configuration is restored.") from None
            members = self.memberships(past, past_table)
            for kind, column in audited_kinds(past):
                auditor.record(members, kind, column)
            for column, bounds in past_bounds.items():
                self._interval(holder, table, column, bounds).record(members)
        self._auditors[key] = auditor
        return auditor

    def _interval(self, holder: str, table: TableConfig, column: str, bounds: tuple[float, float]) -> IntervalAudit:
        """The holder's interval audit of SUM(column) (empty until answers are recorded or replayed)."""
        key = (holder, table.name, column)
        if key not in self._intervals:
            from sdckit.query.audit.interval import IntervalAudit  # scipy's LP: loaded by the first SUM audited

            self._intervals[key] = IntervalAudit(self.unit_values(table, column), bounds, self.config.p_percent,
                                                 self.config.min_query_set)
        return self._intervals[key]

    def unit_values(self, table: TableConfig, column: str) -> np.ndarray:
        """Each audited unit's total of ``column`` (a missing value as 0), as SUM counts it."""
        key = (table.name, column)
        with self._guard:
            if key not in self._values:
                result = self.db.aggregate(values_sql(table, column))
                values = np.zeros(self.db.n_rows[table.name])
                column_values = np.ma.filled(np.ma.asarray(result[sum_alias(0)], dtype=float), 0.0)
                values[np.asarray(result[ROW], dtype=np.int64)] = np.nan_to_num(column_values, nan=0.0)
                units = self.db.units(table)
                self._values[key] = values if units is None else np.bincount(
                    units, weights=values, minlength=self.n_units(table))
            return self._values[key]

    def answer(self, analyst: str, query: Query, sql: str) -> dict[str, Any]:
        """Check, record and compute an exact answer, or raise :class:`Refused`."""
        table = dp_table(query, self.config.tables[query.table])  # a binned GROUP BY's bins as a domain
        check_dimensions(query, table)
        bounds = sum_bounds(query, table, self.config.p_percent)
        members = self.memberships(query, table)
        n, k = self.n_units(table), self.config.min_query_set
        unit = "records" if self.db.unique_units[table.name] else "persons"
        for m in members:
            size = int(np.count_nonzero(m))
            if size < k or size > n - k:
                what = "a group of the GROUP BY" if query.group_by else "the query set"
                raise Refused(f"Refused by query-set-size control: {what} has fewer than {k} {unit} or "
                              f"leaves fewer than {k} out. Ask about larger sets of {unit}.")
        holder = self._holder(analyst)
        key = (holder, table.name)
        with self._lock(key):
            auditor = self._auditor(holder, table)
            for kind, column in audited_kinds(query):
                decision = auditor.check(members, kind, column)
                if not decision.allowed:
                    raise Refused(f"Refused by the auditor: {decision.reason}")
            intervals = [self._interval(holder, table, c, b) for c, b in bounds.items()]
            for interval in intervals:
                decision = interval.check(members)
                if not decision.allowed:
                    raise Refused(f"Refused by the auditor: {decision.reason}")
            self.state.record_answered(analyst, table.name, sql, self.db.fingerprints[table.name])
            for kind, column in audited_kinds(query):
                auditor.record(members, kind, column)
            for interval in intervals:
                interval.record(members)
        return self.compute(query, table, members)

    def compute(self, query: Query, table: TableConfig, members: list[np.ndarray]) -> dict[str, Any]:
        """The exact answer (every cell, in the order of the declared domains)."""
        result = self.db.aggregate(aggregate_sql(query, table, "restricted"))
        summed = list(summed_columns(query))
        cells = list(itertools.product(*(table.domains[c] for c in query.group_by)))
        size = len(result[COUNT_ALIAS])
        index = cell_indices(table, query.group_by, result, size) if query.group_by else np.zeros(size, dtype=np.int64)
        found = {int(i): r for r, i in enumerate(index.tolist()) if i >= 0}
        out = []
        for c, cell in enumerate(cells):
            r = found.get(c)
            count = int(result[COUNT_ALIAS][r]) if r is not None else 0
            sums = {}
            for j, column in enumerate(summed):
                value = result[sum_alias(j)][r] if r is not None else 0
                sums[column] = 0 if value is np.ma.masked else value
            values: list[Any] = []
            group = dict(zip(query.group_by, cell))
            for o in query.outputs:
                if o.kind == "group":
                    values.append(group[o.column])
                elif o.kind == "count":
                    values.append(count)
                elif o.kind == "sum":
                    values.append(_json_number(sums[o.column]))
                else:
                    values.append(float(sums[o.column]) / count if count else None)
            out.append(values)
        return {"columns": [o.label for o in query.outputs], "rows": out,
                "mechanism": "exact answer (restricted mode: query-set-size control and auditing)",
                "noise_scale": None, "ci95": None, "dp": False}


def _json_number(value: Any) -> Any:
    if isinstance(value, int | np.integer):
        return int(value)
    f = float(value)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f
