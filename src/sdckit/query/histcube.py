"""The cube's quantile histograms (issue 32): per cube row, the records of a bounded column in
each bin of the finest quantile grid, so that MEDIAN, QUANTILE_CONT, MIN and MAX are answered
without a scan, with exactly the histograms the DuckDB scan gives.

The bins are :data:`~sdckit.query.grid.QUANTILE_GRID` (2**18) equal bins of the column's bounds,
computed by the scan's own expression (:func:`~sdckit.query.generate.cube_sql`); a query's coarser
grid of ``2**18 / m`` bins (:func:`~sdckit.query.grid.quantile_bins`) merges ``m`` consecutive
ones, which is exact (:func:`~sdckit.query.grid.coarsen`). The cube rows are kept in a *storage
order*, sorted by their keys with the fewest-valued key outermost, so that the rows a WHERE
selects (an equality on a few-valued key, a range of a many-valued one) form few *runs* of
consecutive rows of one answer cell. One of two forms per column:

* *cumulative* (dense): ``C[r, j]``, the records in the rows before storage position ``r`` and
  the bins before ``j``, an ``(rows + 1) x (2**18 + 1)`` integer matrix (int32 while the table
  has fewer than 2**31 records). A run ``[a, b)`` adds ``C[b, ::m] - C[a, ::m]`` to its cell's
  cumulative histogram (``below``, what permute-and-flip reads, :func:`~sdckit.query.grid.cumulative`):
  two rows read per run, however many rows it holds, the coarser grid read off by the stride.
  Kept when more than :data:`DENSE_SHARE` of the (row, bin) pairs hold records and it fits the
  table's :data:`MAX_HIST_BYTES`.
* *sparse*: the (row, bin) pairs that hold records, with their records, sorted by storage
  position and bin, and each row's offset: a run is one slice; a query adds up the selected
  pairs per cell and bin (``np.bincount``) and accumulates them. Kept when there are at most
  :data:`MAX_BIN_ROWS` pairs and they fit :data:`MAX_HIST_BYTES`. Beside it, for more than
  :data:`SORT_PAIRS` pairs and when it fits (:data:`MAX_BLOCK_BYTES`), a *block table*: the
  pairs (and records) in the rows before ``r`` and the bins before ``t B``, for blocks of ``B``
  bins (up to :data:`MAX_BLOCKS`), and the pairs once each sorted by (block, row, bin): a run's
  records below a block's start are two reads, its pairs inside a block one slice.

Else that column's quantiles scan. Built at start-up from DuckDB's ``GROUP BY`` of the keys and
the bin, joined with the cube's key combinations to read each pair's cube row, in bin ranges of
about :data:`CHUNK_PAIRS` pairs each (DuckDB's memory stays bounded on large tables); a column
whose records per cube row do not come out as the cube's counts is left to the scan. Counts are
integers: the same numbers reach the same mechanism.

Permute-and-flip reads a cell's ``below`` at a few hundred points (:meth:`HistCube.belows`, a lazy
:class:`~sdckit.query.grid.BlockBelow`): from the cumulative form two reads per run and point
(the blocks' first points from its every 64th column, kept contiguous: 1/64 more, counted),
from the block table two reads per run and block start and the runs' pairs in the blocks it
enters; from at most :data:`SORT_PAIRS` selected pairs (a small column, a narrow selection), those
pairs sorted by bin. Else the sparse form's histograms are built whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.query.cube import Cube
from sdckit.query.generate import BIN_ALIAS, COUNT_ALIAS, cube_sql, group_alias
from sdckit.query.grid import QUANTILE_GRID, Below, BlockBelow, Histogram, sparse_histograms
from sdckit.query.grid import cumulative as cumulative_of  # (HistCube has a field of that name)

#: Most (cube row, bin) pairs kept sparse for one column.
MAX_BIN_ROWS = 2**25
#: Most bytes of quantile histograms kept for one table (all its columns, either form).
MAX_HIST_BYTES = 2**30
#: The cumulative form when more than this share of the (cube row, bin) pairs hold records (the
#: sparse form would then take more than 1/32 of its bytes; a query reads each selected row's
#: pairs, the cumulative form two rows per run: 5 times faster on the 1e6-row bench table, where
#: 0.028 of the pairs hold records, for 101 MiB).
DENSE_SHARE = 1 / 64
#: Most (cube row, bin) pairs one start-up statement is expected to give (more: bin ranges).
CHUNK_PAIRS = 2**24
#: Most bytes of one sparse column's block table (module description; 13 MiB for 400 cube rows).
MAX_BLOCK_BYTES = 2**26
#: Most blocks of a block table (of 64 bins each), and the points of a cumulative form's block.
MAX_BLOCKS = 4096
#: A sparse column of at most this many pairs has no block table: a query sorts a cell's
#: selected pairs (as any query selecting at most this many).
SORT_PAIRS = 2**12

_q = quote_identifier


@dataclass(frozen=True, eq=False)
class HistCube:
    """One column's histograms over the cube rows (module description): ``cumulative`` or
    ``offsets``/``bins``/``records``, by storage position ``order`` (storage position -> cube row)."""

    order: np.ndarray
    cumulative: np.ndarray | None = None
    offsets: np.ndarray | None = None
    bins: np.ndarray | None = None
    records: np.ndarray | None = None
    #: the sparse form's block table: pairs in the rows before r and the bins' blocks before t, at [r, t]
    blocks: np.ndarray | None = None
    #: the same for the records, when a pair may hold several (else ``blocks``)
    block_records: np.ndarray | None = None
    #: the cumulative form's every 64th column, contiguous: a run's blocks' starts, two short rows
    every64: np.ndarray | None = None
    #: the pairs' bins and records sorted by block, storage position and bin: a run's pairs in a
    #: block are one slice (and the block table counts them, once each)
    block_bins: np.ndarray | None = None
    block_weights: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the histograms (either form, the sparse form's block table with it)."""
        return sum(a.nbytes for a in (self.order, self.cumulative, self.offsets, self.bins, self.records,
                                      self.blocks, self.block_records, self.block_bins, self.block_weights)
                   if a is not None)

    @property
    def memory(self) -> int:
        """Bytes held: :attr:`nbytes` and the cumulative form's :attr:`every64` (1/64 of it)."""
        return self.nbytes + (0 if self.every64 is None else self.every64.nbytes)

    @property
    def form(self) -> str:
        """``"cumulative"`` or ``"sparse"``."""
        return "cumulative" if self.cumulative is not None else "sparse"

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, con: Any, cube: Cube, column: str, max_bytes: int = MAX_HIST_BYTES, max_pairs: int = MAX_BIN_ROWS,
              dense_share: float = DENSE_SHARE, chunk_pairs: int = CHUNK_PAIRS) -> HistCube | None:
        """``column``'s histograms over ``cube``'s rows from the dp relation in the DuckDB
        connection ``con``, in at most ``max_bytes``; ``None``: that column's quantiles scan."""
        order = storage_order(cube)
        position = np.empty(cube.size, dtype=np.int32)
        position[order] = np.arange(cube.size)
        total = int(np.asarray(cube.counts, dtype=np.int64).sum())
        dtype = np.dtype(np.int32 if total < 2**31 else np.int64)
        shape = (cube.size + 1, QUANTILE_GRID + 1)
        dense_fits = shape[0] * (shape[1] + -(-shape[1] // 64)) * dtype.itemsize + order.nbytes <= max_bytes  # and every64
        dense_from = dense_share * cube.size * QUANTILE_GRID  # pairs past which the cumulative form is kept

        def sparse_fits(pairs: int) -> bool:
            return pairs <= max_pairs and pairs * (4 + dtype.itemsize) + order.nbytes + 8 * shape[0] <= max_bytes

        expected = min(total, cube.size * _bins_present(con, cube, column))  # at least the pairs
        cumulative = np.zeros(shape, dtype) if dense_fits and expected > dense_from else None
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        pairs = 0
        for low, high in _bin_ranges(expected, chunk_pairs):
            part = _read(con, cube, column, low, high, position)
            pairs += part[0].size
            if cumulative is None and not sparse_fits(pairs):
                if not dense_fits:
                    return None
                cumulative, parts = _scatter(np.zeros(shape, dtype), parts), []
            if cumulative is not None:
                _scatter(cumulative, [part])
            else:
                parts.append(part)
        if cumulative is not None and pairs <= dense_from and sparse_fits(pairs):  # fewer pairs than expected
            pos, bins = np.nonzero(cumulative[1:, 1:])
            parts, cumulative = [(pos, bins, cumulative[pos + 1, bins + 1])], None
        if cumulative is None and dense_fits and pairs > dense_from:
            cumulative = _scatter(np.zeros(shape, dtype), parts)
        if cumulative is not None:
            _accumulate(cumulative)
            hist = cls(order, cumulative=cumulative, every64=np.ascontiguousarray(cumulative[:, ::64]))
        else:
            pos, bins, records = (np.concatenate(a) for a in zip(*parts)) if parts else (
                np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, dtype))
            sort = np.lexsort((bins, pos))
            pos, bins, records = pos[sort], bins[sort].astype(np.int32), records[sort].astype(dtype)
            if int(records.sum()) <= 2 * pairs:  # mostly one record per pair: each record's bin, unweighted
                pos, bins, records = np.repeat(pos, records), np.repeat(bins, records), None
            hist = cls(order, offsets=np.searchsorted(pos, np.arange(cube.size + 1)), bins=bins, records=records)
            hist = hist.with_blocks(min(MAX_BLOCK_BYTES, max_bytes - hist.nbytes))
        return hist if np.array_equal(hist.row_records(), np.asarray(cube.counts, dtype=np.int64)[order]) else None

    def with_blocks(self, max_bytes: int) -> HistCube:
        """This sparse form with its block table and its pairs by block (module description), of
        as many blocks (a power of two, at most :data:`MAX_BLOCKS`, at least 64, and for at least
        about 64 pairs each) as fit ``max_bytes``; as it is if none fits or it has at most
        :data:`SORT_PAIRS` pairs."""
        rows = self.order.size
        row = np.repeat(np.arange(rows), np.diff(self.offsets))
        # the pairs once each (an unweighted form repeats a pair per record)
        new = np.flatnonzero(np.diff(row, prepend=-1) | np.diff(self.bins, prepend=-1))
        records = np.diff(np.append(new, row.size)) if self.records is None else self.records[new]
        total = int(records.sum())
        dtype = np.dtype(np.int32 if total < 2**31 else np.int64)
        tables = 1 if total == new.size else 2
        count = min(MAX_BLOCKS, 2 ** max(6, (new.size // 64).bit_length()))  # about 64 pairs a block, or fewer
        while count >= 64 and (count + 1) * (rows + 1) * dtype.itemsize * tables + new.size * 8 > max_bytes:
            count //= 2
        if count < 64 or new.size <= SORT_PAIRS:
            return self
        block = (self.bins[new] // (QUANTILE_GRID // count)).astype(np.int64)
        at = block * rows + row[new]
        out = []
        for weights in [None] if tables == 1 else [None, records]:
            table = np.zeros((rows + 1, count + 1), dtype)  # a run's blocks' starts: two rows read
            per = np.bincount(at, weights=weights, minlength=count * rows).reshape(count, rows)
            table[1:, 1:] = np.cumsum(np.cumsum(per, axis=0), axis=1).T  # exact below 2**53
            out.append(table)
        by_block = np.argsort(block, kind="stable")  # (block, row, bin): the pairs sorted by (row, bin)
        return HistCube(self.order, offsets=self.offsets, bins=self.bins, records=self.records, blocks=out[0],
                        block_records=out[1] if tables == 2 else None, block_bins=self.bins[new][by_block],
                        block_weights=records[by_block].astype(dtype))

    def row_records(self) -> np.ndarray:
        """Records per storage position (the cube's counts, in storage order)."""
        if self.cumulative is not None:
            return np.diff(self.cumulative[:, -1].astype(np.int64))
        if self.records is None:
            return np.diff(self.offsets)
        rows = np.repeat(np.arange(self.order.size), np.diff(self.offsets))
        return np.bincount(rows, weights=self.records, minlength=self.order.size).astype(np.int64)  # exact below 2**53

    # ------------------------------------------------------------------ answering
    def histograms(self, keep: np.ndarray, cell: np.ndarray, n_cells: int, size: int) -> list[Histogram]:
        """Per answer cell ``0 .. n_cells - 1``, the histogram on ``size`` bins (a power of two
        dividing 2**18) of the cube rows with ``keep`` (their cell ``cell``): cumulative
        (``below``, int64) when ``n_cells * size <= 2**18`` or the form is cumulative, else sparse;
        a cell without records shares one zero ``below``."""
        starts, ends, cells = self._runs(keep, cell)
        zero = np.zeros(size + 1, dtype=np.int64)
        zero.flags.writeable = False
        if self.cumulative is not None:  # in its own dtype (every partial sum within +/- the records), then int64
            stride, own = QUANTILE_GRID // size, {}
            for a, b, c in zip(starts.tolist(), ends.tolist(), cells.tolist()):
                below = own.setdefault(c, np.zeros(size + 1, dtype=self.cumulative.dtype))
                np.subtract(below, self.cumulative[a, ::stride], out=below)
                np.add(below, self.cumulative[b, ::stride], out=below)
            return [own[c].astype(np.int64) if c in own else zero for c in range(n_cells)]
        lo, hi = self.offsets[starts], self.offsets[ends]
        bins, records = self._take(self.bins, lo, hi), None if self.records is None else self._take(self.records, lo, hi)
        coarse = bins >> int(np.log2(QUANTILE_GRID // size))
        at = np.repeat(cells, hi - lo) if n_cells > 1 else None
        if n_cells * size > QUANTILE_GRID:
            return sparse_histograms(at, coarse, np.ones(coarse.size, np.int64) if records is None else records,
                                     n_cells, size)
        index = coarse if at is None else at * size + coarse
        counts = np.bincount(index, weights=records, minlength=n_cells * size).astype(np.int64)  # exact below 2**53
        below = np.zeros((n_cells, size + 1), dtype=np.int64)
        np.cumsum(counts.reshape(n_cells, size), axis=1, out=below[:, 1:])
        return list(below)

    def belows(self, keep: np.ndarray, cell: np.ndarray, n_cells: int, size: int) -> list[Below]:
        """Per answer cell, the lazy ``below`` on ``size`` bins of the cube rows with ``keep``
        (:class:`~sdckit.query.grid.BlockBelow`, module description): the values of
        :meth:`histograms`' cumulative histograms wherever read. A sparse form without a block
        table gives :meth:`histograms`' whole."""
        starts, ends, cells = self._runs(keep, cell)
        few = self.cumulative is None and int((self.offsets[ends] - self.offsets[starts]).sum()) <= SORT_PAIRS
        if self.cumulative is None and self.blocks is None and not few:
            return [Below(cumulative_of(h, size)) for h in self.histograms(keep, cell, n_cells, size)]
        stride = QUANTILE_GRID // size  # finest bins per bin
        zero = Below(np.zeros(size + 1, dtype=np.int64))
        out: list[Below] = [zero] * n_cells
        read = self._dense_below if self.cumulative is not None else self._sorted_below if few else self._block_below
        for c in np.unique(cells).tolist():
            mine = cells == c
            out[c] = read(starts[mine], ends[mine], size, stride)
        return out

    def _sorted_below(self, starts: np.ndarray, ends: np.ndarray, size: int, stride: int) -> Below:
        """A cell's lazy ``below`` from its few sparse pairs (at most :data:`SORT_PAIRS`), sorted
        by bin: at a point, the records of the pairs before it (a search)."""
        lo, hi = self.offsets[starts], self.offsets[ends]
        bins = self._take(self.bins, lo, hi)
        order = np.argsort(bins, kind="stable")
        bins = bins[order]
        records = np.ones(bins.size, np.int64) if self.records is None else self._take(self.records, lo, hi)[order]
        running = np.concatenate([[0], np.cumsum(records, dtype=np.int64)])
        step = min(64, size)

        def read(points: np.ndarray) -> np.ndarray:
            return running[np.searchsorted(bins, points * stride, side="left")]

        return BlockBelow(size + 1, step, read(np.arange(0, size + 1, step)),
                          lambda ts: read(ts[:, None] * step + np.arange(step)))

    def _dense_below(self, starts: np.ndarray, ends: np.ndarray, size: int, stride: int) -> Below:
        """A cell's lazy ``below`` from the cumulative form: each point two reads per run (the
        blocks' first points from :attr:`every64`, contiguous)."""
        cum, step = self.cumulative, min(64, size)

        def read(points: np.ndarray) -> np.ndarray:
            cols = points * stride
            return (cum[ends.reshape((-1,) + (1,) * cols.ndim), cols].astype(np.int64).sum(axis=0)
                    - cum[starts.reshape((-1,) + (1,) * cols.ndim), cols].astype(np.int64).sum(axis=0))

        if self.every64 is not None and step * stride % 64 == 0:
            every = slice(None, None, step * stride // 64)
            coarse = (self.every64[ends][:, every].astype(np.int64).sum(axis=0)
                      - self.every64[starts][:, every].astype(np.int64).sum(axis=0))
        else:
            coarse = read(np.arange(0, size + 1, step))
        return BlockBelow(size + 1, step, coarse, lambda ts: read(ts[:, None] * step + np.arange(step)))

    def _block_below(self, starts: np.ndarray, ends: np.ndarray, size: int, stride: int) -> Below:
        """A cell's lazy ``below`` from the sparse form's block table: at a block's start two
        reads per run; inside the blocks read, the runs' pairs there (one slice per run and block)."""
        blocks, records = self.blocks, self.block_records if self.block_records is not None else self.blocks
        width = QUANTILE_GRID // (blocks.shape[1] - 1)  # finest bins per block
        step = max(1, width // stride)  # points per block
        at = slice(None) if step > 1 else np.arange(size + 1) * stride // width  # the points' blocks
        coarse = records[ends][:, at].astype(np.int64).sum(axis=0) - records[starts][:, at].astype(np.int64).sum(axis=0)
        if step == 1:
            return BlockBelow(size + 1, 1, coarse, lambda ts: coarse[ts][:, None])
        last = blocks.shape[0] - 1

        def block(ts: np.ndarray) -> np.ndarray:
            # the pairs of block t are from blocks[last, t] on, those of rows a..b-1 from
            # blocks[a, t + 1] - blocks[a, t] on, to blocks[b, t + 1] - blocks[b, t]
            edges = [blocks[last, ts] + blocks[r][:, ts + 1] - blocks[r][:, ts] for r in (starts, ends)]
            lo, lengths = edges[0].T.reshape(-1).astype(np.int64), (edges[1] - edges[0]).T.reshape(-1).astype(np.int64)
            index = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
            of = np.repeat(np.repeat(np.arange(ts.size), starts.size), lengths)
            point = of * step + (self.block_bins[index] - ts[of] * width) // stride
            counts = np.bincount(point, weights=self.block_weights[index],
                                 minlength=ts.size * step).astype(np.int64).reshape(ts.size, step)  # exact below 2**53
            return coarse[ts][:, None] + np.cumsum(counts, axis=1) - counts

        return BlockBelow(size + 1, step, coarse, block)

    @staticmethod
    def _take(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The slices ``values[lo[i]:hi[i]]`` one after the other."""
        if lo.size <= 64:
            return np.concatenate([values[a:b] for a, b in zip(lo.tolist(), hi.tolist())] or [values[:0]])
        lengths = hi - lo
        return values[np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))]

    def _runs(self, keep: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, ends, cells)``: the selected storage positions as runs ``[start, end)`` of
        consecutive positions of one cell."""
        chosen = np.flatnonzero(keep[self.order])
        cells = cell[self.order[chosen]]
        cut = np.flatnonzero((np.diff(chosen) != 1) | (np.diff(cells) != 0)) + 1
        first, last = np.concatenate([[0], cut]), np.concatenate([cut, [chosen.size]]) - 1
        if not chosen.size:
            first = last = np.zeros(0, dtype=np.int64)
        return chosen[first], chosen[last] + 1, cells[first]


def storage_order(cube: Cube) -> np.ndarray:
    """The cube rows sorted by their keys (each key by its sorted values, missing first), the key
    with the fewest values outermost."""
    keys = sorted(cube.keys.values(), key=lambda k: k.values.size)
    return np.lexsort([k.index for k in reversed(keys)]) if keys else np.arange(cube.size)


def _bins_present(con: Any, cube: Cube, column: str) -> int:
    """Bins of the finest grid holding records of ``column`` in the whole table."""
    generated = cube_sql(cube.table, [], [], column)
    return int(con.cursor().execute(f"SELECT COUNT(*) FROM ({generated.sql})", list(generated.params)).fetchone()[0])


def _bin_ranges(expected: int, chunk_pairs: int) -> list[tuple[int, int]]:
    """Bin ranges ``[low, high)`` of about ``chunk_pairs`` of ``expected`` pairs each (a power
    of two of them)."""
    chunks = 1
    while expected > chunks * chunk_pairs and chunks < QUANTILE_GRID:
        chunks *= 2
    step = QUANTILE_GRID // chunks
    return [(i * step, (i + 1) * step) for i in range(chunks)]


def _read(con: Any, cube: Cube, column: str, low: int, high: int,
          position: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(storage position, bin, records)`` of each (cube row, bin) pair with a bin in
    ``[low, high)``: the cube's GROUP BY with the bin (:func:`~sdckit.query.generate.cube_sql`),
    joined with the cube's key combinations (their cube row ``r``; a missing key matches a missing one)."""
    keys = list(cube.keys)
    generated = cube_sql(cube.table, keys, [], column)
    combos = ", ".join(f"UNNEST(?) AS {_q(group_alias(i))}" for i in range(len(keys)))
    match = " AND ".join(f"h.{_q(group_alias(i))} IS NOT DISTINCT FROM m.{_q(group_alias(i))}" for i in range(len(keys)))
    sql = (f"SELECT m.r AS r, h.{_q(BIN_ALIAS)} AS b, h.{_q(COUNT_ALIAS)} AS n FROM ({generated.sql}) AS h "
           f"JOIN (SELECT {combos}, UNNEST(?) AS r) AS m ON {match} "
           f"WHERE h.{_q(BIN_ALIAS)} >= ? AND h.{_q(BIN_ALIAS)} < ?")
    values = []
    for c in keys:
        key = cube.keys[c]
        plain = key.values.tolist()
        values.append([plain[i] if i >= 0 else None for i in key.index.tolist()])
    params = [*generated.params, *values, list(range(cube.size)), low, high]
    result = con.cursor().execute(sql, params).fetchnumpy()
    rows = np.asarray(result["r"], dtype=np.int64)
    return position[rows], np.asarray(result["b"], dtype=np.int32), np.asarray(result["n"], dtype=np.int64)


def _scatter(cumulative: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each pair's records at ``[position + 1, bin + 1]`` (each pair once: DuckDB grouped them)."""
    for pos, bins, records in parts:
        cumulative[pos + 1, bins + 1] = records
    return cumulative


def _accumulate(cumulative: np.ndarray) -> None:
    """The scattered records summed, in place, over the rows before and the bins before."""
    running = np.zeros(cumulative.shape[1], dtype=cumulative.dtype)
    row = np.empty_like(running)
    for r in range(1, cumulative.shape[0]):
        np.cumsum(cumulative[r], out=row)
        running += row
        cumulative[r] = running
