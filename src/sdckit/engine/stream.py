"""Row-wise methods over a file with bounded memory: the ``"duckdb"`` (out-of-core, one process)
and ``"dask"`` engines (DESIGN.md section 8).

Both read the input by logical chunks (:mod:`sdckit.engine.sources`), plan the steps
(:func:`sdckit.engine.plan.build_plan`: keys from the one seed, statistics by a pass per step
that needs them) and write the release chunk by chunk, then its manifest. The out-of-core engine
holds one chunk (65,536 records) at a time; the Dask engine runs chunks as tasks on a
``dask.distributed`` cluster, each writing its own Parquet part, joined in chunk order at the end.
The output is the same bytes as the in-memory engine's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.method import Method
from sdckit.core.provenance import UNPUBLISHED, Step, build_manifest, parse_fingerprint_key
from sdckit.core.random import RandomState, as_generator, seed_provenance
from sdckit.core.result import Result, plain
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.core.schema import Schema
from sdckit.engine.plan import (PlannedStep, Progress, build_plan, chunk_statistics, prepare_schema,
                                require_streamable, run_chunk, runs_on_file, step_columns)
from sdckit.io.files import detect_format
from sdckit.engine.sources import (PartWriter, csv_dtypes, finish_output, iter_chunks, open_parquet, read_chunk,
                                   source_format, spool_beside, stream_fingerprint)

#: The engines, by name.
ENGINES = ("memory", "duckdb", "dask")


@dataclass(frozen=True)
class StreamedRelease(Result):
    """What a streamed run produced: the release file, its schema and its manifest."""

    path: Path
    schema: Schema
    manifest: dict[str, Any]
    steps: tuple[Step, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The release's path, schema and manifest (the steps are in the manifest)."""
        return plain({"path": self.path, "schema": self.schema.to_dict(), "manifest": self.manifest})

    def summary(self) -> list[tuple[str, str]]:
        """The release file, its columns and the methods applied."""
        return [("release", str(self.path)), ("columns", f"{len(self.schema.columns):,}"),
                ("methods applied", str(len(self.steps)))]


def check_engine(engine: str) -> str:
    """``engine`` if it is one of :data:`ENGINES`, else a :class:`ParameterError` naming them."""
    if engine not in ENGINES:
        raise ParameterError(f"The 'engine' parameter must be one of {', '.join(ENGINES)}. Got {engine!r} instead.")
    return engine


def protect_file(
    source: str | Path,
    target: str | Path,
    methods: Method | Sequence[Method],
    *,
    engine: str = "duckdb",
    schema: Schema | dict[str, Any] | None = None,
    seed: RandomState = None,
    keep_identifiers: bool = False,
    input_format: str | None = None,
    output_format: str | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
    batch_rows: int = CHUNK_ROWS,
    blocksize: int = 64_000_000,
    scheduler: str | None = None,
    client: Any = None,
    progress: Progress | None = None,
    inputs: tuple[Path, ...] = (),
    fingerprint_key: bytes | str | None = None,
) -> StreamedRelease:
    """Protect a Parquet or CSV file with row-wise methods, writing the release as it goes.

    Parameters
    ----------
    source, target : path
        The input and the release (Parquet or CSV/TSV, from the extension unless
        ``input_format`` / ``output_format`` say). The release is written atomically.
    methods : method or sequence of methods
        Row-wise methods only (``needs == "rows"``, not per stratum); another is refused.
    engine : {"duckdb", "dask"}
        ``"duckdb"``: out of core in this process, one logical chunk in memory at a time.
        ``"dask"``: chunks as tasks on a ``dask.distributed`` cluster — ``client``, or one
        connected to ``scheduler`` (an address), or a LocalCluster started for the run (workers
        must see the input's and output's folder). A CSV/TSV input is first cut by the workers
        into byte blocks of ``blocksize`` at line ends (as ``dask.dataframe.read_csv`` cuts it)
        and written as Parquet parts, read with the dtypes of the whole file read at once.
    schema, seed, keep_identifiers
        As :func:`sdckit.pipeline.protect`; a schema not given is inferred from the first
        logical chunk.
    batch_rows : int
        Records a reader delivers at a time (the logical chunks do not depend on it).
    blocksize : int
        Bytes of a CSV block on the ``"dask"`` engine (the release does not depend on it).
    progress : callable ``(done, total, label)``, optional
    fingerprint_key : bytes or hex str, optional
        As :func:`~sdckit.pipeline.protect`: with it, a Parquet input's keyed fingerprint is
        computed by streaming (the same value as in memory); the fingerprints between steps are
        not computed on a stream.

    Returns
    -------
    StreamedRelease
        The release's path, schema and manifest (fingerprints computed by streaming; the input's
        is not published, as in :func:`~sdckit.pipeline.protect` without a fingerprint key).
    """
    check_engine(engine)
    if engine == "memory":
        raise ParameterError("protect_file streams: use engine='duckdb' or 'dask' (or read the file and call protect()).")
    if isinstance(methods, Method):
        methods = [methods]
    methods = list(methods)
    if not methods:
        raise ParameterError("protect_file needs at least one method.")
    for i, m in enumerate(methods):
        if not isinstance(m, Method):
            raise ParameterError(f"methods[{i}] must be a method value such as AdditiveNoise(alpha=0.1); got {m!r}.")
    require_streamable(methods, engine)
    if not isinstance(batch_rows, int) or isinstance(batch_rows, bool) or batch_rows < 1:
        raise ParameterError(f"The 'batch_rows' parameter of protect_file must be an int >= 1. Got {batch_rows!r} instead.")
    source, target = Path(source), Path(target)
    fmt_in = source_format(source, input_format)
    fmt_out = detect_format(target, output_format)
    if fmt_out not in ("csv", "tsv", "parquet"):
        raise ParameterError(f"The streaming engines write Parquet and CSV/TSV files; {target.name!r} is {fmt_out}.")
    if any(runs_on_file(m) for m in methods):
        return _protect_in_segments(
            source, target, methods, engine=engine, schema=schema, seed=seed, keep_identifiers=keep_identifiers,
            fmt_in=fmt_in, fmt_out=fmt_out, sep=sep, encoding=encoding, batch_rows=batch_rows, blocksize=blocksize,
            scheduler=scheduler, client=client, progress=progress, inputs=inputs, fingerprint_key=fingerprint_key)
    rng = as_generator(seed)
    with contextlib.ExitStack() as stack:
        spool = stack.enter_context(spool_beside(target, ".sdckit-parts-"))
        if engine == "dask":
            from sdckit.engine.distributed import csv_to_parts, dask_client, run_dask

            dc = stack.enter_context(dask_client(client, scheduler))
            files = [source] if fmt_in == "parquet" else csv_to_parts(
                source, fmt_in, spool / "input", dc, sep=sep, encoding=encoding, blocksize=blocksize)
            first = read_chunk(files, 0) if sum(open_parquet(f).metadata.num_rows for f in files) else None
        else:
            dtypes = csv_dtypes(source, fmt_in, sep=sep, encoding=encoding, batch_rows=batch_rows) \
                if fmt_in != "parquet" else None
            options = {"batch_rows": batch_rows, "sep": sep, "encoding": encoding, "dtypes": dtypes}
            first = next(iter_chunks(source, fmt_in, **options), None)
        if first is None or len(first) == 0:
            raise DataError(f"{source.name!r} holds no records; nothing to protect.")
        in_schema, schema_kept, dropped = prepare_schema(first, schema, keep_identifiers)
        columns_in = first.shape[1]
        head = first.drop(columns=dropped) if dropped else first
        if engine == "duckdb":
            def chunks(columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
                for chunk in iter_chunks(source, fmt_in, columns=columns, **options):
                    yield chunk.drop(columns=dropped) if dropped and columns is None else chunk

            steps, parts, dtypes_out, infos, rows = _run_local(methods, schema_kept, rng, head, chunks, spool, progress)
        else:
            steps, parts, dtypes_out, infos, rows = run_dask(methods, schema_kept, rng, head, files, spool,
                                                             batch_rows, dropped, dc, None, progress)
        if rows == 0:
            raise DataError(f"{source.name!r} holds no records; nothing to protect.")
        output_fp = stream_fingerprint(parts, dtypes_out)
        finish_output(parts, target, fmt_out, inputs=(source, *inputs))
    out_schema = _final_schema(steps, head)
    manifest_steps = []
    for i, s in enumerate(steps):
        info = dict(s.method.merge_info(infos[i], s.statistics))
        warnings = tuple(dict.fromkeys(info.pop("warnings", ())))  # as protect() moves them: once each
        manifest_steps.append(Step(
            method=s.method.to_manifest(), input_fingerprint=UNPUBLISHED,
            output_fingerprint=output_fp if i == len(steps) - 1 else UNPUBLISHED,
            records_in=rows, records_out=rows, info=info, warnings=warnings))
    input_fp = UNPUBLISHED
    if fingerprint_key is not None and fmt_in == "parquet":
        key = parse_fingerprint_key(fingerprint_key)
        input_fp = stream_fingerprint([source], {str(c): str(first[c].dtype) for c in first.columns}, key)
    manifest = build_manifest(
        input_fingerprint=input_fp, input_shape=(rows, columns_in), schema=in_schema, steps=manifest_steps,
        output_fingerprint=output_fp, output_shape=(rows, len(dtypes_out)), dropped_identifiers=dropped,
    )
    manifest.update(seed_provenance(seed))
    manifest["claims_dp"] = False
    manifest["engine"] = {"name": engine, "chunk_rows": CHUNK_ROWS,
                          "chunks": -(-rows // CHUNK_ROWS)}
    return StreamedRelease(target, out_schema, manifest, tuple(manifest_steps))


def _final_schema(steps: Sequence[PlannedStep], head: pd.DataFrame) -> Schema:
    """The schema after the last step (its output schema on the first chunk)."""
    from sdckit.core.method import Outcome
    from sdckit.core.rowwise import chunk_generator

    data, _ = run_chunk(head, 0, steps[:-1])
    last = steps[-1]
    result = last.method.transform_rows(data.copy(), last.columns, last.schema, chunk_generator(last.key, 0),
                                        last.statistics)
    return result.schema if isinstance(result, Outcome) else last.schema


def _run_local(methods: Sequence[Method], schema: Schema, rng: Any, head: pd.DataFrame,
               chunks: Callable[..., Iterator[pd.DataFrame]], spool: Path, progress: Progress | None
               ) -> tuple[list[PlannedStep], list[Path], dict[str, str], list[list[dict[str, Any]]], int]:
    def statistics_of(before: list[PlannedStep], method: Method, columns: tuple[str, ...]) -> Iterator[Any]:
        for index, chunk in enumerate(chunks(step_columns(before, columns))):  # only the columns it reads
            yield chunk_statistics(chunk, index, before, method, columns)

    steps = build_plan(methods, schema, rng, head, statistics_of, progress)
    part = spool / "part-000000.parquet"
    writer = PartWriter(part)
    infos: list[list[dict[str, Any]]] = [[] for _ in steps]
    try:
        for index, chunk in enumerate(chunks()):
            out, chunk_infos = run_chunk(chunk, index, steps)
            writer.write(out)
            for i, info in enumerate(chunk_infos):
                infos[i].append(info)
            if progress is not None:
                progress(writer.rows, -1, "records protected")
    finally:
        writer.close()
    return steps, [part], writer.dtypes, infos, writer.rows


def _protect_in_segments(source: Path, target: Path, methods: Sequence[Method], *, engine: str,
                         schema: Schema | dict[str, Any] | None, seed: RandomState, keep_identifiers: bool,
                         fmt_in: str, fmt_out: str, sep: str | None, encoding: str, batch_rows: int, blocksize: int,
                         scheduler: str | None, client: Any, progress: Progress | None, inputs: tuple[Path, ...],
                         fingerprint_key: bytes | str | None) -> StreamedRelease:
    """A recipe with whole-file steps: runs of row-wise steps streamed as usual and each whole-file
    step on DuckDB (rank swapping on its external sort, :func:`sdckit.engine.external_sort.rank_swap_file`;
    record swapping by households, :func:`sdckit.engine.households.record_swap_file`), one after the
    other through Parquet files in a spool, all drawing from the one generator in step order —
    the order :func:`~sdckit.pipeline.protect` draws in, so the release is the in-memory one."""
    from sdckit.engine.external_sort import rank_swap_file
    from sdckit.engine.households import record_swap_file

    rng = as_generator(seed)
    dtypes = csv_dtypes(source, fmt_in, sep=sep, encoding=encoding, batch_rows=batch_rows) if fmt_in != "parquet" else None
    first = next(iter_chunks(source, fmt_in, batch_rows=batch_rows, sep=sep, encoding=encoding, dtypes=dtypes), None)
    if first is None or len(first) == 0:
        raise DataError(f"{source.name!r} holds no records; nothing to protect.")
    in_schema, current_schema, dropped = prepare_schema(first, schema, keep_identifiers)
    segments: list[list[Method]] = []
    for method in methods:
        if runs_on_file(method) or not segments or runs_on_file(segments[-1][0]):
            segments.append([method])
        else:
            segments[-1].append(method)
    steps: list[Step] = []
    current, current_fmt, to_drop = source, fmt_in, list(dropped)
    rows, fingerprint, schema_out = 0, UNPUBLISHED, current_schema
    with spool_beside(target, ".sdckit-segments-") as spool:
        for k, group in enumerate(segments):
            last = k == len(segments) - 1
            out = target if last else Path(spool) / f"segment-{k}.parquet"
            options = {"sep": sep, "encoding": encoding} if k == 0 else {}
            if runs_on_file(group[0]):
                method = group[0]
                columns = method.target_columns(current_schema)
                common = dict(seed=rng, output_format=fmt_out if last else "parquet", batch_rows=batch_rows,
                              drop=to_drop, inputs=(source, *inputs), **options)
                if method.name == "record_swapping":
                    swapped = record_swap_file(current, out, method, **common)
                else:
                    swapped = rank_swap_file(current, out, float(method.p), columns, **common)
                info = dict(swapped.info)
                warnings = tuple(info.pop("warnings", ()))
                rows, fingerprint = swapped.records, swapped.fingerprint
                steps.append(Step(method=method.to_manifest(), input_fingerprint=UNPUBLISHED,
                                  output_fingerprint=fingerprint if last else UNPUBLISHED, records_in=rows,
                                  records_out=rows, info=info, warnings=warnings))
                if progress is not None:
                    progress(k + 1, len(segments), f"{type(method).__name__} on DuckDB")
            else:
                release = protect_file(current, out, group, engine=engine, schema=schema if k == 0 else current_schema,
                                       seed=rng, keep_identifiers=keep_identifiers if k == 0 else True,
                                       input_format=current_fmt, output_format=fmt_out if last else "parquet",
                                       batch_rows=batch_rows, blocksize=blocksize, scheduler=scheduler, client=client,
                                       progress=progress, inputs=(source, *inputs), **options)
                steps.extend(release.steps)
                rows, fingerprint, current_schema = (release.manifest["output"]["records"],
                                                     release.manifest["output"]["fingerprint"], release.schema)
            current, current_fmt, to_drop = out, "parquet", []
            schema_out = current_schema
        columns_out = len(schema_out.names)
    input_fp = UNPUBLISHED
    if fingerprint_key is not None and fmt_in == "parquet":
        key = parse_fingerprint_key(fingerprint_key)
        input_fp = stream_fingerprint([source], {str(c): str(first[c].dtype) for c in first.columns}, key)
    manifest = build_manifest(
        input_fingerprint=input_fp, input_shape=(rows, first.shape[1]), schema=in_schema, steps=steps,
        output_fingerprint=fingerprint, output_shape=(rows, columns_out), dropped_identifiers=dropped,
    )
    manifest.update(seed_provenance(seed))
    manifest["claims_dp"] = False
    manifest["engine"] = {"name": engine, "chunk_rows": CHUNK_ROWS, "chunks": -(-rows // CHUNK_ROWS),
                          "external_sort": "duckdb"}
    return StreamedRelease(target, schema_out, manifest, tuple(steps))
