"""The one pass over each person's rows that keeps the rows per-group bounds keep (issue 32;
:mod:`sdckit.query.rowstore` holds the rows, :mod:`sdckit.query.groupbounds` states the rules).

Compiled by numba (``nogil``: the service's other threads run while it does; cached on disk as
sdckit's other kernels, so only a fresh install compiles it, about 3 s) when the service starts:
:meth:`sdckit.query.rowstore.RowStore.compile`. Imported only where a row store is built:
a service without a table of several rows per person never loads numba.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def kept_cells(parent: np.ndarray, rank: np.ndarray, group: np.ndarray, cell: np.ndarray, per_unit: int,
               groups: int, rows: int, values: np.ndarray, wanted: np.ndarray, cube_values: np.ndarray,
               cube_wanted: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts and sums per answer cell of the rows per-group bounds keep.

    The kept rows are counted per cube row in the pass (an integer each: no chain of dependent
    float additions), then per cell; a column held per cube row is summed as that count times its
    value (exact: the products and their sums stay multiples of 2**-10 below the cube's magnitude
    bound, as the cube's own sums), a column held per row as its kept values in file order.

    Parameters
    ----------
    parent, rank : ndarray
        Per stored row (each person's rows together, in file order): its cube row and its rank
        among her rows (1 starts a person).
    group : ndarray
        Per cube row: its SQL group's id, -1 where the WHERE is not true.
    cell : ndarray
        Per cube row: its answer cell, -1 outside the declared domains (a group all the same).
    per_unit, groups, rows : int
        ``k'``, ``g``, ``r``: of a person's rows of rank ``<= k'`` in a group (WHERE true), at
        most ``r`` per group (her first ones) in her first ``g`` groups (by their first row).
    values, wanted : ndarray
        ``values[j, i]``: row ``i``'s clamped value of stored column ``j``; the sums are of the
        columns ``wanted`` (the row store keeps only columns whose sums are exact in any order).
    cube_values, cube_wanted : ndarray
        The same per cube row (``cube_values[j, parent[i]]``: a column constant on a cube row).
    n_cells : int
        The answer's cells.

    Returns
    -------
    counts : ndarray of int64, sums, cube_sums : ndarray of float64 (``len(wanted)``, ``len(cube_wanted)`` x ``n_cells``)
    """
    kept = np.zeros(group.size, dtype=np.int64)  # per cube row
    sums = np.zeros((wanted.size, n_cells), dtype=np.float64)
    seen = np.empty(max(groups, 1), dtype=np.int64)  # her groups so far, in order of their first row
    used = np.empty(max(groups, 1), dtype=np.int64)  # the rows kept in each
    n_seen = 0
    for i in range(parent.size):
        if rank[i] == 1:
            n_seen = 0
        if rank[i] > per_unit:
            continue
        p = parent[i]
        gid = group[p]
        if gid < 0:
            continue
        j = 0
        while j < n_seen and seen[j] != gid:
            j += 1
        if j == n_seen:
            if n_seen == groups:  # a group after her first g: none of its rows kept
                continue
            seen[j] = gid
            used[j] = 0
            n_seen += 1
        if used[j] >= rows:
            continue
        used[j] += 1
        kept[p] += 1
        if wanted.size:
            c = cell[p]
            if c >= 0:
                for w in range(wanted.size):
                    sums[w, c] += values[wanted[w], i]
    counts = np.zeros(n_cells, dtype=np.int64)
    cube_sums = np.zeros((cube_wanted.size, n_cells), dtype=np.float64)
    for p in range(group.size):
        c = cell[p]
        if c >= 0 and kept[p]:
            counts[c] += kept[p]
            for w in range(cube_wanted.size):
                cube_sums[w, c] += kept[p] * cube_values[cube_wanted[w], p]
    return counts, sums, cube_sums
