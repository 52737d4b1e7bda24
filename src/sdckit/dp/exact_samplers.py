"""Exact discrete-Laplace and discrete-Gaussian sampling on a seeded generator (Canonne, Kamath
& Steinke 2020).

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

OpenDP (installed) has exact samplers of both distributions, but they draw from the operating
system's generator and cannot be seeded, so a release made with them could not be reproduced
under sdckit's seed; these are written here for that reason, vectorised over numpy int64, and
tested against their probability mass functions (``tests/test_dp_mechanisms.py``).

References
----------
C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020, Algorithms 1 (Bernoulli(exp(-gamma))), 2 (discrete Laplace) and 3 (discrete
Gaussian).
"""

from __future__ import annotations

import threading
from fractions import Fraction

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
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials (each trial
    :func:`bernoulli_exp_neg_one`: one uniform 64-bit word against exp(-1)'s expansion)."""
    count = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        success = bernoulli_exp_neg_one(active.size, rng)
        active = active[success]
        count[active] += 1
    return count


def _first_accepted(keep: np.ndarray, owner: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Of candidates ``keep`` (accepted or not), candidate ``i`` drawn for element ``owner[i]``
    of ``m``: the elements with an accepted candidate and, for each, its *first* accepted one.
    Candidates that are i.i.d. per element and taken in their order give the law of drawing them
    one at a time until one is accepted (rejection sampling), in fewer rounds."""
    accepted = np.flatnonzero(keep)
    elements, first = np.unique(owner[accepted], return_index=True)
    return elements, accepted[first]


def _candidates(m: int) -> np.ndarray:
    """Which element each candidate of a round belongs to: each of the ``m`` pending elements
    gets 2 candidates (4 for one alone). A round of :func:`discrete_laplace` or
    :func:`discrete_gaussian` costs dozens of numpy calls whatever its size and a candidate is
    accepted about half the time, so twice the candidates take about half the rounds (186 draws:
    1.35 -> 0.40 ms; 8 Gaussian draws: 0.97 -> 0.31 ms)."""
    return np.arange(max(2 * m, 4)) % m


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
        owner = _candidates(pending.size)
        m = owner.size
        sp = s[pending][owner]
        u = rng.integers(0, sp)
        keep = bernoulli_exp_neg(u, sp, rng)
        v = _geometric_exp_neg_one(m, rng)
        # v is geometric with mean 0.58; v > 2**10 has probability exp(-1024): never.
        y = (u + sp * np.minimum(v, 2**10)) // r
        negative = rng.integers(0, 2, m).astype(bool)
        keep &= ~(negative & (y == 0))
        elements, first = _first_accepted(keep, owner, pending.size)
        out[pending[elements]] = np.where(negative, -y, y)[first]
        pending = np.delete(pending, elements)
    return out


def bernoulli_exp_neg_rational(num: np.ndarray, den: int | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) draws for integers ``num >= 0``, ``den >= 1`` (any ratio).

    ``exp(-gamma) = exp(-1)**floor(gamma) * exp(-frac(gamma))``: the first factor is the chance
    that at least ``floor(gamma)`` Bernoulli(exp(-1)) trials succeed in a row (CKS20 Algorithm 1,
    case gamma > 1), the second :func:`bernoulli_exp_neg` of the remainder.
    """
    return bernoulli_exp_neg_streak(num, den, rng)


def discrete_gaussian(size: int, t: int, c: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` exact draws of the discrete Gaussian with variance parameter ``sigma**2 = t * c``.

    ``P(Y = y)`` is proportional to ``exp(-y**2 / (2 sigma**2))`` over the integers (CKS20
    Algorithm 3): a discrete Laplace candidate ``Y`` of scale ``t`` is kept with probability
    ``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))``. Writing ``sigma**2 = t * c`` makes
    ``sigma**2 / t = c`` an integer, so the acceptance exponent is the integer ratio
    ``(|Y| - c)**2 / (2 t c)`` and every step is exact int64 arithmetic. The algorithm is
    exact for any positive ``t``; ``t`` near sigma makes it fast (about two rounds).

    Parameters
    ----------
    size : int
        Number of draws.
    t, c : int
        Positive integers with ``t * c <= 2**50`` (so ``sigma <= 2**25``).
    rng : numpy.random.Generator
        The only source of randomness (uniform integers only).
    """
    if size and not (0 < t and 0 < c and t * c <= 2**50):
        raise ValueError("the discrete Gaussian's variance t * c is outside the exact sampler's range")
    out = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        owner = _candidates(pending.size)
        y = discrete_laplace(owner.size, t, 1, rng)
        # |Y| > 2**31 has probability below exp(-2**31 / t) <= exp(-64): never; the cap only
        # keeps (|Y| - c)**2 inside int64.
        gap = np.minimum(np.abs(y), 2**31) - c
        keep = bernoulli_exp_neg_rational(gap * gap, 2 * t * c, rng)
        elements, first = _first_accepted(keep, owner, pending.size)
        out[pending[elements]] = y[first]
        pending = np.delete(pending, elements)
    return out


#: The 64-bit words of exp(-1)'s binary expansion found so far (:func:`_exp_neg_one_word`).
_WORDS: list[int] = []
_WORDS_LOCK = threading.Lock()


def _exp_neg_one_word(i: int) -> int:
    """The ``i``-th 64-bit word of ``exp(-1)``'s binary expansion (word 0: bits 1..64 after the
    point), exactly: partial sums of ``sum (-1)**k / k!`` bracket ``exp(-1)`` (alternating, each
    within ``1 / (k + 1)!``), refined until both ends agree on the word (``exp(-1)`` is irrational)."""
    with _WORDS_LOCK:
        _extend_words(i)
    return _WORDS[i]


def _extend_words(i: int) -> None:
    _words = _WORDS
    while len(_words) <= i:
        bits = 64 * (len(_words) + 1)
        total, term, k = Fraction(1), Fraction(1), 0
        while True:
            k += 1
            term = -term / k
            low, high = sorted((total, total + term))
            if (low.numerator << bits) // low.denominator == (high.numerator << bits) // high.denominator:
                break
            total += term
        _words.append(((low.numerator << bits) // low.denominator) & (2**64 - 1))


def bernoulli_exp_neg_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` exact Bernoulli(exp(-1)) draws (:func:`bernoulli_exp_neg_int` of 1): the same law as
    :func:`bernoulli_exp_neg` with ``num = den = 1``, without its loop."""
    return bernoulli_exp_neg_int(np.ones(size, dtype=np.int64), rng)


def bernoulli_exp_neg_int(whole: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-whole)) draws for integers ``whole >= 0``: a uniform real in [0, 1),
    drawn 64 bits at a time, compared with ``exp(-whole)``'s binary expansion (:func:`_exp_neg_one_word`
    for 1, :func:`exp_neg_int_words` else; ``exp(0) = 1`` always comes up); it is below with
    probability exactly ``exp(-whole)``. The next word is drawn only on a tie (probability 2**-64
    a word), so a draw costs one uniform 64-bit integer, however large ``whole``."""
    whole = np.asarray(whole, dtype=np.int64)
    words = rng.integers(0, 2**64 - 1, whole.size, dtype=np.uint64, endpoint=True)
    first = _first_words(int(whole.max(initial=1)))[whole]
    out = (words < first) | (whole == 0)
    for j in np.flatnonzero((words == first) & (whole > 0)).tolist():  # a tie: compare the next words
        i = 1
        while True:
            word = int(rng.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
            if word != _expansion_word(int(whole[j]), i):
                out[j] = word < _expansion_word(int(whole[j]), i)
                break
            i += 1
    return out


def _first_words(top: int) -> np.ndarray:
    """Word 0 of ``exp(-w)``'s expansion for ``w = 0 .. top`` (``2**64 - 1`` for ``w = 0``), kept."""
    global _FIRSTS
    if _FIRSTS.size <= top:
        _FIRSTS = np.array([2**64 - 1] + [_expansion_word(w, 0) for w in range(1, 2 * top + 1)], dtype=np.uint64)
    return _FIRSTS


_FIRSTS = np.zeros(0, dtype=np.uint64)


def _expansion_word(w: int, i: int) -> int:
    """Word ``i`` of ``exp(-w)``'s binary expansion (``w >= 1``)."""
    return _exp_neg_one_word(i) if w == 1 else exp_neg_int_words(w, i + 1)[i]


def bernoulli_exp_neg_streak(num: np.ndarray, den: int | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) draws for integers ``num >= 0``, ``den >= 1``, the law of
    :func:`bernoulli_exp_neg_rational` with less work when many exponents are large:
    ``exp(-gamma) = exp(-1)**floor(gamma) * exp(-frac(gamma))`` as ``floor(gamma)``
    :func:`bernoulli_exp_neg_one` successes in a row (each draw stops at its first failure, so
    about 1.6 uniform integers a draw however large ``gamma``), then :func:`bernoulli_exp_neg`
    of the remainder."""
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    whole, rest = np.divmod(num, den)
    out = np.ones(num.shape, dtype=bool)
    pending, step = np.flatnonzero(whole), 0
    while pending.size:
        success = bernoulli_exp_neg_one(pending.size, rng)
        out.flat[pending[~success]] = False
        step += 1
        pending = pending[success]
        pending = pending[whole.flat[pending] > step]
    idx = np.flatnonzero(out)
    out.flat[idx] = bernoulli_exp_neg(rest.flat[idx], den.flat[idx], rng)
    return out


#: Words of exp(-w)'s binary expansion found so far, by w (:func:`exp_neg_int_words`).
_POWER_WORDS: dict[int, tuple[int, ...]] = {}


def exp_neg_int_words(w: int, count: int) -> tuple[int, ...]:
    """The first ``count`` 64-bit words of the binary expansion of ``exp(-w)`` (integer ``w >= 1``;
    word 0: bits 1..64 after the point), exactly: with ``l = floor(exp(-1) 2**P)`` (the words of
    :func:`_exp_neg_one_word`), ``exp(-w) 2**(P w)`` lies in ``[l**w, (l + 1)**w)``; when both
    ends give the same leading ``64 count`` bits, those are ``exp(-w)``'s (else ``P`` grows;
    ``exp(-w)`` is irrational, so this ends)."""
    have = _POWER_WORDS.get(w, ())
    if len(have) >= count:
        return have[:count]
    with _WORDS_LOCK:
        words = count + 1 + w.bit_length() // 32
        while True:
            _extend_words(words - 1)
            low = 0
            for i in range(words):
                low = (low << 64) | _WORDS[i]
            shift = 64 * words * w - 64 * count
            first, last = (low**w) >> shift, ((low + 1) ** w - 1) >> shift
            if first == last:
                break
            words *= 2
    found = tuple((first >> (64 * (count - 1 - i))) & (2**64 - 1) for i in range(count))
    _POWER_WORDS[w] = found
    return found


def binomial_exp_neg_int(counts: np.ndarray, wholes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact ``Binomial(counts[g], exp(-wholes[g]))`` draws (integers ``wholes >= 1``): how many of
    ``counts[g]`` uniform reals fall below ``exp(-wholes[g])``, each compared with its binary
    expansion (:func:`exp_neg_int_words`) one bit at a time, all the reals still tied at once
    (:func:`sdckit.dp.binomial_kernel.binomial_by_bits`): the reals tied at bit ``t`` that
    differ from it there are ``Binomial(tied, 1/2)``, the popcount of as many uniform bits. About
    ``2 counts[g]`` uniform bits and ``log2(counts[g]) + 2`` steps a draw, where one
    Bernoulli(exp(-w)) per real (:func:`bernoulli_exp_neg_streak`) takes a uniform 64-bit integer
    each: the law of the number of its successes, from about 30 times fewer random words (a
    pool of about twice the words expected is drawn, more if it runs out: the words not read are
    left unused, independent of the result)."""
    from sdckit.dp.binomial_kernel import binomial_by_bits  # numba: loaded by the first quantile, not on import

    counts = np.ascontiguousarray(counts, dtype=np.int64)
    wholes = np.asarray(wholes, dtype=np.int64)
    if counts.size and (counts.min() < 0 or wholes.min() < 1):
        raise ValueError("binomial_exp_neg_int: counts must be >= 0 and wholes >= 1")
    out = np.zeros(counts.size, dtype=np.int64)
    pool = rng.integers(0, 2**64 - 1, int(counts.sum()) // 16 + 2 * counts.size + 8, dtype=np.uint64,
                        endpoint=True)  # about twice the bits expected
    count = 2
    while True:
        pwords = np.array([exp_neg_int_words(int(w), count) for w in wholes.tolist()], dtype=np.uint64).reshape(-1, count)
        used = binomial_by_bits(counts, pwords, pool, out)
        if used == -1:  # more uniform words (the first ones are read again: the same counts so far)
            pool = np.concatenate([pool, rng.integers(0, 2**64 - 1, pool.size, dtype=np.uint64, endpoint=True)])
        elif used == -2:  # more of exp(-w)'s bits (a tie past 64 count bits: probability below 2**-100)
            count *= 2
        else:
            return out
