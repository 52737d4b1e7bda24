"""Targeted record swapping of a person file larger than memory (issue 30 section 1; DESIGN.md
section 8): DuckDB computes what the swap plan needs of the households — one pass per level for
the risk counts, one for the household table — out of core; the plan
(:func:`sdckit.core.household_swap.swap_plan`) runs in memory over the households alone; the
release is written chunk by chunk, each record taking its household partner's geography. Memory
holds the households' arrays, never the persons: the same seed gives
:class:`sdckit.masking.RecordSwapping`'s release in memory, byte for byte."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.atomic import refuse_input_overwrite
from sdckit.core.duckdb_session import connect, quote_identifier, relation
from sdckit.core.errors import DataError
from sdckit.core.household_swap import HouseholdTable, first_codes, swap_plan
from sdckit.core.matching import combine
from sdckit.core.random import RandomState, as_generator
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.engine.sources import WholeFileRelease, source_format, spool_beside, write_by_chunks

ROW = "file_row_number"


def _households(con: Any, records: str, hid: str, columns: Sequence[str]) -> pd.DataFrame:
    """One row per household in order of its first record: its id, size and the value of each of
    ``columns`` (checked to be one value per household)."""
    q = quote_identifier(hid)
    for name in dict.fromkeys(columns):
        c = quote_identifier(name)
        bad = con.execute(f"SELECT count(*) FROM (SELECT {q} FROM {records} GROUP BY {q} "
                          f"HAVING count(DISTINCT {c}) + max(CASE WHEN {c} IS NULL THEN 1 ELSE 0 END) > 1)").fetchone()[0]
        if bad:
            raise DataError(f"RecordSwapping: column {name!r} differs within {bad} household(s); the hierarchy, "
                            "similarity and carry_along columns must hold one value per household.")
    values = ", ".join(f"any_value({quote_identifier(n)}) AS {quote_identifier(n)}" for n in dict.fromkeys(columns))
    return con.execute(f"SELECT {q} AS hid, min({ROW}) AS first, count(*) AS size{', ' if values else ''}{values} "
                       f"FROM {records} GROUP BY {q} ORDER BY first").df()


def _risk(con: Any, records: str, hid: str, risk_variables: Sequence[str], hierarchy: Sequence[str]) -> np.ndarray:
    """Households (in order of first record) x levels: the largest ``1 / count`` of a member's
    combination of risk variables within its area, one DuckDB pass per level."""
    q = quote_identifier(hid)
    levels = []
    for level in range(len(hierarchy)):
        keys = ", ".join(quote_identifier(n) for n in (*risk_variables, *hierarchy[: level + 1]))
        levels.append(con.execute(
            f"SELECT max(1.0 / n) AS risk FROM (SELECT {q}, {ROW}, count(*) OVER (PARTITION BY {keys}) AS n "
            f"FROM {records}) GROUP BY {q} ORDER BY min({ROW})").fetchnumpy()["risk"])
    return np.column_stack(levels).astype(float)


def record_swap_file(
    source: str | Path,
    target: str | Path,
    method: Any,
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
    """:class:`sdckit.masking.RecordSwapping` (``method``) of a person file larger than memory.

    Parameters
    ----------
    source, target : path
        Parquet or CSV/TSV in; the release (Parquet or CSV/TSV) is written atomically with every
        column of the input but ``drop``.
    method : RecordSwapping
        The method value (its parameters; its columns are checked here).
    seed : int, str or Generator, optional
        As ``protect(frame, [method], seed=seed)``.
    memory, temp_directory : optional
        DuckDB's memory limit in bytes and where its passes spill past it.

    Returns
    -------
    WholeFileRelease
        The path, the record count, the method's report and the release's fingerprint.
    """
    from sdckit.io.files import detect_format

    source, target = Path(source), Path(target)
    fmt, fmt_out = source_format(source), detect_format(target, output_format)
    refuse_input_overwrite(target, (source, *inputs))
    rng = as_generator(seed)
    swapped_columns = (*method.hierarchy, *method.carry_along)
    needed = tuple(dict.fromkeys((method.hid, *swapped_columns, *method.similar_columns, *method.risk_variables)))
    with contextlib.ExitStack() as stack:
        spool = stack.enter_context(spool_beside(target, ".sdckit-recordswap-", temp_directory))
        con = connect(memory_limit=memory, temp_directory=spool)
        stack.callback(con.close)
        records = relation(con, source, fmt, columns=needed, row_numbers=True, sep=sep).sql
        for name in (method.hid, *method.hierarchy):
            missing = con.execute(f"SELECT count(*) FROM {records} WHERE {quote_identifier(name)} IS NULL").fetchone()[0]
            if missing:
                what = "the household id" if name == method.hid else "a hierarchy column"
                raise DataError(f"RecordSwapping: column {name!r} ({what}) has {missing} missing value(s).")
        households = _households(con, records, method.hid, (*swapped_columns, *method.similar_columns))
        if households.empty:
            raise DataError(f"{source.name!r} holds no records; nothing to protect.")
        table = HouseholdTable(
            households["size"].to_numpy(np.int64),
            np.column_stack([first_codes(households[n]) for n in method.hierarchy]),
            tuple(first_codes(combine(np.column_stack([first_codes(households[n]) for n in p])))
                  if p else np.zeros(len(households), dtype=np.int64) for p in method.profiles),
            _risk(con, records, method.hid, method.risk_variables, method.hierarchy),
        )
        plan = swap_plan(table, method.threshold, method.swaprate, rng)
        partner = np.arange(len(households))
        partner[plan.pairs[:, 0]], partner[plan.pairs[:, 1]] = plan.pairs[:, 1], plan.pairs[:, 0]
        index = pd.Index(households["hid"])
        values_of = {name: households[name].to_numpy() for name in swapped_columns}

        def take_partners(chunk: pd.DataFrame) -> pd.DataFrame:
            own = index.get_indexer(chunk[method.hid])
            moved = partner[own] != own
            for name in swapped_columns:
                values = chunk[name].to_numpy(copy=True)
                values[moved] = values_of[name][partner[own[moved]]]
                chunk[name] = pd.Series(values, index=chunk.index, name=name).astype(chunk[name].dtype)
            return chunk

        fingerprint = write_by_chunks(source, fmt, target, fmt_out, spool, take_partners, batch_rows=batch_rows,
                                      drop=drop, sep=sep, encoding=encoding, inputs=inputs)
    return WholeFileRelease(target, int(table.size.sum()), plan.report(), fingerprint)
