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


def _load(source: str, index: int, dropped: list[str]) -> pd.DataFrame:
    chunk = read_chunk(Path(source), index)
    return chunk.drop(columns=dropped) if dropped else chunk


def _statistics_task(source: str, index: int, dropped: list[str], before: list[PlannedStep], method: Method,
                     columns: tuple[str, ...]) -> Any:
    return chunk_statistics(_load(source, index, dropped), index, before, method, columns)


def _write_task(source: str, index: int, dropped: list[str], steps: list[PlannedStep], spool: str
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
             source: Path, spool: Path, batch_rows: int, dropped: list[str], client: Any,
             scheduler: str | None, progress: Progress | None
             ) -> tuple[list[PlannedStep], list[Path], dict[str, str], list[list[dict[str, Any]]], int]:
    """Plan and run the steps over the chunks of ``source`` on Dask; parts go to ``spool``."""
    rows = open_parquet(source).metadata.num_rows
    indices = list(range(-(-rows // CHUNK_ROWS)))
    with dask_client(client, scheduler) as dc:
        def statistics_of(before: list[PlannedStep], method: Method, columns: tuple[str, ...]) -> list[Any]:
            futures = dc.map(_statistics_task, [str(source)] * len(indices), indices, dropped=dropped,
                             before=before, method=method, columns=columns, pure=False)
            return _gather_in_order(dc, futures, progress, f"statistics of {type(method).__name__}")

        steps = build_plan(methods, schema, rng, head, statistics_of, None)
        futures = dc.map(_write_task, [str(source)] * len(indices), indices, dropped=dropped, steps=steps,
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
