"""The query service's table mode: any table of declared dimensions, every cell perturbed by the
cell key method (issue 30 section 3; DESIGN.md section 7).

A table with ``mode = "tables"`` (:mod:`sdckit.query.ckmconfig`) is answered only through
``POST /v1/table``::

    {"table": "census", "dimensions": ["region", "sex"], "measure": "count",
     "where": {"age_group": ["0-14", "15-64"]}}

The answer has every cell of the dimensions' codes and their margins (code ``"Total"``), each
with its perturbed count ``n + pert`` only (:func:`sdckit.tabular.cellkey.cell_key_counts`'
``n_pert``; the true count, the cell key and the perturbation never leave the service). The
``where`` filter keeps the records whose codes are among the listed ones. A dimension with a
hierarchy (``[table.hierarchies]``) shows every level's margin (its codes root first, then
depth-first), each perturbed as a cell of its own records. ``"measure": "sum:income"`` answers
the perturbed sums of a ``[table.bounds]`` column instead, by cellKey's flex function
(``[table.ckm.sums]``; :mod:`sdckit.query.tablesums`, equal to
:func:`sdckit.tabular.cell_key_sums`' ``sum_pert``).

When the service starts, the records of each such table are grouped once into its *finest
cells* — every combination of the codes of all its declared dimensions — with per cell the count
and the exact integer sum of its records' keys mod ``10**digits``
(:func:`sdckit.tabular.cellkey.leaf_sums`). A requested table is then a sum over finest cells:
the where filter picks codes along axes, the other dimensions and the margins are summed out
(counts as integers, key sums mod ``10**digits``), and the perturbations are looked up
(:class:`sdckit.tabular.cellkey.Lookup`). No record is scanned per request. A cell's count and
cell key depend only on its set of records, so *the same cell is the same in every table*: the
margin ``region = N`` of ``region x sex``, the cell ``region = N`` of ``region`` alone and the
same cell under a where filter that keeps all of region N are one number; and two tables whose
difference would isolate a person differ by that person plus two independent perturbations
(Thompson, Broadfoot and Elazar 2013).

Record keys: a column of the data (``[table.ckm] record_key``), or drawn once
(:func:`sdckit.tabular.record_keys`, from the service's test seed or OS entropy) and kept in
``<state database>.<table>.rkeys.npz`` (mode 0600) with the data's SHA-256: a later start on
other data refuses to start rather than give every cell new noise silently (new keys let an
analyst average old and new answers).
"""

from __future__ import annotations

import io
import itertools
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.core.atomic import write_private
from sdckit.core.duckdb_session import quote_identifier
from sdckit.core.errors import DataError, ParameterError
from sdckit.query.ckmconfig import TOTAL
from sdckit.query.config import ServiceConfig, TableConfig
from sdckit.query.data import Database
from sdckit.query.generate import ROW, code_column, is_text_domain, relation_name

if TYPE_CHECKING:  # the CKM modules (pandas, scipy) load only when a table is served as tables
    from sdckit.query.tablesums import SumCells
    from sdckit.tabular.cellkey import Lookup
    from sdckit.tabular.cellkey_sums import CellKeySumParams
    from sdckit.tabular.hierarchy import DimensionHierarchy

#: Most cells (margins included) one answer may have.
MAX_CELLS = 100_000
#: Most cubes summed over some dimensions remembered per table (:meth:`CellKeyCube._margin`).
MAX_MARGINS = 64
#: Spawn key of the record keys' stream under ``[service] seed`` (tests); the answers of dp
#: charges use one-element spawn keys, so the streams never meet.
KEY_STREAM = 0x636B6D
_BODY_KEYS = ("table", "dimensions", "measure", "where")
_EXAMPLE = '{"table": "census", "dimensions": ["region", "sex"], "measure": "count", "where": {"age": ["0-14"]}}'
_q = quote_identifier


class BadTableRequest(ParameterError):
    """A table request the service cannot answer as asked (HTTP 400)."""


def keys_path(state: Path, table: str) -> Path:
    """Where the drawn record keys of ``table`` are kept: beside the state database."""
    return state.with_name(f"{state.name}.{table}.rkeys.npz")


@dataclass(frozen=True)
class CellKeyCube:
    """The finest cells of one table (counts and integer key sums over every declared dimension)
    and its p-table; :meth:`answer` sums them into any requested table.

    Attributes
    ----------
    dimensions : tuple of str
        The declared dimensions (``[table.domains]``), in the order of the arrays' axes.
    codes : tuple of tuples
        Each dimension's codes (its domain, in declared order).
    counts, sums : numpy.ndarray
        Per finest cell: the number of records and the sum of their integer keys mod ``10**digits``.
    lookup : Lookup
        The prepared p-table.
    min_count : int or None
        Perturbed counts ``1 .. min_count - 1`` are published as ``null``.
    trees : tuple of DimensionHierarchy
        Each dimension's hierarchy (its codes the leaves; flat: the codes under ``"Total"``).
    rollups : tuple of numpy.ndarray
        Each dimension's hierarchy codes x its codes: 1 where the code is the leaf or one of its
        ancestors (:func:`sdckit.tabular.cellkey.rollup_matrix`).
    measures : dict
        ``{column: SumCells}``: the summed columns (:mod:`sdckit.query.tablesums`).
    full_rows : dict
        Per dimension, its rows and their groups when no ``where`` filters it (made once).
    margins : dict
        The finest cells summed over every code of some dimensions (neither asked for nor
        filtered), by those dimensions and measure (made once, at most :data:`MAX_MARGINS`: most
        requests start from one).
    """

    dimensions: tuple[str, ...]
    codes: tuple[tuple[Any, ...], ...]
    counts: np.ndarray
    sums: np.ndarray
    lookup: Lookup
    min_count: int | None = None
    trees: tuple[DimensionHierarchy, ...] = ()
    rollups: tuple[np.ndarray, ...] = ()
    measures: Mapping[str, SumCells] = field(default_factory=dict)
    full_rows: dict[int, tuple[list[Any], list[np.ndarray]]] = field(default_factory=dict, repr=False, compare=False)
    margins: dict[tuple[tuple[int, ...], str | None], tuple[np.ndarray, np.ndarray, SumCells | None]] = field(
        default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, domains: Mapping[str, tuple[Any, ...]], codes: Mapping[str, np.ndarray], keys: np.ndarray,
              ptable_: Any, digits: int = 8, min_count: int | None = None,
              hierarchies: Mapping[str, DimensionHierarchy] | None = None,
              values: Mapping[str, tuple[np.ndarray, CellKeySumParams, int | None]] | None = None) -> CellKeyCube:
        """The cube of records with integer ``codes`` (per dimension: the index of each record's
        code in ``domains[dimension]``; -1 for a value outside it) and record ``keys`` in [0, 1);
        ``ptable_`` a p-table or a :class:`~sdckit.tabular.cellkey.Lookup` of it; ``hierarchies``
        ``{dimension: DimensionHierarchy}`` whose leaves are the dimension's codes (as text); ``values``
        ``{column: (values, flex parameters, supp_freq)}`` of the columns whose sums are served."""
        from sdckit.query.tablesums import SumCells
        from sdckit.tabular.cellkey import Lookup, leaf_sums, rollup_matrix
        from sdckit.tabular.dimensions import leaf_positions
        from sdckit.tabular.hierarchy import as_dimension_hierarchy

        lookup = ptable_ if isinstance(ptable_, Lookup) else Lookup(ptable_, digits)
        if lookup.digits != digits:
            raise ParameterError(f"The lookup is for keys of {lookup.digits} decimals, the keys have {digits}.")
        dims = tuple(domains)
        shape = tuple(len(domains[d]) for d in dims)
        flat = np.zeros(len(keys), dtype=np.int64)
        for d, size in zip(dims, shape):
            c = np.asarray(codes[d], dtype=np.int64)
            if c.size and (c.min() < 0 or c.max() >= size):
                raise DataError(f"Column {d!r} has missing values or values outside its declared domain; a table "
                                "served as tables needs every record coded: add the codes to [table.domains] "
                                "(e.g. \"unknown\").")
            flat *= size
            flat += c
        counts, sums = leaf_sums(flat, keys, int(np.prod(shape, dtype=np.int64)), digits)
        trees, rollups = [], []
        for d in dims:
            names = [str(c) for c in domains[d]]
            h = as_dimension_hierarchy((hierarchies or {}).get(d), name=d, codes=names, total=TOTAL)
            trees.append(h)
            rollups.append(rollup_matrix(h, leaf_positions(d, names, h)))
        measures = {column: SumCells.build(column, x, flat, shape, keys, sums, params, digits, supp_freq)
                    for column, (x, params, supp_freq) in (values or {}).items()}
        return cls(dims, tuple(tuple(domains[d]) for d in dims), counts.reshape(shape), sums.reshape(shape),
                   lookup, min_count, tuple(trees), tuple(rollups), measures)

    # ------------------------------------------------------------------ requests
    def _axis(self, name: Any, what: str) -> int:
        if not isinstance(name, str) or name not in self.dimensions:
            raise BadTableRequest(f"{what} names {name!r}, which is not a dimension of this table; its dimensions "
                                  f"are {list(self.dimensions)} ([table.domains]).")
        return self.dimensions.index(name)

    def _selection(self, axis: int, wanted: Any) -> list[int]:
        """The positions of the codes ``wanted`` keeps (a subtotal of a hierarchy: its codes)."""
        dim, codes, tree, up = self.dimensions[axis], self.codes[axis], self.trees[axis], self.rollups[axis]
        if not isinstance(wanted, list) or not wanted:
            raise BadTableRequest(f"'where' of {dim!r} must be a non-empty list of its codes, e.g. [{codes[0]!r}].")
        index = {code: i for i, code in enumerate(codes)}
        chosen: set[int] = set()
        for code in wanted:
            i = None if isinstance(code, bool) or not isinstance(code, str | int | float) else index.get(code)
            if i is not None:
                chosen.add(i)
            elif isinstance(code, str) and code in tree.subtotals:
                chosen.update(np.flatnonzero(up[tree.index(code)]).tolist())  # a subtotal: its codes
            else:
                raise BadTableRequest(f"'where' lists {code!r}, which is not a code of {dim!r}; its codes are "
                                      f"{list(codes)[:20]}" + (" ..." if len(codes) > 20 else "") + ".")
        return sorted(chosen)

    def _rows(self, axis: int, kept: list[int]) -> tuple[list[Any], list[np.ndarray]]:
        """The codes of a requested dimension (its hierarchy's, root first, depth-first; those
        with a kept code below them) and, per code, the positions of the kept codes it adds up."""
        tree, up, codes = self.trees[axis], self.rollups[axis], self.codes[axis]
        leaf_of = {str(c): c for c in codes}
        kept_arr = np.asarray(kept, dtype=np.int64)
        labels, groups = [], []
        for r, code in enumerate(tree.codes):
            members = kept_arr[up[r, kept_arr] == 1]
            if members.size:
                labels.append(leaf_of.get(code, code) if r else code)
                groups.append(members)
        return labels, groups

    def _margin(self, whole: tuple[int, ...], measure: str | None,
                groups: Mapping[int, list[np.ndarray]]) -> tuple[np.ndarray, np.ndarray, SumCells | None]:
        """The counts, key sums and summed column's cells over every code of the axes ``whole``
        (each then of length 1), computed once (integer sums and top-k merges: the same whatever
        the order)."""
        known = self.margins.get((whole, measure))
        if known is None:
            if len(self.margins) >= MAX_MARGINS:
                self.margins.clear()
            modulus = 10 ** self.lookup.digits
            n, s = self.counts, self.sums
            m = self.measures[measure] if measure is not None else None
            for axis in sorted(whole, reverse=True):
                n, s = _reduce(n, axis, groups[axis]), _reduce(s, axis, groups[axis]) % modulus
                m = m.reduce(axis, groups[axis], modulus) if m is not None else None
            known = self.margins[(whole, measure)] = (n, s, m)
        return known

    def answer(self, dimensions: Any, where: Any = None, measure: str | None = None) -> dict[str, Any]:
        """The perturbed table over ``dimensions`` (a list of dimension names) of the records that
        ``where`` (``{dimension: [codes]}``) keeps: ``columns`` (the dimensions and ``count``, or
        ``sum`` for ``measure``, a summed column), ``rows`` (every cell, each dimension's total
        first, then its codes — or its hierarchy's codes, root first then depth-first; the first
        dimension slowest) and ``suppressed`` (cells published as ``null``)."""
        if not isinstance(dimensions, list):
            raise BadTableRequest(f"'dimensions' must be a list of dimension names, e.g. {list(self.dimensions[:2])}.")
        axes = [self._axis(d, "'dimensions'") for d in dimensions]
        if len(set(axes)) != len(axes):
            raise BadTableRequest("'dimensions' names a dimension twice; name each once.")
        if where is None:
            where = {}
        if not isinstance(where, dict):
            raise BadTableRequest("'where' must be an object {dimension: [codes]}.")
        selections = {}
        for d, wanted in where.items():
            axis = self._axis(d, "'where'")
            selections[axis] = self._selection(axis, wanted)
        labels: dict[int, list[Any]] = {}
        groups: dict[int, list[np.ndarray]] = {}
        for axis in range(len(self.dimensions)):
            kept = selections.get(axis, list(range(len(self.codes[axis]))))
            if axis in axes and axis in selections:
                labels[axis], groups[axis] = self._rows(axis, kept)
            elif axis in axes:  # every code: the same rows for every request
                if axis not in self.full_rows:
                    self.full_rows[axis] = self._rows(axis, kept)
                labels[axis], groups[axis] = self.full_rows[axis]
            else:
                groups[axis] = [np.asarray(kept, dtype=np.int64)]
        cells = 1
        for a in axes:
            cells *= len(labels[a])
        if cells > MAX_CELLS:
            raise BadTableRequest(f"The table has {cells:,} cells with its margins (over {MAX_CELLS:,}): ask for "
                                  "fewer dimensions or filter codes with 'where'.")
        modulus = 10 ** self.lookup.digits
        whole = tuple(a for a in range(len(self.dimensions)) if a not in axes and a not in selections)
        n, s, m = self._margin(whole, measure, groups)
        # each axis summed into its groups (sums of < 10**5 keys < 10**12), the ones not asked for
        # first (they shrink the arrays, the others' margins grow them)
        for axis in sorted(range(n.ndim), key=lambda a: (a in axes, -a)):
            if axis not in whole:
                n, s = _reduce(n, axis, groups[axis]), _reduce(s, axis, groups[axis]) % modulus
                if m is not None:
                    m = m.reduce(axis, groups[axis], modulus)
        for axis in reversed(range(n.ndim)):
            if axis not in axes:
                n, s = n.squeeze(axis), s.squeeze(axis)
                m = m.squeeze(axis) if m is not None else None
        order = sorted(axes)
        to_request = [order.index(a) for a in axes]
        n, s = n.transpose(to_request), s.transpose(to_request)
        counts = n.ravel() + self.lookup(n.ravel(), s.ravel())
        suppressed = np.zeros(len(counts), dtype=bool)
        if self.min_count is not None:  # a function of the published count only
            suppressed = (counts >= 1) & (counts < self.min_count)
        if m is None:
            published: list[Any] = counts.tolist()
        else:
            published = m.transpose(to_request).perturbed(n, self.lookup.digits).tolist()
        values = [None if hide else v for v, hide in zip(published, suppressed.tolist())]
        rows = [[*combo, v] for combo, v in zip(itertools.product(*(labels[a] for a in axes)), values)]
        return {"dimensions": [self.dimensions[a] for a in axes],
                "where": {self.dimensions[a]: [self.codes[a][i] for i in sel] for a, sel in selections.items()},
                "columns": [*(self.dimensions[a] for a in axes), "count" if m is None else "sum"], "rows": rows,
                "suppressed": int(suppressed.sum()), "min_count": self.min_count}


def _reduce(a: np.ndarray, axis: int, groups: list[np.ndarray]) -> np.ndarray:
    """``a`` over ``axis`` summed into one entry per group of its positions."""
    if len(groups) == 1 and len(groups[0]) == a.shape[axis]:
        return a.sum(axis=axis, keepdims=True)
    return np.stack([a.take(g[0], axis=axis) if len(g) == 1 else a.take(g, axis=axis).sum(axis=axis)
                     for g in groups], axis=axis)


class TableService:
    """The cubes of every table served as tables (built when the service starts).

    Parameters
    ----------
    db : Database
        The loaded data.
    config : ServiceConfig
        The checked configuration (its ``state`` locates the drawn record keys; its ``seed``, for
        tests, makes them reproducible).
    """

    def __init__(self, db: Database, config: ServiceConfig) -> None:
        ptables: dict[Any, Any] = {}  # tables with the same p-table parameters share one solve
        self.cubes: dict[str, CellKeyCube] = {
            name: _cube(db, t, config, ptables) for name, t in config.tables.items() if t.mode == "tables"}
        #: Per table, its numeric columns ([table.bounds]): the columns a sum may name.
        self.numeric: dict[str, tuple[str, ...]] = {name: tuple(config.tables[name].bounds) for name in self.cubes}

    def answer(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """``(table, answer)`` of a request body (a JSON object) naming a table served as tables;
        :class:`BadTableRequest` for anything else."""
        extra = sorted(set(body) - set(_BODY_KEYS))
        if extra:
            raise BadTableRequest(f"Unknown field {extra[0]!r} in the request; send {', '.join(_BODY_KEYS)}: {_EXAMPLE}.")
        table = table_of(body)
        cube = self.cubes.get(table)
        if cube is None:
            raise BadTableRequest(f"The table {table!r} is not served as tables: ask for one whose configuration "
                                  f"says mode = \"tables\" ({sorted(self.cubes)}).")
        measure = body.get("measure", "count")
        column = None if measure == "count" else _sum_column(measure, cube, self.numeric[table], table)
        if "dimensions" not in body:
            raise BadTableRequest(f"The request needs 'dimensions', the list of the table's dimensions: {_EXAMPLE}.")
        result = cube.answer(body["dimensions"], body.get("where"), column)
        method = ("cell key method: every cell's count perturbed, the same cell the same in every table"
                  if column is None else "cell key method (cellKey's flex function): every cell's sum perturbed, "
                  "the same cell the same in every table")
        return table, {"table": table, "measure": measure, **result, "method": method}


def _sum_column(measure: Any, cube: CellKeyCube, numeric: tuple[str, ...], table: str) -> str:
    """The column of a ``"sum:<column>"`` measure, checked (:class:`BadTableRequest` naming it)."""
    if not isinstance(measure, str) or not measure.startswith("sum:"):
        raise BadTableRequest("'measure' must be \"count\" (the number of records in each cell) or "
                              "\"sum:<column>\" (a numeric column of [table.bounds]).")
    column = measure[4:]
    if column in cube.measures:
        return column
    if column in numeric:
        raise BadTableRequest(f"The table {table!r} serves no sums (its [table.ckm.sums], the numeric p-table and "
                              "the flex function, is not configured); ask for \"count\".")
    if column in cube.dimensions:
        raise BadTableRequest(f"'measure' sums {column!r}, a dimension (codes), not a numeric column; the numeric "
                              f"columns are {sorted(numeric)} ([table.bounds]).")
    raise BadTableRequest(f"'measure' sums {column!r}, which is not a numeric column of {table!r}; its numeric "
                          f"columns are {sorted(numeric)} ([table.bounds]).")


def table_of(body: dict[str, Any]) -> str:
    """The ``table`` field of a request body."""
    table = body.get("table")
    if not isinstance(table, str):
        raise BadTableRequest(f"The request needs 'table', the name of a table: {_EXAMPLE}.")
    return table


def _cube(db: Database, t: TableConfig, config: ServiceConfig, ptables: dict[Any, Any]) -> CellKeyCube:
    from sdckit.tabular.ptable import ptable, read_ptable

    """Read the codes and keys of table ``t`` once (``__sdc_row`` order) and build its cube."""
    ckm = t.ckm
    assert ckm is not None
    try:
        if ckm.ptable_path is not None:
            table = read_ptable(ckm.ptable_path)
        else:
            given = (ckm.D, ckm.V, ckm.js, ckm.pstay)
            if given not in ptables:
                pstay = list(ckm.pstay) if isinstance(ckm.pstay, tuple) else ckm.pstay
                ptables[given] = ptable(ckm.D, ckm.V, js=ckm.js, pstay=pstay)
            table = ptables[given]
        sum_params = None
        if ckm.sums is not None:  # tables with the same flex parameters share one solve too
            if ckm.sums not in ptables:
                ptables[ckm.sums] = ckm.sums.sum_params()
            sum_params = ptables[ckm.sums]
    except (ParameterError, DataError) as exc:
        raise type(exc)(f"table {t.name!r} [table.ckm]: {exc}") from None
    columns = []
    for d, values in t.domains.items():
        if is_text_domain(t, d):
            columns.append(f"COALESCE({_q(code_column(d))}, -1) AS {_q(d)}")
        else:
            columns.append(f"CAST({_q(d)} AS DOUBLE) AS {_q(d)}")
    if ckm.record_key is not None:
        columns.append(f"COALESCE(CAST({_q(ckm.record_key)} AS DOUBLE), 'NaN'::DOUBLE) AS __sdc_key")
    summed = tuple(t.bounds) if ckm.sums is not None else ()
    for i, column in enumerate(summed):
        columns.append(f"COALESCE(TRY_CAST({_q(column)} AS DOUBLE), 'NaN'::DOUBLE) AS __sdc_sum_{i}")
    sql = f"SELECT {', '.join(columns)} FROM {_q(relation_name(t, 'restricted'))} ORDER BY {_q(ROW)}"
    data = db.cursor().execute(sql).fetchnumpy()
    codes = {}
    for d, values in t.domains.items():
        column = np.asarray(data[d])
        if not is_text_domain(t, d):  # numeric domain: the value's index in it (-1 outside, NaN missing)
            domain = np.asarray(values, dtype=float)
            order = np.argsort(domain)
            at = np.clip(np.searchsorted(domain[order], column), 0, len(domain) - 1)
            column = np.where(domain[order][at] == column, order[at], -1)
        codes[d] = column
    try:
        if ckm.record_key is not None:
            keys = np.asarray(data["__sdc_key"], dtype=float)
        else:
            keys = _drawn_keys(db, t, config)
        values = {column: (_summed(data[f"__sdc_sum_{i}"], column, t.bounds[column]), sum_params, ckm.sums.supp_freq)
                  for i, column in enumerate(summed)} if ckm.sums is not None else {}
        return CellKeyCube.build(t.domains, codes, keys, table, ckm.digits, ckm.min_count, dict(ckm.hierarchies),
                                 values)
    except DataError as exc:
        raise DataError(f"table {t.name!r}: {exc}") from None


def _summed(values: Any, column: str, bounds: tuple[float, float]) -> np.ndarray:
    """A summed column's values, checked: numbers (none missing) within the declared bounds."""
    x = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~np.isfinite(x) | (x < bounds[0]) | (x > bounds[1]))
    if bad.size:
        raise DataError(f"Column {column!r} has a missing, non-numeric or out-of-bounds value at row {int(bad[0])} "
                        f"(declared [{bounds[0]}, {bounds[1]}] in [table.bounds]): a summed column is summed "
                        "exactly, never clipped; fix the data or the bounds.")
    return x


def _drawn_keys(db: Database, t: TableConfig, config: ServiceConfig) -> np.ndarray:
    from sdckit.tabular.cellkey import record_keys

    """The table's record keys from its keys file, or drawn now and written there (0600)."""
    assert t.ckm is not None
    path = keys_path(config.state, t.name)
    rows, digits, data = db.n_rows[t.name], t.ckm.digits, db.fingerprints[t.name]
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as stored:
                keys, kept_digits, kept_data = stored["keys"], int(stored["digits"]), str(stored["data"])
        except (OSError, ValueError, KeyError) as exc:
            raise DataError(f"Cannot read the record keys {path}: {type(exc).__name__}; restore the file from a "
                            "backup (a new draw gives every cell new noise).") from None
        if kept_data != data or len(keys) != rows or kept_digits != digits:
            raise ParameterError(f"The record keys in {path} were drawn for other data or digits (the file of table "
                                 f"{t.name!r} changed): restore that data, or delete the keys file to draw new "
                                 "ones — every cell then gets new noise, and analysts who kept old answers can "
                                 "average old and new.")
        return keys
    seed = None
    if config.seed is not None:  # tests only: reproducible keys
        seed = np.random.SeedSequence(config.seed, spawn_key=(KEY_STREAM, zlib.crc32(t.name.encode())))
    keys = record_keys(rows, np.random.SeedSequence() if seed is None else seed, digits)
    buffer = io.BytesIO()
    np.savez(buffer, keys=keys, digits=np.int64(digits), data=np.str_(data))
    write_private(path, buffer.getvalue())
    return keys
