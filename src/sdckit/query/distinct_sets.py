"""COUNT(DISTINCT c) of a many-valued column from the cube (issue 32): per cube row, the set of
the values of ``c`` its records hold, as a bitset.

The scan (:func:`~sdckit.query.generate.aggregate_sql`) counts ``COUNT(DISTINCT c)``: the
distinct values of ``c`` *as they are* (not clamped) among the dp relation's records a cell
selects, a missing value not counted, two values the same when DuckDB's equality says so
(``-0.0 = 0.0``, every NaN one value, text byte for byte). A cube row's records all fall in the
same cell or none (:meth:`~sdckit.query.cube.Cube.rows`), so a cell's distinct values are the
union of its selected cube rows' value sets, and its count is the number of bits of the OR of
their bitsets (a bitmap index, O'Neil 1987, transposed: one bit per value, no hashing, exact).

Built once at start-up, for each declared column of the dp relation outside the cube (nested
types left out), one DuckDB statement (configuration names only, no analyst's value)::

    SELECT k1, .., code >> 6 AS w, BIT_OR(1 << (code & 63)) FROM sdc_dp_<t> .. GROUP BY ALL

``code`` numbering the distinct non-missing values: ``c - min(c)`` for an integer column whose
range is at most about twice its number of values (:data:`DENSE`), else the value's row number
in ``SELECT DISTINCT c`` joined back on ``c`` (DuckDB's equality: the join matches exactly the
values ``DISTINCT`` merges). DuckDB aggregates the words, so its memory holds (cube rows x words)
groups, never (cube row, value) pairs: 400 cube rows and 250,000 values make 1.6e6, whatever the
number of records. Numpy never compares values, only codes.

Memory: (cube rows) x (values / 64) words of 8 bytes per column. The sets of a table are kept
while they fit in :data:`MAX_BYTES` and in :data:`BYTES_PER_RECORD` bytes per record (a query
ORs at most all of them: at ~32 bytes per record still several times faster than a scan);
columns are taken in the configuration's order and one past the limit is left to the scan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.core.result import Result, plain
from sdckit.query.cube import Cube
from sdckit.query.generate import group_alias
from sdckit.query.relnames import relation_name

#: The bitsets of one table's columns are kept while they fit in this many bytes ...
MAX_BYTES = 256 * 2**20
#: ... and in this many bytes per record of the dp relation.
BYTES_PER_RECORD = 32
#: An integer column is numbered by ``c - min(c)`` when its range is at most this times its
#: (estimated) number of distinct values, plus 64; else by a dictionary of its values.
DENSE = 2
#: Integer columns numbered by their range lie within +/- this bound (exact in BIGINT).
_RANGE_LIMIT = 2**62
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT")
_NESTED = ("[", "STRUCT", "MAP", "UNION")
_q = quote_identifier
_WORD, _BITS = "w", "bits"
_BYTE_COUNTS = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def popcount(words: np.ndarray, lookup: bool | None = None) -> np.ndarray:
    """The number of set bits of each row of the uint64 matrix ``words``, as int64:
    ``np.bitwise_count`` on numpy >= 2, else (or with ``lookup``) a table of the 256 bytes."""
    if lookup is None:
        lookup = not hasattr(np, "bitwise_count")
    if not lookup:
        return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
    return _BYTE_COUNTS[np.ascontiguousarray(words).view(np.uint8)].sum(axis=-1, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class DistinctSets(Result):
    """Per many-valued column, per cube row, the bitset of its values (module description)."""

    cube: Cube
    #: per column: (cube rows x words) uint64, bit ``code`` set when a record of the row has that value
    bits: dict[str, np.ndarray] = field(metadata={"dict": False})

    def to_dict(self) -> dict[str, Any]:
        return plain({"columns": {c: list(b.shape) for c, b in self.bits.items()},
                      "bytes": sum(b.nbytes for b in self.bits.values())})

    @classmethod
    def build(cls, con: Any, cube: Cube, max_bytes: int = MAX_BYTES,
              bytes_per_record: int = BYTES_PER_RECORD) -> DistinctSets:
        """The value sets of ``cube``'s dp relation (in the DuckDB connection ``con``) for every
        declared column outside the cube, while they fit (module description)."""
        table = cube.table
        relation = _q(relation_name(table, "dp"))
        types = {row[0]: str(row[1]).upper() for row in con.execute(f"DESCRIBE {relation}").fetchall()}
        columns = [c for c in table.queryable if c in types and c not in cube.keys
                   and not any(n in types[c] for n in _NESTED)]
        if not columns:
            return cls(cube, {})
        integer = {c for c in columns if types[c].startswith(_INTEGER_TYPES)}
        stats = con.execute("SELECT COUNT(*)" + "".join(
            f", approx_count_distinct({_q(c)})"
            + (f", CAST(MIN({_q(c)}) AS HUGEINT), CAST(MAX({_q(c)}) AS HUGEINT)" if c in integer else ", 0, 0")
            for c in columns) + f" FROM {relation}").fetchone()
        limit = min(max_bytes, bytes_per_record * int(stats[0]))
        bits: dict[str, np.ndarray] = {}
        used = 0
        for i, column in enumerate(columns):
            estimate, low, high = stats[1 + 3 * i: 4 + 3 * i]
            dense = (column in integer and low is not None and -_RANGE_LIMIT < int(low) <= int(high) < _RANGE_LIMIT
                     and int(high) - int(low) + 1 <= DENSE * int(estimate) + 64)
            width = int(high) - int(low) + 1 if dense else math.ceil(1.05 * int(estimate))
            if used + cube.size * 8 * -(-width // 64) > limit:
                continue
            found = _sets(con, cube, column, int(low) if dense else None)
            if used + found.nbytes <= limit:
                bits[column] = found
                used += found.nbytes
        return cls(cube, bits)

    def counts(self, column: str, keep: np.ndarray, cell: np.ndarray, n_cells: int) -> np.ndarray:
        """``COUNT(DISTINCT column)`` per answer cell (int64) of the cube rows ``keep`` in their
        ``cell`` (:meth:`~sdckit.query.cube.Cube.rows`): the set bits of the OR of their bitsets."""
        out = np.zeros(n_cells, dtype=np.int64)
        bits = self.bits[column]
        rows = np.flatnonzero(keep)
        if rows.size == 0 or bits.shape[1] == 0:
            return out
        rows = rows[np.argsort(cell[rows], kind="stable")]
        cells = cell[rows]
        starts = np.flatnonzero(np.concatenate([[True], cells[1:] != cells[:-1]]))
        out[cells[starts]] = popcount(np.bitwise_or.reduceat(bits[rows], starts, axis=0))
        return out


def _sets(con: Any, cube: Cube, column: str, low: int | None) -> np.ndarray:
    """The (cube rows x words) bitsets of ``column``: codes ``c - low`` (``low`` given) or the
    row numbers of a dictionary of its distinct values (module description)."""
    table, keys = cube.table, list(cube.keys)
    relation, c = _q(relation_name(table, "dp")), _q(column)
    selects = [f"__sdc_r.{_q(k)} AS {group_alias(i)}" for i, k in enumerate(keys)]
    if low is not None:
        code, source, params = f"(CAST(__sdc_r.{c} AS BIGINT) - ?)", f"{relation} AS __sdc_r", [low, low]
        where = f" WHERE __sdc_r.{c} IS NOT NULL"
    else:  # a join on DuckDB's equality: the values DISTINCT merges get one code
        code, params, where = "__sdc_d.__sdc_code", [], ""
        source = (f"{relation} AS __sdc_r JOIN (SELECT __sdc_v, row_number() OVER () - 1 AS __sdc_code FROM "
                  f"(SELECT DISTINCT {c} AS __sdc_v FROM {relation} WHERE {c} IS NOT NULL)) AS __sdc_d "
                  f"ON __sdc_r.{c} = __sdc_d.__sdc_v")
    selects.append(f"CAST({code} >> 6 AS BIGINT) AS {_WORD}")
    selects.append(f"bit_or(CAST(1 AS UBIGINT) << CAST({code} & 63 AS UBIGINT)) AS {_BITS}")
    sql = f"SELECT {', '.join(selects)} FROM {source}{where} GROUP BY ALL ORDER BY ALL"
    result = con.cursor().execute(sql, params).fetchnumpy()
    words = np.asarray(result[_WORD], dtype=np.int64)
    out = np.zeros((cube.size, int(words.max()) + 1 if words.size else 0), dtype=np.uint64)
    out[cube.parent_rows(result), words] = np.asarray(result[_BITS], dtype=np.uint64)
    return out
