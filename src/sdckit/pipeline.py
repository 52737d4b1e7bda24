"""``protect()``: apply methods in order with one random generator and build the manifest.

DESIGN.md section 2: one :class:`numpy.random.Generator` created from the user's seed is passed
down every method; the provenance of each step is kept as an immutable list from which the
manifest is derived; identifiers are dropped unless the caller insists.
"""

from __future__ import annotations

import contextlib
import warnings as warnings_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError, SecurityWarning
from sdckit.core.method import Method
from sdckit.core.random import RandomState, as_generator, seed_provenance
from sdckit.core.provenance import UNPUBLISHED, Step, build_manifest, fingerprint, parse_fingerprint_key
from sdckit.core.schema import Role, Schema
from sdckit.engine import StreamedRelease, check_engine, protect_file
from sdckit.io.files import check_columns

__all__ = ["ProgressCallback", "Release", "StreamedRelease", "mondrian_file", "protect", "protect_file", "search_file"]

#: Called after each step with (steps done, steps in all, method).
ProgressCallback = Callable[[int, int, Method], None]


@dataclass(frozen=True)
class Release:
    """A protected data set with its provenance.

    Attributes
    ----------
    data : DataFrame
        The protected data (identifiers dropped unless kept).
    schema : Schema
        The schema of ``data``.
    steps : tuple of Step
        One immutable record per applied method.
    manifest : dict
        The transparency manifest: version, schema, every method with all its parameters and
        report, the release's fingerprint, and keyed fingerprints of the confidential data when
        a fingerprint key was given. Never the seed.
    """

    data: pd.DataFrame
    schema: Schema
    steps: tuple[Step, ...]
    manifest: dict[str, Any]


def protect(
    frame: pd.DataFrame,
    methods: Method | Sequence[Method],
    *,
    schema: Schema | Mapping[str, Any] | None = None,
    seed: RandomState = None,
    keep_identifiers: bool = False,
    progress: ProgressCallback | None = None,
    fingerprint_key: bytes | str | None = None,
    engine: str = "memory",
    scheduler: str | None = None,
    client: Any = None,
) -> Release:
    """Apply ``methods`` to ``frame`` in order and return the :class:`Release`.

    Parameters
    ----------
    frame : DataFrame
        The original microdata; it is never modified.
    methods : Method or sequence of Method
        Method values (e.g. ``AdditiveNoise(alpha=0.1)``), applied in order.
    schema : Schema or mapping, optional
        Roles and kinds; a mapping is read with :meth:`Schema.from_dict`. Default: kinds
        inferred, no roles (methods then work on every column of a kind they accept).
    seed : int or Generator, optional
        Seeds the one generator all methods share. Same data + same seed = same output.
        The seed is never written to the manifest.
    keep_identifiers : bool
        Keep identifier columns in the release (they are dropped by default).
    progress : callable, optional
        ``progress(done, total, method)`` after each method.
    fingerprint_key : bytes or hex str, optional
        A secret key (>= 128 bits; :func:`sdckit.core.provenance.new_fingerprint_key`) for
        HMAC-SHA256 fingerprints of the input and of the data between steps, so that the
        protector can later prove which data a release came from. Without it those fingerprints
        are not published: an unkeyed hash of confidential data lets an adversary who knows all
        records but one test guesses of the last (issue 19 item 1). The release's own
        fingerprint (public data) is always a plain SHA-256.

    Examples
    --------
    >>> import pandas as pd
    >>> from sdckit import protect, AdditiveNoise
    >>> data = pd.DataFrame({"income": [10.0, 20.0, 30.0, 40.0]})
    >>> release = protect(data, [AdditiveNoise(alpha=0.1)], seed=1)
    >>> release.manifest["methods"][0]["params"]["alpha"]
    0.1
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"protect() expects a pandas DataFrame, got {type(frame).__name__}.")
    if len(frame) == 0:
        raise DataError("protect() got an empty data set (0 records); nothing to protect.")
    check_columns(frame, "The data")
    if len(frame) == 1 or bool((frame.nunique(dropna=False) <= 1).all()):
        raise DataError(
            f"protect() got {'one record' if len(frame) == 1 else 'records that are all identical'}: "
            "no method can protect it, since any release discloses it. Release aggregates instead."
        )
    if isinstance(methods, Method):
        methods = [methods]
    methods = list(methods)
    for i, m in enumerate(methods):
        if not isinstance(m, Method):
            raise ParameterError(
                f"methods[{i}] must be a method value such as AdditiveNoise(alpha=0.1); "
                f"got {m!r}."
            )
    if not isinstance(keep_identifiers, bool):
        raise ParameterError(f"keep_identifiers must be a bool; got {keep_identifiers!r}.")
    if any(not isinstance(c, str) for c in frame.columns):
        frame = frame.rename(columns=str)
    if schema is None:
        schema = Schema.infer(frame)
    elif isinstance(schema, Mapping):
        schema = Schema.from_dict(schema, frame)
    schema.validate(frame)

    key = None if fingerprint_key is None else parse_fingerprint_key(fingerprint_key)
    check_engine(engine)
    dask_context = contextlib.ExitStack()
    dask = None
    if engine == "dask" and any(m.streams for m in methods):
        from sdckit.engine.distributed import dask_client

        dask = dask_context.enter_context(dask_client(client, scheduler))

    def secret_fingerprint(data: pd.DataFrame) -> str:
        return UNPUBLISHED if key is None else fingerprint(data, key)

    rng = as_generator(seed)
    input_fp = secret_fingerprint(frame)
    dropped = [] if keep_identifiers else list(schema.with_role(Role.IDENTIFIER))
    data = frame.drop(columns=dropped) if dropped else frame.copy()
    current = schema.subset(data.columns)

    steps: list[Step] = []
    data_fp = secret_fingerprint(data) if dropped else input_fp
    dp_columns: set[str] = set()  # columns a differentially private method has protected
    with dask_context:
        for i, method in enumerate(methods):
            if method.claims_dp:
                dp_columns.update(method.target_columns(current))
            with warnings_module.catch_warnings(record=True) as caught:
                warnings_module.simplefilter("always")
                if dask is not None and method.streams:
                    from sdckit.engine.distributed import run_rows_dask

                    outcome = run_rows_dask(method, data, current, rng, dask)
                else:
                    outcome = method.run(data, current, rng)
            raised = _step_warnings(caught)
            last = i == len(methods) - 1
            out_fp = fingerprint(outcome.data) if last else secret_fingerprint(outcome.data)
            info = dict(outcome.info)
            warnings = tuple(dict.fromkeys([*info.pop("warnings", ()), *raised]))  # once each
            steps.append(
                Step(
                    method=method.to_manifest(),
                    input_fingerprint=data_fp,
                    output_fingerprint=out_fp,
                    records_in=len(data),
                    records_out=len(outcome.data),
                    info=info,
                    warnings=warnings,
                )
            )
            data, current, data_fp = outcome.data, outcome.schema, out_fp
            if progress is not None:
                progress(i + 1, len(methods), method)
    manifest = build_manifest(
        input_fingerprint=input_fp,
        input_shape=frame.shape,
        schema=schema,
        steps=steps,
        output_fingerprint=data_fp if methods else fingerprint(data),  # the release is public
        output_shape=data.shape,
        dropped_identifiers=dropped,
    )
    manifest.update(seed_provenance(seed))  # where the seed came from, never the seed
    if engine != "memory":
        manifest["engine"] = {"name": engine}
    # Differentially private only when every method is (public bounds) and every released
    # column went through one of them: a column released as it was is not protected at all.
    manifest["claims_dp"] = (bool(methods) and all(m.claims_dp for m in methods)
                             and set(data.columns) <= dp_columns)
    return Release(data=data, schema=current, steps=tuple(steps), manifest=manifest)


def _step_warnings(caught: list[warnings_module.WarningMessage]) -> list[str]:
    """The warnings a method raised, as text for its manifest step; security warnings about the
    seed are the caller's business and are raised again, not recorded."""
    out = []
    for record in caught:
        if issubclass(record.category, SecurityWarning):
            warnings_module.warn_explicit(record.message, record.category, record.filename, record.lineno)
        else:
            out.append(str(record.message))
    return out


def search_file(
    source: str | Path | pd.DataFrame,
    hierarchies: Mapping[str, Any],
    k: int,
    *,
    max_suppression: float = 0.0,
    metric: str = "loss",
    algorithm: str = "optimal",
    engine: str = "duckdb",
    memory: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
) -> Any:
    """The optimal full-domain generalization of a file larger than memory (DESIGN.md section 8).

    The quasi-identifiers' frequency table is computed by the engine
    (:func:`sdckit.engine.aggregate.frequency_table`: DuckDB ``GROUP BY`` out of core, Dask, or
    pandas) and searched by :func:`sdckit.anonymity.search_frequencies` — the same node
    :class:`~sdckit.anonymity.FullDomainGeneralization` finds on the records. ``hierarchies``
    maps each quasi-identifier to its :class:`~sdckit.core.hierarchy.Hierarchy`;
    ``max_suppression`` is MaxSup as a share of the records. Returns the
    :class:`~sdckit.anonymity.search.SearchResult` (``node``: the level of each quasi-identifier
    in the order of ``hierarchies``); ``extra["records"]`` and ``extra["combinations"]`` say
    what the table held.
    """
    from sdckit.anonymity.frequencies import search_frequencies
    from sdckit.anonymity.fulldomain import suppression_allowed
    from sdckit.core.hierarchy import Hierarchy
    from sdckit.engine.aggregate import COUNT, frequency_table

    if not isinstance(hierarchies, Mapping) or not hierarchies:
        raise ParameterError("The 'hierarchies' parameter of search_file must map each quasi-identifier to its Hierarchy.")
    for name, h in hierarchies.items():
        if not isinstance(h, Hierarchy):
            raise ParameterError(f"The hierarchy of {name!r} must be a Hierarchy (e.g. Hierarchy.from_csv(path)); "
                                 f"got {type(h).__name__}.")
    if not isinstance(max_suppression, int | float) or isinstance(max_suppression, bool) or not 0 <= max_suppression < 1:
        raise ParameterError(f"The 'max_suppression' parameter of search_file must be a float in [0, 1). "
                             f"Got {max_suppression!r} instead.")
    names = list(hierarchies)
    table = frequency_table(source, names, engine=engine, memory=memory, client=client, scheduler=scheduler)
    codes = np.column_stack([hierarchies[q].index_of(table[q], q) for q in names]).astype(np.int64)
    counts = table[COUNT].to_numpy(dtype=np.int64)
    records = int(counts.sum())
    result = search_frequencies(codes, counts, dict(hierarchies), k,
                                max_suppressed=suppression_allowed(float(max_suppression), records),
                                metric=metric, algorithm=algorithm)
    result.extra.update({"records": records, "combinations": int(len(table)), "engine": engine})
    return result


def mondrian_file(
    source: str | Path,
    target: str | Path,
    method: Any,
    *,
    cell_size: int = 250_000,
    client: Any = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """Mondrian on a Parquet file on Dask (DESIGN.md section 8): split points of a coarse KD
    partition on the numeric quasi-identifiers from the medians of a sample drawn by the
    workers, records assigned to cells in parallel, strict Mondrian inside each cell as a task
    (classes never cross a cell), the release written to ``target`` in record order.

    ``method`` is a :class:`~sdckit.anonymity.Mondrian`; every class still holds at least its
    ``k`` records. Returns the report: classes, smallest and largest class, ``loss`` and
    ``loss_by_attribute`` of the numeric quasi-identifiers measured against the whole data's
    ranges (as :meth:`Mondrian.partition` does), and the number of cells. With ``cell_size`` at
    least the number of records, the release is the in-memory one.
    """
    from sdckit.anonymity import Mondrian
    from sdckit.engine.cells import run_by_cells

    if not isinstance(method, Mondrian):
        raise ParameterError(f"mondrian_file needs a Mondrian method; got {type(method).__name__}.")
    import pyarrow.parquet as pq

    schema = pq.read_schema(source)
    for q in method.quasi:
        if q not in schema.names:
            raise DataError(f"Quasi-identifier {q!r} is not in {Path(source).name!r}.")
    numeric = [q for q in method.quasi if q in schema.names
               and (str(schema.field(q).type).startswith(("int", "uint", "double", "float")))]
    if not numeric:
        raise ParameterError("mondrian_file cuts cells on numeric quasi-identifiers; this Mondrian has none.")

    def run(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
        part = method.partition(frame)
        info = dict(part.info)
        info["low"] = {q: float(frame[q].min()) for q in numeric}
        info["high"] = {q: float(frame[q].max()) for q in numeric}
        return part.data, info

    infos = run_by_cells(source, target, numeric, run, cell_size=cell_size, min_cell=method.k,
                         client=client, scheduler=scheduler)
    records = sum(i["records"] for i in infos)
    low = {q: min(i["low"][q] for i in infos) for q in numeric}
    high = {q: max(i["high"][q] for i in infos) for q in numeric}
    loss = {}
    for q in numeric:
        span = high[q] - low[q]
        # a cell's loss is over its own range: scale it to the whole data's
        loss[q] = (sum(i["records"] * i["loss_by_attribute"][q] * (i["high"][q] - i["low"][q]) for i in infos)
                   / (records * span)) if span > 0 else 0.0
    return {
        "cells": len(infos),
        "classes": sum(i["classes"] for i in infos),
        "smallest_class": min(i["smallest_class"] for i in infos),
        "largest_class": max(i["largest_class"] for i in infos),
        "records": records,
        "loss": float(np.mean(list(loss.values()))),
        "loss_by_attribute": loss,
    }
