"""The quantile mechanism of the query service's dp mode: permute-and-flip over a grid of
candidates with exact coins (McKenna & Sheldon 2020), and the bound on its rank error."""

from __future__ import annotations

import math

import numpy as np

from sdckit.dp.exact_samplers import bernoulli_exp_neg_rational
from sdckit.query.generate import QUANTILE_BINS

#: Epsilon of a quantile is rounded down to a multiple of 2**-EPS_BITS (exact rational sampling).
EPS_BITS = 20
#: Utilities are integers: D * #{x < c} - round(q D) * n with D = 2**Q_BITS.
Q_BITS = 16
#: Exponents past this are clipped (probability below exp(-64); clipping only shrinks differences).
_MAX_EXPONENT = 64


def permute_and_flip(below: np.ndarray, n: int, q: float, epsilon: float, k: int, rng: np.random.Generator) -> int:
    """Index of the grid point chosen as the q-quantile (McKenna & Sheldon 2020, permute-and-flip).

    ``below[j]`` is the number of records below grid point ``j``; the utility
    ``u_j = -|D below_j - round(q D) n|`` (``D = 2**16``) changes by at most ``D k`` when one person
    (``k`` rows) is added or removed. Candidates are visited in a random order and candidate ``j``
    is taken with probability ``exp(-epsilon (u* - u_j) / (2 D k))``, the best one surely: an
    epsilon-DP choice. Every coin is exact (:func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg_rational`
    with ``epsilon`` rounded down to a multiple of 2**-20); no floating point on the sampling path.
    """
    d = 2**Q_BITS
    utility = -np.abs(d * below.astype(np.int64) - int(round(q * d)) * int(n))
    gap = utility.max() - utility  # >= 0, 0 at the best candidates
    eps_num = math.floor(epsilon * 2**EPS_BITS)
    den = 2 ** (EPS_BITS + 1) * d * k
    cap = -(-_MAX_EXPONENT * den // eps_num)  # gaps past this have probability below exp(-64)
    num = np.minimum(gap, cap) * eps_num
    coins = bernoulli_exp_neg_rational(num, den, rng)
    order = rng.permutation(below.size)
    return int(order[np.argmax(coins[order])])


def quantile_rank_radius(epsilon: float, k: int, confidence: float = 0.95, candidates: int = QUANTILE_BINS + 1) -> float:
    """Records by which, with probability >= ``confidence``, the rank of a permute-and-flip
    quantile (:func:`permute_and_flip`) is further from the target rank than the best grid point's.

    Permute-and-flip outputs candidate ``j`` only if ``j``'s own coin comes up, so
    ``P(out = j) <= exp(-eps' gap_j / (2 D k))`` (``eps'`` the epsilon rounded down to a multiple of
    2**-20, gaps clipped only past exponent 64, far beyond this bound). A union bound over the
    ``m`` candidates: ``P(gap >= G) <= m exp(-eps' G / (2 D k)) = 1 - confidence`` at
    ``G = (2 D k / eps') ln(m / (1 - confidence))``, and a gap ``G`` in utility is ``G / D`` records:
    ``|below_out - q n| <= |below_best - q n| + (2 k / eps') ln(m / (1 - confidence))``. This is
    a statement about ranks; a value interval would need the data's density near the quantile,
    which is not released (so the quantile's ``ci95`` stays ``null``).
    """
    eps = math.floor(epsilon * 2**EPS_BITS) / 2**EPS_BITS
    return 2.0 * k * math.log(candidates / (1.0 - confidence)) / eps
