"""The partner choice of rank swapping (Moore 1996; seed 002 section 4.6.3), shared by the
method in memory (:mod:`sdckit.masking.rankswap`) and its out-of-core run over a sorted stream
(:func:`sdckit.engine.external_sort.rank_swap_file`), so both give the same partners for a seed."""

from __future__ import annotations

import numba
import numpy as np

from sdckit.core.rowwise import chunk_bounds, chunk_generator


@numba.njit(cache=True, inline="always")
def _popcount(x):
    """Number of set bits of a uint64 (SWAR)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True)
def _remove(bits, tree, p):
    """Take position ``p`` out of the bitmap and out of its word's count in the Fenwick tree."""
    bits[p >> 6] &= ~(np.uint64(1) << np.uint64(p & 63))
    b = (p >> 6) + 1
    while b < tree.shape[0]:
        tree[b] -= 1
        b += b & -b


@numba.njit(cache=True)
def swap_partners_block(n, process, window, draws, free):
    """Partners of sorted positions ``0 .. process-1`` of a stretch of ``n`` positions.

    Positions are visited in ascending order; a position not yet swapped (``free``) is swapped
    with a position drawn uniformly (``draws[i]`` in [0, 1)) among the not-yet-swapped positions
    in ``(i, i + window]`` (within the stretch), or left in place when there is none. The
    not-yet-swapped positions are a bitmap of 64-bit words with a Fenwick tree of the words'
    counts (small enough to stay in cache), so counting the candidates and finding the drawn one
    cost ``O(log n)`` and one column ``O(n log n)``.

    Run on the whole column (``process == n``, every position free) this is rank swapping in
    memory; run on consecutive stretches of a sorted stream (``n = process + window``, the
    positions the earlier stretches took marked not ``free``) it gives the same partners with a
    buffer of ``process + window`` positions (:func:`sdckit.engine.external_sort.rank_swap_file`).
    Returns the partner (a position of the stretch) of each position of the stretch: of each
    processed position, and of each position a processed one took; ``-1`` for the others (taken
    by an earlier stretch, or not reached yet); ``free`` is updated.
    """
    one = np.uint64(1)
    nwords = (n + 63) >> 6
    bits = np.zeros(nwords, dtype=np.uint64)
    tree = np.zeros(nwords + 1, dtype=np.int32)
    for p in range(n):
        if free[p]:
            bits[p >> 6] |= one << np.uint64(p & 63)
    for w in range(nwords):  # linear-time Fenwick build over the words' counts
        b = w + 1
        tree[b] += _popcount(bits[w])
        parent = b + (b & -b)
        if parent <= nwords:
            tree[parent] += tree[b]
    top = 1
    while top * 2 <= nwords:
        top *= 2
    partner = np.full(n, -1, dtype=np.int64)
    for i in range(process):
        if (bits[i >> 6] >> np.uint64(i & 63)) & one == 0:
            continue
        _remove(bits, tree, i)
        free[i] = False
        partner[i] = i
        # every position <= i is out of the bitmap, so the candidates are the positions
        # still present below hi
        hi = min(n, i + 1 + window)
        hb = hi >> 6
        count = 0
        b = hb
        while b > 0:
            count += tree[b]
            b -= b & -b
        r = hi & 63
        if r:
            count += _popcount(bits[hb] & ((one << np.uint64(r)) - one))
        if count == 0:
            continue
        want = np.int64(draws[i] * count) + 1  # the want-th present position, 1-based
        word = 0
        step = top
        while step > 0:  # Fenwick descent to the word holding it
            nxt = word + step
            if nxt <= nwords and tree[nxt] < want:
                word = nxt
                want -= tree[nxt]
            step //= 2
        w = bits[word]
        for _ in range(want - 1):  # drop the lower set bits
            w &= w - one
        j = 64 * word + _popcount((w & (~w + one)) - one)  # index of the lowest set bit
        _remove(bits, tree, j)
        free[j] = False
        partner[i] = j
        partner[j] = i
    return partner


def swap_partners(n: int, window: int, draws: np.ndarray) -> np.ndarray:
    """Partner of each sorted position under rank swapping (the whole column at once)."""
    partner = swap_partners_block(n, n, window, draws, np.ones(n, dtype=np.bool_))
    return partner


def swap_draws(n: int, key: int) -> np.ndarray:
    """The uniform draws of sorted positions ``0..n-1``, by logical chunks of sorted positions
    (chunk ``c`` from its own stream, DESIGN.md section 8), so a streamed pass over the sorted
    order draws the same ones."""
    out = np.empty(n)
    for index, (a, b) in enumerate(chunk_bounds(n)):
        if b > a:
            out[a:b] = chunk_generator(key, index).random(b - a)
    return out
