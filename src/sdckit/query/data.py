"""The service's data: each configured table loaded once into an embedded DuckDB database.

For each table two relations are made (names in :mod:`sdckit.query.generate`):

* ``sdc_<name>``: the rows as read, text-domain columns as VARCHAR with their integer code
  (``__sdc_code_<col>``: index in the declared domain, -1 outside it), plus ``__sdc_row``
  (0..n-1, the fixed order of the records that restricted-mode membership vectors use);
* ``sdc_dp_<name>``: at most ``max_rows_per_unit`` rows per privacy unit (the first ones in file
  order; a choice that depends on the unit's own rows only, so bounding is a stable
  transformation and one person changes at most ``max_rows_per_unit`` rows), with each bounded
  column clamped to its bounds as DOUBLE (``__sdc_clamp_<col>``; a missing value counts as 0)
  and the row's rank among its unit's rows (``__sdc_rank``, 1-based, file order), so that a
  query may ask a smaller bound ``k' <= max_rows_per_unit``: the rows of rank ``<= k'`` are the
  first ``k'`` in file order, again a choice that depends on the unit's own rows only.

Then the dp relation's fast paths are built (:mod:`sdckit.query.cube`, :mod:`sdckit.query.ranges`;
for a table of several rows per person its cube with the stored rank, for a smaller ``k'``):
:meth:`Database.fast_cells` answers the COUNT/SUM/AVG queries they cover without a scan
(:meth:`Database.fast_bounds` the ``BOUNDS`` ones, :mod:`sdckit.query.boundscube`; a private
join's from its joined relation's cube, built on its first query, :mod:`sdckit.query.joincube`;
under per-group bounds the row store of a multi-row table, :mod:`sdckit.query.rowstore`);
derived values and bins of many-valued columns from structures over the cube's keys built on
first use (:mod:`sdckit.query.derivedcube`).

Checks when loading (each a :class:`~sdckit.core.errors.DataError` naming the table and column,
never a value): declared columns exist, bounded columns are numeric, the privacy unit has no
missing value.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import threading
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.core.duckdb_session import connect, quote_identifier, relation
from sdckit.core.errors import DataError, ParameterError
from sdckit.query.config import IDENTIFIER, ServiceConfig, TableConfig
from sdckit.query import ranges
from sdckit.query.boundscube import BoundsCube
from sdckit.query.cube import MAX_CELLS, Cube, summable_columns, with_rank
from sdckit.query.cube_moments import Moments
from sdckit.query.cpuslots import CpuSlots
from sdckit.query.derivedcube import DerivedCubes, prebuild
from sdckit.query.grid import Histogram
from sdckit.query.joincube import private_join_cube
from sdckit.query.joins import load_public, public_sql, query_table
from sdckit.query.relnames import NUMERIC_TYPES
from sdckit.query.rowstore import RowStore
from sdckit.query.generate import (RANK, ROW, clamp_column, code_column, is_text_domain, midpoint_sensitivity,
                                   quantile_columns, relation_name, rows_per_unit, square_cap)
from sdckit.query.squares import ColumnGrid, column_grids, grid_bits

if TYPE_CHECKING:
    import duckdb

#: Names in the SQL below (they come from the checked configuration).
_q = quote_identifier


def _sha256(path: Any) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Stored rows from which the row store's pass (about 0.5 ns a row) gives the CPU slot back first:
#: shorter passes keep it, since the Python work after a slot is given back runs beside its next
#: holder, under the one interpreter lock (sdckit.query.cpuslots).
LONG_PASS_ROWS = 2_000_000


class Database:
    """An in-memory DuckDB holding every configured table (a temporary DuckDB file with bounded
    memory under ``[service] memory_limit``); one cursor per thread.

    Parameters
    ----------
    config : ServiceConfig
        The checked configuration. :attr:`config` is the same with, for tables whose
        configuration allows it, bounds read from the data filled in (and marked).
    """

    def __init__(self, config: ServiceConfig, threads: int | None = None) -> None:
        #: large tables (``[service] memory_limit``): a DuckDB file (compressed) in a private
        #: temporary folder, removed by :meth:`close`; DuckDB's memory bounded, spilling there
        self._scratch = None if config.memory_limit is None else Path(tempfile.mkdtemp(prefix="sdckit-duckdb-"))
        if self._scratch is None:
            self._con = connect(threads=threads or None)
        else:
            self._con = connect(self._scratch / "tables.duckdb", memory_limit=config.memory_limit,
                                temp_directory=self._scratch / "spill", threads=threads or None)
        self._local = threading.local()
        #: the request threads' turns at the CPU; a scan gives its thread's turn back (sdckit.query.cpuslots)
        self.cpu = CpuSlots()
        self._units: dict[str, np.ndarray] = {}
        self._units_lock = threading.Lock()
        self._joined: dict[Any, Cube | None] = {}  # (table, public join) -> the joined cube (sdckit.query.joins)
        #: (table, private join) -> the cube of the joined relation, built on the join's first query
        #: (sdckit.query.joincube; at most MAX_CELLS rows)
        self.private_joins: dict[Any, Cube | None] = {}
        self._joins_lock = threading.Lock()  # the joined cubes' builds (_built_once)
        self.n_rows: dict[str, int] = {}
        self.unique_units: dict[str, bool] = {}
        #: each table's clamped columns' grids and magnitudes (sdckit.query.squares.column_grids)
        self.grids: dict[str, dict[str, ColumnGrid]] = {}
        #: SHA-256 of each table's file (restricted-mode answers are audited on this data)
        self.fingerprints: dict[str, str] = {}
        tables = {name: self._load(t) for name, t in config.tables.items()}
        public = {name: load_public(self._con, p) for name, p in config.public_tables.items()}  # (sdckit.query.joins)
        self.config = dataclasses.replace(config, tables=tables, public_tables=public)
        #: the pre-aggregated dp relation of each table (None: no column qualifies; see sdckit.query.cube)
        # (a table served as tables never answers SQL: no fast path; sdckit.query.tables builds its cells)
        self.cubes: dict[str, Cube | None] = {
            name: Cube.build(self._con, t, grids=self.grids[name]) if t.mode != "tables" else None
            for name, t in tables.items()}
        #: the cube with the stored rank as one more key, for a smaller bound k' (Cube.ranked; at most
        #: MAX_CELLS rows), of each table with several rows per person
        self.ranked: dict[str, Cube | None] = {name: cube.ranked(self._con, MAX_CELLS)
                                               for name, cube in self.cubes.items()
                                               if cube is not None and not self.unique_units[name]}
        #: each cube's squared-deviation sums, quantile histograms and distinct values (sdckit.query.cube_moments)
        self.moments: dict[str, Moments] = {name: Moments.build(self._con, cube, self.unique_units[name])
                                            for name, cube in self.cubes.items() if cube is not None}
        #: each cube's derived values and bins of other columns, built on first use (sdckit.query.derivedcube)
        self.derived: dict[str, DerivedCubes] = {name: DerivedCubes(self._con, cube, cpu=self.cpu)
                                                 for name, cube in self.cubes.items() if cube is not None}
        #: each cube's per-row magnitude bin counts of the bounded columns, for BOUNDS (sdckit.query.boundscube)
        self.magnitudes: dict[str, BoundsCube] = {name: BoundsCube.build(self._con, cube)
                                                  for name, cube in self.cubes.items() if cube is not None}
        #: each multi-row table's rows per person, for per-group bounds (sdckit.query.rowstore; None: too large)
        self.row_stores: dict[str, RowStore | None] = {name: RowStore.build(self._con, cube)
                                                       for name, cube in self.cubes.items()
                                                       if cube is not None and not self.unique_units[name]}
        for store in self.row_stores.values():
            if store is not None:
                store.compile()
        #: sorted values and prefix sums of each table's many-valued integer columns (sdckit.query.ranges)
        self.ranges: dict[str, dict[str, ranges.RangeIndex]] = {}
        for name, t in tables.items():
            if t.mode == "tables":
                continue
            cube = self.cubes[name]
            summable = list(cube.sums) if cube is not None else summable_columns(self._con, t, self.grids[name])
            self.ranges[name] = ranges.build(self._con, t, set(cube.keys) if cube is not None else set(), summable)
        try:
            prebuild(self.derived, self.config)  # ([service] prebuild: built now, not on first use)
        except ParameterError:
            self.close()
            raise

    def keeps_every_row(self, table: str, rows: int | None = None, groups: Any = None) -> bool:
        """Whether a dp query's contribution bounds keep every row of ``table``'s dp relation,
        which the fast paths hold: no bound asked beyond the configured one, or any (``rows``
        = ``k' >= 1``, per-group ``groups`` with ``g, r >= 1``) when one row is one person
        (:attr:`unique_units`, read at start-up): her one row has rank 1 and is her one row in
        her one group, so every truncation keeps it and the true answer is the whole relation's.
        Only where the true answer is computed depends on this; the noise scale is always the
        declared bounds' (:mod:`sdckit.query.groupbounds`, :func:`~sdckit.query.generate.rows_per_unit`)."""
        if self.unique_units.get(table, False):
            return True
        return groups is None and (rows is None or rows == rows_per_unit(self.config.tables[table]))

    def fast_cells(self, query: Any, n_cells: int, rows: int | None = None, groups: Any = None
                   ) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        """True counts and clamped sums per cell of a dp query from the cube or a range index,
        without a scan (the same numbers as DuckDB's), or ``None`` when neither answers it. They
        hold the dp relation's rows: a query whose per-group bounds ``groups`` would drop some is
        answered from the table's row store if it covers the query (:mod:`sdckit.query.rowstore`:
        each person's rows, truncated per query as the scan does), else never here
        (:meth:`keeps_every_row`; ``None``: the scan truncates); nor is a join asking fewer ``rows``
        per person; a one-table query asking fewer is answered from the cube with the stored rank
        (:meth:`~sdckit.query.cube.Cube.ranked`: the rows of rank ``<= rows``, as the scan keeps
        them), if it covers the query."""
        if groups is not None and not self.keeps_every_row(query.table, rows, groups):  # per-group bounds
            store = self.row_stores.get(query.table)
            if store is None or not store.covers(query):
                return None
            if store.parent.size >= LONG_PASS_ROWS:  # a pass of a millisecond or more, compiled, without
                self.cpu.give_back()                  # Python's lock: as a scan (a shorter one keeps the slot)
            return store.cells(query, n_cells, groups)
        if not self.keeps_every_row(query.table, rows, groups):
            ranked = self.ranked.get(query.table) if query.join is None else None  # (groups is None here)
            return ranked.cells(with_rank(query, rows), n_cells) if ranked is not None and ranked.covers(query) else None
        if query.join is not None:  # the cube joined in numpy or the joined relation's cube (no per-group bounds)
            cube = None if groups is not None else \
                self._private_join_cube(query) if query.join.private else self._joined_cube(query)
            return cube.cells(query, n_cells) if cube is not None and cube.covers(query) else None
        cube = self.cubes.get(query.table)
        if cube is not None and cube.covers(query):
            return cube.cells(query, n_cells)
        moments = self.moments.get(query.table)
        if moments is not None and moments.covers(query):
            return moments.cells(query, n_cells)
        derived = self.derived.get(query.table)  # a derived value, a bin of another column
        found = derived.cells(query, n_cells) if derived is not None else None
        if found is not None:
            return found
        for index in self.ranges.get(query.table, {}).values():
            if index.covers(query):
                return index.cells(query)
        return None

    def _joined_cube(self, query: Any) -> Cube | None:
        """The table's cube joined with the public table of ``query``'s join (built once per table
        and join; :meth:`sdckit.query.cube.Cube.joined`), ``None`` for a private join or without a
        cube (:meth:`_built_once`)."""
        join, cube = query.join, self.cubes.get(query.table)
        if join.private or cube is None:
            return None

        def build() -> Cube | None:
            table = query_table(query, self.config)
            public = self.config.public_tables[join.other]
            rows = self._con.cursor().execute(public_sql(public)).fetchall()
            names = list(public.columns)
            columns = {table.renamed[c]: [r[i] for r in rows] for i, c in enumerate(names) if c in table.renamed}
            return cube.joined(table, join.key, [r[names.index(join.other_key)] for r in rows], columns,
                               join.kind == "left", self.grids[query.table])
        return self._built_once(self._joined, (query.table, join), build)

    def _private_join_cube(self, query: Any) -> Cube | None:
        """The cube of the relation ``query``'s private join makes (built on the first query of
        each table and join: one scan of the join; :mod:`sdckit.query.joincube`, :meth:`_built_once`)."""
        join = query.join
        return self._built_once(self.private_joins, (query.table, join), lambda: private_join_cube(
            self._con.cursor(), query_table(query, self.config), self.cubes.get(query.table),
            self.cubes.get(join.other), self.grids[query.table], self.grids[join.other], MAX_CELLS))

    def _built_once(self, built: dict[Any, Any], key: Any, build: Callable[[], Any]) -> Any:
        """``built[key]``, made by ``build()`` on its first use, once, under the joins' lock. A built
        one is read without the lock (it is stored whole, after its build): a thread holding its
        CPU slot never waits for another's build, which would hold up every request; a thread that
        builds, or waits for a build, gives its slot back first (a scan, here or in the builder)."""
        try:
            return built[key]
        except KeyError:
            pass
        self.cpu.give_back()
        with self._joins_lock:
            if key not in built:
                built[key] = build()
            return built[key]

    def fast_histograms(self, query: Any, n_cells: int) -> dict[str, list[Histogram]]:
        """Records per cell and quantile bin of each quantile column, from the cube's histograms
        (:mod:`sdckit.query.histcube`, lazy cumulative histograms per cell,
        :meth:`~sdckit.query.cube_moments.Moments.belows`): only for a query :meth:`fast_cells` answered."""
        moments = self.moments.get(query.table)
        return moments.belows(query, n_cells) if moments is not None and quantile_columns(query) else {}

    def fast_keys(self, query: Any, rows: int) -> dict[str, np.ndarray] | None:
        """``aggregate_sql(query, t, "dp", persons=True, rows=rows)``'s result for a GROUP BY with
        keys from the data, from the cube, or ``None`` (the scan answers)."""
        moments = self.moments.get(query.table)
        if not self.keeps_every_row(query.table, rows) or moments is None or not moments.covers_keys(query):
            return None
        return moments.key_groups(query)

    def fast_bounds(self, query: Any, rows: int) -> dict[str, np.ndarray] | None:
        """``magnitude_histogram_sql(query, t, column, LOWEST, HIGHEST, rows)``'s result for a
        ``BOUNDS`` query (its rows in another order), from the cube's bin counts, or ``None`` (the
        scan answers): only when ``rows`` per person keeps every row (:meth:`keeps_every_row`)."""
        magnitudes = self.magnitudes.get(query.table)
        if not self.keeps_every_row(query.table, rows) or magnitudes is None or not magnitudes.covers(query):
            return None
        return magnitudes.result(query)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor (DuckDB connections are not shared across threads)."""
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._local.cursor = self._con.cursor()
        return cur

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> duckdb.DuckDBPyConnection:
        """Run ``sql`` on this thread's cursor, the thread's CPU slot given back first."""
        self.cpu.give_back()
        return self.cursor().execute(sql, list(params))

    # ------------------------------------------------------------------ loading
    def _load(self, t: TableConfig) -> TableConfig:
        if not t.path.exists():
            raise DataError(f"table {t.name!r}: the file {t.path} does not exist.")
        fmt = "duckdb" if t.source_table is not None else \
            "parquet" if t.path.suffix.lower() in (".parquet", ".pq") else "csv"
        self.fingerprints[t.name] = _sha256(t.path) + (f":{t.source_table}" if t.source_table else "")
        needed = [*t.queryable] + ([t.privacy_unit] if t.privacy_unit else [])
        if t.ckm is not None and t.ckm.record_key is not None:  # table mode: secret, never queryable
            needed.append(t.ckm.record_key)
        rel = relation(self._con, t.path, fmt, columns=needed, role="declared",
                       where=f"{t.path.name!r} (table {t.name!r})", table=t.source_table, alias=f"src_{t.name}")
        source, types = rel.sql, rel.types
        for column in t.bounds:
            if not types[column].startswith(NUMERIC_TYPES):
                raise DataError(f"table {t.name!r}: column {column!r} has bounds but is not numeric ({types[column]}).")
        for column, values in t.domains.items():
            numeric_domain = not isinstance(values[0], str)
            if numeric_domain and not types[column].startswith(NUMERIC_TYPES):
                raise DataError(f"table {t.name!r}: the domain of {column!r} lists numbers but the column holds text.")
        text_cols = [c for c in t.domains if is_text_domain(t, c)]
        select = "*"
        if text_cols:
            select = (f"* EXCLUDE ({', '.join(_q(c) for c in text_cols)}), "
                      + ", ".join(f"CAST({_q(c)} AS VARCHAR) AS {_q(c)}" for c in text_cols))
        codes = "".join(
            f", CASE WHEN CAST({_q(c)} AS VARCHAR) IS NULL THEN NULL "
            f"ELSE COALESCE(list_position(?, CAST({_q(c)} AS VARCHAR)), 0) - 1 END AS {_q(code_column(c))}"
            for c in text_cols)
        code_params = [list(t.domains[c]) for c in text_cols]
        base = relation_name(t, "restricted")
        self._con.execute(f"CREATE TABLE {_q(base)} AS SELECT {select}{codes}, "
                          f"(row_number() OVER () - 1) AS {_q(ROW)} FROM {source}", code_params)
        n = self._con.execute(f"SELECT COUNT(*) FROM {_q(base)}").fetchone()[0]
        self.n_rows[t.name] = int(n)
        if t.bounds_from_data:
            t = self._data_bounds(t, base, types)
        clamps = "".join(
            f", LEAST(GREATEST(CAST(COALESCE({_q(c)}, 0) AS DOUBLE), ?), ?) AS {_q(clamp_column(c))}"
            for c in t.bounds)
        clamp_params = [float(v) for c in t.bounds for v in t.bounds[c]]
        dp = relation_name(t, "dp")
        bounded, rank = "", "CAST(1 AS SMALLINT)"  # one row per person: every rank is 1
        if t.privacy_unit:
            unit = _q(t.privacy_unit)
            missing, distinct = self._con.execute(
                f"SELECT COUNT(*) - COUNT({unit}), COUNT(DISTINCT {unit}) FROM {_q(base)}").fetchone()
            if missing:
                raise DataError(f"table {t.name!r}: the privacy unit {t.privacy_unit!r} has missing values; "
                                "every row must name its person.")
            self.unique_units[t.name] = int(distinct) == n
            if int(distinct) != n:
                rank = f"CAST(row_number() OVER (PARTITION BY {unit} ORDER BY {_q(ROW)}) AS SMALLINT)"
                bounded = f" QUALIFY {_q(RANK)} <= {int(t.max_rows_per_unit)}"
        else:
            self.unique_units[t.name] = True
        self._con.execute(f"CREATE TABLE {_q(dp)} AS SELECT *{clamps}, {rank} AS {_q(RANK)} FROM {_q(base)}{bounded}",
                          clamp_params)
        caps = {c: (midpoint_sensitivity(lo, hi, 1)[0], square_cap(lo, hi)) for c, (lo, hi) in t.bounds.items()}
        self.grids[t.name] = column_grids(self._con, t)  # one scan: the cube's exact sums and the exact squares
        return dataclasses.replace(t, square_bits=grid_bits(self._con, t, int(n), caps, self.grids[t.name]))

    def _data_bounds(self, t: TableConfig, base: str, types: dict[str, str]) -> TableConfig:
        bounds = dict(t.bounds)
        read = []
        for column, kind in types.items():
            if column in bounds or column == t.privacy_unit or not kind.startswith(NUMERIC_TYPES) or column in t.domains:
                continue
            if not IDENTIFIER.match(column) or column.startswith("__sdc_"):
                continue
            lo, hi = self._con.execute(f"SELECT MIN({_q(column)}), MAX({_q(column)}) FROM {_q(base)}").fetchone()
            if lo is None:
                continue
            bounds[column] = (float(lo), float(hi) if hi > lo else float(lo) + 1.0)
            read.append(column)
        return dataclasses.replace(t, bounds=bounds, data_bounds=tuple(read))

    def units(self, t: TableConfig) -> np.ndarray | None:
        """The privacy unit of each record (``__sdc_row`` order) as an index 0..P-1, or ``None``
        when every record is its own person; computed on first use (restricted mode)."""
        if self.unique_units[t.name]:
            return None
        with self._units_lock:
            if t.name not in self._units:
                base, row = _q(relation_name(t, "restricted")), _q(ROW)
                result = self._con.cursor().execute(
                    f"SELECT CAST(dense_rank() OVER (ORDER BY {_q(t.privacy_unit)}) - 1 AS INTEGER) AS u "
                    f"FROM {base} ORDER BY {row}").fetchnumpy()
                self._units[t.name] = np.asarray(result["u"], dtype=np.int64)
            return self._units[t.name]

    def aggregate(self, g: Any) -> dict[str, np.ndarray]:
        """Run a generated statement and return its columns as numpy arrays (the thread's CPU
        slot given back first: DuckDB works on its own threads)."""
        self.cpu.give_back()
        return self.cursor().execute(g.sql, list(g.params)).fetchnumpy()

    def close(self) -> None:
        self._con.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

