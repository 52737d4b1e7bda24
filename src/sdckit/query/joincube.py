"""Pre-aggregated answers of dp COUNT/SUM queries over a join of two private tables (issue 32).

A join of two private tables (:mod:`sdckit.query.joins`) was a DuckDB scan of both tables with
their truncations per join key for every query (4.5 ms at 1e6 census rows, 17.8 s at 1e8).
The joined relation under the configured truncation never changes while the service runs, so
on the first query of a join (:meth:`sdckit.query.data.Database.fast_cells`, under a lock) it is
grouped once, as the one-table cube groups a dp relation (:mod:`sdckit.query.cube`)::

    SELECT k1, k2, .., COUNT(*), SUM(clamped c1), .. FROM (<the join, as the scan writes it>)
    GROUP BY k1, k2, ..

The relation is :meth:`JoinedTable.source <sdckit.query.joins.JoinedTable.source>` without a
smaller bound (each side truncated to its ``max_rows_per_join_key`` rows per key value, the
FROM table's first), the very FROM of the scan's statement, so a query whose WHERE and GROUP BY
name only the cube's keys has the same true answer from the cube as from the scan
(:meth:`Cube.covers <sdckit.query.cube.Cube.covers>`, :meth:`Cube.cells
<sdckit.query.cube.Cube.cells>`). A query asking a smaller ``max_rows_per_unit`` changes which
rows the truncation per key admits: it scans.

* Keys: the columns of each side's own cube (its few-valued integer and text-domain columns;
  a side without a cube gives none), under the joined table's names, fewest-valued first while
  the product over the two sides of the combinations of the chosen columns that side's cube
  holds (a side's joined rows are rows of its dp relation, every combination of which is a cube
  row) stays within ``max_cells`` (:data:`~sdckit.query.cube.MAX_CELLS`): the cube has at most
  that many rows (a few MB), whatever the data, without a trial query over the join (each one a
  scan of both tables); a column left out makes the queries naming it scan.
* Sums: a side's bounded column is summed when its sums stay exact in any order in the joined
  relation: a row meets at most the other side's ``max_rows_per_join_key`` rows, so the joined
  magnitudes are at most the side's (its dp relation's, :class:`~sdckit.query.squares.ColumnGrid`)
  times that, below :func:`~sdckit.query.cube.exact_magnitude` (2**53 for integers).

The privacy accounting is the scan's: the cube only replaces where the true answer is computed;
the noise scale comes from the declared bounds and the join's stated bound. The first query of a
join pays the scan that builds the cube; a later asker who times his answer learns that the join
was asked before (other analysts' activity, never a respondent's data), as with
:mod:`sdckit.query.derivedcube`. Nothing here runs SQL
built from the analyst's query: the statement is written from configured names and integer
parameters only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlglot import exp

from sdckit.query.cube import MAX_CELLS, Cube, exact_magnitude
from sdckit.query.joins import JoinedTable
from sdckit.query.relnames import relation_name
from sdckit.query.squares import ColumnGrid


def private_join_cube(con: Any, table: JoinedTable, left: Cube | None, right: Cube | None,
                      grids: dict[str, ColumnGrid], other_grids: dict[str, ColumnGrid],
                      max_cells: int = MAX_CELLS) -> Cube | None:
    """The cube of the private join ``table`` (see the module's description): ``left`` and
    ``right`` the two tables' cubes (``None``: no keys from that side), ``grids`` and
    ``other_grids`` their bounded columns' grids. ``None`` when no key fits."""
    sides = [(cube, names) for cube, names in ((left, {c: c for c in table.own_columns}), (right, table.renamed))
             if cube is not None]
    side_of = {names[c]: (i, c) for i, (cube, names) in enumerate(sides) for c in cube.keys if c in names}
    chosen: list[str] = []
    for column in sorted(side_of, key=lambda c: (sides[side_of[c][0]][0].keys[side_of[c][1]].values.size,
                                                 table.columns.index(c))):
        if _combinations(sides, side_of, chosen + [column]) <= max_cells:
            chosen.append(column)
    if not chosen:
        return None
    chosen.sort(key=table.columns.index)
    t_left, t_right = table.key_rows
    original = {mapped: column for column, mapped in table.renamed.items()}
    summable = []
    for column in table.bounds:
        own = column in table.own_columns
        grid = grids.get(column) if own else other_grids.get(original.get(column, ""))
        if grid is not None and grid.magnitude * (t_right if own else t_left) < exact_magnitude(grid):
            summable.append(column)
    params: list[Any] = []

    def bind(value: Any) -> exp.Placeholder:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("Internal check: a join cube's parameter is not an int.")
        params.append(value)
        return exp.Placeholder()

    source = table.source(relation_name(table, "dp"), bind).sql(dialect="duckdb")
    text = {c: sides[side_of[c][0]][0].keys[side_of[c][1]].values.dtype == object for c in chosen}
    return Cube.grouped(con, table, source, text, summable, params, max_rows=max_cells)


def _combinations(sides: list[tuple[Cube, dict[str, str]]], side_of: dict[str, tuple[int, str]],
                  columns: list[str]) -> int:
    """At most how many key combinations of ``columns`` the joined relation holds: the product over
    the two sides of the combinations their cube's rows hold (each side's joined rows are rows of
    its dp relation, whose every combination present is a row of its cube)."""
    total = 1
    for i, (cube, _) in enumerate(sides):
        mine = [side_of[c][1] for c in columns if side_of[c][0] == i]
        if mine:
            total *= int(np.unique(np.stack([cube.keys[c].index for c in mine], axis=1), axis=0).shape[0])
    return total
