"""The compiled loop of :func:`sdckit.dp.exact_samplers.binomial_exp_neg_int`: exact binomial
counts by comparing uniform reals, one bit at a time, with a probability's binary expansion.

Kept apart so that numba is loaded by the first quantile that needs it, not by every import of
:mod:`sdckit.dp.exact_samplers`. ``nogil``: the query service's other threads run meanwhile.
"""

from __future__ import annotations

import numba
import numpy as np

_ONE = np.uint64(1)


@numba.njit(cache=True, nogil=True)
def _popcount(x: np.uint64) -> np.int64:  # pragma: no cover - compiled
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True)
def binomial_by_bits(counts: np.ndarray, pwords: np.ndarray, pool: np.ndarray,
                     out: np.ndarray) -> np.int64:  # pragma: no cover - compiled
    """``out[g]``: how many of ``counts[g]`` uniform reals in [0, 1) fall below ``p_g``, whose
    binary expansion is the 64-bit words ``pwords[g]`` (most significant first), the reals'
    bits read from ``pool`` (uniform 64-bit words, a stream of bits, each read once). At bit ``t``
    each real still tied with ``p_g`` draws its bit: those that differ from ``p_g``'s bit are
    decided (below when ``p_g``'s bit is 1), the others stay tied; ``alive`` fair bits are counted
    by popcounts of up to 64 at a time. Returns the words begun, ``-1`` when ``pool`` ran out,
    ``-2`` when some ``pwords[g]`` did (draw more and call again: the same words give the same
    counts)."""
    pos, used = 0, 0  # the word read, its bits already taken
    nbits = pwords.shape[1] * 64
    for g in range(counts.size):
        alive = np.int64(counts[g])
        below = np.int64(0)
        t = 0
        while alive > 0:
            if t >= nbits:
                return np.int64(-2)
            bit = (pwords[g, t >> 6] >> np.uint64(63 - (t & 63))) & np.uint64(1)
            ones = np.int64(0)
            left = alive
            while left > 0:
                if used == 64:
                    pos += 1
                    used = 0
                if pos >= pool.size:
                    return np.int64(-1)
                take = min(left, 64 - used)
                chunk = pool[pos] >> np.uint64(used)
                if take < 64:
                    chunk = chunk & ((np.uint64(1) << np.uint64(take)) - np.uint64(1))
                ones += _popcount(chunk)
                used += take
                left -= take
            if bit == np.uint64(1):  # a real whose bit is 0 is below p, one whose bit is 1 still tied
                decided = alive - ones
                below += decided
            else:  # a real whose bit is 1 is above p
                decided = ones
            alive -= decided
            t += 1
        out[g] = below
    return np.int64(pos + 1)
