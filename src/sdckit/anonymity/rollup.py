"""Frequency tables rolled up through hierarchies, compiled (the kernel of ARX's roll-up).

A *frequency table* is a set of distinct rows of integer codes with the number of records
behind each row. Its first columns are quasi-identifiers coded at some generalization level,
the last ones (if any) sensitive values, which are never generalized. Rolling a table up to a
coarser node replaces each quasi-identifier code by its ancestor's code (``parent`` chains)
and regroups equal rows, adding their counts — the frequency set of the coarser node, computed
from a finer one instead of from the records (Kohlmayer et al., "Flash: efficient, stable and
optimal k-anonymity", 2012, section 5: snapshots and roll-up).

The regrouping packs each row's codes into a mixed-radix int64 key and numbers the keys
densely — through a direct table when the key range is small, else an open-addressing hash —
in one pass, without sorting. These loops cannot be vectorised, hence numba.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from sdckit.core.hierarchy import Hierarchy


def parent_maps(hierarchies: Sequence[Hierarchy], n_sensitive: int = 0) -> np.ndarray:
    """``parent[j, l, c]``: the code at level ``l + 1`` of code ``c`` at level ``l`` of
    hierarchy ``j`` (int32, padded with 0). ``n_sensitive`` sensitive columns follow with no
    levels (they are never rolled up, so their codes need no room)."""
    width = max([1] + [h.level_sizes()[0] for h in hierarchies])
    depth = max([1] + [h.height for h in hierarchies])
    parent = np.zeros((len(hierarchies) + n_sensitive, depth, width), dtype=np.int32)
    for j, h in enumerate(hierarchies):
        for level in range(h.height):
            up = h.rollup(level, level + 1)
            parent[j, level, : len(up)] = up
    return parent


@numba.njit(cache=True)
def _group_keys(keys, radix):
    """Dense group ids (first-seen order) of int64 ``keys`` in ``0..radix-1``: a direct
    table when ``radix`` is small, otherwise open addressing with a multiplicative hash."""
    rows = len(keys)
    inverse = np.empty(rows, dtype=np.int32)
    count = 0
    if radix <= 4 * rows + 1024:
        where = np.full(radix, -1, dtype=np.int32)
        for r in range(rows):
            g = where[keys[r]]
            if g < 0:
                g = count
                where[keys[r]] = g
                count += 1
            inverse[r] = g
        return inverse, count
    bits = 4
    while (1 << bits) < 2 * rows:
        bits += 1
    mask = (1 << bits) - 1
    slots = np.full(1 << bits, -1, dtype=np.int32)
    seen = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        key = keys[r]
        slot = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
        while True:
            g = slots[slot]
            if g < 0:
                g = count
                slots[slot] = g
                seen[g] = key
                count += 1
                break
            if seen[g] == key:
                break
            slot = (slot + 1) & mask
        inverse[r] = g
    return inverse, count


@numba.njit(cache=True)
def _rollup_group(columns, counts, parent, source, target, sizes):
    m, rows = columns.shape
    width = parent.shape[2]
    direct = np.zeros((m, width), dtype=np.int32)  # code at source level -> code at target level
    for j in range(m):
        if source[j] < target[j]:
            for c in range(width):
                x = c
                for level in range(source[j], target[j]):
                    x = parent[j, level, x]
                direct[j, c] = x
    keys = np.zeros(rows, dtype=np.int64)
    radix = 1
    for j in range(m):
        size = max(sizes[j], 1)
        if radix > (1 << 62) // size:  # the mixed-radix key would overflow: re-number it densely
            dense, radix = _group_keys(keys, np.int64(radix))  # typed, never a literal (see core.grouping._nearest)
            for r in range(rows):
                keys[r] = dense[r]
        cj = columns[j]
        if source[j] < target[j]:
            dj = direct[j]
            for r in range(rows):
                keys[r] = keys[r] * size + dj[cj[r]]
        else:  # a column kept at its level: its codes as they are
            for r in range(rows):
                keys[r] = keys[r] * size + cj[r]
        radix *= size
    inverse, count = _group_keys(keys, np.int64(radix))
    sums = np.zeros(count, dtype=np.int64)
    first = np.full(count, -1, dtype=np.int64)
    for r in range(rows):
        g = inverse[r]
        sums[g] += counts[r]
        if first[g] < 0:
            first[g] = r
    grouped = np.empty((m, count), dtype=columns.dtype)
    for j in range(m):
        rolled = source[j] < target[j]
        for g in range(count):
            c = columns[j, first[g]]
            grouped[j, g] = direct[j, c] if rolled else c
    return inverse, grouped, sums


def rollup_group(columns: np.ndarray, counts: np.ndarray, parent: np.ndarray, source: np.ndarray,
                 target: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Roll a frequency table up from levels ``source`` to levels ``target`` and regroup it.

    Parameters
    ----------
    columns : (columns, rows) C-contiguous array of non-negative ints
        The table's codes, one column per row of the array (column-major, so that each
        column is read in one sweep).
    counts : (rows,) int64, records behind each row
    parent : (columns, depth, width) int32, see :func:`parent_maps`; the codes of every
        rolled-up column must be below ``width`` (the callers build codes from the
        hierarchies or check them)
    source, target : (columns,) int64, the levels of ``columns`` and the wanted levels
        (``target >= source``; equal for sensitive columns)
    sizes : (columns,) int64, the number of distinct codes of each column at ``target``

    Returns
    -------
    inverse : (rows,) int32, the group of each input row
    grouped : (columns, groups) of the dtype of ``columns``, the rolled-up codes of each group (first-seen order)
    sums : (groups,) int64, the records of each group

    Rows are grouped on a mixed-radix key of their codes, re-numbered densely whenever the
    next column would overflow 62 bits, so any number and size of columns works.
    """
    return _rollup_group(columns, counts, parent, source, target, sizes)


def dense_ids(keys: np.ndarray) -> np.ndarray:
    """Non-negative int ``keys`` renumbered ``0, 1, ...`` in order of first appearance."""
    keys = np.asarray(keys, dtype=np.int64)
    radix = int(keys.max()) + 1 if len(keys) else 1
    return _group_keys(keys, radix)[0].astype(np.int64)


@numba.njit(cache=True)
def records_in_small_classes(sizes, k, limit):
    """Records in classes smaller than ``k``, counting stops as soon as it exceeds ``limit``
    (a node fails once its suppression passes MaxSup; ARX's early exit)."""
    total = 0
    for s in sizes:
        if s < k:
            total += s
            if total > limit:
                return total
    return total


@numba.njit(cache=True)
def finest_below(nodes, rows, node):
    """The slot of the fewest ``rows`` among ``nodes <= node`` (componentwise); -1 if none."""
    best = -1
    for i in range(len(rows)):
        if rows[i] < 0 or (best >= 0 and rows[i] >= rows[best]):
            continue
        below = True
        for j in range(len(node)):
            if nodes[i, j] > node[j]:
                below = False
                break
        if below:
            best = i
    return best
