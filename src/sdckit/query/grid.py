"""The public grid of a dp quantile (issue 32): how many equal bins of a column's bounds a
``MEDIAN``, ``QUANTILE_CONT``, ``MIN`` or ``MAX`` chooses among, and its histogram per cell
(:data:`Histogram`): sparse, as the scan gives it (the non-empty bins, :func:`sparse_histograms`),
or cumulative, as the start-up cube gives it (:mod:`sdckit.query.histcube`) and permute-and-flip
reads it (:func:`cumulative`).

The answer is one of the grid's edges, chosen by permute-and-flip
(:func:`sdckit.query.quantiles.permute_and_flip`). A grid of 1024 bins made the grid, not the
mechanism, set the error on large tables: the median of 10**6 incomes in [0, 200000] was ~80 off,
Tumult Analytics' ~0.5 (its exponential mechanism runs over the intervals between the sorted
values). So the grid has :data:`QUANTILE_GRID` (2**18) bins over all the cells of a query, at
least :data:`QUANTILE_BINS` (1024) per cell; the bin counts are powers of two, so a histogram on
the finest grid coarsens exactly to any other (:func:`coarsen`; the cube's cumulative form takes
every ``m``-th point). A cell's cumulative histogram may also be *lazy* (:class:`Below`): read
at the few points permute-and-flip needs, without the ``2**18 + 1`` of them
(:class:`BlockBelow`, the cube's, :meth:`sdckit.query.histcube.HistCube.belows`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import numpy as np

#: Fewest bins of a quantile's grid per cell.
QUANTILE_BINS = 1024
#: Most bins of a quantile's grid over all the cells of a query (and the cube's histograms' bins).
QUANTILE_GRID = 2**18

#: One cell's histogram on a grid of ``B`` bins: sparse, ``(bins, records)`` (the sorted indices
#: of the non-empty bins and their records), or cumulative, ``below`` (int64, ``B + 1`` entries:
#: ``below[j]`` the records in bins ``< j``) or lazy (:class:`Below`); :func:`cumulative` reads
#: the first two, :func:`as_below` any.
Histogram: TypeAlias = "tuple[np.ndarray, np.ndarray] | np.ndarray | Below"


def quantile_bins(cells: int) -> int:
    """Bins per cell of a dp quantile's grid: :data:`QUANTILE_GRID` (2**18) divided by the number
    of cells (the product of the GROUP BY domains' sizes, public), rounded down to a power of two,
    at least :data:`QUANTILE_BINS` (1024). Without GROUP BY the resolution is 2**-18 of the
    bounds, fine enough that on large tables the mechanism's rank error, not the grid, sets the
    error; the cap keeps the histograms and permute-and-flip's work per query bounded."""
    bins = QUANTILE_GRID
    while bins > QUANTILE_BINS and bins * max(int(cells), 1) > QUANTILE_GRID:
        bins //= 2
    return bins


def coarsen(bins: np.ndarray, size: int) -> np.ndarray:
    """Indices on the :data:`QUANTILE_GRID`-bin grid mapped to a grid of ``size`` bins (a power
    of two dividing it). Exact: the scan's bin ``LEAST(FLOOR((x - low) * B / (high - low)), B - 1)``
    scales by a power of two between grids (no rounding), and ``floor(floor(y) / 2**m) =
    floor(y / 2**m)``."""
    return np.asarray(bins, dtype=np.int64) // (QUANTILE_GRID // size)


def sparse_histograms(cell: np.ndarray, bins: np.ndarray, counts: np.ndarray, n_cells: int,
                      size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per cell ``0 .. n_cells - 1``, the sorted indices of its non-empty bins (of ``size``) and
    their records, from rows ``(cell, bin, count)`` (a cell or bin out of range is left out; rows
    of the same pair add up)."""
    cell, bins = np.asarray(cell, dtype=np.int64), np.asarray(bins, dtype=np.int64)
    keep = (cell >= 0) & (cell < n_cells) & (bins >= 0) & (bins < size)
    keys, where = np.unique(cell[keep] * size + bins[keep], return_inverse=True)  # sorted by cell, then bin
    total = np.zeros(keys.size, dtype=np.int64)
    np.add.at(total, where.reshape(-1), np.asarray(counts, dtype=np.int64)[keep])
    cell_of, bin_of = np.divmod(keys, size)
    edges = np.searchsorted(cell_of, np.arange(n_cells + 1))
    return [(bin_of[a:b], total[a:b]) for a, b in zip(edges[:-1], edges[1:])]


def cumulative(hist: Histogram, size: int) -> np.ndarray:
    """``below`` of one cell's :data:`Histogram` on ``size`` bins: ``below[j]``, ``j = 0 .. size``,
    the records in bins ``< j`` (int64; a cumulative histogram is returned as it is)."""
    if not isinstance(hist, tuple):
        if hist.shape != (size + 1,):
            raise ValueError("cumulative: the histogram does not fit a grid of this size")
        return hist
    bins, counts = np.asarray(hist[0], dtype=np.int64), np.asarray(hist[1], dtype=np.int64)
    if bins.size and not 0 <= bins.min() <= bins.max() < size:
        raise ValueError("cumulative: the bins do not fit a grid of this size")
    below = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(bins, weights=counts, minlength=size).astype(np.int64), out=below[1:])  # exact below 2**53
    return below


class Below:
    """One cell's cumulative histogram on a grid of ``points - 1`` bins, read where asked, in
    blocks of ``step`` consecutive points: :attr:`coarse` holds ``below`` at the points ``0, step,
    2 step, ..., points - 1`` (``below[j]``, the records in bins ``< j``; :attr:`total` the last,
    the cell's records), :meth:`block` gives it at every point of the blocks asked, :meth:`at` at
    any points and :meth:`search` where the non-decreasing ``below`` first reaches a value. This
    one holds the ``points`` values (:func:`cumulative`); :class:`BlockBelow` reads them lazily."""

    def __init__(self, below: np.ndarray) -> None:
        self.values = np.asarray(below, dtype=np.int64)
        self.points = int(self.values.size)
        self.step = 64 if (self.points - 1) % 64 == 0 else 1
        self.coarse = self.values[:: self.step]
        self.total = int(self.values[-1])
        self._kept: dict[int, np.ndarray] = {}

    def block(self, ts: np.ndarray) -> np.ndarray:
        """``below`` at the points ``t step + i``, ``i < step``, per block ``t`` of ``ts`` (sorted,
        distinct, each below ``(points - 1) / step``): shape ``(ts.size, step)``."""
        return self.values[ts[:, None] * self.step + np.arange(self.step)]

    def blocks(self, ts: np.ndarray) -> np.ndarray:
        """:meth:`block`, each block read once (kept: a query reads a few, some more than once)."""
        kept = self._kept
        missing = np.array([t for t in ts.tolist() if t not in kept], dtype=np.int64)
        if missing.size:
            kept.update(zip(missing.tolist(), self.block(missing)))
        return np.stack([kept[t] for t in ts.tolist()]) if ts.size else np.zeros((0, self.step), np.int64)

    def at(self, js: np.ndarray) -> np.ndarray:
        """``below[js]`` (int64), reading the blocks of the points off the coarse ones."""
        js = np.asarray(js, dtype=np.int64)
        t, i = np.divmod(js, self.step)
        out = self.coarse[np.minimum(t, self.coarse.size - 1)].copy()
        inner = np.flatnonzero(i)
        if inner.size:
            blocks, row = np.unique(t[inner], return_inverse=True)
            out[inner] = self.blocks(blocks)[row.reshape(-1), i[inner]]
        return out

    def search(self, values: np.ndarray, side: str = "left") -> np.ndarray:
        """Per value ``v``, the first ``j`` with ``below[j] >= v`` (``side="left"``) or ``> v``
        (``"right"``), ``points`` if none: :func:`numpy.searchsorted` on the whole sequence, from
        ``coarse`` and the one block each value ends in."""
        values = np.asarray(values, dtype=np.int64)
        idx = np.searchsorted(self.coarse, values, side=side)
        out = np.where(idx == self.coarse.size, self.points, idx * self.step)
        inner = np.flatnonzero((idx > 0) & (idx < self.coarse.size))
        if self.step > 1 and inner.size:
            # below at the block's first point misses the value and at the next block's reaches it;
            # the blocks' values one after the other are non-decreasing, so one search finds it
            blocks, row = np.unique(idx[inner] - 1, return_inverse=True)
            found = np.searchsorted(self.blocks(blocks).reshape(-1), values[inner], side=side)
            at_row, i = np.divmod(found, self.step)
            mine = at_row == row.reshape(-1)
            out[inner[mine]] = blocks[at_row[mine]] * self.step + i[mine]
        return out


class BlockBelow(Below):
    """A lazy :class:`Below`: ``coarse`` given, ``block`` a function (the cube's,
    :meth:`sdckit.query.histcube.HistCube.belows`)."""

    def __init__(self, points: int, step: int, coarse: np.ndarray,
                 block: Callable[[np.ndarray], np.ndarray]) -> None:
        self.points, self.step, self.coarse = int(points), int(step), np.asarray(coarse, np.int64)
        self.block = block  # type: ignore[method-assign]
        self.total = int(self.coarse[-1])
        self._kept = {}


def as_below(hist: Histogram, size: int) -> Below:
    """A cell's :data:`Histogram` on ``size`` bins as a :class:`Below` (a lazy one as it is)."""
    return hist if isinstance(hist, Below) else Below(cumulative(hist, size))
