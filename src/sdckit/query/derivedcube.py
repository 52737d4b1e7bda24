"""Derived values and binned GROUP BYs of many-valued columns without a per-query scan (issue 32).

The cube (:mod:`sdckit.query.cube`) holds per combination of few-valued key columns the counts
and clamped sums of the dp relation; it cannot sum a derived value (:mod:`sdckit.query.derived`:
``SUM(income / 1000)``, ``SUM(CASE WHEN age >= 65 THEN income ELSE 0 END)``, their AVG, VAR_POP,
STDDEV_POP) nor bin a column that is not one of its keys (``GROUP BY WIDTH_BUCKET(income, 0,
200000, 10)``): both need each row. Such a query, when its WHERE and its other GROUP BY columns
name only cube keys, is answered here from one *structure* per expression, built once by the
scan's own SQL (:func:`~sdckit.query.generate.aggregate_sql` of a query made from the parsed
expression, never from the analyst's text) without WHERE and grouped by the cube's keys:

* a derived value ``v``: per cube row ``SUM(v)`` and ``SUM(LEAST((v - m)**2, cap))`` (what SUM, AVG,
  VAR_POP and STDDEV_POP read; ``m``, ``cap`` from ``v``'s interval-arithmetic bounds), the counts
  being the cube's;
* a bin ``b`` of a column outside the cube (with the query's derived values, if any): per cube row
  and bin code (dense, cube rows x bins) ``COUNT(*)``, the clamped sums of the cube's summable
  columns and the derived values' two sums; a code outside the bins (missing, rounding at an edge)
  belongs to no cell, as in :func:`~sdckit.query.generate.cell_indices`.

A query is then answered as :meth:`Cube.cells <sdckit.query.cube.Cube.cells>` does: the cube rows
its WHERE selects (:meth:`~sdckit.query.cube.Cube.rows`, SQL's three-valued logic on the keys),
their cells, and the structure's numbers added per cell -- O(cube rows x bins), no O(records) work.

**Same true answer.** Counts are integers, exact. A cube column's clamped sums are exact under the
cube's rule (multiples of 2**-10 with magnitudes below 2**43, so exact in any order). A derived
value's sums are doubles: when every derived value is a multiple of 2**-10 (an integer, usually:
``SUM(CASE WHEN age >= 65 THEN income ELSE 0 END)`` of integer incomes) and the magnitudes sum below
2**43 (2**53 for integers), every partial sum is exact, so the structure and the scan give the
same number. Otherwise (``income / 1000``, the squared deviations) neither is exact and DuckDB's
own ``SUM`` order is not fixed (threads): both are sums of the very same doubles (the same SQL
expression per record) in some order, each within ``(n - 1) 2**-53 sum |v|`` of the exact sum to
first order (Higham 2002, *Accuracy and Stability of Numerical Algorithms*, eq. 4.4; the tests
allow ``n`` for ``n - 1``), so they differ by at most twice that, a relative ``2 n 2**-53`` of ``sum |v|`` -- ``2.2e-10`` at a million records, far below
any noise scale. The noise scale never depends on this: it is the declared bounds' (the derived
bounds ``[lo', hi']``), as for the scan.

**Memory.** A derived value takes 16 bytes per cube row; a bin 8 bytes per (cube row, bin) per
array (count, each summable column, two per derived value). The structures of a table are kept
while they total at most :data:`MAX_BYTES` (64 MiB; checked before a build from the cube's size and
the number of bins); past it a new expression is answered by the scan (nothing is evicted).

**First use, and what it tells.** A structure is built on the first query that needs it (under a
lock, so once), keyed by its generated SQL and parameters: that query pays one scan of every
record (about twice its own scan's work: no WHERE, the squares too); later ones, whatever their
WHERE, none. One lock per table: a build holds up the other first uses of that table, not the
answers from structures already built (found without the lock, for up to 4,096 expressions). The build's time is observable: an
analyst whose query is fast learns that someone asked the same expression before (another
analyst's activity, not a respondent's data; no record's value changes the build's existence or
its key, which follow from the expression alone). The queries of ``[service] prebuild`` in the
configuration have their structures built at start-up (:func:`prebuild`), which hides this for them.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result, plain
from sdckit.query.cpuslots import CpuSlots
from sdckit.query.cube import Cube
from sdckit.query.derived import Derived, dp_table, find
from sdckit.query.generate import (COUNT_ALIAS, Generated, aggregate_sql, group_alias, square_alias, squared_columns,
                                   sum_alias, summed_columns)
from sdckit.query.noisy import square_key
from sdckit.query.relnames import is_text_domain
from sdckit.query.sql import Query, UnsupportedQuery, parse
from sdckit.query.sqloutputs import Output

#: Most bytes of one table's structures together (past it, a new expression is answered by the scan).
MAX_BYTES = 64 * 2**20

#: Most parsed expressions remembered (each maps to a stored structure: a lookup without generating SQL).
_MAX_SEEN = 4096

#: Output kinds answered here.
_KINDS = ("group", "count", "sum", "avg", "var", "stddev")


@dataclass(frozen=True, eq=False)
class Structure(Result):
    """One expression's pre-aggregated numbers: per cube row and bin code (``bins`` codes; one
    for a derived value without a bin), ``counts`` (None: the cube's) and ``sums`` by measurement
    name (a column's, a derived value's and its :func:`~sdckit.query.noisy.square_key`), each
    ``(cube rows, bins)``."""

    bins: int
    counts: np.ndarray | None = field(metadata={"dict": False})
    sums: dict[str, np.ndarray] = field(metadata={"dict": False})

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.sums.values()) + (0 if self.counts is None else self.counts.nbytes)

    def to_dict(self) -> dict[str, Any]:
        return plain({"bins": self.bins, "sums": list(self.sums), "bytes": self.nbytes})


class DerivedCubes:
    """The structures of one table's cube, built on first use (module description).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The database holding the dp relation (a cursor is taken per build).
    cube : Cube
        The table's cube: its keys group the structures and select their rows.
    max_bytes : int
        The memory bound of :data:`MAX_BYTES`.
    cpu : CpuSlots, optional
        The service's turns at the CPU: a query that finds its structure not built gives its
        thread's slot back before it builds it or waits for the build (a scan; :mod:`sdckit.query.cpuslots`).
    """

    def __init__(self, con: Any, cube: Cube, max_bytes: int = MAX_BYTES, cpu: CpuSlots | None = None) -> None:
        self.con, self.cube, self.max_bytes, self.cpu = con, cube, max_bytes, cpu
        self.entries: dict[tuple[str, str], Structure] = {}
        self.nbytes = 0
        self.failed: set[tuple[str, str]] = set()  # builds DuckDB refused (left to the scan)
        self._seen: dict[Query, Structure] = {}
        self._lock = threading.Lock()
        table = cube.table  # the keys grouped as stored (a text key by its values, as with keys from the data)
        text = [c for c in cube.keys if is_text_domain(table, c)]
        self._table = dataclasses.replace(table, domains={c: d for c, d in table.domains.items() if c not in text},
                                          key_columns=(*table.key_columns, *text))

    # ------------------------------------------------------------------ answering
    def cells(self, query: Query, n_cells: int) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        """True counts and sums per answer cell, as :func:`~sdckit.query.noisy.exact_cells` gives
        them from the scan (module description), or None when this does not answer ``query``
        (the scan does): a WHERE or group column outside the cube, a second binned column outside
        it, a column's VAR_POP, a sum the cube cannot make exact, or past :attr:`max_bytes`."""
        found = self._split(query)
        if found is None:
            return None
        extra, values, reduced = found
        if extra is not None:
            structure = self._structure(self._binned_query(query, extra, values))
            if structure is None:
                return None
            parts = {name: structure for name in structure.sums}
        else:
            parts = {}
            for v in values:
                structure = self._structure(self._value_query(query, v))
                if structure is None:
                    return None
                parts.update({name: structure for name in structure.sums})
        keep, cell = self.cube.rows(reduced)
        rows = np.flatnonzero(keep)
        if extra is None:
            cells = cell[rows]

            def gather(array: np.ndarray) -> np.ndarray:
                return array[rows, 0]
            counts = np.bincount(cells, weights=self.cube.counts[rows], minlength=n_cells)
        else:  # the bin's place among the group columns (first slowest): its code's stride
            table = dp_table(query, self.cube.table)
            after = query.group_by[query.group_by.index(extra.name) + 1:]
            stride = int(np.prod([len(table.domains[c]) for c in after], dtype=np.int64))
            high, low = np.divmod(cell[rows], stride)
            codes = np.arange(structure.bins, dtype=np.int64) * stride
            cells = ((high * structure.bins * stride + low)[:, None] + codes[None, :]).ravel()

            def gather(array: np.ndarray) -> np.ndarray:
                return array[rows].ravel()
            counts = np.bincount(cells, weights=gather(structure.counts), minlength=n_cells)
        sums = {}
        for column in summed_columns(query):
            array = parts[column].sums[column] if column in parts else self.cube.sums[column][:, None]
            sums[column] = np.bincount(cells, weights=gather(array), minlength=n_cells).astype(float)
        for column in squared_columns(query):
            name = square_key(column)
            sums[name] = np.bincount(cells, weights=gather(parts[name].sums[name]), minlength=n_cells).astype(float)
        return np.rint(counts).astype(np.int64), sums

    def _split(self, query: Query) -> tuple[Derived | None, tuple[Derived, ...], Query] | None:
        """``(the bin outside the cube or None, the derived values, the query the cube selects
        the rows of)``, or None when this does not answer ``query``."""
        if query.join is not None or any(o.kind not in _KINDS for o in query.outputs):
            return None
        values = tuple({o.derived.name: o.derived for o in query.aggregates if o.derived is not None}.values())
        if any(o.kind in ("var", "stddev") and o.derived is None for o in query.aggregates):
            return None  # a column's squares: the moments' exact integers (sdckit.query.cube_moments)
        extras = [b for b in (find(query, c, "bin") for c in query.group_by)
                  if b is not None and b.column not in self.cube.keys]
        if len(extras) > 1 or (not extras and not values):
            return None
        extra = extras[0] if extras else None
        reduced = dataclasses.replace(
            query, outputs=tuple(o for o in query.outputs if o.kind == "group" or o.derived is None),
            group_by=tuple(c for c in query.group_by if extra is None or c != extra.name))
        if not self.cube.covers(reduced):  # the WHERE, the other group columns, the columns' sums
            return None
        return extra, values, reduced

    # ------------------------------------------------------------------ the structures
    def _value_query(self, query: Query, v: Derived) -> Query:
        """The cube's keys and the derived value's two sums (its VAR_POP gives both)."""
        return Query(query.table, (Output("var", v.name, v.name, derived=v),), None, tuple(self.cube.keys))

    def _binned_query(self, query: Query, b: Derived, values: tuple[Derived, ...]) -> Query:
        """The cube's keys and the bin; its count, the cube's sums and the derived values' two sums."""
        outputs = (Output("group", b.name, b.name, derived=b), Output("count", None, "count"),
                   *(Output("sum", c, c) for c in self.cube.sums),
                   *(Output("var", v.name, v.name, derived=v) for v in sorted(values, key=lambda d: d.name)))
        return Query(query.table, outputs, None, (*self.cube.keys, b.name))

    def _structure(self, built: Query) -> Structure | None:
        """The structure of ``built`` (made on first use, once, under the lock), or None past
        :attr:`max_bytes`. Stored under its generated SQL and parameters; found again by
        ``built`` itself (equal parsed expressions generate the same SQL), without generating."""
        structure = self._seen.get(built)
        if structure is not None:
            return structure
        if self.cpu is not None:
            self.cpu.give_back()
        with self._lock:
            generated = aggregate_sql(built, dp_table(built, self._table), "dp")
            key = (generated.sql, repr(generated.params))
            structure = self.entries.get(key)
            if structure is None:
                binned, bins = _bins(built, self.cube)
                arrays = int(binned) + len(summed_columns(built)) + len(squared_columns(built))
                if key in self.failed or self.nbytes + self.cube.size * bins * 8 * arrays > self.max_bytes:
                    return None
                try:
                    structure = self._build(built, generated, binned, bins)
                except duckdb.Error:  # (e.g. a sum overflowing: the query's own scan answers, or fails the same way)
                    if len(self.failed) < _MAX_SEEN:
                        self.failed.add(key)
                    return None
                self.entries[key] = structure
                self.nbytes += structure.nbytes
            if len(self._seen) < _MAX_SEEN:
                self._seen[built] = structure
            return structure

    def _build(self, built: Query, generated: Generated, binned: bool, bins: int) -> Structure:
        """One scan: ``built``'s generated SQL, its rows placed at their cube row and bin code."""
        result = self.con.cursor().execute(generated.sql, list(generated.params)).fetchnumpy()
        parents = self.cube.parent_rows(result)
        if binned:
            raw = result[group_alias(len(self.cube.keys))]
            code = np.asarray(np.ma.filled(raw, -1) if isinstance(raw, np.ma.MaskedArray) else raw, dtype=np.int64)
            inside = (code >= 0) & (code < bins)
        else:
            code, inside = np.zeros(parents.size, dtype=np.int64), np.ones(parents.size, dtype=bool)
        slot = parents[inside] * bins + code[inside]

        def place(values: Any) -> np.ndarray:
            values = np.asarray(np.ma.filled(values, 0) if isinstance(values, np.ma.MaskedArray) else values, dtype=float)
            return np.bincount(slot, weights=values[inside], minlength=self.cube.size * bins).reshape(self.cube.size, bins)
        sums = {column: place(result[sum_alias(j)]) for j, column in enumerate(summed_columns(built))}
        sums.update({square_key(column): place(result[square_alias(j)])
                     for j, column in enumerate(squared_columns(built))})
        return Structure(bins, place(result[COUNT_ALIAS]) if binned else None, sums)


def prebuild(structures: dict[str, DerivedCubes], config: Any) -> None:
    """Build at start-up the structures of each query of ``[service] prebuild`` (their first
    askers then pay no scan, and no one learns from an answer's time that they were asked
    before); a query that is not valid SQL or that this does not answer is a
    :class:`~sdckit.core.errors.ParameterError` naming it."""
    for sql in config.prebuild:
        try:
            query = parse(sql, config)
        except UnsupportedQuery as exc:
            raise ParameterError(f"[service] 'prebuild': {sql!r}: {exc}") from None
        table = dp_table(query, config.tables[query.table])
        n_cells = int(np.prod([len(table.domains[c]) for c in query.group_by], dtype=np.int64))
        if query.table not in structures or structures[query.table].cells(query, n_cells) is None:
            raise ParameterError(f"[service] 'prebuild': {sql!r} has no derived value or bin of a many-valued column "
                                 "answered here (its WHERE and other GROUP BY columns must name few-valued columns; "
                                 f"at most {MAX_BYTES // 2**20} MiB per table): leave it out.")


def _bins(built: Query, cube: Cube) -> tuple[bool, int]:
    """Whether a structure has a bin, and its codes: the bin's labels, or one."""
    if len(built.group_by) == len(cube.keys):
        return False, 1
    return True, len(find(built, built.group_by[-1], "bin").labels)
