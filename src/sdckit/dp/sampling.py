"""Exact discrete-Laplace sampling on a seeded generator (Canonne, Kamath & Steinke 2020).

Textbook Laplace sampling, ``x + scale * log(U)`` in floating point, leaks the input through
the low bits of its output (Mironov 2012, "On significance of the least significant bits for
differential privacy"): the set of doubles it can output depends on ``x``, so one released value
can rule out a neighbouring input with certainty. sdckit therefore never adds floating-point
Laplace noise. It samples the *discrete* Laplace distribution exactly, with integer arithmetic
only, and builds the real-valued mechanism on a fine dyadic grid from it (the construction
OpenDP uses for its float Laplace mechanism; see :mod:`sdckit.dp.mechanisms`).

Every random draw is an exact uniform integer from a :class:`numpy.random.Generator`, so the
noise is reproducible under sdckit's ``seed`` (DESIGN.md section 2) while its distribution is
exact: there is no ``log``, ``exp`` or float comparison on the sampling path.

References
----------
C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020, Algorithms 1 (Bernoulli(exp(-gamma))) and 2 (discrete Laplace).
"""

from __future__ import annotations

import numpy as np

#: Bound on the integer numerators and denominators, so that every intermediate fits in int64.
MAX_INT = 2**52


def bernoulli_exp_neg(num: np.ndarray, den: int | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) draws for integers ``0 <= num <= den`` (CKS20 Algorithm 1).

    ``den`` is one positive integer or one per draw.

    Draws ``A_K ~ Bernoulli(gamma/K)`` for K = 1, 2, ... until the first failure; the result is
    True when that K is odd. Each ``A_K`` is ``integers(0, den*K) < num``: exact.
    """
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.ones(num.shape, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        success = rng.integers(0, den[idx] * k[idx]) < num[idx]
        k[idx[success]] += 1
        active[idx[~success]] = False
    return k % 2 == 1


def _geometric_exp_neg_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials."""
    count = np.zeros(size, dtype=np.int64)
    active = np.ones(size, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        success = bernoulli_exp_neg(np.ones(idx.size, dtype=np.int64), 1, rng)
        count[idx[success]] += 1
        active[idx[~success]] = False
    return count


def discrete_laplace(size: int, s: int | np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace distribution with scale ``s/r``.

    ``P(Y = y)`` is proportional to ``exp(-|y| r / s)`` over the integers (CKS20 Algorithm 2).

    Parameters
    ----------
    size : int
        Number of draws.
    s : int or int array of shape (size,)
        The scale's numerator(s), positive integers at most 2**52 (one per draw if an array).
    r : int
        The scale's denominator, a positive integer at most 2**52.
    rng : numpy.random.Generator
        The only source of randomness (uniform integers only).
    """
    s = np.broadcast_to(np.asarray(s, dtype=np.int64), (size,))
    if size and not (np.all(s > 0) and np.all(s <= MAX_INT) and 0 < r <= MAX_INT):
        raise ValueError("a scale is outside the exact sampler's range")
    out = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        sp = s[pending]
        u = rng.integers(0, sp)
        keep = bernoulli_exp_neg(u, sp, rng)
        v = _geometric_exp_neg_one(m, rng)
        # v is geometric with mean 0.58; v > 2**10 has probability exp(-1024): never.
        y = (u + sp * np.minimum(v, 2**10)) // r
        negative = rng.integers(0, 2, m).astype(bool)
        keep &= ~(negative & (y == 0))
        out[pending[keep]] = np.where(negative, -y, y)[keep]
        pending = pending[~keep]
    return out
