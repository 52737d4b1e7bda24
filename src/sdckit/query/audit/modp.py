"""Arithmetic modulo a secret random prime for the auditor (DESIGN.md section 7).

The auditor decides exact rational linear algebra questions (is a unit vector in the row space of
a 0/1 query matrix?) modulo a prime ``p`` drawn from OS entropy at start-up. With ``p < 2**31`` a
product of two residues fits an ``int64`` (``< 2**62``) and sums of up to ``2**32`` residues do
too, so numpy does the work without overflow.

A rank over GF(p) is at most the rank over Q, and it is lower only when ``p`` divides every maximal
non-zero minor of the matrix; as ``p`` is secret and random (about 10**8 primes of 31 bits), and a
minor of a 0/1 matrix with q rows has at most ``q/2 * log2(q)`` bits, that happens for one matrix
with probability at most ``q log2(q) / (60 * 10**8)``. The auditor runs two independent engines
(two primes, two weight vectors) and refuses when either engine sees a disclosure, so an unsafe
answer needs both primes to fail at once.
"""

from __future__ import annotations

import secrets

import numba
import numpy as np

from sdckit.core.params import Interval, validated


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for ``n < 3,215,031,751`` (bases 2, 3, 5, 7)."""
    if n < 2:
        return False
    for small in (2, 3, 5, 7):
        if n % small == 0:
            return n == small
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@validated(bits=Interval(int, 8, 31))
def random_prime(bits: int = 31) -> int:
    """A uniformly chosen prime of exactly ``bits`` bits (8 to 31), from OS entropy."""
    while True:
        candidate = secrets.randbits(bits) | (1 << (bits - 1)) | 1
        if _is_prime(candidate):
            return candidate


def inverse(a: int, p: int) -> int:
    """Multiplicative inverse of ``a`` (non-zero) modulo the prime ``p``."""
    return pow(int(a) % p, p - 2, p)


@numba.njit(cache=True)
def _rank_one_update(minv, gamma, pi, sinv, p, out):  # pragma: no cover - compiled
    """out[:r, :r] = minv + gamma pi^T sinv (mod p), in one pass."""
    r = minv.shape[0]
    for i in range(r):
        g = gamma[i]
        for j in range(r):
            out[i, j] = (minv[i, j] + (g * pi[j] % p) * sinv % p) % p


def bordered_inverse(minv: np.ndarray, gamma: np.ndarray, pi: np.ndarray, schur: int, p: int) -> np.ndarray:
    """Inverse of ``[[M, c], [d, e]]`` from ``M^-1``, ``gamma = M^-1 c``, ``pi = d M^-1`` and the
    Schur complement ``e - d M^-1 c`` (non-zero), all modulo ``p``."""
    r = minv.shape[0]
    sinv = inverse(schur, p)
    out = np.empty((r + 1, r + 1), dtype=np.int64)
    if r:
        _rank_one_update(minv, gamma.astype(np.int64), pi.astype(np.int64), np.int64(sinv), np.int64(p), out)
        out[:r, r] = (-gamma * sinv) % p
        out[r, :r] = (-pi * sinv) % p
    out[r, r] = sinv
    return out
