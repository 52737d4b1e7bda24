"""The one pass over each person's rows that keeps the rows per-group bounds keep (issue 32;
:mod:`sdckit.query.rowstore` holds the rows, :mod:`sdckit.query.groupbounds` states the rules).

The persons of 2 to 4 rows are stored in blocks of the persons of the same row count ``n`` (a
dense ``persons x n`` matrix of cube rows; :data:`sdckit.query.rowstore.BLOCK`). Which of such a
person's rows the rules keep depends only on which of her rows meet the WHERE (``n`` bits) and
which pairs of them are in the same group (``n (n - 1) / 2`` bits), besides ``g, r, k'``: a table
of those ``2**(n + n (n - 1) / 2)`` patterns (1024 at ``n = 4``; :func:`patterns`, memoised per
``g, r, k'``: :func:`masks`) gives her kept rows as a bit mask, so the pass over a block has no
data-dependent branch (a branch per row mispredicts as often as the WHERE is unpredictable: 3-5
ns per row). When the groups the WHERE leaves are fewer than 8 (renumbered 1, 2, ..), the table
is indexed by her rows' group codes side by side instead (:func:`radix_patterns`: one lookup, no
comparisons; about 0.5 ns per row, 1 ns with the comparisons). The persons of one row, and of
``n <= min(g, r, k')`` rows, have all their rows meeting the WHERE kept: they are counted per cube
row at start-up (folded).
The persons of more than 4 rows are kept in file order with their ranks and go through the rules
row by row (:func:`_rest`).

Compiled by numba (``nogil``: the service's other threads run while it does; cached on disk as
sdckit's other kernels, so only a fresh install compiles them, about 3 s) when the service starts:
:meth:`sdckit.query.rowstore.RowStore.compile`. Imported only where a row store is built:
a service without a table of several rows per person never loads numba.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def _bit(pattern: int, n: int, i: int, j: int) -> int:
    """Whether rows ``i < j`` of a person of ``n`` rows are in the same group, in ``pattern``."""
    return (pattern >> (n + j * (j - 1) // 2 + i)) & 1


@numba.njit(nogil=True, cache=True)
def patterns(n: int, per_unit: int, groups: int, rows: int) -> np.ndarray:
    """The rows the rules keep (a bit per row) of a person of ``n`` rows, per pattern: bit ``j``
    (``j < n``) set when her row ``j`` meets the WHERE, bit ``n + j (j - 1) / 2 + i`` when her rows
    ``i < j`` have the same group value (only read when both meet the WHERE). Patterns that no
    person has (equalities that are not transitive) get some mask, never read."""
    table = np.zeros(1 << (n + n * (n - 1) // 2), dtype=np.uint8)
    label = np.empty(n, dtype=np.int64)  # the first row of the row's group, -1 not considered
    seen = np.empty(n, dtype=np.int64)
    used = np.empty(n, dtype=np.int64)
    for pattern in range(table.size):
        n_seen = 0
        mask = 0
        for j in range(n):
            label[j] = -1
            if j >= per_unit or not (pattern >> j) & 1:
                continue
            label[j] = j
            for i in range(j):
                if label[i] >= 0 and _bit(pattern, n, i, j):
                    label[j] = label[i]
                    break
            s = 0
            while s < n_seen and seen[s] != label[j]:
                s += 1
            if s == n_seen:
                if n_seen == groups:
                    continue
                seen[s] = label[j]
                used[s] = 0
                n_seen += 1
            if used[s] < rows:
                used[s] += 1
                mask |= 1 << j
        table[pattern] = mask
    return table


def _block_kernel(n: int, radix: bool) -> Any:
    """The pass over a block of persons of ``n`` rows (``n`` a constant of the compiled code, so
    its loops over her rows unroll): adds her kept rows to ``kept`` (per cube row) and their values
    to ``kept_sums``. Her pattern: with ``radix``, her rows' codes (group id + 1, 0 where the WHERE
    is not true; each below ``2**RADIX_BITS``) side by side, else the bits of :func:`patterns`."""

    @numba.njit(nogil=True, cache=True)
    def run(parent: np.ndarray, lo: int, hi: int, code: np.ndarray, table: np.ndarray, values: np.ndarray,
            wanted: np.ndarray, kept: np.ndarray, kept_sums: np.ndarray) -> None:
        for b in range(lo, hi, n):
            pattern = 0
            for j in range(n):
                c = code[parent[b + j]]
                if radix:
                    pattern |= c << (RADIX_BITS * j)
                else:
                    pattern |= (c != 0) << j
                    for i in range(j):
                        pattern |= (code[parent[b + i]] == c) << (n + j * (j - 1) // 2 + i)
            mask = table[pattern]
            for j in range(n):
                kept[parent[b + j]] += (mask >> j) & 1
            for w in range(wanted.size):  # (no summed column held per row asked: no loop)
                for j in range(n):
                    kept_sums[w, parent[b + j]] += ((mask >> j) & 1) * values[wanted[w], b + j]

    return run


#: The bits of a row's code in a radix pattern (:func:`radix_patterns`; its codes below 8).
RADIX_BITS = 3
#: The block kernels by (row count, radix), row counts 2 to 4 (compiled on first call).
BLOCK_KERNELS = {(n, radix): _block_kernel(n, radix) for n in (2, 3, 4) for radix in (True, False)}


@numba.njit(nogil=True, cache=True)
def radix_patterns(n: int, table: np.ndarray) -> np.ndarray:
    """:func:`patterns`' ``table`` indexed by the codes of a person's ``n`` rows side by side
    (:data:`RADIX_BITS` each, a code below ``2**RADIX_BITS``; 0: the WHERE not true): one lookup
    per person, no comparisons (about half the time per row: when the WHERE leaves fewer than 8 groups)."""
    out = np.empty(1 << (RADIX_BITS * n), dtype=np.uint8)
    codes = np.empty(n, dtype=np.int64)
    for radix in range(out.size):
        pattern = 0
        for j in range(n):
            codes[j] = (radix >> (RADIX_BITS * j)) & ((1 << RADIX_BITS) - 1)
            pattern |= (codes[j] != 0) << j
            for i in range(j):
                pattern |= (codes[i] == codes[j]) << (n + j * (j - 1) // 2 + i)
        out[radix] = table[pattern]
    return out


@functools.lru_cache(maxsize=1024)
def masks(n: int, per_unit: int, groups: int, rows: int, radix: bool) -> np.ndarray:
    """The kept rows per pattern of a person of ``n`` rows (:func:`patterns`, or
    :func:`radix_patterns`), read-only and memoised (they depend on ``g, r, k'`` only as far as
    each is below ``n``: at most 4**3 tables per ``n``)."""
    table = patterns(n, per_unit, groups, rows)
    table = radix_patterns(n, table) if radix else table
    table.flags.writeable = False
    return table


@numba.njit(nogil=True, cache=True)
def _rest(parent: np.ndarray, rank: np.ndarray, start: int, code: np.ndarray, per_unit: int, groups: int, rows: int,
          values: np.ndarray, wanted: np.ndarray, kept: np.ndarray, kept_sums: np.ndarray) -> None:
    """The same for the persons of more rows (from row ``start`` on; ``rank``: from there), by
    the rules row by row."""
    seen = np.empty(max(groups, 1), dtype=np.int64)  # her groups so far, in order of their first row
    used = np.empty(max(groups, 1), dtype=np.int64)  # the rows kept in each
    n_seen = 0
    for i in range(rank.size):
        if rank[i] == 1:
            n_seen = 0
        if rank[i] > per_unit:
            continue
        p = parent[start + i]
        gid = code[p]
        if gid == 0:
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
        for w in range(wanted.size):
            kept_sums[w, p] += values[wanted[w], start + i]


def kept_cells(parent: np.ndarray, starts: np.ndarray, rank: np.ndarray, fold_counts: np.ndarray,
               fold_sums: np.ndarray, code: np.ndarray, cell: np.ndarray, per_unit: int, groups: int, rows: int,
               values: np.ndarray, wanted: np.ndarray, cube_values: np.ndarray, cube_wanted: np.ndarray,
               n_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts and sums per answer cell of the rows per-group bounds keep.

    The kept rows and their values are added up per cube row (integers; values multiples of
    2**-10 of bounded total magnitude, the cube's exactness rule: their sums are exact in any
    order, so the order of persons is free), then per cell; a column held per cube row is summed
    as that count times its value (exact by the same rule).

    Parameters
    ----------
    parent : ndarray
        Per stored row, its cube row: the persons of ``n = 2 .. B`` rows (``B = starts.size``, at
        most 4), each her rows in file order, in rows ``starts[n - 2] .. starts[n - 1]``; then
        the persons of more rows (rows ``starts[B - 1] ..``, ``rank`` their ranks among her rows:
        1 starts a person).
    fold_counts, fold_sums : ndarray
        Per row count ``n = 1 .. B`` (index ``n - 1``) and cube row: the rows of the persons
        of ``n`` rows (``fold_sums[n - 1, j]``: of stored column ``j``, their values' sum); the
        persons of one row are stored only there (the rules keep each of their rows that meets
        the WHERE), those of ``n <= min(g, r, k')`` rows are counted from there too.
    code : ndarray of int32
        Per cube row: its SQL group's id plus one, 0 where the WHERE is not true.
    cell : ndarray
        Per cube row: its answer cell, -1 outside the declared domains (a group all the same).
    per_unit, groups, rows : int
        ``k'``, ``g``, ``r``: of a person's rows of rank ``<= k'`` in a group (WHERE true), at
        most ``r`` per group (her first ones) in her first ``g`` groups (by their first row).
    values, wanted : ndarray
        ``values[j, i]``: row ``i``'s clamped value of stored column ``j``; the sums are of the
        columns ``wanted`` (the row store keeps only columns whose sums are exact in any order).
    cube_values, cube_wanted : ndarray
        The same per cube row (``cube_values[j, p]``: a column constant on cube row ``p``).
    n_cells : int
        The answer's cells.

    Returns
    -------
    counts : ndarray of int64, sums, cube_sums : ndarray of float64 (``len(wanted)``, ``len(cube_wanted)`` x ``n_cells``)
    """
    block = starts.size
    kept = np.zeros(code.size, dtype=np.int64)  # per cube row
    kept_sums = np.zeros((wanted.size, code.size), dtype=np.float64)
    fold = np.array([n <= min(groups, rows, per_unit) for n in range(1, block + 1)])
    if code.size and code.max() >= 1 << RADIX_BITS:  # the groups the WHERE leaves renumbered 1, 2, ..
        distinct = np.unique(code)
        if distinct.size <= 1 << RADIX_BITS:
            code = (np.searchsorted(distinct, code) + (distinct[0] != 0)).astype(np.int32)
    radix = bool(code.size == 0 or code.max() < 1 << RADIX_BITS)
    small = code.astype(np.uint8) if radix else code
    for n in range(2, block + 1):
        if not fold[n - 1]:
            table = masks(n, min(per_unit, n), min(groups, n), min(rows, n), radix)
            BLOCK_KERNELS[n, radix](parent, int(starts[n - 2]), int(starts[n - 1]), small, table, values, wanted,
                                    kept, kept_sums)
    _rest(parent, rank, int(starts[block - 1]), code, per_unit, groups, rows, values, wanted, kept, kept_sums)
    return _cells(kept, kept_sums, fold, fold_counts, fold_sums, code, cell, wanted, cube_values, cube_wanted, n_cells)


@numba.njit(nogil=True, cache=True)
def _cells(kept: np.ndarray, kept_sums: np.ndarray, fold: np.ndarray, fold_counts: np.ndarray, fold_sums: np.ndarray,
           code: np.ndarray, cell: np.ndarray, wanted: np.ndarray, cube_values: np.ndarray, cube_wanted: np.ndarray,
           n_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`kept_cells`' answer from the rows kept per cube row (and the folded persons')."""
    counts = np.zeros(n_cells, dtype=np.int64)
    sums = np.zeros((wanted.size, n_cells), dtype=np.float64)
    cube_sums = np.zeros((cube_wanted.size, n_cells), dtype=np.float64)
    for p in range(code.size):
        c = cell[p]
        if c < 0 or code[p] == 0:
            continue
        for n in range(fold.size):
            if fold[n]:
                kept[p] += fold_counts[n, p]
                for w in range(wanted.size):
                    kept_sums[w, p] += fold_sums[n, wanted[w], p]
        if kept[p]:
            counts[c] += kept[p]
            for w in range(wanted.size):
                sums[w, c] += kept_sums[w, p]
            for w in range(cube_wanted.size):
                cube_sums[w, c] += kept[p] * cube_values[cube_wanted[w], p]
    return counts, sums, cube_sums
