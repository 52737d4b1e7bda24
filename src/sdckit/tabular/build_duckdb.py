"""Building a table from a file through DuckDB, never holding the records in memory.

The records are reduced by one ``GROUP BY`` over the leaf codes (DuckDB, out of core: it spills
past its memory budget): per leaf cell the number of records, the (weighted) response total and
the ``top`` largest contributions (DuckDB's ``max(x, n)``). The subtotals then follow by the same
roll-up as :meth:`Table.from_microdata` (a record lies in exactly one leaf cell, so a parent's
largest contributions are among its children's). With a holding column the contributions are
per holding and cell, which do not roll up from the leaves' largest: the (leaf cell, holding)
sums are joined in DuckDB with each dimension's (code, ancestor-or-self) pairs and grouped by
the ancestors — the roll-up of ``GROUP BY ROLLUP`` generalised to hierarchies of any depth (a
ROLLUP/CUBE over level columns only fits hierarchies whose leaves all lie at one depth).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.duckdb_session import Relation, connect, quote_identifier, relation
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.sources import source_format
from sdckit.tabular.dimensions import hierarchies_for, leaf_positions
from sdckit.tabular.rollup import ancestor_pairs, rollup_rows, rollup_sums, top_matrix, top_per_cell

_SUPPORTED = ("csv", "tsv", "parquet")


def _open(path: Path, fmt: str, dims: Sequence[str], memory: int | None = None) -> tuple[Any, Relation]:
    """A DuckDB session (2 threads, at most ``memory`` bytes) and the file read as ``fmt`` (CSV
    columns as text: '01' must stay '01'), once found to hold every dimension column (else a
    one-line DataError). The caller closes the connection."""
    con = connect(memory_limit=memory, threads=2)
    try:
        rel = relation(con, path, fmt, columns=dims, role="dimension", all_varchar=True)
    except BaseException:
        con.close()
        raise
    return con, rel


def file_codes(path: str | Path, dimensions: Sequence[str], input_format: str | None = None) -> dict[str, list[str]]:
    """The sorted distinct codes (trimmed text) of each dimension column of a CSV/TSV/Parquet
    file, by one DuckDB scan (what a hierarchy given by code lengths is built from)."""
    import duckdb

    path = Path(path)
    fmt = source_format(path, input_format)
    con, rel = _open(path, fmt, dimensions)
    try:
        out = {}
        for d in dimensions:
            q = quote_identifier(d)
            rows = con.execute(f"SELECT DISTINCT TRIM(CAST({q} AS VARCHAR)) FROM {rel.sql} "
                               f"WHERE {q} IS NOT NULL").fetchall()
            out[d] = sorted(r[0] for r in rows)
    except duckdb.Error as exc:
        raise rel.unreadable(exc) from None
    finally:
        con.close()
    return out


def build_from_file(cls: Any, path: str | Path, dimensions: Sequence[str],
                    hierarchies: Mapping[str, Any] | Sequence[Any] | None = None,
                    response: str | None = None, weight: str | None = None,
                    holding: str | None = None, top: int = 3, total: str = "Total",
                    input_format: str | None = None, memory: int | None = None) -> Any:
    """The body of :meth:`sdckit.tabular.Table.from_file` (see there)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"The table input file {str(path)!r} does not exist.")
    fmt = source_format(path, input_format)
    if fmt not in _SUPPORTED:
        raise ParameterError(f"Table.from_file reads CSV, TSV or Parquet; {path.name!r} is {fmt}.")
    if isinstance(dimensions, str):
        dimensions = [dimensions]
    dims = list(dimensions)
    if not dims:
        raise ParameterError("The 'dimensions' parameter of Table.from_file must name at least one column.")
    if len(set(dims)) != len(dims):
        raise ParameterError(f"The 'dimensions' parameter of Table.from_file repeats a column: {dims}.")
    if not isinstance(top, (int, np.integer)) or isinstance(top, bool) or top < 1:
        raise ParameterError(f"The 'top' parameter of Table.from_file must be an int >= 1. Got {top!r} instead.")
    q = quote_identifier
    con, rel = _open(path, fmt, dims, memory)
    try:
        for col, what in ((response, "response"), (weight, "weight"), (holding, "holding")):
            if col is not None:
                rel.require([col], role=what)
        # checks on the records: missing codes, missing or non-numeric numbers (named, never quoted)
        checks = [f"COUNT(*) FILTER (WHERE {q(d)} IS NULL OR TRIM(CAST({q(d)} AS VARCHAR)) = '')" for d in dims]
        nums = [(c, w) for c, w in ((response, "response"), (weight, "weight")) if c is not None]
        checks += [f"COUNT(*) FILTER (WHERE TRY_CAST({q(c)} AS DOUBLE) IS NULL)" for c, _ in nums]
        if holding is not None:
            checks.append(f"COUNT(*) FILTER (WHERE {q(holding)} IS NULL)")
        bad = con.execute(f"SELECT {', '.join(checks)} FROM {rel.sql}").fetchone()
        for d, b in zip(dims, bad[:len(dims)]):
            if b:
                raise DataError(f"Column {d!r} has missing codes ({b} records); recode them to a code of "
                                "the hierarchy.")
        for (c, what), b in zip(nums, bad[len(dims):len(dims) + len(nums)]):
            if b:
                raise DataError(f"The {what} column {c!r} has missing or non-numeric entries ({b} records).")
        if holding is not None and bad[-1]:
            raise DataError(f"The holding column {holding!r} has missing entries ({bad[-1]} records).")

        codes = [f"TRIM(CAST({q(d)} AS VARCHAR)) AS __d{k}" for k, d in enumerate(dims)]
        keys = ", ".join(f"__d{k}" for k in range(len(dims)))
        w = f"CAST({q(weight)} AS DOUBLE)" if weight else "1.0"
        y = f"CAST({q(response)} AS DOUBLE)" if response else "1.0"
        hcol = f", CAST({q(holding)} AS VARCHAR) AS __h" if holding is not None else ""
        con.execute(f"CREATE TEMP VIEW recs AS SELECT {', '.join(codes)}, {w} * {y} AS __c{hcol} FROM {rel.sql}")
        leaf = con.execute(
            f"SELECT {keys}, COUNT(*) AS __n, SUM(__c) AS __v, MIN(__c) AS __min"
            + ("" if holding is not None else f", max(__c, {int(top)}) AS __top")
            + f" FROM recs GROUP BY {keys}").df()

        codes_seen = pd.DataFrame({d: leaf[f"__d{k}"] for k, d in enumerate(dims)})
        hier = hierarchies_for(dims, hierarchies, codes_seen, total)
        shape = tuple(len(h) for h in hier)
        N = int(np.prod(shape))
        pos = np.empty((len(leaf), len(dims)), dtype=np.int64)
        maps = []
        for k, (d, h) in enumerate(zip(dims, hier)):
            uniq, inv = np.unique(leaf[f"__d{k}"].to_numpy(dtype=str), return_inverse=True)
            mapped = leaf_positions(d, uniq.tolist(), h)
            pos[:, k] = mapped[inv]
            maps.append(dict(zip(uniq.tolist(), mapped.tolist())))
        leafcell = np.ravel_multi_index(pos.T, shape) if len(leaf) else np.zeros(0, np.int64)
        anc = [ancestor_pairs(h) for h in hier]
        value = np.zeros(N)
        value[leafcell] = leaf["__v"].to_numpy(float)
        freq = np.zeros(N)
        freq[leafcell] = leaf["__n"].to_numpy(float)
        value = rollup_sums(value, shape, anc)
        freq = np.rint(rollup_sums(freq, shape, anc)).astype(np.int64)
        negative = bool(len(leaf) and (leaf["__min"].to_numpy(float) < 0).any())
        if holding is None:
            ncontrib = freq.copy()
            lens = leaf["__top"].map(len).to_numpy(np.int64)
            cell = np.repeat(leafcell, lens)
            val = np.concatenate([np.asarray(t, float) for t in leaf["__top"]]) if len(leaf) else np.zeros(0)
            cell, val = top_per_cell(cell, val, top)
            cell, _, val = rollup_rows(cell, None, val, shape, anc, top)
            tops = top_matrix(cell, val, N, top)
        else:
            ncontrib, tops = _holding_rollup(con, dims, hier, maps, shape, N, int(top))
    finally:
        con.close()
    return cls._build(dims, hier, value, freq, ncontrib, tops, response, negative)


def _holding_rollup(con: Any, dims: list[str], hier: list, maps: list[dict], shape: tuple[int, ...],
                    N: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Contributors (holdings) and the ``top`` largest holding contributions of every cell: the
    (leaf cell, holding) sums joined with each dimension's (leaf, ancestor-or-self) pairs and
    grouped by the ancestors, in DuckDB."""
    for k, h in enumerate(hier):
        par = np.asarray(h.parents)
        rows = []
        for code, i in maps[k].items():
            j = i
            while j >= 0:
                rows.append((code, j))
                j = par[j]
        con.register(f"__anc{k}_df", pd.DataFrame(rows, columns=["code", "pos"]).astype({"pos": np.int64}))
        con.execute(f"CREATE TEMP TABLE __anc{k} AS SELECT * FROM __anc{k}_df")
    keys = ", ".join(f"__d{k}" for k in range(len(dims)))
    con.execute(f"CREATE TEMP TABLE __lh AS SELECT {keys}, __h, SUM(__c) AS __v FROM recs GROUP BY {keys}, __h")
    joins = " ".join(f"JOIN __anc{k} a{k} ON a{k}.code = __lh.__d{k}" for k in range(len(dims)))
    # the flat cell number, C order: sum of pos_k * stride_k
    strides = np.cumprod((1,) + shape[::-1])[::-1][1:]
    flat = " + ".join(f"a{k}.pos * {int(s)}" for k, s in enumerate(strides))
    res = con.execute(
        f"WITH ch AS (SELECT {flat} AS cell, __h, SUM(__v) AS v FROM __lh {joins} GROUP BY cell, __h) "
        f"SELECT cell, COUNT(*) AS n, max(v, {top}) AS top FROM ch GROUP BY cell").df()
    ncontrib = np.zeros(N, np.int64)
    tops = np.zeros((N, top))
    cells = res["cell"].to_numpy(np.int64)
    ncontrib[cells] = res["n"].to_numpy(np.int64)
    for c, t in zip(cells, res["top"]):
        t = np.sort(np.asarray(t, float))[::-1]
        tops[c, :len(t)] = t
    return ncontrib, tops
