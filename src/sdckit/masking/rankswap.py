"""Rank swapping (Moore 1996; seed 002 section 4.6.3; seed 001, "Evaluation of methods: rank swapping")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval
from sdckit.core.random import derive_seed
from sdckit.core.ranks import sort_order
from sdckit.core.schema import ORDERED_KINDS, Schema
from sdckit.masking.reorder import column_order_values, take_column


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
    buffer of ``process + window`` positions (:func:`sdckit.engine.ranks.rank_swap_file`).
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


def _swap_partners(n: int, window: int, draws: np.ndarray) -> np.ndarray:
    """Partner of each sorted position under rank swapping (the whole column at once)."""
    partner = swap_partners_block(n, n, window, draws, np.ones(n, dtype=np.bool_))
    return partner


def swap_draws(n: int, key: int) -> np.ndarray:
    """The uniform draws of sorted positions ``0..n-1``, by logical chunks of sorted positions
    (chunk ``c`` from its own stream, DESIGN.md section 8), so a streamed pass over the sorted
    order draws the same ones."""
    from sdckit.core.rowwise import chunk_bounds, chunk_generator

    out = np.empty(n)
    for index, (a, b) in enumerate(chunk_bounds(n)):
        if b > a:
            out[a:b] = chunk_generator(key, index).random(b - a)
    return out


def rank_swap_source(
    values: np.ndarray, window: int, rng: np.random.Generator, *, ties: str = "random"
) -> np.ndarray:
    """For each record, the record whose value it receives under rank swapping.

    ``window`` is the largest allowed rank difference. The result is a permutation made of
    swaps (pairs) and fixed points; ``values[source]`` has the same multiset as ``values`` and
    every record's rank moves by at most ``window``.
    """
    order = sort_order(values, ties=ties, random_state=rng)  # order[r]: record of rank r+1
    partner = _swap_partners(len(values), int(window), swap_draws(len(values), derive_seed(rng)))
    source = np.empty(len(values), dtype=np.int64)
    source[order] = order[partner]
    return source


@register
@dataclass(frozen=True)
class RankSwapping(Method):
    """Rank swapping: each value swapped with a random partner of nearby rank.

    Per attribute, the values are sorted (ties broken at random, DESIGN.md section 3); going up
    the ranks, each value not yet swapped is exchanged with a partner drawn uniformly among the
    not-yet-swapped values whose rank exceeds its own by at most ``floor(p * n / 100)``; a
    value with no such partner left keeps its place. Columns are swapped independently.

    Parameters
    ----------
    p : float in (0, 100]
        Largest rank difference of a swap, in percent of the number of records ``n`` (seed 001
        uses 15: "values within a rank of 6 (15% of n = 40) are swapped randomly").
    columns : list of str, optional
        Columns to swap; default: the numeric, date and ordinal quasi-identifiers and
        confidential columns (every such column when no roles are declared).

    Notes
    -----
    Every column keeps its multiset of values (its dtype too) and no value moves by more than
    ``floor(p n / 100)`` ranks. Ordinal columns are ranked by their category order. Missing
    values are refused (``nan_policy="error"``). When ``floor(p n / 100) = 0`` nothing can be
    swapped; the report says so in ``info["warnings"]``. ``info["max_rank_difference"]`` holds
    the window and ``info["swapped_share"]`` the share of values that moved, per column.
    Each column costs ``O(n log n)`` (a sort and a compiled pass).

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "Data swapping"; seed 001
    (Domingo-Ferrer & Muralidhar, slides), "Evaluation of methods: rank swapping"; Moore
    (1996), "Controlled data-swapping techniques for masking public use microdata sets",
    U.S. Census Bureau.
    """

    p: float
    name: ClassVar[str] = "rank_swapping"
    constraints: ClassVar = {"p": Interval(float, 0, 100, closed="right")}
    kinds: ClassVar = ORDERED_KINDS
    example: ClassVar = {"p": 15}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        n = len(frame)
        window = int(np.floor(self.p * n / 100.0))
        moved = {}
        for name in columns:
            source = rank_swap_source(column_order_values(frame, name, schema), window, rng)
            moved[name] = float(np.mean(source != np.arange(n)))
            take_column(frame, name, source)
        warnings = []
        if window == 0:
            warnings.append(
                f"RankSwapping with p={self.p} on {n} records allows a rank difference of 0, so "
                "nothing was swapped; raise p."
            )
        info = {"max_rank_difference": window, "swapped_share": moved, "warnings": warnings}
        return Outcome(frame, schema, info)
