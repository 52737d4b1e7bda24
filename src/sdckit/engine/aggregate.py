"""Aggregation-driven work on frequency tables, not rows (DESIGN.md section 8).

The full-domain k-anonymity search needs only the distinct quasi-identifier combinations and
their counts (:func:`sdckit.anonymity.search_frequencies`); the risk frequencies ``f_k`` (records
of the sample in the key's class) and ``F_k`` (their summed weights: the population estimate)
need the same table with a weight column. :func:`frequency_table` computes it by DuckDB
``GROUP BY`` over a Parquet/CSV file larger than memory (spilling to disk past the memory
budget), by Dask over a Parquet or CSV file, or by pandas in memory — the same table in each case:
one row per combination (a missing value is a value of its own), sorted by the key columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.duckdb_session import check_columns, connect, quote_identifier, relation
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.sources import source_format
from sdckit.engine.stream import check_engine

#: Name of the count column of a frequency table, and of the summed weights.
COUNT, WEIGHT = "fk", "Fk"


def _check_columns(columns: Sequence[str], available: Sequence[str], where: str) -> None:
    if not columns:
        raise ParameterError("The 'columns' parameter of frequency_table must name at least one column.")
    check_columns(columns, available, where)
    if COUNT in columns or WEIGHT in columns:
        raise ParameterError(f"Key columns may not be called {COUNT!r} or {WEIGHT!r} (the table's own columns).")


def _finish(table: pd.DataFrame, columns: list[str], weight: str | None) -> pd.DataFrame:
    for name in columns:  # text keys as Python strings, a missing one as None, in every engine
        if isinstance(table[name].dtype, pd.StringDtype) or table[name].dtype == object:
            values = table[name].astype(object)
            table[name] = values.where(values.notna(), None)
    table = table.sort_values(columns, na_position="last", kind="stable").reset_index(drop=True)
    table[COUNT] = table[COUNT].astype(np.int64)
    keep = [*columns, COUNT] + ([WEIGHT] if weight else [])
    return table[keep]


def frequency_table(
    source: str | Path | pd.DataFrame,
    columns: Sequence[str],
    *,
    weight: str | None = None,
    engine: str = "duckdb",
    input_format: str | None = None,
    memory: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
) -> pd.DataFrame:
    """The frequency table of ``columns``: each distinct combination with ``fk`` (its records)
    and, with ``weight``, ``Fk`` (the sum of their weights).

    Parameters
    ----------
    source : path or DataFrame
        A Parquet or CSV file (read by the engine, never whole), or a frame in memory.
    columns : list of str
        The key (e.g. the quasi-identifiers).
    weight : str, optional
        A sampling-weight column; ``Fk`` estimates the class's population size.
    engine : {"memory", "duckdb", "dask"}
        ``"duckdb"``: ``GROUP BY`` in DuckDB (out of core; ``memory`` bytes caps its memory, the
        rest spills to a temporary directory). ``"dask"``: a groupby over the Parquet file's
        partitions (a CSV file first cut into Parquet parts by the workers) on ``client`` / ``scheduler`` / a LocalCluster. ``"memory"``: pandas.

    Returns
    -------
    DataFrame
        ``columns`` + ``fk`` (+ ``Fk``), one row per combination, sorted by ``columns``
        (missing values last).
    """
    check_engine(engine)
    columns = list(columns)
    if isinstance(source, pd.DataFrame):
        _check_columns(columns + ([weight] if weight else []), list(source.columns), "the data")
        if engine == "duckdb":
            return _duckdb(source, None, columns, weight, memory)
        return _pandas(source, columns, weight)
    path = Path(source)
    fmt = source_format(path, input_format)
    if engine == "memory":
        frame = pd.read_parquet(path, columns=columns + ([weight] if weight else [])) if fmt == "parquet" else \
            pd.read_csv(path, sep="\t" if fmt == "tsv" else None, engine="python" if fmt != "tsv" else "c",
                        usecols=columns + ([weight] if weight else []))
        return _pandas(frame, columns, weight)
    if engine == "dask":
        return _dask(path, fmt, columns, weight, client, scheduler)
    return _duckdb(None, (path, fmt), columns, weight, memory)


def _pandas(frame: pd.DataFrame, columns: list[str], weight: str | None) -> pd.DataFrame:
    grouped = frame.groupby(columns, dropna=False, observed=True, sort=False)
    table = grouped.size().rename(COUNT).reset_index()
    if weight:
        table[WEIGHT] = grouped[weight].sum().to_numpy(dtype=float)
    return _finish(table, columns, weight)


def _duckdb(frame: pd.DataFrame | None, file: tuple[Path, str] | None, columns: list[str], weight: str | None,
            memory: int | None) -> pd.DataFrame:
    con = connect(memory_limit=memory)
    try:
        if frame is not None:
            con.register("source_frame", frame)
            source = "source_frame"
        else:
            path, fmt = file  # type: ignore[misc]
            rel = relation(con, path, fmt)
            _check_columns(columns + ([weight] if weight else []), rel.columns, rel.where)
            source = rel.sql
        keys = ", ".join(quote_identifier(c) for c in columns)
        extra = f", SUM(CAST({quote_identifier(weight)} AS DOUBLE)) AS __weight" if weight else ""
        table = con.execute(f"SELECT {keys}, COUNT(*) AS __count{extra} FROM {source} GROUP BY {keys}").df()
        table = table.rename(columns={"__count": COUNT, "__weight": WEIGHT})
    finally:
        con.close()
    return _finish(table, columns, weight)


def _dask(path: Path, fmt: str, columns: list[str], weight: str | None, client: Any, scheduler: str | None
          ) -> pd.DataFrame:
    import dask.dataframe as dd

    from sdckit.engine.distributed import dask_client

    import tempfile

    from sdckit.engine.distributed import csv_to_parts

    wanted = columns + ([weight] if weight else [])
    with dask_client(client, scheduler) as dc, tempfile.TemporaryDirectory(prefix=".sdckit-csv-") as spool:
        if fmt == "parquet":
            data = dd.read_parquet(str(path), columns=wanted)
        else:  # CSV cut into byte blocks by the workers, read with the whole file's dtypes
            parts = csv_to_parts(path, fmt, Path(spool), dc)
            if not parts:
                raise DataError(f"{path.name!r} holds no records.")
            data = dd.read_parquet([str(p) for p in parts], columns=wanted)
        _check_columns(wanted, list(data.columns), repr(path.name))
        grouped = data.groupby(columns, dropna=False, observed=True)
        sizes = grouped.size()
        if weight:
            result = dc.compute([sizes, grouped[weight].sum()])
            counts, weights = (r.result() for r in result) if hasattr(result[0], "result") else result
        else:
            counts = dc.compute(sizes)
            counts = counts.result() if hasattr(counts, "result") else counts
    table = counts.rename(COUNT).reset_index()
    if weight:
        table[WEIGHT] = weights.reindex(counts.index).to_numpy(dtype=float)
    return _finish(table, columns, weight)


def records_at_risk(table: pd.DataFrame, k: int) -> dict[str, int]:
    """From a frequency table: records and classes, sample uniques (``fk == 1``) and the records
    in classes of fewer than ``k`` (those k-anonymity would generalize or suppress)."""
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise ParameterError(f"The 'k' parameter of records_at_risk must be an int >= 1. Got {k!r} instead.")
    fk = table[COUNT].to_numpy()
    return {"records": int(fk.sum()), "classes": int(len(fk)), "sample_uniques": int((fk == 1).sum()),
            "records_below_k": int(fk[fk < k].sum())}
