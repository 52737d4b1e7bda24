"""Methods that work on neighbourhoods, run by cells of a KD partition on Dask (DESIGN.md §8).

A method whose groups are local in the quasi-identifier space (Mondrian's classes) can run inside
the cells of a coarse KD partition, each cell small enough for one worker: classes never cross a
cell. The split points come from approximate quantiles — medians of a random sample of records
drawn by the workers from every partition — and the records are assigned to their cells in
parallel; each cell then runs as a task, and the release is put back in record order by an
external sort (DuckDB).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.atomic import atomic_path, refuse_input_overwrite
from sdckit.core.duckdb_session import check_columns, connect, quote_literal
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.engine.distributed import dask_client
from sdckit.engine.sources import open_parquet, read_chunk, source_format, spool_beside

ROW = "__sdckit_row"


@dataclass(frozen=True)
class Cut:
    """One split of the KD tree: records with ``column <= value`` go left."""

    column: int
    value: float
    left: int
    right: int


def kd_cuts(sample: np.ndarray, spans: np.ndarray, leaves: int) -> tuple[list[Cut | None], int]:
    """A KD tree of about ``leaves`` leaves over the rows of ``sample``: each node splits at the
    median of the attribute whose range, relative to the whole data's ``spans``, is widest.
    Returns the nodes (``None`` for a leaf; node 0 is the root) and the number of leaves."""
    nodes: list[Cut | None] = [None]
    frontier = [(0, np.arange(len(sample)))]
    count = 1
    while count < leaves and frontier:
        frontier.sort(key=lambda item: -len(item[1]))
        node, rows = frontier.pop(0)
        block = sample[rows]
        if len(rows) < 2:
            continue
        width = (block.max(axis=0) - block.min(axis=0)) / np.where(spans > 0, spans, 1.0)
        j = int(np.argmax(width))
        value = float(np.median(block[:, j]))
        left, right = rows[block[:, j] <= value], rows[block[:, j] > value]
        if len(left) == 0 or len(right) == 0:
            continue
        nodes.extend([None, None])
        nodes[node] = Cut(j, value, len(nodes) - 2, len(nodes) - 1)
        frontier += [(len(nodes) - 2, left), (len(nodes) - 1, right)]
        count += 1
    return nodes, count


def assign_cells(values: np.ndarray, nodes: Sequence[Cut | None]) -> np.ndarray:
    """The leaf (cell) of each row of ``values`` (numbered in the order of ``nodes``)."""
    leaf_number = {i: n for n, i in enumerate(i for i, node in enumerate(nodes) if node is None)}
    at = np.zeros(len(values), dtype=np.int64)
    active = np.ones(len(values), dtype=bool)
    while active.any():
        for i in np.unique(at[active]):
            node = nodes[i]
            rows = active & (at == i)
            if node is None:
                active[rows] = False
                continue
            go_left = values[rows, node.column] <= node.value
            idx = np.flatnonzero(rows)
            at[idx[go_left]] = node.left
            at[idx[~go_left]] = node.right
    return np.array([leaf_number[i] for i in at], dtype=np.int64) if len(at) else at


def _sample_task(source: str, index: int, columns: list[str], share: float, seed: int) -> np.ndarray:
    chunk = read_chunk(Path(source), index)[columns].to_numpy(dtype=float)
    rng = np.random.default_rng([seed, index])  # a sample for split points only: nothing released
    return chunk[rng.random(len(chunk)) < share]


def _assign_task(source: str, index: int, columns: list[str], nodes: list[Cut | None], spool: str) -> dict[int, int]:
    chunk = read_chunk(Path(source), index)
    chunk[ROW] = chunk.index.to_numpy()
    cells = assign_cells(chunk[columns].to_numpy(dtype=float), nodes)
    counts = {}
    for cell in np.unique(cells):
        part = chunk[cells == cell]
        folder = Path(spool) / "cells" / f"cell={cell:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        part.to_parquet(folder / f"chunk-{index:06d}.parquet", index=False)
        counts[int(cell)] = len(part)
    return counts


def _cell_task(spool: str, cell: int, run: Callable[[pd.DataFrame], tuple[pd.DataFrame, dict[str, Any]]]
               ) -> dict[str, Any]:
    folder = Path(spool) / "cells" / f"cell={cell:05d}"
    frame = pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))], ignore_index=True)
    rows = frame.pop(ROW).to_numpy()
    out, info = run(frame)
    out = out.reset_index(drop=True)
    out[ROW] = rows
    out.to_parquet(Path(spool) / "out" / f"cell-{cell:05d}.parquet", index=False)
    return info


def run_by_cells(
    source: str | Path,
    target: str | Path,
    columns: Sequence[str],
    run: Callable[[pd.DataFrame], tuple[pd.DataFrame, dict[str, Any]]],
    *,
    cell_size: int = 250_000,
    min_cell: int = 2,
    sample_records: int = 200_000,
    client: Any = None,
    scheduler: str | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Run ``run(cell_frame) -> (output_frame, info)`` on each cell of a KD partition of the
    Parquet ``source`` on ``columns`` (numeric), on Dask; write the outputs to ``target``
    (Parquet, in the input's record order, atomically) and return each cell's info with its
    ``records``.

    ``cell_size`` is the records a cell holds at most on average; a cell of fewer than
    ``min_cell`` records (e.g. ``k``) is refused, naming the problem. The split points are
    medians of about ``sample_records`` records sampled from every chunk.
    """
    source, target = Path(source), Path(target)
    if source_format(source) != "parquet":
        raise ParameterError(f"run_by_cells reads Parquet input; {source.name!r} is not.")
    if not isinstance(cell_size, int) or cell_size < 2 * min_cell:
        raise ParameterError(f"The 'cell_size' parameter must be an int >= {2 * min_cell}. Got {cell_size!r} instead.")
    columns = list(columns)
    meta = open_parquet(source).metadata
    rows = meta.num_rows
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    check_columns(columns, names, repr(source.name))
    refuse_input_overwrite(target, (source,))
    indices = list(range(-(-rows // CHUNK_ROWS)))
    leaves = max(1, -(-rows // cell_size))
    with dask_client(client, scheduler) as dc, spool_beside(target, ".sdckit-cells-") as spool_path:
        spool = str(spool_path)  # the tasks take it as text
        (Path(spool) / "out").mkdir()
        share = min(1.0, sample_records / max(rows, 1))
        parts = dc.gather(dc.map(_sample_task, [str(source)] * len(indices), indices, columns=columns,
                                 share=share, seed=seed, pure=False))
        sample = np.concatenate(parts) if parts else np.zeros((0, len(columns)))
        if len(sample) == 0:
            raise DataError(f"{source.name!r} holds no records.")
        spans = sample.max(axis=0) - sample.min(axis=0)
        nodes, _ = kd_cuts(sample, spans, leaves)
        counts = dc.gather(dc.map(_assign_task, [str(source)] * len(indices), indices, columns=columns,
                                  nodes=nodes, spool=spool, pure=False))
        sizes: dict[int, int] = {}
        for chunk_counts in counts:
            for cell, n in chunk_counts.items():
                sizes[cell] = sizes.get(cell, 0) + n
        small = [c for c, n in sizes.items() if n < min_cell]
        if small:
            raise DataError(f"{len(small)} cell(s) of the KD partition hold fewer than {min_cell} records; "
                            "raise cell_size.")
        cells = sorted(sizes)
        infos = dc.gather(dc.map(_cell_task, [spool] * len(cells), cells, run=run, pure=False))
        out_glob = quote_literal(Path(spool) / "out" / "*.parquet")
        con = connect(temp_directory=Path(spool) / "duckdb")
        try:
            with atomic_path(target) as tmp:
                con.execute(f"COPY (SELECT * EXCLUDE ({ROW}) FROM read_parquet({out_glob}) ORDER BY {ROW}) "
                            f"TO {quote_literal(tmp)} (FORMAT parquet)")
        finally:
            con.close()
    return [{**info, "records": sizes[c]} for c, info in zip(cells, infos, strict=True)]
