"""The cube's second moments, quantile histograms and distinct values (issue 32): VAR_POP,
STDDEV_POP, MEDIAN/QUANTILE_CONT, COUNT(DISTINCT key) and GROUP BY keys from the data without a
scan, with exactly the true answers of the DuckDB path.

Built once at start-up beside the :class:`~sdckit.query.cube.Cube` of a table, on its key columns
(:func:`~sdckit.query.generate.cube_sql`, the very SQL expressions of the scan):

* *squares*: per cube row, the exact integer sum of the scaled squared deviations
  ``LEAST((X2 - M)**2, C)`` of each bounded column whose clamped values lie on a grid
  (:mod:`sdckit.query.squares`; the very expression :func:`~sdckit.query.generate.aggregate_sql`
  sums for VAR_POP/STDDEV_POP), kept as 20-bit limbs in float64
  (:func:`~sdckit.query.squares.to_limbs`): a selection's limbs add up exactly, its integer sum
  is rebuilt and rounded once to a double, as the scan's is. A column off the grid (e.g. reals
  in ``[0, 0.3]``) goes to DuckDB.
* *histograms* (:mod:`sdckit.query.histcube`): per cube row and quantile bin on the finest grid
  (:data:`~sdckit.query.grid.QUANTILE_GRID` equal bins of the bounds, the bin computed by the
  scan's expression), the number of records: cumulative over the rows (in a storage order sorted
  by the keys) and the bins when dense (a query reads two rows per run of selected rows), else
  sparse (the pairs holding records, by row), within :data:`~sdckit.query.histcube.MAX_HIST_BYTES`
  per table (else that column's quantiles scan); a query's coarser grid
  (:func:`~sdckit.query.grid.quantile_bins`) is read off exactly (:func:`~sdckit.query.grid.coarsen`);
  counts are integers, so exact.
* *distinct values*: ``COUNT(DISTINCT c)`` for a cube column ``c`` is the number of distinct
  non-missing values of ``c`` among the selected cube rows of a cell (every cube row holds at
  least one record). For a column outside the cube (many values), each cube row's set of values
  as a bitset (:mod:`sdckit.query.distinct_sets`), kept while a table's fit (256 MiB): a
  cell's count is the set bits of the OR of its rows'. A column past that stays a scan.
* *keys from the data* (:mod:`sdckit.query.keys`): when one row is one person, a key's person
  count is its row count, so the keys present under the WHERE condition, with their counts and
  sums, come from the cube rows as DuckDB's ``GROUP BY`` gives them. With several rows per
  person the count of distinct persons needs the scan.

Nothing here changes what is measured or how it is noised: the same numbers reach the same
mechanisms. No SQL is built from the analyst's query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit.core.result import Result, plain
from sdckit.query.cube import Cube, literals_exact
from sdckit.query.distinct_sets import DistinctSets
from sdckit.query.generate import (COUNT_ALIAS, PERSONS_ALIAS, cube_sql, distinct_columns,
                                   group_alias, is_text_domain, quantile_columns, square_alias, square_scaling,
                                   squared_columns, sum_alias, summed_columns)
from sdckit.query.grid import Histogram, quantile_bins
from sdckit.query.histcube import DENSE_SHARE, MAX_BIN_ROWS, MAX_HIST_BYTES, HistCube
from sdckit.query.noisy import distinct_key, square_key
from sdckit.query.sql import Query, predicate_columns
from sdckit.query.squares import limb_sums, result_ints, to_limbs


@dataclass(frozen=True, eq=False)
class Moments(Result):
    """The squares, histograms and distinct values of one table's cube (module description)."""

    cube: Cube
    #: per bounded column whose squared-deviation sums are exact integers: (cube rows x limbs)
    squares: dict[str, np.ndarray] = field(metadata={"dict": False})
    #: per bounded column with histograms over the cube rows (sdckit.query.histcube)
    bins: dict[str, HistCube] = field(metadata={"dict": False})
    #: one row is one person (a key's person count is its row count)
    persons_are_rows: bool = False
    #: per cube row, the values of each many-valued column outside the cube (COUNT(DISTINCT))
    sets: DistinctSets | None = None

    def to_dict(self) -> dict[str, Any]:
        return plain({"squares": list(self.squares), "histograms": list(self.bins),
                      "persons_are_rows": self.persons_are_rows})

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, con: Any, cube: Cube, persons_are_rows: bool, max_bin_rows: int = MAX_BIN_ROWS,
              max_hist_bytes: int = MAX_HIST_BYTES, dense_share: float = DENSE_SHARE) -> Moments:
        """The moments of ``cube`` from the dp relation in the DuckDB connection ``con`` (the
        histograms within ``max_hist_bytes`` together, :meth:`~sdckit.query.histcube.HistCube.build`)."""
        table = cube.table
        keys = list(cube.keys)
        bounded = [c for c in cube.sums if square_scaling(c, table) is not None]
        squares: dict[str, np.ndarray] = {}
        if bounded:
            result = _run(con, cube_sql(table, keys, bounded))
            rows = cube.parent_rows(result)
            for i, column in enumerate(bounded):
                limbs = to_limbs(result_ints(result[square_alias(i)]))
                squares[column] = np.stack([np.bincount(rows, weights=limbs[:, j], minlength=cube.size)
                                            for j in range(limbs.shape[1])], axis=1)
        bins: dict[str, HistCube] = {}
        for column in table.bounds:
            hist = HistCube.build(con, cube, column, max_hist_bytes, max_bin_rows, dense_share)
            if hist is not None:
                bins[column] = hist
                max_hist_bytes -= hist.memory
        return cls(cube, squares, bins, persons_are_rows, DistinctSets.build(con, cube))

    # ------------------------------------------------------------------ answering
    def covers(self, query: Query) -> bool:
        """Whether the cube and these moments answer the dp query exactly as DuckDB would."""
        cube = self.cube
        if any(o.kind not in ("group", "count", "sum", "avg", "var", "stddev", "quantile", "count_distinct")
               for o in query.outputs):
            return False
        if any(c not in cube.sums for c in summed_columns(query)):
            return False
        if any(c not in self.squares for c in squared_columns(query)):
            return False
        if any(c not in self.bins for c in quantile_columns(query)):
            return False
        if any(c not in cube.keys and (self.sets is None or c not in self.sets.bits) for c in distinct_columns(query)):
            return False
        if any(c not in cube.keys for c in (*predicate_columns(query.where), *query.group_by)):
            return False
        return literals_exact(query.where)

    def cells(self, query: Query, n_cells: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """True counts and sums per answer cell as :func:`~sdckit.query.noisy.exact_cells` gives
        them: the cube's counts and sums, the squared-deviation sums under
        :func:`~sdckit.query.noisy.square_key`, the distinct counts under
        :func:`~sdckit.query.noisy.distinct_key`."""
        counts, sums = self.cube.cells(query, n_cells)
        keep, cell = self.cube.rows(query)
        for column in squared_columns(query):
            sums[square_key(column)] = limb_sums(self.squares[column][keep], cell[keep], n_cells,
                                                 self.cube.table.square_bits[column])
        for column in distinct_columns(query):
            if column not in self.cube.keys:  # a many-valued column: its value sets
                sums[distinct_key(column)] = self.sets.counts(column, keep, cell, n_cells)
                continue
            key = self.cube.keys[column]
            present = keep & (key.index >= 0)
            pairs = np.unique(cell[present] * max(key.values.size, 1) + key.index[present])
            sums[distinct_key(column)] = np.bincount(pairs // max(key.values.size, 1),
                                                     minlength=n_cells).astype(np.int64)
        return counts, sums

    def histograms(self, query: Query, n_cells: int) -> dict[str, list[Histogram]]:
        """Per quantile column, per answer cell, its histogram on
        :func:`~sdckit.query.grid.quantile_bins` of ``n_cells`` bins, cumulative or sparse
        (:meth:`~sdckit.query.histcube.HistCube.histograms`): what
        :func:`sdckit.query.noisy.histograms` gives from the scan."""
        keep, cell = self.cube.rows(query)
        size = quantile_bins(n_cells)
        return {column: self.bins[column].histograms(keep, cell, n_cells, size) for column in quantile_columns(query)}

    def belows(self, query: Query, n_cells: int) -> dict[str, list[Histogram]]:
        """:meth:`histograms` as lazy cumulative histograms (:meth:`~sdckit.query.histcube.HistCube.belows`),
        read where permute-and-flip needs them: what the quantiles take."""
        keep, cell = self.cube.rows(query)
        size = quantile_bins(n_cells)
        return {column: self.bins[column].belows(keep, cell, n_cells, size) for column in quantile_columns(query)}

    def covers_keys(self, query: Query) -> bool:
        """Whether a GROUP BY with keys from the data can take its key counts from the cube."""
        return (self.persons_are_rows and all(o.kind in ("group", "count", "sum", "avg") for o in query.outputs)
                and all(c in self.cube.sums for c in summed_columns(query))
                and all(c in self.cube.keys for c in (*predicate_columns(query.where), *query.group_by))
                and literals_exact(query.where))

    def key_groups(self, query: Query) -> dict[str, np.ndarray]:
        """What ``aggregate_sql(query, table, "dp", persons=True)`` returns (``n``, ``p``, ``s0``, ..,
        ``g0``, ..; a text-domain column as its code), one row per key combination present under
        the WHERE condition; for :func:`sdckit.query.keys.candidates`."""
        cube, table = self.cube, self.cube.table
        selected = cube.selected(query.where)
        index = np.stack([cube.keys[c].index[selected] for c in query.group_by], axis=1)
        combos, group = np.unique(index, axis=0, return_inverse=True)
        group = group.reshape(-1)
        size = combos.shape[0]
        counts = np.rint(np.bincount(group, weights=cube.counts[selected], minlength=size)).astype(np.int64)
        out: dict[str, np.ndarray] = {COUNT_ALIAS: counts, PERSONS_ALIAS: counts.copy()}
        for j, column in enumerate(summed_columns(query)):
            out[sum_alias(j)] = np.bincount(group, weights=cube.sums[column][selected], minlength=size).astype(float)
        for i, column in enumerate(query.group_by):
            key, at = cube.keys[column], combos[:, i]
            missing = at < 0
            if is_text_domain(table, column):
                position = {v: p for p, v in enumerate(table.domains[column])}
                values = np.array([position.get(key.values[a], -1) if a >= 0 else -1 for a in at.tolist()],
                                  dtype=np.int64)
            else:
                values = key.values[np.where(missing, 0, at)] if key.values.size else np.zeros(size, np.int64)
            out[group_alias(i)] = np.ma.masked_array(values, mask=missing)
        return out


def _run(con: Any, generated: Any) -> dict[str, np.ndarray]:
    return con.cursor().execute(generated.sql, list(generated.params)).fetchnumpy()
