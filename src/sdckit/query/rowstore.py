"""Each person's rows of a multi-row table in memory, for per-group bounds without a scan (issue 32).

Per-group bounds (:mod:`sdckit.query.groupbounds`) keep, of each person's rows that meet the
query's WHERE (and rank ``<= k'``), at most ``r`` rows per group in her first ``g`` groups. Which
rows they keep depends on the WHERE, so no pre-aggregation answers them; the generated SQL
(window functions or rank masks over every row) takes 26 ms per query on the benchmark's 2.5e5
rows of ``visits`` and 100 s on its 2.5e7.

The row store holds, when the service starts, the table's dp relation (``sdc_dp_<t>``) once more
in memory, each person's rows in file order, the persons grouped by their row count ``n``: those
of ``n = 2 .. BLOCK`` rows in a block each (a dense ``persons x n`` matrix), then those of more
(with their ranks, ``int16``: 1 starts a person); each row as

* its **cube row** (``uint16`` below 2**16 cube rows, else ``int32``): the row of the table's cube
  (:mod:`sdckit.query.cube`) whose key values it has, i.e. every cube column dictionary-coded at
  once by the combinations present;
* its **clamped value** of each column the cube sums (``float64``; the cube's exactness rule:
  multiples of 2**-10 of bounded total magnitude, whose sums are exact in any order), unless
  every row of a cube row has the same one (a cube column's, e.g.): then one per cube row.

The persons of one row are not stored one by one: the rules keep each of their rows that meets
the WHERE, so per cube row their rows' count (and values' sums) answers them; the same per-cube-row
totals are kept for the persons of every ``n <= BLOCK`` rows, and answer them when ``n <= min(g,
r, k')`` (every row of theirs meeting the WHERE kept).

A query is answered in two steps. Per cube row (a few thousand, not per record): its WHERE with
SQL's three-valued logic (:meth:`Cube.selected`), its SQL group (the GROUP BY values the
generated SQL groups by, :meth:`Cube.group_codes`: a missing one a group too, all values outside a
text domain one group, as the code column) and its answer cell
(:func:`~sdckit.query.generate.cell_indices`), exactly as the cube answers a query. Then one pass
over the stored rows (:func:`sdckit.query.rowkernel.kept_cells`, compiled, without the GIL)
applies the rules to each person's rows in file order (in a block, one table lookup per person,
no data-dependent branch) and adds up the kept rows per cell: about 0.5 ns per row with fewer
than 8 groups, 1 ns with more (1.3 ms for the 2.5e6 rows of ``visits`` at 1e7, was 7 ms row by
row). The same rows as the SQL, hence the same counts and, by the exactness rule, the same sums
(tests compare both with a brute-force oracle of the rules on random data and predicates).

What it answers: a dp COUNT/SUM/AVG GROUP BY under per-group bounds, on one table (no join), that
its cube covers (:meth:`Cube.covers`: WHERE and GROUP BY columns, bins of them, summed columns of
the cube). Anything else under per-group bounds is scanned as before.

Memory: per stored row (the rows of persons of 2 or more rows) 2 bytes (4 beyond 2**16 cube rows)
and 8 per summed column whose clamped value is not the same on all rows of a cube row, 2 more per
row of a person of more than ``BLOCK`` rows (its rank), and ``8 BLOCK`` bytes per cube row (as
many more per such summed column): ``visits`` (1 to 4 rows per person, ``cost`` a cube column) 1.8
bytes per row, 4.5 MB at 2.5e6 rows (45 MB at 2.5e7; was 6 bytes per row), at most
:data:`MAX_STORE_BYTES` per table; a table beyond it is not stored (its per-group queries scanned
as before). Built at start-up by three DuckDB reads (the cube's key combinations; the persons per
row count; the rows sorted, with their combination's number; 0.4 s at 2.5e6 rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.core.result import Result, plain
from sdckit.query.cube import Cube
from sdckit.query.generate import cell_indices, group_alias, summed_columns
from sdckit.query.derived import dp_table
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.relnames import RANK, ROW, clamp_column, relation_name
from sdckit.query.sql import Query

#: Most bytes held for one table (beyond: its per-group queries are scanned).
MAX_STORE_BYTES = 2**30
#: Most rows per person the ``int16`` ranks hold.
MAX_RANK = 2**15 - 1
#: The most rows of a person stored in a block of the persons of her row count (at most 4, the
#: kernel's; :mod:`sdckit.query.rowkernel`); a person of more rows is stored with her ranks.
BLOCK = 4

_q = quote_identifier


@dataclass(frozen=True, eq=False)
class RowStore(Result):
    """One table's stored rows (module description). Build it with :meth:`build`; :meth:`covers`
    says whether it answers a query, :meth:`cells` gives its true counts and clamped sums."""

    cube: Cube
    #: the dp relation's rows
    rows: int
    #: per stored row, its cube row (``uint16`` below 2**16 cube rows, else ``int32``): the
    #: persons of ``n = 2 .. BLOCK`` rows in rows ``starts[n - 2] .. starts[n - 1]``, then the rest
    parent: np.ndarray = field(metadata={"dict": False})
    starts: np.ndarray = field(metadata={"dict": False})
    #: the ranks of the rest (the persons of more than ``BLOCK`` rows) among their person's rows
    rank: np.ndarray = field(metadata={"dict": False})
    #: per row count ``n = 1 .. BLOCK`` and cube row: the rows of persons of ``n`` rows, and their
    #: values' sums per summed column held per row (``BLOCK x len(row_summed) x cube rows``)
    fold_counts: np.ndarray = field(metadata={"dict": False})
    fold_sums: np.ndarray = field(metadata={"dict": False})
    #: per stored row, the clamped values of the summed columns ``row_summed`` (``len x rows``)
    values: np.ndarray = field(metadata={"dict": False})
    row_summed: tuple[str, ...]
    #: per cube row, those of the summed columns ``cube_summed``, whose clamped value is the same
    #: on every row of a cube row (a cube column's, e.g.): nothing stored per row
    cube_values: np.ndarray = field(metadata={"dict": False})
    cube_summed: tuple[str, ...]

    @property
    def summed(self) -> tuple[str, ...]:
        """The summed columns the store answers (the cube's)."""
        return self.row_summed + self.cube_summed

    @property
    def nbytes(self) -> int:
        """Bytes held (the cube's are the cube's)."""
        return int(sum(a.nbytes for a in (self.parent, self.starts, self.rank, self.fold_counts, self.fold_sums,
                                          self.values, self.cube_values)))

    def to_dict(self) -> dict[str, Any]:
        """The table's name, its rows (and those stored one by one), summed columns (per row, per
        cube row) and bytes held."""
        return plain({"table": self.cube.table.name, "rows": self.rows, "stored_rows": int(self.parent.size),
                      "row_summed": list(self.row_summed), "cube_summed": list(self.cube_summed), "bytes": self.nbytes})

    @classmethod
    def build(cls, con: Any, cube: Cube, max_bytes: int = MAX_STORE_BYTES) -> RowStore | None:
        """The row store of ``cube``'s table (a privacy unit with several rows per person) from
        the DuckDB connection ``con``; ``None`` beyond ``max_bytes`` or :data:`MAX_RANK`."""
        table = cube.table
        if table.privacy_unit is None or table.max_rows_per_unit > MAX_RANK:
            return None
        relation = _q(relation_name(table, "dp"))
        keys = [_q(c) for c in cube.keys]
        clamps = [_q(clamp_column(c)) for c in cube.sums]
        # the combinations of the cube's key values present, in one total order (NULLs last), with
        # the range of each summed column's clamped values in each
        order = ", ".join(f"{k} NULLS LAST" for k in keys)
        spread = "".join(f", MIN({c}) AS lo{i}, MAX({c}) AS hi{i}" for i, c in enumerate(clamps))
        listed = con.execute(f"SELECT {', '.join(f'{k} AS {group_alias(i)}' for i, k in enumerate(keys))}{spread}, "
                             f"COUNT(*) AS n FROM {relation} GROUP BY ALL "
                             f"ORDER BY {', '.join(f'{i + 1} NULLS LAST' for i in range(len(keys)))}").fetchnumpy()
        to_cube = cube.parent_rows(listed).astype(np.int32)
        constant = [np.array_equal(listed[f"lo{i}"], listed[f"hi{i}"]) for i in range(len(clamps))]
        row_summed = tuple(c for c, same in zip(cube.sums, constant, strict=True) if not same)
        # the persons of at least n rows (those with a row of rank n): the layout's sizes, before reading the rows
        ranked = dict(con.execute(f"SELECT {_q(RANK)}, COUNT(*) FROM {relation} GROUP BY 1").fetchall())
        persons = [int(ranked.get(n, 0)) - int(ranked.get(n + 1, 0)) for n in range(BLOCK + 2)]  # of exactly n rows
        n = int(np.sum(listed["n"]))
        rest = n - sum(m * persons[m] for m in range(1, BLOCK + 1))
        stored = n - persons[1]
        kind = np.dtype(np.uint16 if cube.size <= 2**16 else np.int32)
        held = (stored * (kind.itemsize + 8 * len(row_summed)) + 2 * rest + 8 * BLOCK
                + 8 * BLOCK * cube.size * (1 + len(row_summed)) + 8 * cube.size * (len(clamps) - len(row_summed)))
        if held > max_bytes:
            return None
        cube_values = np.zeros((len(clamps) - len(row_summed), cube.size), dtype=np.float64)
        for j, i in enumerate(i for i, same in enumerate(constant) if same):
            cube_values[j, to_cube] = listed[f"lo{i}"]
        numbered = (f"(SELECT *, CAST(row_number() OVER (ORDER BY {order}) - 1 AS INTEGER) AS __sdc_combo "
                    f"FROM (SELECT DISTINCT {', '.join(keys)} FROM {relation}))")
        on = " AND ".join(f"d.{k} IS NOT DISTINCT FROM c.{k}" for k in keys)
        fetched = "".join(f", d.{_q(clamp_column(c))} AS s{i}" for i, c in enumerate(row_summed))
        rows = con.execute(f"SELECT c.__sdc_combo AS p, d.{_q(RANK)} AS k{fetched} FROM {relation} d "
                           f"JOIN {numbered} c ON {on} ORDER BY d.{_q(table.privacy_unit)}, d.{_q(ROW)}").fetchnumpy()
        parent = to_cube.astype(kind)[rows.pop("p")]  # (each column dropped once copied: a transient of one column)
        rank = np.asarray(rows.pop("k"), dtype=np.int16)
        lengths = np.diff(np.append(np.flatnonzero(rank == 1), n))  # per person, her rows
        count = np.repeat(np.minimum(lengths, BLOCK + 1).astype(np.int8), lengths)  # per row (BLOCK + 1: more)
        values = np.empty((len(row_summed), n), dtype=np.float64)
        for i in range(len(row_summed)):
            values[i] = rows.pop(f"s{i}")
        fold_counts = np.zeros((BLOCK, cube.size), dtype=np.int64)
        fold_sums = np.zeros((BLOCK, len(row_summed), cube.size), dtype=np.float64)
        pieces = []  # the rows (cube rows, values, ranks) of the persons of 2, .., BLOCK rows, then of more
        for m in range(1, BLOCK + 2):
            these = count == m
            piece = (parent[these], values[:, these], rank[these])
            if m <= BLOCK:
                fold_counts[m - 1] = np.bincount(piece[0], minlength=cube.size)
                for i in range(len(row_summed)):  # (exact in any order: the cube's rule)
                    fold_sums[m - 1, i] = np.bincount(piece[0], weights=piece[1][i], minlength=cube.size)
            if m > 1:
                pieces.append(piece)
        starts = np.cumsum([0] + [piece[0].size for piece in pieces[:-1]], dtype=np.int64)
        return cls(cube, n, np.concatenate([piece[0] for piece in pieces]), starts, pieces[-1][2], fold_counts,
                   fold_sums, np.concatenate([piece[1] for piece in pieces], axis=1), row_summed, cube_values,
                   tuple(c for c, same in zip(cube.sums, constant, strict=True) if same))

    def compile(self) -> None:
        """Load the kernels now, for this store's array types (numba: compiled on a fresh install,
        about 3 s, else read from its cache): at start-up, not in the first per-group query's
        answer. (The quantiles' kernel, :mod:`sdckit.dp.binomial_kernel`, is loaded by the first
        quantile answer instead, about 0.4 s once: a service of one-row-per-person tables starts
        without numba.)"""
        from sdckit.query.rowkernel import RADIX_BITS, kept_cells

        none = np.zeros(0, dtype=np.int64)
        for code in (0, 1 << RADIX_BITS):  # (both block kernels: fewer groups than 8, and more)
            kept_cells(self.parent, np.zeros(BLOCK, dtype=np.int64), self.rank[:0], self.fold_counts, self.fold_sums,
                       np.full(self.cube.size, code, dtype=np.int32), np.full(self.cube.size, -1, dtype=np.int64),
                       1, 1, 1, self.values, none, self.cube_values, none, 1)

    def covers(self, query: Query) -> bool:
        """Whether :meth:`cells` answers ``query`` (under per-group bounds) as the SQL does: one
        table, a GROUP BY, and the cube covers it (so every summed column is stored)."""
        return query.join is None and bool(query.group_by) and self.cube.covers(query)

    def cells(self, query: Query, n_cells: int, bounds: GroupBounds) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """True counts and clamped sums per answer cell of the rows ``bounds`` keep (the
        product of the GROUP BY domains, first column slowest), as
        :func:`~sdckit.query.noisy.exact_cells` gives them from the truncating SQL's result."""
        from sdckit.query.rowkernel import kept_cells  # numba (compiled at start-up: :meth:`compile`)

        cube = self.cube
        codes = cube.group_codes(query)
        cell = cell_indices(dp_table(query, cube.table), query.group_by, codes, cube.size)
        columns = summed_columns(query)
        by_row = np.array([self.row_summed.index(c) for c in columns if c in self.row_summed], dtype=np.int64)
        by_cube = np.array([self.cube_summed.index(c) for c in columns if c in self.cube_summed], dtype=np.int64)
        code = np.where(cube.selected(query.where), group_ids(codes, cube.size) + 1, 0).astype(np.int32)
        counts, row_sums, cube_sums = kept_cells(
            self.parent, self.starts, self.rank, self.fold_counts, self.fold_sums, code, cell.astype(np.int64),
            int(bounds.per_unit), int(bounds.groups), int(bounds.rows), self.values, by_row, self.cube_values, by_cube,
            int(n_cells))
        found = dict(zip([c for c in columns if c in self.row_summed], row_sums, strict=True))
        found.update(zip([c for c in columns if c in self.cube_summed], cube_sums, strict=True))
        return counts, {c: found[c] for c in columns}


def group_ids(codes: dict[str, np.ma.MaskedArray], size: int) -> np.ndarray:
    """An id per row (0, 1, ..) equal for two rows iff each of ``codes`` is: equal values, or
    both masked (SQL's grouping: a missing value is one group)."""
    ids = np.zeros(size, dtype=np.int64)
    for raw in codes.values():
        mask = np.ma.getmaskarray(raw)
        data = np.asarray(np.ma.getdata(raw), dtype=np.float64)
        distinct, inverse = np.unique(np.where(mask, 0.0, data), return_inverse=True)
        column = np.where(mask, distinct.size, inverse.reshape(-1))
        ids = np.unique(ids * (distinct.size + 1) + column, return_inverse=True)[1].reshape(-1)
    return ids
