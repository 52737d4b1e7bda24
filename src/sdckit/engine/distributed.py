"""The ``"dask"`` engine: logical chunks as tasks on a ``dask.distributed`` cluster.

A task reads its own logical chunk of the Parquet input (only the row groups the chunk spans),
runs the planned steps on it with the chunk's own random streams and writes a Parquet part;
the parts are joined in chunk order. Statistics are computed per chunk by tasks and merged in
chunk order by the caller, so the release is the same bytes as the other engines'. Without a
client or a scheduler address a ``LocalCluster`` is started for the run (and closed after).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.method import Method, Outcome, require_no_new_missing
from sdckit.core.rowwise import CHUNK_ROWS, chunk_bounds, chunk_generator, merge_all, step_key
from sdckit.core.schema import Schema
from sdckit.engine.plan import PlannedStep, Progress, build_plan, chunk_statistics, run_chunk
from sdckit.engine.sources import PartWriter, open_parquet, read_chunk


@contextlib.contextmanager
def dask_client(client: Any = None, scheduler: str | None = None, *, workers: int = 2,
                processes: bool = True, memory_limit: str | int = "auto") -> Iterator[Any]:
    """The client to run on: ``client`` as given, one connected to ``scheduler``, or a
    ``LocalCluster`` of ``workers`` workers started here and closed on exit."""
    if client is not None:
        yield client
        return
    from dask.distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            connected = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ParameterError(f"Cannot reach the Dask scheduler at {scheduler!r}: {exc}.") from None
        with connected:
            yield connected
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                      memory_limit=memory_limit, dashboard_address=None) as cluster, Client(cluster) as local:
        yield local


def _load(source: str | list[str], index: int, dropped: list[str]) -> pd.DataFrame:
    chunk = read_chunk([Path(source)] if isinstance(source, str) else [Path(p) for p in source], index)
    return chunk.drop(columns=dropped) if dropped else chunk


def _statistics_task(source: str | list[str], index: int, dropped: list[str], before: list[PlannedStep], method: Method,
                     columns: tuple[str, ...]) -> Any:
    return chunk_statistics(_load(source, index, dropped), index, before, method, columns)


def _write_task(source: str | list[str], index: int, dropped: list[str], steps: list[PlannedStep], spool: str
                ) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    out, infos = run_chunk(_load(source, index, dropped), index, steps)
    writer = PartWriter(Path(spool) / f"part-{index:06d}.parquet")
    try:
        writer.write(out)
    finally:
        writer.close()
    return writer.rows, writer.dtypes, infos


def _gather_in_order(client: Any, futures: list[Any], progress: Progress | None, label: str) -> list[Any]:
    if progress is not None:
        from dask.distributed import as_completed

        for done, _ in enumerate(as_completed(futures), start=1):
            progress(done, len(futures), label)
    return client.gather(futures)


def run_dask(methods: Sequence[Method], schema: Schema, rng: np.random.Generator, head: pd.DataFrame,
             source: Path | Sequence[Path], spool: Path, batch_rows: int, dropped: list[str], client: Any,
             scheduler: str | None, progress: Progress | None
             ) -> tuple[list[PlannedStep], list[Path], dict[str, str], list[list[dict[str, Any]]], int]:
    """Plan and run the steps over the chunks of ``source`` (a Parquet file, or Parquet parts in
    order) on Dask; parts go to ``spool``."""
    files = [Path(source)] if isinstance(source, str | Path) else [Path(p) for p in source]
    rows = sum(open_parquet(f).metadata.num_rows for f in files)
    indices = list(range(-(-rows // CHUNK_ROWS)))
    source = [str(f) for f in files]  # type: ignore[assignment]
    with dask_client(client, scheduler) as dc:
        def statistics_of(before: list[PlannedStep], method: Method, columns: tuple[str, ...]) -> list[Any]:
            futures = dc.map(_statistics_task, [source] * len(indices), indices, dropped=dropped,
                             before=before, method=method, columns=columns, pure=False)
            return _gather_in_order(dc, futures, progress, f"statistics of {type(method).__name__}")

        steps = build_plan(methods, schema, rng, head, statistics_of, None)
        futures = dc.map(_write_task, [source] * len(indices), indices, dropped=dropped, steps=steps,
                         spool=str(spool), pure=False)
        results = _gather_in_order(dc, futures, progress, "chunks protected")
    infos: list[list[dict[str, Any]]] = [[r[2][i] for r in results] for i in range(len(steps))]
    parts = [spool / f"part-{i:06d}.parquet" for i in indices]
    return steps, parts, results[0][1], infos, sum(r[0] for r in results)


# --------------------------------------------------------------------------- a frame in memory
def _frame_statistics(chunk: pd.DataFrame, method: Method, columns: tuple[str, ...]) -> Any:
    return method.chunk_statistics(chunk, columns)


def _frame_transform(chunk: pd.DataFrame, index: int, method: Method, columns: tuple[str, ...], schema: Schema,
                     step: int, statistics: Any) -> Outcome:
    result = method.transform_rows(chunk.copy(), columns, schema, chunk_generator(step, index), statistics)
    return result if isinstance(result, Outcome) else Outcome(result, schema)


def run_rows_dask(method: Method, frame: pd.DataFrame, schema: Schema, rng: np.random.Generator,
                  client: Any) -> Outcome:
    """One row-wise step over an in-memory frame, chunks as Dask tasks (the frame's chunks are
    scattered to the workers); the same output as :meth:`Method.run`."""
    schema, columns = method.prepare(frame, schema)
    key = step_key(rng)
    chunks = [frame.iloc[a:b] for a, b in chunk_bounds(len(frame))]
    scattered = client.scatter(chunks)
    stats = None
    if method.needs_statistics():
        parts = client.gather(client.map(_frame_statistics, scattered, method=method, columns=columns, pure=False))
        stats = method.finish_statistics(merge_all(parts, method.merge_statistics))
    outcomes = client.gather(client.map(_frame_transform, scattered, list(range(len(chunks))), method=method,
                                        columns=columns, schema=schema, step=key, statistics=stats, pure=False))
    data = outcomes[0].data if len(outcomes) == 1 else pd.concat([o.data for o in outcomes])
    if not method.suppresses:
        require_no_new_missing(frame, data, type(method).__name__)
    return Outcome(data, outcomes[-1].schema, method.merge_info([o.info for o in outcomes], stats))


# --------------------------------------------------------------------------- CSV input
def _csv_block(block: bytes, header: bytes, index: int, options: dict[str, Any],
               dtypes: dict[str, Any] | None) -> pd.DataFrame:
    """Records of one byte block of a CSV file (the header line put before every block but the
    first), read as ``pd.read_csv`` reads them."""
    import io

    data = block if index == 0 else header + block
    if not data.strip():
        return pd.DataFrame()
    return pd.read_csv(io.BytesIO(data), dtype=dtypes or None, **options)


def _csv_block_dtypes(block: bytes, header: bytes, index: int, options: dict[str, Any]) -> dict[str, str]:
    frame = _csv_block(block, header, index, options, None)
    return {str(c): str(frame[c].dtype) for c in frame.columns} if len(frame) else {}


def _csv_block_part(block: bytes, header: bytes, index: int, options: dict[str, Any], dtypes: dict[str, Any],
                    target: str) -> int:
    frame = _csv_block(block, header, index, options, dtypes)
    if len(frame) == 0:
        return 0
    writer = PartWriter(Path(target))
    try:
        writer.write(frame)
    finally:
        writer.close()
    return len(frame)


def csv_to_parts(path: Path, fmt: str, spool: Path, client: Any, *, sep: str | None = None,
                 encoding: str = "utf-8", blocksize: int = 64_000_000) -> list[Path]:
    """A CSV/TSV file as Parquet parts written by the workers, one per byte block of
    ``blocksize`` bytes cut at line ends (``dask.bytes.read_bytes``, as ``dask.dataframe.read_csv``
    cuts it), in file order; the columns' dtypes are those of the whole file read at once
    (:func:`~sdckit.engine.sources.merge_csv_dtypes` of the blocks' own dtypes, a first pass
    run by the workers). A quoted field holding a line break is not supported (as in Dask)."""
    import dask
    from dask.bytes import read_bytes

    from sdckit.engine.sources import csv_options, merge_csv_dtypes

    if not isinstance(blocksize, int) or isinstance(blocksize, bool) or blocksize < 1024:
        raise ParameterError(f"The 'blocksize' parameter must be an int >= 1024 (bytes). Got {blocksize!r} instead.")
    options = csv_options(path, fmt, sep, encoding)
    sample, blocks = read_bytes(str(path), delimiter=b"\n", blocksize=blocksize, sample=1 << 16)
    header = sample.split(b"\n", 1)[0] + b"\n"
    blocks = list(blocks[0])
    kinds = client.gather(client.compute([dask.delayed(_csv_block_dtypes)(b, header, i, options)
                                          for i, b in enumerate(blocks)]))
    seen: dict[str, set[str]] = {}
    for found in kinds:
        for name, kind in found.items():
            seen.setdefault(name, set()).add(kind)
    dtypes = merge_csv_dtypes(seen)
    spool.mkdir(parents=True, exist_ok=True)
    targets = [spool / f"input-{i:06d}.parquet" for i in range(len(blocks))]
    rows = client.gather(client.compute([dask.delayed(_csv_block_part)(b, header, i, options, dtypes, str(t))
                                         for i, (b, t) in enumerate(zip(blocks, targets, strict=True))]))
    return [t for t, r in zip(targets, rows, strict=True) if r > 0]
