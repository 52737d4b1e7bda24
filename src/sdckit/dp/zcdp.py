"""Conversions between rho-zero-concentrated DP and (epsilon, delta)-DP (Bun & Steinke 2016;
Canonne, Kamath & Steinke 2020, Corollary 13), for the budgets the accountant counts in rho
(:mod:`sdckit.dp.accountant`) and the Gaussian answers of the query service."""

from __future__ import annotations

import math
from fractions import Fraction

from sdckit.core.errors import ParameterError


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta of (epsilon, delta)-DP that rho-zCDP implies (Canonne, Kamath & Steinke 2020,
    Corollary 13): ``inf over alpha > 1`` of ``exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1)
    * (1 - 1/alpha)**alpha``. Any alpha gives a valid bound; the infimum is found numerically in
    logs (a minimiser that misses it only makes delta larger, i.e. conservative)."""
    from scipy.optimize import minimize_scalar

    if rho <= 0:
        return 0.0

    def log_delta(log_am1: float) -> float:
        am1 = math.exp(log_am1)
        alpha = am1 + 1.0
        return am1 * (alpha * rho - epsilon) - log_am1 + alpha * math.log1p(-1.0 / alpha)

    best = minimize_scalar(log_delta, bounds=(-20.0, 20.0), method="bounded", options={"xatol": 1e-10})
    return min(1.0, math.exp(min(float(best.fun), log_delta(math.log((epsilon + rho) / (2 * rho))))))


def rho_for(epsilon: float, delta: float) -> Fraction:
    """The largest rho (a dyadic Fraction, rounded down) whose :func:`zcdp_delta` at ``epsilon``
    is at most ``delta`` (less a relative margin of 1e-9 against float error): rho-zCDP noise
    calibrated to it is (epsilon, delta)-DP."""
    target = delta * (1.0 - 1e-9)
    lo, hi = 0.0, max(epsilon, 1.0)
    while zcdp_delta(hi, epsilon) <= target:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if zcdp_delta(mid, epsilon) <= target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    if lo <= 0.0:
        raise ParameterError(f"No rho-zCDP noise is (epsilon={epsilon:.3g}, delta={delta:.3g})-DP here: ask with a "
                             "larger epsilon or delta.")
    return Fraction(lo)
