"""Global ranks out of core: the permutation paradigm's reverse mapping and rank swapping by
DuckDB's external sort (DESIGN.md sections 3 and 8).

Reverse mapping (seed 000, Algorithm 1) needs each released value's rank in its column and the
original column sorted: two sorts and a join per column, which DuckDB runs past memory (it
spills to a temporary directory beyond ``memory``). Ties in the released data are broken as in
memory: by order of appearance (``ties="first"``) or at random (``ties="random"``) by the keys
:func:`sdckit.core.ranks.tie_keys` draws chunk by chunk from the seed — written to a Parquet
file of keys by record, which the sort reads — so the result equals
:func:`sdckit.permutation.reverse_map` for the same seed.

Rank swapping (:func:`rank_swap_file`) streams each column's sorted order out of DuckDB and
chooses the swap partners in consecutive stretches with a buffer of the window (``p`` percent of
``n`` values of one column) plus a stretch; the release equals
:class:`sdckit.masking.RankSwapping`'s for the same seed.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdckit.core.atomic import atomic_path, refuse_input_overwrite
from sdckit.core.duckdb_session import connect, quote_identifier, quote_literal, relation
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.random import RandomState, as_generator, derive_seed
from sdckit.core.ranks import chunk_key_block
from sdckit.core.rowwise import CHUNK_ROWS, chunk_bounds, chunk_generator, rechunk
from sdckit.core.swapping import swap_partners_block
from sdckit.engine.sources import WholeFileRelease, open_parquet, source_format, spool_beside, write_by_chunks

_TIES = ("first", "random")


def reverse_map_file(
    original: str | Path,
    released: str | Path,
    target: str | Path,
    columns: Sequence[str],
    *,
    ties: str = "first",
    seed: RandomState = None,
    memory: int | None = None,
    temp_directory: str | Path | None = None,
) -> Path:
    """Write ``Z`` (Algorithm 1 of seed 000) for files larger than memory, as Parquet.

    Parameters
    ----------
    original, released : path
        ``X`` and ``Y`` (Parquet, or CSV read in file order), the same number of records.
    target : path
        The Parquet file of ``Z`` (``columns``, in the released file's record order), written
        atomically.
    columns : list of str
        Numeric columns to map.
    ties : {"first", "random"}
        Ties of ``Y`` broken by order of appearance, or at random from ``seed`` exactly as
        :func:`sdckit.permutation.reverse_map` breaks them with ``seed=seed`` (a column
        with ties draws a 128-bit key from the seed's generator, in column order; its records'
        keys are drawn chunk by chunk and written to a temporary Parquet file the sort reads).
    seed : int, str or Generator, optional
        The seed of random tie-breaking.
    memory : int, optional
        DuckDB's memory limit in bytes (the sorts spill to ``temp_directory`` past it).
    """
    if ties not in _TIES:
        raise ParameterError(f"The 'ties' parameter of reverse_map_file must be 'first' (order of appearance) or "
                             f"'random'. Got {ties!r} instead.")
    columns = list(columns)
    if not columns:
        raise ParameterError("The 'columns' parameter of reverse_map_file must name at least one column.")
    original, released, target = Path(original), Path(released), Path(target)
    x_fmt, y_fmt = source_format(original), source_format(released)
    refuse_input_overwrite(target, (original, released))
    con = connect(memory_limit=memory, temp_directory=temp_directory)
    try:
        x_rel = relation(con, original, x_fmt, columns=columns, row_numbers=True).sql
        y_rel = relation(con, released, y_fmt, columns=columns, row_numbers=True).sql
        n_x = con.execute(f"SELECT count(*) FROM {x_rel}").fetchone()[0]
        n_y = con.execute(f"SELECT count(*) FROM {y_rel}").fetchone()[0]
        if n_x != n_y:
            raise DataError(f"reverse_map_file needs as many released records as original ones; got {n_y} and {n_x}.")
        for name in columns:
            q = quote_identifier(name)
            missing = con.execute(f"SELECT count(*) FROM {x_rel} WHERE {q} IS NULL").fetchone()[0] + \
                con.execute(f"SELECT count(*) FROM {y_rel} WHERE {q} IS NULL").fetchone()[0]
            if missing:
                raise DataError(f"Column {name!r} is missing in {missing} record(s); ranks need complete data.")
        rng = as_generator(seed, secret=False) if ties == "random" else None
        spool = Path(tempfile.mkdtemp(prefix=".sdckit-ties-", dir=temp_directory))
        ctes, joins, select = [], [], []
        for j, name in enumerate(columns):
            q = quote_identifier(name)
            y_source, tie = y_rel, ""
            if rng is not None and _has_ties(con, y_rel, name):
                keys = write_tie_keys(spool / f"ties-{j}.parquet", n_y, derive_seed(rng))
                y_source = (f"(SELECT y.*, t.t AS __tie FROM {y_rel} y "
                            f"JOIN read_parquet({quote_literal(keys)}) t ON y.file_row_number = t.i)")
                tie = "__tie, "
            ctes.append(f"y{j} AS (SELECT file_row_number AS i, row_number() OVER (ORDER BY CAST({q} AS DOUBLE), "
                        f"{tie}file_row_number) AS r FROM {y_source})")
            ctes.append(f"x{j} AS (SELECT row_number() OVER (ORDER BY {q}, file_row_number) AS r, {q} AS z FROM {x_rel})")
            ctes.append(f"z{j} AS (SELECT y{j}.i, x{j}.z FROM y{j} JOIN x{j} ON y{j}.r = x{j}.r)")
            select.append(f"z{j}.z AS {q}")
            if j:
                joins.append(f"JOIN z{j} ON z{j}.i = z0.i")
        query = (f"WITH {', '.join(ctes)} SELECT {', '.join(select)} FROM z0 {' '.join(joins)} ORDER BY z0.i")
        try:
            with atomic_path(target) as tmp:
                con.execute(f"COPY ({query}) TO {quote_literal(tmp)} (FORMAT parquet)")
        finally:
            shutil.rmtree(spool, ignore_errors=True)
    finally:
        con.close()
    return target


def _has_ties(con: Any, records: str, name: str) -> bool:
    """Whether column ``name`` holds a value twice (as floats: the in-memory ranks' view)."""
    q = quote_identifier(name)
    return bool(con.execute(f"SELECT count(*) > count(DISTINCT CAST({q} AS DOUBLE)) FROM {records}").fetchone()[0])


def write_tie_keys(path: Path, n: int, key: int) -> Path:
    """A Parquet file of the tie keys (:func:`sdckit.core.ranks.tie_keys`) of ``n`` records,
    columns ``i`` (the record) and ``t`` (its key), written one logical chunk at a time."""
    writer = None
    try:
        for index, (a, b) in enumerate(chunk_bounds(n)):
            table = pa.table({"i": np.arange(a, b, dtype=np.int64), "t": chunk_key_block(key, index, b - a)})
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return path


# --------------------------------------------------------------------------- rank swapping
def _sorted_stream(con: Any, records: str, name: str, tie: str, batch_rows: int) -> Iterator[tuple[np.ndarray, Any]]:
    """(records, values) of column ``name`` in sorted order (value, tie key, record), in batches,
    read through a cursor of its own (closed when the stream is)."""
    q = quote_identifier(name)
    cursor = con.cursor()
    try:
        reader = cursor.sql(f"SELECT file_row_number AS i, {q} AS v FROM {records} "
                            f"ORDER BY CAST({q} AS DOUBLE), {tie}file_row_number").to_arrow_reader(batch_rows)
        for batch in reader:
            yield batch.column(0).to_numpy(), batch.column(1)
    finally:
        cursor.close()


def partners_by_stretches(n: int, window: int, stretch: int, draws_of: Any) -> Iterator[tuple[int, int, np.ndarray]]:
    """Rank swapping's partners of sorted positions ``0..n-1``, stretch by stretch: yields
    ``(start, stop, partner)`` with the (global) partner of each position of ``[start, stop)``.

    ``stretch >= window``, so a stretch's swaps reach at most into the next stretch; the
    positions taken ahead are carried over (marked not free, with their partners), which gives
    the partners :func:`sdckit.core.swapping.swap_partners_block` finds on the whole column.
    ``draws_of(start, stop)`` gives the uniforms of positions ``[start, stop)``.
    """
    if stretch < max(window, 1):
        raise ParameterError(f"A stretch ({stretch}) must hold at least the window ({window}).")
    carry = np.full(0, -1, dtype=np.int64)  # partners (global) of positions ahead taken earlier
    for start in range(0, n, stretch):
        stop = min(n, start + stretch)
        end = min(n, stop + window)
        length, process = end - start, stop - start
        free = np.ones(length, dtype=np.bool_)
        ahead = carry[:length]
        free[: len(ahead)] = ahead < 0
        local = swap_partners_block(length, process, window, draws_of(start, stop), free)
        partner = np.where(local >= 0, local + start, -1)
        partner[: len(ahead)] = np.where(ahead >= 0, ahead, partner[: len(ahead)])
        carry = partner[process:].copy()
        yield start, stop, partner[:process]


def _swap_column(con: Any, source: str, name: str, n: int, window: int, rng: np.random.Generator,
                 spool: Path, batch_rows: int) -> tuple[Path, float]:
    """Rank-swap one column: the swapped values in record order (a Parquet file of one column
    ``v``) and the share of records whose value moved."""
    tie = ""
    if _has_ties(con, source, name):
        keys = write_tie_keys(spool / f"ties-{name}.parquet", n, derive_seed(rng))
        source = (f"(SELECT y.*, t.t AS __tie FROM {source} y JOIN read_parquet({quote_literal(keys)}) t "
                  "ON y.file_row_number = t.i)")
        tie = "__tie, "
    key = derive_seed(rng)

    def draws_of(start: int, stop: int) -> np.ndarray:  # uniforms by logical chunk of sorted positions
        draws = np.empty(stop - start)
        for c in range(start // CHUNK_ROWS, -(-stop // CHUNK_ROWS)):
            a, b = c * CHUNK_ROWS, min(n, (c + 1) * CHUNK_ROWS)
            draws[a - start:b - start] = chunk_generator(key, c).random(b - a)
        return draws

    stretch = CHUNK_ROWS * max(1, -(-window // CHUNK_ROWS))  # a whole number of logical chunks >= window
    stream = _sorted_stream(con, source, name, tie, batch_rows)
    rows_buf = np.empty(0, dtype=np.int64)
    vals_buf: pa.ChunkedArray | None = None
    buf_start = 0  # sorted position of the buffer's first value
    moved = 0
    swapped_path = spool / f"swapped-{name}.parquet"
    writer = None
    try:
        for start, stop, partner in partners_by_stretches(n, window, stretch, draws_of):
            # the buffer holds the sorted values from the window behind to the window ahead
            while buf_start + len(rows_buf) < min(n, stop + window):
                rows, vals = next(stream)
                rows_buf = np.concatenate([rows_buf, rows])
                vals_buf = pa.chunked_array([vals]) if vals_buf is None else \
                    pa.chunked_array(vals_buf.chunks + [vals])
            # the value each record of the stretch receives: the value at its partner's position
            values = vals_buf.take(pa.array(partner - buf_start))
            records = rows_buf[start - buf_start: stop - buf_start]
            moved += int(np.count_nonzero(partner != np.arange(start, stop)))
            table = pa.table({"i": records, "v": values})
            writer = writer or pq.ParquetWriter(swapped_path, table.schema)
            writer.write_table(table)
            drop = max(0, stop - window - buf_start)  # keep the window behind the next stretch
            if drop:
                rows_buf = rows_buf[drop:]
                vals_buf = vals_buf.slice(drop)
                buf_start += drop
    finally:
        stream.close()
        if writer is not None:
            writer.close()
    ordered = spool / f"column-{name}.parquet"
    con.execute(f"COPY (SELECT v FROM read_parquet({quote_literal(swapped_path)}) ORDER BY i) "
                f"TO {quote_literal(ordered)} (FORMAT parquet)")
    swapped_path.unlink()
    return ordered, moved / n if n else 0.0


def rank_swap_file(
    source: str | Path,
    target: str | Path,
    p: float,
    columns: Sequence[str],
    *,
    seed: RandomState = None,
    output_format: str | None = None,
    memory: int | None = None,
    temp_directory: str | Path | None = None,
    batch_rows: int = CHUNK_ROWS,
    drop: Sequence[str] = (),
    sep: str | None = None,
    encoding: str = "utf-8",
    inputs: tuple[Path, ...] = (),
) -> WholeFileRelease:
    """Rank swapping (:class:`sdckit.masking.RankSwapping`) of a file larger than memory.

    Each column's records are sorted by DuckDB (value, then the random tie keys of
    :func:`sdckit.core.ranks.tie_keys` when the column has ties, then record), an external
    sort past ``memory``; the sorted order streams out and the partners are chosen in stretches
    of whole logical chunks (at least the window ``floor(p n / 100)``), holding the stretch, the
    window ahead and the window behind of one column; the swapped column is put back in record
    order by a second DuckDB sort, and the release written one chunk at a time. The same seed
    gives :class:`~sdckit.masking.RankSwapping`'s release in memory, byte for byte.

    Parameters
    ----------
    source, target : path
        Parquet or CSV/TSV in; the release (Parquet or CSV/TSV) is written atomically, with
        every column of the input (drop identifiers first).
    p : float in (0, 100]
        The largest rank difference, in percent of the number of records.
    columns : list of str
        Numeric columns to swap (swapped independently, in this order).
    seed : int, str or Generator, optional
        As ``RankSwapping(...).run(frame, seed=seed)``.
    memory : int, optional
        DuckDB's memory limit in bytes; the sorts spill to ``temp_directory`` past it.
    drop : list of str
        Columns left out of the release (the identifiers, when a recipe starts with it).
    sep, encoding : str, optional
        Of a CSV input.

    Returns
    -------
    WholeFileRelease
        The path, the record count, the report (``max_rank_difference``, ``swapped_share``,
        ``warnings``, as the method's) and the release's fingerprint.
    """
    from sdckit.io.files import detect_format

    if not isinstance(p, int | float) or isinstance(p, bool) or not 0 < p <= 100:
        raise ParameterError(f"The 'p' parameter of RankSwapping must be a number in (0, 100]. Got {p!r} instead.")
    columns = list(columns)
    if not columns:
        raise ParameterError("The 'columns' parameter of rank_swap_file must name at least one column.")
    source, target = Path(source), Path(target)
    fmt = source_format(source)
    fmt_out = detect_format(target, output_format)
    refuse_input_overwrite(target, (source, *inputs))
    rng = as_generator(seed)
    with contextlib.ExitStack() as stack:
        spool = stack.enter_context(spool_beside(target, ".sdckit-rankswap-", temp_directory))
        con = connect(memory_limit=memory, temp_directory=spool)
        stack.callback(con.close)  # closed before its temporary folder is removed
        rel = relation(con, source, fmt, columns=columns, row_numbers=True, sep=sep)
        records, kinds = rel.sql, rel.types
        for name in columns:
            if not any(t in kinds[name] for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "NUMBER")):
                raise DataError(f"Column {name!r} is not numeric; rank_swap_file swaps numeric columns "
                                "(ordinal and date columns: RankSwapping in memory).")
        n = con.execute(f"SELECT count(*) FROM {records}").fetchone()[0]
        if n == 0:
            raise DataError(f"{source.name!r} holds no records; nothing to protect.")
        for name in columns:
            q = quote_identifier(name)
            missing = con.execute(f"SELECT count(*) FROM {records} WHERE {q} IS NULL OR isnan(CAST({q} AS DOUBLE))"
                                  ).fetchone()[0]
            if missing:
                raise DataError(f"RankSwapping cannot handle missing values: column {name!r} is missing in "
                                f"{missing} record(s). Impute or remove them first.")
        window = int(np.floor(p * n / 100.0))
        swapped, moved = {}, {}
        for name in columns:
            swapped[name], moved[name] = _swap_column(con, records, name, n, window, rng, spool, batch_rows)
        streams = {name: rechunk(b.to_pandas() for b in open_parquet(path).iter_batches(batch_size=batch_rows))
                   for name, path in swapped.items()}

        def put_back(chunk: pd.DataFrame) -> pd.DataFrame:
            for name, stream in streams.items():
                values = next(stream)["v"]
                chunk[name] = pd.Series(values.to_numpy(), index=chunk.index, name=name).astype(chunk[name].dtype)
            return chunk

        fingerprint = write_by_chunks(source, fmt, target, fmt_out, spool, put_back, batch_rows=batch_rows,
                                      drop=drop, sep=sep, encoding=encoding, inputs=inputs)
    warnings = []
    if window == 0:
        warnings.append(f"RankSwapping with p={p} on {n} records allows a rank difference of 0, so nothing was "
                        "swapped; raise p.")
    info = {"max_rank_difference": window, "swapped_share": moved, "warnings": warnings}
    return WholeFileRelease(target, n, info, fingerprint)
