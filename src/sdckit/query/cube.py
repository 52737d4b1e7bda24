"""Pre-aggregated answers of dp COUNT/SUM queries: a cube over the dp relation's few-valued columns.

The dp relation (``sdc_dp_<t>``, :mod:`sdckit.query.data`) never changes while the service runs.
When the service starts, its rows are grouped once by every declared column with few distinct
values (integer columns and text-domain columns; at most :data:`MAX_CELLS` combinations present)::

    SELECT k1, k2, .., COUNT(*), SUM(clamped c1), .. FROM sdc_dp_<t> GROUP BY k1, k2, ..

A query whose WHERE and GROUP BY name only these columns is then answered from the cube's rows
(a few hundred or thousand) instead of a scan of every record: the predicate is evaluated on the
cube's keys with SQL's three-valued logic (a comparison with a missing value is unknown, and
WHERE keeps only rows where it is true), and the counts and sums of the selected cube rows are
added up per answer cell (:func:`~sdckit.query.generate.cell_indices`, as for DuckDB's result).

Exactly the same true answer as the DuckDB path (tests compare both on random predicates):

* counts are integers;
* a clamped column's sums are used only when every clamped value is a multiple of 2**-10 (an
  integer, in the common case) and the sum of their magnitudes stays below 2**43 (2**53 for
  integers): every partial sum, in any order, is then exact in double precision, so DuckDB's
  ``SUM`` and the cube's sum of sums are the same number;
* keys and literals are compared where int64 and double agree: an integer column is in the cube
  only if its values lie within +/-2**53, and a query whose numeric literal lies outside that range
  goes to DuckDB; text is compared by code point, which is DuckDB's (UTF-8 byte) order.

A join with a public table on a cube column is answered from the cube joined with it in numpy
(:meth:`Cube.joined`, issue 32), a join of two private tables from the cube of the joined
relation (:mod:`sdckit.query.joincube`, built by :meth:`Cube.grouped`), a query asking a smaller
``max_rows_per_unit`` ``k'`` from the cube with the stored rank as one more key (:meth:`Cube.ranked`,
:func:`with_rank`). Anything else (quantiles, a column not in the cube, a sum the cube cannot make
exact) is answered by DuckDB.

A binned GROUP BY column of a cube column (:mod:`sdckit.query.derived`) is answered too: a CASE
bin's code per cube row from its conditions (the same three-valued logic), a step bin's per
distinct value by :func:`~sdckit.query.derivedsql.step_codes` (the generated SQL's double
arithmetic in the same order). Derived values are never summed here (they need each row):
:mod:`sdckit.query.derivedcube` sums them, and bins other columns, from structures over this
cube's keys built on first use.

Nothing here runs SQL built from the analyst's query: the cube is built from the
configuration's names only, and the analyst's values are compared with numpy.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.core.result import Result, plain
from sdckit.query.config import TableConfig
from sdckit.query.derived import dp_table, find
from sdckit.query.derivedsql import step_codes
from sdckit.query.generate import (RANK, cell_indices, clamp_column, group_alias, is_text_domain, relation_name,
                                   summed_columns)
from sdckit.query.sql import And, Compare, InList, Not, Or, Predicate, Query, predicate_columns
from sdckit.query.squares import FRACTION_BITS, ColumnGrid, column_grids

#: Most cube rows (non-empty key combinations) kept; more columns are left out, fewest-valued first.
MAX_CELLS = 50_000
#: Integer keys and numeric literals must lie within +/- this bound (int64 and double agree there).
EXACT = 2**53

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT")


#: Names in the SQL below.
_q = quote_identifier


@dataclass(frozen=True)
class _Key:
    """One cube column: its distinct values (sorted; int64 or str) and, per cube row, the index
    of the row's value in them (-1: missing)."""

    values: np.ndarray
    index: np.ndarray

    def leaf(self, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(true, unknown) per cube row, from ``test`` per distinct value."""
        known = self.index >= 0
        true = np.zeros(self.index.size, dtype=bool)
        true[known] = test[self.index[known]]
        return true, ~known


@dataclass(frozen=True, eq=False)
class Cube(Result):
    """The pre-aggregated dp relation of one table (see the module's description).

    Build it with :meth:`build`; :meth:`covers` says whether a query can be answered from it,
    :meth:`cells` gives the true counts and clamped sums per answer cell.
    """

    table: TableConfig
    keys: dict[str, _Key]
    counts: np.ndarray = field(metadata={"dict": False})
    sums: dict[str, np.ndarray] = field(metadata={"dict": False})

    @property
    def size(self) -> int:
        """Number of cube rows."""
        return int(self.counts.size)

    def to_dict(self) -> dict[str, Any]:
        """The table's name, the cube's columns, its summed columns and its number of rows."""
        return plain({"table": self.table.name, "columns": list(self.keys), "summed": list(self.sums),
                      "rows": self.size})

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, con: Any, table: TableConfig, max_cells: int = MAX_CELLS,
              grids: dict[str, ColumnGrid] | None = None) -> Cube | None:
        """The cube of ``table``'s dp relation in the DuckDB connection ``con``, or ``None`` when
        no declared column qualifies."""
        relation = _q(relation_name(table, "dp"))
        types = {row[0]: str(row[1]).upper() for row in con.execute(f"DESCRIBE {relation}").fetchall()}
        candidates = []
        for column in table.columns:
            if column == table.privacy_unit or column not in types:
                continue
            if is_text_domain(table, column) and types[column] == "VARCHAR":
                candidates.append(column)
            elif types[column].startswith(_INTEGER_TYPES):
                candidates.append(column)
        if not candidates:
            return None
        stats = con.execute("SELECT " + ", ".join(
            f"approx_count_distinct({_q(c)}), "
            + ("0, 0" if is_text_domain(table, c) else f"CAST(MIN({_q(c)}) AS HUGEINT), CAST(MAX({_q(c)}) AS HUGEINT)")
            for c in candidates) + f" FROM {relation}").fetchone()
        distinct = {}
        for i, column in enumerate(candidates):
            count, low, high = stats[3 * i: 3 * i + 3]
            if low is not None and (abs(int(low)) >= EXACT or abs(int(high)) >= EXACT):
                continue
            distinct[column] = int(count) + 1  # a missing value is one more key
        chosen: list[str] = []
        bound = 1
        for column in sorted(distinct, key=lambda c: (distinct[c], candidates.index(c))):
            if bound * distinct[column] <= max_cells:
                chosen.append(column)
                bound *= distinct[column]
                continue
            trial = chosen + [column]
            present = con.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {', '.join(_q(c) for c in trial)} "
                                  f"FROM {relation})").fetchone()[0]
            if int(present) <= max_cells:
                chosen.append(column)
                bound = int(present)
        if not chosen:
            return None
        chosen.sort(key=table.columns.index)
        return cls.grouped(con, table, relation, {c: types[c] == "VARCHAR" for c in chosen},
                           summable_columns(con, table, grids))

    @classmethod
    def grouped(cls, con: Any, table: TableConfig, source: str, keys: dict[str, bool], summable: list[str],
                params: list[Any] | None = None, max_rows: int | None = None) -> Cube | None:
        """``SELECT keys, COUNT(*), SUM(clamped summable) FROM source GROUP BY keys`` as a cube:
        ``source`` a FROM item written from configured names only (``params`` its ``?`` values),
        ``keys`` each key column and whether it holds text. ``None`` past ``max_rows`` rows (no
        more than one past it is read)."""
        chosen = list(keys)
        selects = [_q(c) for c in chosen] + ["COUNT(*)"] + [f"SUM({_q(clamp_column(c))})" for c in summable]
        aliases = [f"k{i}" for i in range(len(chosen))] + ["n"] + [f"s{i}" for i in range(len(summable))]
        sql = (f"SELECT {', '.join(f'{s} AS {a}' for s, a in zip(selects, aliases))} FROM {source} "
               f"GROUP BY {', '.join(_q(c) for c in chosen)}")
        if max_rows is not None:
            sql += f" LIMIT {int(max_rows) + 1}"
        result = con.execute(sql, params or []).fetchnumpy()
        counts = np.asarray(result["n"], dtype=np.int64)
        if max_rows is not None and counts.size > max_rows:
            return None
        columns = {c: column_key(result[f"k{i}"], text=keys[c]) for i, c in enumerate(chosen)}
        sums = {c: np.asarray(np.ma.filled(result[f"s{i}"], 0.0) if isinstance(result[f"s{i}"], np.ma.MaskedArray)
                              else result[f"s{i}"], dtype=float) for i, c in enumerate(summable)}
        return cls(table, columns, counts, sums)

    def ranked(self, con: Any, max_cells: int = MAX_CELLS) -> Cube | None:
        """This cube with the dp relation's stored rank (:data:`~sdckit.query.relnames.RANK`, a
        row's rank among its person's rows, 1..``max_rows_per_unit``) as one more key, for a
        query asking fewer rows per person ``k'``: its rows are those of rank ``<= k'`` whatever
        the WHERE (the rank is stored when the data is loaded), so :meth:`cells` answers it with
        ``RANK <= k'`` added to the WHERE (:func:`with_rank`). The rank never displaces a column
        of this cube: ``None`` (the scan answers) past ``max_cells`` rows."""
        keys = {c: k.values.dtype == object for c, k in self.keys.items()} | {RANK: False}
        return Cube.grouped(con, self.table, _q(relation_name(self.table, "dp")), keys, list(self.sums),
                            max_rows=max_cells)

    def parent_rows(self, result: dict[str, np.ndarray]) -> np.ndarray:
        """The cube row of each row of ``result``, a start-up query grouped by this cube's key
        columns as ``g0, g1, ..`` (:func:`~sdckit.query.generate.group_alias`; the same key values,
        a missing key matching a missing one): the cube holds every combination present."""
        columns = list(self.keys)
        size = len(result[group_alias(0)])
        mine = np.empty((size, len(columns)), dtype=np.int64)
        for i, column in enumerate(columns):
            key = self.keys[column]
            raw = column_key(result[group_alias(i)], text=key.values.dtype == object)
            # the raw's distinct values are a subset of the cube's: re-index them into the cube's values
            if key.values.dtype == object:
                position = {v: p for p, v in enumerate(key.values.tolist())}
                remap = np.array([position[v] for v in raw.values.tolist()], dtype=np.int64)
            else:
                remap = np.searchsorted(key.values, raw.values).astype(np.int64)
            mine[:, i] = np.where(raw.index >= 0, remap[np.maximum(raw.index, 0)] if remap.size else 0, -1)
        theirs = np.stack([self.keys[c].index for c in columns], axis=1)
        both, inverse = np.unique(np.concatenate([theirs, mine]), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        row_of = np.full(both.shape[0], -1, dtype=np.int64)
        row_of[inverse[:self.size]] = np.arange(self.size)
        parents = row_of[inverse[self.size:]]
        if (parents < 0).any():  # pragma: no cover - the dp relation does not change while the service runs
            raise RuntimeError("Internal check: a key combination missing from the cube.")
        return parents

    def joined(self, table: TableConfig, key: str, public_key: list[Any], public: dict[str, list[Any]],
               left: bool, grids: dict[str, ColumnGrid], max_rows: int = 10 * MAX_CELLS) -> Cube | None:
        """This cube joined with a public table (:mod:`sdckit.query.joins`) on its column ``key``:
        one row per (cube row, public row whose ``public_key`` value equals the row's key), a LEFT
        join's unmatched rows once with the public columns missing; ``public`` holds each public
        column's values per public row, under the name the joined ``table`` gives it. Counts and
        sums are the cube's, repeated; a sum is kept only while the joined relation's magnitudes
        (``grids[c].magnitude``, the dp relation's, times the largest multiplicity) stay below
        :func:`exact_magnitude` (2**53 for integers), so that it stays exact in any order. ``None``
        when ``key`` is not a cube column or past ``max_rows`` rows. Its :meth:`covers` and
        :meth:`cells` answer the joined queries."""
        if key not in self.keys:
            return None
        private = self.keys[key]
        rows_of: dict[Any, list[int]] = {}
        for i, value in enumerate(public_key):
            if value is not None:
                rows_of.setdefault(value, []).append(i)
        matches = [rows_of.get(v.item() if isinstance(v, np.generic) else v, []) for v in private.values]
        per_value = np.array([len(m) for m in matches], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(per_value)[:-1]]).astype(np.int64)
        flat = np.array([r for m in matches for r in m], dtype=np.int64)
        has = private.index >= 0
        found = np.where(has, per_value[np.where(has, private.index, 0)] if per_value.size else 0, 0)
        repeat = np.maximum(found, 1) if left else found
        if int(repeat.sum()) > max_rows:
            return None
        row = np.repeat(np.arange(self.size), repeat)
        offset = np.arange(row.size) - np.repeat(np.cumsum(repeat) - repeat, repeat)
        matched = np.repeat(found > 0, repeat)
        start = np.repeat(starts[np.where(has, private.index, 0)] if starts.size else np.zeros(self.size, np.int64), repeat)
        public_row = np.where(matched, flat[np.where(matched, start + offset, 0)] if flat.size else -1, -1)
        keys = {c: _Key(k.values, k.index[row]) for c, k in self.keys.items()}
        for column, values in public.items():
            present = sorted({v for v in values if v is not None})
            text = any(isinstance(v, str) for v in present)
            distinct = np.array(present, dtype=object if text else None)
            position = {v: i for i, v in enumerate(present)}
            index = np.array([-1 if v is None else position[v] for v in values] + [-1], dtype=np.int64)
            keys[column] = _Key(distinct, index[public_row])  # (public row -1: the extra -1, missing)
        most = int(repeat.max()) if repeat.size else 0
        sums = {c: v[row] for c, v in self.sums.items() if grids[c].magnitude * most < exact_magnitude(grids[c])}
        return Cube(table, keys, self.counts[row], sums)

    # ------------------------------------------------------------------ answering
    def covers(self, query: Query) -> bool:
        """Whether the cube answers ``query`` exactly as DuckDB would."""
        if any(o.kind not in ("group", "count", "sum", "avg") for o in query.outputs):
            return False
        if any(c not in self.sums for c in summed_columns(query)):
            return False
        if any(c not in self.keys for c in predicate_columns(query.where)):
            return False
        for c in query.group_by:
            binned = find(query, c, "bin")  # a bin of a cube column: its codes from the column's values
            if binned is None and c not in self.keys:
                return False
            if binned is not None and (binned.column not in self.keys or not (
                    step_codes(binned, np.zeros(0)) is not None
                    or (binned.tree[0] == "case" and all(literals_exact(p) for p, _ in binned.tree[1])))):
                return False
        return literals_exact(query.where)

    def cells(self, query: Query, n_cells: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """True counts and clamped sums per answer cell (the product of the GROUP BY domains,
        first column slowest; one cell without GROUP BY), as
        :func:`~sdckit.query.noisy.exact_cells` gives them from DuckDB's result."""
        keep, cell = self.rows(query)
        counts = np.bincount(cell[keep], weights=self.counts[keep], minlength=n_cells)
        sums = {c: np.bincount(cell[keep], weights=self.sums[c][keep], minlength=n_cells).astype(float)
                for c in summed_columns(query)}  # (float even when nothing is selected)
        return np.rint(counts).astype(np.int64), sums

    def selected(self, where: Predicate | None) -> np.ndarray:
        """Whether each cube row's records satisfy ``where`` (true under SQL's three-valued logic)."""
        return np.ones(self.size, dtype=bool) if where is None else self._where(where)[0]

    def rows(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """``(keep, cell)`` per cube row: whether its records are in the query's answer (WHERE
        true, GROUP BY values inside the declared domains) and the answer cell they fall in."""
        selected = self.selected(query.where)
        if query.group_by:
            cell = cell_indices(dp_table(query, self.table), query.group_by, self.group_codes(query), self.size)
        else:
            cell = np.zeros(self.size, dtype=np.int64)
        return selected & (cell >= 0), cell

    def group_codes(self, query: Query) -> dict[str, np.ma.MaskedArray]:
        """The generated SQL's group value per cube row of each GROUP BY column (``g0, g1, ..``:
        a text domain's code, -1 outside it; a bin's code; an integer column's value), masked
        where SQL's is missing: two cube rows are in the same SQL group iff all are equal."""
        codes = {}
        for i, column in enumerate(query.group_by):
            binned = find(query, column, "bin")
            key = self.keys[column if binned is None else binned.column]
            missing = key.index < 0
            if binned is not None and binned.tree[0] == "case":  # the first arm whose condition is true
                raw, missing = self._case_codes(binned)
            elif binned is not None:  # the generated SQL's codes, per distinct value (sdckit.query.derivedsql)
                per_value = step_codes(binned, key.values)
                raw = per_value[np.where(missing, 0, key.index)] if key.values.size else np.zeros(self.size, np.int64)
            elif is_text_domain(self.table, column):
                position = {v: j for j, v in enumerate(self.table.domains[column])}
                per_value = np.array([position.get(v, -1) for v in key.values], dtype=np.int64)
                raw = per_value[np.where(missing, 0, key.index)] if key.values.size else np.zeros(self.size, np.int64)
            else:
                raw = (key.values[np.where(missing, 0, key.index)] if key.values.size
                       else np.zeros(self.size, np.int64)).astype(float)
            codes[group_alias(i)] = np.ma.masked_array(raw, mask=missing)
        return codes

    def _case_codes(self, binned: Any) -> tuple[np.ndarray, np.ndarray]:
        """(code, missing) per cube row of a CASE bin, as SQL: the first WHEN that is true (an
        unknown one is not), else the ELSE (no ELSE: no bin)."""
        position = {v: j for j, v in enumerate(binned.labels)}
        codes = np.full(self.size, -1, dtype=np.int64)
        decided = np.zeros(self.size, dtype=bool)
        for p, value in binned.tree[1]:
            true = self._where(p)[0] & ~decided
            codes[true] = position[value[1]]
            decided |= true
        if binned.tree[2] is not None:
            codes[~decided] = position[binned.tree[2][1]]
        return codes, codes < 0

    def _where(self, p: Predicate) -> tuple[np.ndarray, np.ndarray]:
        """(true, unknown) per cube row: SQL's three-valued logic."""
        if isinstance(p, And | Or):
            parts = [self._where(i) for i in p.items]
            true, unknown = parts[0]
            for t, u in parts[1:]:
                if isinstance(p, And):
                    false = (~true & ~unknown) | (~t & ~u)
                    true = true & t
                    unknown = ~false & ~true
                else:
                    new_true = true | t
                    unknown = ~new_true & (unknown | u)
                    true = new_true
            return true, unknown
        if isinstance(p, Not):
            true, unknown = self._where(p.item)
            return ~true & ~unknown, unknown
        key = self.keys[p.column]
        values = key.values
        if isinstance(p, Compare):
            test = _compare(values, p.op, p.value)
        elif isinstance(p, InList):
            test = np.zeros(values.size, dtype=bool)
            for v in p.values:
                test |= _compare(values, "=", v)
        else:
            test = _compare(values, ">=", p.low) & _compare(values, "<=", p.high)
        true, unknown = key.leaf(test)
        if getattr(p, "negated", False):
            return ~true & ~unknown, unknown
        return true, unknown


def summable_columns(con: Any, table: TableConfig, grids: dict[str, ColumnGrid] | None = None) -> list[str]:
    """Bounded columns whose clamped values are multiples of 2**-10 (integers, usually) with
    magnitudes summing below 2**43 (2**53 for integers): their sums are exact in any order.
    ``grids``: the dp relation's :func:`~sdckit.query.squares.column_grids` when already read."""
    grids = column_grids(con, table) if grids is None else grids
    return [c for c in table.bounds if grids[c].magnitude < exact_magnitude(grids[c])]


def exact_magnitude(grid: ColumnGrid) -> float:
    """Below which sum of magnitudes a column's sums are exact doubles in any order: 2**53 when
    its clamped values are integers, 2**43 when multiples of 2**-10, 0 (never) otherwise."""
    if grid.integral in (True, None):
        return float(EXACT)
    return EXACT / 2**FRACTION_BITS if grid.dyadic else 0.0


def integer_columns(con: Any, table: TableConfig) -> list[str]:
    """Declared integer columns of the dp relation (the privacy unit left out)."""
    relation = _q(relation_name(table, "dp"))
    types = {row[0]: str(row[1]).upper() for row in con.execute(f"DESCRIBE {relation}").fetchall()}
    return [c for c in table.columns if c != table.privacy_unit and c in types and not is_text_domain(table, c)
            and types[c].startswith(_INTEGER_TYPES)]


def _compare(values: np.ndarray, op: str, value: Any) -> np.ndarray:
    if values.dtype == object:
        return np.array([_OPS[op](v, value) for v in values], dtype=bool)
    return _OPS[op](values, value)


_OPS = {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def column_key(raw: Any, text: bool) -> _Key:
    """A cube column from a DuckDB result column: its sorted distinct values and each row's index."""
    mask = np.ma.getmaskarray(raw) if isinstance(raw, np.ma.MaskedArray) else np.zeros(len(raw), dtype=bool)
    data = np.asarray(np.ma.getdata(raw))
    present = data[~mask]
    if text:
        values = np.array(sorted(set(present.tolist())), dtype=object)
        position = {v: i for i, v in enumerate(values)}
        index = np.array([-1 if m else position[v] for v, m in zip(data.tolist(), mask.tolist())], dtype=np.int64)
    else:
        present = present.astype(np.int64)
        values = np.unique(present)
        index = np.full(data.size, -1, dtype=np.int64)
        index[~mask] = np.searchsorted(values, present)
    return _Key(values, index)


def with_rank(query: Query, rows: int) -> Query:
    """``query`` with ``RANK <= rows`` added to its WHERE: the rows a smaller bound ``k' = rows``
    keeps (for :meth:`Cube.ranked`'s cube; the scan adds the same condition, ``generate``)."""
    rank = Compare(RANK, "<=", int(rows))
    return dataclasses.replace(query, where=rank if query.where is None else And((query.where, rank)))


def literals_exact(p: Predicate | None) -> bool:
    """Every numeric literal within +/-2**53 (where an int64 key and a double literal compare the
    same way in numpy and in DuckDB)."""
    if p is None:
        return True
    if isinstance(p, And | Or):
        return all(literals_exact(i) for i in p.items)
    if isinstance(p, Not):
        return literals_exact(p.item)
    values = [p.value] if isinstance(p, Compare) else list(p.values) if isinstance(p, InList) else [p.low, p.high]
    return all(isinstance(v, str) or (math.isfinite(v) and abs(v) < EXACT) for v in values)
