"""The cube's magnitude histograms (issue 32): ``SELECT BOUNDS(col) FROM t [WHERE ..]`` without a
scan, with exactly the bin counts of the DuckDB path.

``BOUNDS`` (:mod:`sdckit.query.bounds`) noises the histogram of a column's raw values over
``2 SIDE`` signed powers-of-2 bins (zeros and missing values in no bin), which
:func:`~sdckit.query.generate.magnitude_histogram_sql` counts. At start-up, for each numeric
column ``BOUNDS`` may be asked of (the table's bounded columns, those of ``bounds_from_data``
included), that very statement is run once more, grouped by the cube's key columns too
(``keys=``): per cube row (:meth:`~sdckit.query.cube.Cube.parent_rows`), the records in each
bin holding records anywhere in the table (at most ``2 SIDE`` of them, plus zero and missing),
an ``int64`` matrix of cube rows x bins present, kept while a table's fit
:data:`MAX_BOUNDS_BYTES` (else that column's ``BOUNDS`` scans). A column whose records per cube
row do not come out as the cube's counts, or whose statement fails, is left to the scan.

A query is answered here only when that is exactly the scan's answer: no JOIN, WHERE only on cube
columns with exact literals (:func:`~sdckit.query.cube.literals_exact`; the cube evaluates it
with SQL's three-valued logic), and a contribution bound keeping every row of the dp relation
(:meth:`sdckit.query.data.Database.keeps_every_row`). The selected cube rows' counts are added
per bin: integers, so the same true counts reach the same noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from sdckit.core.result import Result, plain
from sdckit.query.bounds import HIGHEST, LOWEST
from sdckit.query.cube import Cube, literals_exact
from sdckit.query.generate import BIN_ALIAS, COUNT_ALIAS, magnitude_histogram_sql
from sdckit.query.sql import Query, predicate_columns

#: Most bytes of bin counts kept for one table (all its columns).
MAX_BOUNDS_BYTES = 2**28
#: A missing value's bin (DuckDB's NULL) in :attr:`BoundsCube.bins`: never a bin's number.
MISSING = np.iinfo(np.int64).min


@dataclass(frozen=True, eq=False)
class BoundsCube(Result):
    """Per column, the bins holding records (DuckDB's ``b``; :data:`MISSING` for NULL) and, per
    cube row and such bin, its records (module description)."""

    cube: Cube
    bins: dict[str, np.ndarray] = field(metadata={"dict": False})
    counts: dict[str, np.ndarray] = field(metadata={"dict": False})

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(a.nbytes for a in (*self.bins.values(), *self.counts.values()))

    def to_dict(self) -> dict[str, Any]:
        return plain({"columns": list(self.counts), "bytes": self.nbytes})

    @classmethod
    def build(cls, con: Any, cube: Cube, max_bytes: int = MAX_BOUNDS_BYTES) -> BoundsCube:
        """The bin counts of ``cube``'s table's bounded columns from the dp relation in the DuckDB
        connection ``con``, in at most ``max_bytes`` together."""
        table, keys = cube.table, tuple(cube.keys)
        everything = Query(table.name, (), None, ())
        expected = np.asarray(cube.counts, dtype=np.int64)
        bins: dict[str, np.ndarray] = {}
        counts: dict[str, np.ndarray] = {}
        for column in table.bounds:
            generated = magnitude_histogram_sql(everything, table, column, LOWEST, HIGHEST, keys=keys)
            try:
                result = con.cursor().execute(generated.sql, list(generated.params)).fetchnumpy()
            except duckdb.Error:  # (the scan of this column fails the same way: it answers the error)
                continue
            raw = result[BIN_ALIAS]
            value = np.asarray(np.ma.filled(raw, 0) if isinstance(raw, np.ma.MaskedArray) else raw, dtype=np.int64)
            code = np.where(np.ma.getmaskarray(raw), MISSING, value)
            present, at = np.unique(code, return_inverse=True)
            if (value == MISSING).any() or cube.size * present.size * 8 + present.nbytes > max_bytes:
                continue
            matrix = np.zeros((cube.size, present.size), dtype=np.int64)
            matrix[cube.parent_rows(result), at.reshape(-1)] = np.asarray(result[COUNT_ALIAS], dtype=np.int64)
            if not np.array_equal(matrix.sum(axis=1), expected):
                continue
            bins[column], counts[column] = present, matrix
            max_bytes -= matrix.nbytes + present.nbytes
        return cls(cube, bins, counts)

    def covers(self, query: Query) -> bool:
        """Whether the ``BOUNDS`` query's bin counts are the selected cube rows' exactly (no JOIN,
        WHERE on cube columns with exact literals, a column kept); the contribution bound is the
        caller's (:meth:`sdckit.query.data.Database.fast_bounds`)."""
        return (query.join is None and not query.group_by and len(query.outputs) == 1
                and query.outputs[0].kind == "bounds" and query.outputs[0].column in self.counts
                and all(c in self.cube.keys for c in predicate_columns(query.where)) and literals_exact(query.where))

    def result(self, query: Query) -> dict[str, np.ndarray]:
        """What ``magnitude_histogram_sql(query, ..)`` gives (up to the order of its rows): each
        bin holding selected records (``b``; a masked one for the missing values) and its
        records (``n``)."""
        column = query.outputs[0].column
        selected = self.cube.selected(query.where)
        totals = self.counts[column][selected].sum(axis=0)
        held = totals > 0
        bins = self.bins[column][held]
        missing = bins == MISSING
        return {BIN_ALIAS: np.ma.masked_array(np.where(missing, 0, bins), mask=missing), COUNT_ALIAS: totals[held]}
