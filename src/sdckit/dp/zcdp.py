"""Conversions between rho-zero-concentrated DP and (epsilon, delta)-DP (Bun & Steinke 2016;
Canonne, Kamath & Steinke 2020, Corollary 13), for the budgets the accountant counts in rho
(:mod:`sdckit.dp.accountant`) and the Gaussian answers of the query service.

Both are functions of public numbers only (the loss asked), memoised on their exact inputs by a
bounded :func:`functools.lru_cache` (the query service converts the same ``(epsilon, delta)`` on
every query of an analyst; one :func:`rho_for` is ~70 evaluations of :func:`zcdp_delta`; issue 32).
Plain Python (no scipy: the service's first Gaussian query imported scipy.optimize, ~0.4 s)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from sdckit.core.errors import ParameterError

#: Distinct inputs remembered by each memoised conversion.
CACHE_SIZE = 4096


def _log_one_minus_inverse(am1: float) -> float:
    """``log(1 - 1/alpha)`` at ``alpha = 1 + am1``, accurate at both ends (no cancellation)."""
    return math.log(am1) - math.log1p(am1) if am1 < 1.0 else math.log1p(-1.0 / (1.0 + am1))


def _log_bound(am1: float, rho: float, epsilon: float) -> float:
    """``log`` of CKS20 Corollary 13's bound at ``alpha = 1 + am1``: ``(alpha - 1)(alpha rho -
    epsilon) - log(alpha - 1) + alpha log(1 - 1/alpha)``."""
    alpha = am1 + 1.0
    if am1 < 1.0:  # -log(am1) + alpha log(am1 / alpha), without cancelling the two logs
        return am1 * (alpha * rho - epsilon) + am1 * math.log(am1) - alpha * math.log1p(am1)
    return am1 * (alpha * rho - epsilon) - math.log(am1) + alpha * math.log1p(-1.0 / alpha)


def _best_am1(rho: float, epsilon: float) -> float:
    """``alpha - 1`` at the minimum of :func:`_log_bound` over ``alpha > 1``. The bound's log is
    strictly convex in ``alpha`` (second derivative ``2 rho + 1 / (alpha (alpha - 1)) > 0``) and
    its derivative ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)`` increases from minus
    infinity (``alpha -> 1``) to plus infinity: its one root is bisected on ``log(alpha - 1)``
    to the last bit of the double."""
    def slope(log_am1: float) -> float:
        am1 = math.exp(log_am1)
        return (2.0 * am1 + 1.0) * rho - epsilon + _log_one_minus_inverse(am1)

    lo, hi = -40.0, 40.0
    while lo > -700.0 and slope(lo) > 0.0:
        lo -= 40.0
    while hi < 700.0 and slope(hi) < 0.0:
        hi += 40.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return math.exp(mid)
        if slope(mid) < 0.0:
            lo = mid
        else:
            hi = mid


def _delta(rho: float, epsilon: float) -> float:
    """:func:`zcdp_delta`, not memoised (:func:`rho_for`'s bisection asks many rhos once)."""
    if rho <= 0:
        return 0.0
    rho, epsilon = float(rho), float(epsilon)
    best = _log_bound(_best_am1(rho, epsilon), rho, epsilon)
    guess = (epsilon + rho) / (2 * rho) - 1.0  # the small-rho approximation of the minimiser, a second candidate
    if guess > 0.0:
        best = min(best, _log_bound(guess, rho, epsilon))
    return math.exp(min(best, 0.0))


@functools.lru_cache(maxsize=CACHE_SIZE)
def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta of (epsilon, delta)-DP that rho-zCDP implies (Canonne, Kamath & Steinke 2020,
    Corollary 13): ``inf over alpha > 1`` of ``exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1)
    * (1 - 1/alpha)**alpha``, at most 1. Any alpha gives a valid bound; the infimum is found in
    logs (the bound is convex in alpha: the root of its derivative, bisected; a minimiser missed
    by rounding only makes delta larger, i.e. conservative). Memoised on the exact inputs."""
    return _delta(rho, epsilon)


@functools.lru_cache(maxsize=CACHE_SIZE)
def rho_for(epsilon: float, delta: float) -> Fraction:
    """The largest rho (a dyadic Fraction, rounded down) whose :func:`zcdp_delta` at ``epsilon``
    is at most ``delta`` (less a relative margin of 1e-9 against float error): rho-zCDP noise
    calibrated to it is (epsilon, delta)-DP. Memoised on the exact inputs (a refusal is not)."""
    epsilon, delta = float(epsilon), float(delta)
    target = delta * (1.0 - 1e-9)
    lo, hi = 0.0, max(epsilon, 1.0)
    while _delta(hi, epsilon) <= target:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _delta(mid, epsilon) <= target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    if lo <= 0.0:
        raise ParameterError(f"No rho-zCDP noise is (epsilon={epsilon:.3g}, delta={delta:.3g})-DP here: ask with a "
                             "larger epsilon or delta.")
    return Fraction(lo)
