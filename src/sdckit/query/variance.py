"""The variance answer of the query service's dp mode (VAR_POP, STDDEV_POP; Tumult's method with
deviations from the bounds' midpoint): its estimate from three noisy measurements, the exact range
of that estimate over their intervals, and the sensitivity of the sum of squared deviations."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

#: Each of the three measurements of a variance gets this confidence in its 95% interval (union bound).
VARIANCE_LEVEL = 1.0 - 0.05 / 3


def variance_estimate(s: float, d: float, c: float, cap: float) -> float:
    """``(S / n + cap / 2) - (D / n)**2`` clamped to ``[0, cap]``, ``n = max(c, 1)``: the population
    variance from the noisy sum of shifted squared deviations ``S``, of deviations ``D`` and the
    noisy count ``c``."""
    n = max(c, 1)
    return min(max(s / n + cap / 2 - (d / n) ** 2, 0.0), cap)


def variance_range(s: float, rs: float, d: float, rd: float, c: float, rc: float, cap: float) -> list[float]:
    """The range of ``f(S, D, C) = S / C + cap / 2 - (D / C)**2`` over the box ``[s +/- rs] x
    [d +/- rd] x [c +/- rc]``, clamped to ``[0, cap]`` (``[0, cap]`` when the box reaches ``C <= 0``).

    Exact: with ``u = 1 / C``, ``f = S u - D**2 u**2 + cap / 2`` rises with ``S`` and falls with
    ``D**2``; at the largest ``S`` and smallest ``D**2`` it is concave in ``u`` (its maximum at the
    ends or at ``u = S / (2 D**2)``), at the smallest ``S`` and largest ``D**2`` its minimum is at
    an end of ``u``."""
    if c - rc <= 0:
        return [0.0, cap]
    ends = (1.0 / (c + rc), 1.0 / (c - rc))
    d_small = 0.0 if d - rd <= 0 <= d + rd else min(abs(d - rd), abs(d + rd))
    d_large = max(abs(d - rd), abs(d + rd))
    s_high, s_low = s + rs, s - rs
    tops = list(ends)
    if d_small > 0 and ends[0] < s_high / (2 * d_small ** 2) < ends[1]:
        tops.append(s_high / (2 * d_small ** 2))
    high = max(s_high * u - d_small ** 2 * u * u for u in tops) + cap / 2
    low = min(s_low * u - d_large ** 2 * u * u for u in ends) + cap / 2
    return [min(max(low, 0.0), cap), min(max(high, 0.0), cap)]


@functools.lru_cache(maxsize=1024)
def square_sensitivity(cap: float, k: int) -> float:
    """``k cap / 2`` rounded up to a double: the sensitivity of ``SUM(v - cap / 2)`` with every
    ``v`` in ``[0, cap]`` and at most ``k`` rows per person (memoised: exact Fraction arithmetic)."""
    exact_sens = k * Fraction(cap) / 2
    sens = float(exact_sens)
    return sens if Fraction(sens) >= exact_sens else math.nextafter(sens, math.inf)
