"""Microaggregation partitions shared by masking and k-anonymity (seed 002 section 4.6.3).

* **MDAV** (Maximum Distance to Average Vector; Domingo-Ferrer & Mateo-Sanz 2002, the fixed-size
  heuristic for the microaggregation seed 002 describes) on standardized attributes — every group
  has exactly ``k`` records except one of ``k..2k-1``. Masking averages the groups
  (:class:`sdckit.masking.Microaggregation`); k-anonymity uses them as classes (seed 002:
  "microaggregation on the projection of records on their quasi-identifiers").
* **Optimal univariate** microaggregation (Hansen & Mukherjee 2003): per attribute, the
  partition of minimum within-group sum of squares, found as a shortest path over the sorted
  values where every group is a run of ``k..2k-1`` consecutive values; ``O(n k)`` after sorting.

One lower module, so that neither family reaches into the other (DESIGN.md section 1).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from sdckit.core.arrays import standardize
from sdckit.core.errors import DataError
from sdckit.core.params import Boolean, Interval, check_param

Progress = Callable[[int, int, str], None]


# --------------------------------------------------------------------------- MDAV
@numba.njit(cache=True)
def _farthest(data, nrem, point, dist):
    """Squared distances (into ``dist``) of the first ``nrem`` rows of ``data`` (m x n,
    column-major) to ``point``; returns the farthest row (ties: lowest position)."""
    m = data.shape[0]
    for t in range(nrem):
        dist[t] = 0.0
    for j in range(m):
        c = point[j]
        row = data[j]
        for t in range(nrem):
            diff = row[t] - c
            dist[t] += diff * diff
    far = 0
    for t in range(1, nrem):
        if dist[t] > dist[far]:
            far = t
    return far


@numba.njit(cache=True)
def _nearest(dist, nrem, k):
    """The ``k`` rows of smallest ``dist`` among the first ``nrem`` (ties: lowest position), by
    insertion into a sorted buffer of the k smallest distances seen so far.

    A function of its own rather than a flag of :func:`_farthest`: numba specialises a constant
    flag as a literal, and a cached caller could be linked to the other literal's code."""
    near = np.empty(k, dtype=np.int64)
    bd = np.empty(k)
    cnt = 0
    for t in range(nrem):
        d = dist[t]
        if cnt < k or d < bd[cnt - 1]:
            pos = cnt if cnt < k else k - 1
            while pos > 0 and bd[pos - 1] > d:
                if pos < k:
                    bd[pos] = bd[pos - 1]
                    near[pos] = near[pos - 1]
                pos -= 1
            bd[pos] = d
            near[pos] = t
            if cnt < k:
                cnt += 1
    return near


@numba.njit(cache=True)
def _remove_rows(data, ids, sums, nrem, positions, labels, group):
    """Label the rows at ``positions`` with ``group`` and swap-delete them from the active block."""
    m = data.shape[0]
    pos = np.sort(positions)[::-1]  # descending, so a moved last row is never removed later
    for p in pos:
        labels[ids[p]] = group
        for j in range(m):
            sums[j] -= data[j, p]
        last = nrem - 1
        if p != last:
            for j in range(m):
                data[j, p] = data[j, last]
            ids[p] = ids[last]
        nrem -= 1
    return nrem


@numba.njit(cache=True)
def _mdav_steps(data, ids, sums, labels, nrem, group, k, max_groups):
    """Run MDAV from its current state until ``max_groups`` groups more are formed or fewer
    than ``3k`` records remain; returns the new ``(nrem, group)``."""
    m = data.shape[0]
    dist = np.empty(data.shape[1])
    centroid = np.empty(m)
    point = np.empty(m)
    target = group + max_groups
    while nrem >= 3 * k and group < target:
        for j in range(m):
            centroid[j] = sums[j] / nrem
        r = _farthest(data, nrem, centroid, dist)
        for j in range(m):
            point[j] = data[j, r]
        s = _farthest(data, nrem, point, dist)
        near = _nearest(dist, nrem, k)
        for j in range(m):
            point[j] = data[j, s]
        nrem = _remove_rows(data, ids, sums, nrem, near, labels, group)
        group += 1
        _farthest(data, nrem, point, dist)
        near = _nearest(dist, nrem, k)
        nrem = _remove_rows(data, ids, sums, nrem, near, labels, group)
        group += 1
    return nrem, group


@numba.njit(cache=True)
def _mdav_tail(data, ids, sums, labels, nrem, group, k):
    """MDAV's last step for fewer than ``3k`` records: one group of ``k`` around the record
    farthest from the centroid when ``2k`` or more remain, then the rest as one group."""
    m = data.shape[0]
    dist = np.empty(data.shape[1])
    if nrem >= 2 * k:
        centroid = np.empty(m)
        for j in range(m):
            centroid[j] = sums[j] / nrem
        r = _farthest(data, nrem, centroid, dist)
        point = data[:, r].copy()
        _farthest(data, nrem, point, dist)
        near = _nearest(dist, nrem, k)
        nrem = _remove_rows(data, ids, sums, nrem, near, labels, group)
        group += 1
    for t in range(nrem):
        labels[ids[t]] = group
    return group + 1


#: Largest number of records MDAV groups exactly; past it, :func:`partitioned_mdav_groups`.
EXACT_LIMIT = 100_000
#: Largest cell of the partitioned MDAV (records): exact MDAV within a cell costs O(cell^2).
CELL_SIZE = 10_000


def mdav_groups(
    values: np.ndarray, k: int, *, standardize_columns: bool = True, progress: Progress | None = None,
    exact_limit: int | None = EXACT_LIMIT, cell_size: int = CELL_SIZE,
) -> np.ndarray:
    """MDAV partition of the rows of ``values`` into groups of ``k`` to ``2k - 1`` records.

    Parameters
    ----------
    values : ndarray, shape (n, m) or (n,)
        Numeric data without missing values.
    k : int >= 1
        Minimum group size; ``n >= k`` is required.
    standardize_columns : bool, default True
        Standardize every column first (z-scores), so that no attribute dominates the
        Euclidean distance by its unit.
    progress : callable ``(done, total, label)``, optional
        Called as records are grouped.
    exact_limit : int or None, default 100,000
        Above this many records the partition is :func:`partitioned_mdav_groups` (cells of at
        most ``cell_size`` records, MDAV exact within each); ``None``: always exact.
    cell_size : int, default 10,000
        Largest cell of the partitioned MDAV.

    Returns
    -------
    ndarray of int64, shape (n,)
        Group label of each row, ``0..g-1`` in the order MDAV forms the groups. Every group has
        exactly ``k`` rows, except the last one, which has ``k..2k-1`` (partitioned: the last
        group of each cell).

    Notes
    -----
    Domingo-Ferrer & Mateo-Sanz (2002), MDAV: while ``3k`` or more
    records remain, take the record ``r`` farthest from the centroid of the remaining ones and
    the record ``s`` farthest from ``r``; form a group of ``r`` and its ``k-1`` nearest
    records, then of ``s`` and its ``k-1`` nearest among the rest. With ``2k..3k-1`` left, one
    more group around the record farthest from the centroid, and the rest form the last group;
    with fewer than ``2k`` left they form the last group. Distances are squared Euclidean;
    ties go to the record that comes first in the current block. It costs ``O(n^2 m / k)``
    time (compiled with numba) and ``O(n m)`` memory.

    Examples
    --------
    Five records, k=2: fewer than 3k remain from the start, so one group of 2 forms around 11
    (farthest from the centroid 4.5) with its nearest record 10, and the rest form the last group.

    >>> mdav_groups(np.array([[0.0], [10.0], [1.0], [11.0], [0.5]]), 2).tolist()
    [1, 0, 1, 0, 1]
    """
    check_param("mdav_groups", "k", k, Interval(int, 1, None))
    check_param("mdav_groups", "standardize_columns", standardize_columns, Boolean())
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise DataError(
            f"mdav_groups needs a 2-D array of records x attributes; got shape {values.shape}."
        )
    n = len(values)
    if n < k:
        raise DataError(f"mdav_groups needs at least k={k} records to form a group; got {n}.")
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
        raise DataError(f"mdav_groups needs finite values; row {row} holds a missing or infinite value.")
    data = standardize(values) if standardize_columns else values
    if exact_limit is not None and n > exact_limit:
        check_param("mdav_groups", "cell_size", cell_size, Interval(int, 2 * k, None))
        return _partitioned(data, k, cell_size, progress)
    return _exact(data, k, progress)


def _exact(data: np.ndarray, k: int, progress: Progress | None) -> np.ndarray:
    n = len(data)
    data = np.ascontiguousarray(data.T)  # m x n: each pass runs along contiguous memory
    ids = np.arange(n, dtype=np.int64)
    sums = data.sum(axis=1)
    labels = np.full(n, -1, dtype=np.int64)
    nrem, group = n, 0
    # groups per compiled call: all at once without a progress callback, else about 50 calls
    chunk = n if progress is None else max(2, (n // k) // 50 + 2)
    while nrem >= 3 * k:
        nrem, group = _mdav_steps(data, ids, sums, labels, nrem, group, k, chunk)
        if progress is not None:
            progress(n - nrem, n, "MDAV")
    _mdav_tail(data, ids, sums, labels, nrem, group, k)
    if progress is not None:
        progress(n, n, "MDAV")
    return labels


def kd_cells(data: np.ndarray, cell_size: int) -> list[np.ndarray]:
    """Rows of ``data`` cut into cells of at most ``cell_size`` records (and at least
    ``cell_size // 2``): a KD split at the median of the attribute of widest range within the
    cell, repeated until every cell is small enough. Cells are listed left to right."""
    out: list[np.ndarray] = []
    stack = [np.arange(len(data))]
    while stack:
        rows = stack.pop()
        if len(rows) <= cell_size:
            out.append(rows)
            continue
        block = data[rows]
        j = int(np.argmax(block.max(axis=0) - block.min(axis=0)))
        order = rows[np.argsort(block[:, j], kind="stable")]
        half = len(order) // 2
        stack.append(order[half:])
        stack.append(order[:half])
    return out


def partitioned_mdav_groups(values: np.ndarray, k: int, *, cell_size: int = CELL_SIZE,
                            standardize_columns: bool = True, progress: Progress | None = None) -> np.ndarray:
    """MDAV within the cells of a KD partition: groups of ``k..2k-1`` that never cross a cell.

    The records (standardized) are cut by :func:`kd_cells` into cells of ``cell_size / 2`` to
    ``cell_size`` records; exact MDAV runs inside each, so its cost falls from ``O(n^2)`` to
    ``O(n * cell_size)``. Every cell holds at least ``k`` records, so every group still has
    ``k..2k-1`` (each cell's last group absorbs its remainder); the groups are those of a
    spatial partition first, a little coarser than exact MDAV's — the information loss against
    exact MDAV is measured on a sample by :class:`~sdckit.masking.Microaggregation`.

    Examples
    --------
    >>> x = np.arange(40.0)[:, None]
    >>> labels = partitioned_mdav_groups(x, 3, cell_size=10)
    >>> sorted(np.bincount(labels).tolist()) == [3] * 8 + [4] * 4
    True
    """
    check_param("partitioned_mdav_groups", "k", k, Interval(int, 1, None))
    check_param("partitioned_mdav_groups", "cell_size", cell_size, Interval(int, 2 * max(k, 1), None))
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if len(values) < k or not np.isfinite(values).all():
        raise DataError(f"partitioned_mdav_groups needs at least k={k} records, all finite.")
    data = standardize(values) if standardize_columns else values
    return _partitioned(data, k, cell_size, progress)


def _partitioned(data: np.ndarray, k: int, cell_size: int, progress: Progress | None) -> np.ndarray:
    labels = np.empty(len(data), dtype=np.int64)
    offset = done = 0
    for rows in kd_cells(data, cell_size):
        inner = _exact(data[rows], k, None)
        labels[rows] = inner + offset
        offset += int(inner.max()) + 1
        done += len(rows)
        if progress is not None:
            progress(done, len(data), "MDAV (partitioned)")
    return labels


# --------------------------------------------------------------------------- univariate
@numba.njit(cache=True)
def _univariate_cuts(sorted_values, k):
    """Shortest path of Hansen & Mukherjee (2003): ``best[i]`` is the least SSE of grouping
    the first ``i`` sorted values into runs of ``k..2k-1``; returns each run's start."""
    n = sorted_values.shape[0]
    csum = np.zeros(n + 1)
    csq = np.zeros(n + 1)
    for i in range(n):
        csum[i + 1] = csum[i] + sorted_values[i]
        csq[i + 1] = csq[i] + sorted_values[i] * sorted_values[i]
    best = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for i in range(k, n + 1):
        for size in range(k, min(2 * k - 1, i) + 1):
            start = i - size
            if best[start] == np.inf:
                continue
            s = csum[i] - csum[start]
            sse = csq[i] - csq[start] - s * s / size
            if sse < 0.0:
                sse = 0.0
            cost = best[start] + sse
            if cost < best[i]:
                best[i] = cost
                back[i] = start
    starts = []
    i = n
    while i > 0:
        i = back[i]
        starts.append(i)
    return np.array(starts[::-1], dtype=np.int64)


def univariate_groups(values: np.ndarray, k: int) -> np.ndarray:
    """Optimal univariate microaggregation of a 1-D array: group labels of minimum SSE.

    Hansen & Mukherjee (2003): an optimal partition of a single attribute into groups of at
    least ``k`` consists of runs of consecutive sorted values of ``k..2k-1`` each, so it is a
    shortest path over cut points, found in ``O(n k)`` after sorting.

    Examples
    --------
    >>> univariate_groups(np.array([5.0, 1.0, 2.0, 9.0, 10.0]), 2).tolist()
    [0, 0, 0, 1, 1]
    """
    check_param("univariate_groups", "k", k, Interval(int, 1, None))
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) < k:
        raise DataError(
            f"univariate_groups needs a 1-D array of at least k={k} values; got shape {values.shape}."
        )
    if not np.isfinite(values).all():
        raise DataError("univariate_groups needs finite values.")
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = _univariate_cuts(sorted_values - sorted_values.mean(), k)
    run = np.zeros(len(values), dtype=np.int64)
    run[starts[1:]] = 1
    labels = np.empty(len(values), dtype=np.int64)
    labels[order] = np.cumsum(run)
    return labels


# --------------------------------------------------------------------------- measures
def group_means(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each row of ``values`` (n x m) replaced by the mean of its group."""
    counts = np.bincount(labels)
    out = np.empty_like(values, dtype=float)
    for j in range(values.shape[1]):
        out[:, j] = (np.bincount(labels, weights=values[:, j]) / counts)[labels]
    return out


def sse_ratio(values: np.ndarray, aggregated: np.ndarray) -> tuple[float, list[float]]:
    """Within-group SSE over total SSE, overall and per column, on standardized attributes.

    ``aggregated`` holds the group means; for a standardized column ``SST = n``, so the overall
    ratio is the mean of the per-column ratios over the non-constant columns (a constant column
    has nothing to lose; with only constant columns the ratio is 0).
    """
    centred = values - values.mean(axis=0)
    sst = (centred**2).sum(axis=0)
    sse = ((values - aggregated) ** 2).sum(axis=0)
    per = np.divide(sse, sst, out=np.zeros_like(sse), where=sst > 0)
    overall = float(per[sst > 0].mean()) if (sst > 0).any() else 0.0
    return overall, [float(v) for v in per]
