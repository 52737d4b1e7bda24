"""The discrete Gaussian's variance ``t c`` of a rho share (issue 32, latency):
:func:`sdckit.query.noisy_gaussian.variance_for` finds its divisor by a vectorised search and is
memoised. Checked against a brute-force oracle (the Python loop over every candidate divisor) by
exact Fraction arithmetic."""

from __future__ import annotations

import math
import time
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from sdckit.query.noisy_gaussian import MAX_VARIANCE, largest_divisor, variance_for


def brute_largest_divisor(n: int, low: int, high: int) -> int:
    """Every candidate from ``high`` down to ``low + 1``, one at a time."""
    return next((t for t in range(high, low, -1) if n % t == 0), 0)


def brute_variance_for(steps: int, rho: Fraction, squared: int | None = None) -> tuple[int, int]:
    target = Fraction(steps * steps if squared is None else squared) / (2 * rho)
    need = math.ceil(target)
    root = max(1, math.isqrt(need))
    if target.denominator == 1:
        t = brute_largest_divisor(need, root // 4, root)
        if t:
            return t, need // t
    return root, -(-need // root)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10**5), st.integers(0, 400), st.integers(0, 400))
def test_largest_divisor_matches_the_brute_force_loop(n, low, width):
    assert largest_divisor(n, low, low + width) == brute_largest_divisor(n, low, low + width)


def test_largest_divisor_crosses_its_blocks():
    """The divisor in the first (4,096) block and past the first three (28,672 candidates), the
    largest first; 0 when none is in range."""
    assert largest_divisor(1_000_003 * 999_983, 0, 1_000_000) == 999_983  # primes: 17 below ``high``
    n = 1_000_003 * 1_100_009  # isqrt 1,048,814: 1,000,003 is its largest divisor below, 48,811 candidates down
    assert largest_divisor(n, math.isqrt(n) // 4, math.isqrt(n)) == 1_000_003
    assert brute_largest_divisor(n, math.isqrt(n) // 4, math.isqrt(n)) == 1_000_003
    assert largest_divisor(1_000_003, 0, 1000) == 1  # prime: only 1 below its root
    assert largest_divisor(1_000_003, 1, 1000) == 0


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 10**6), st.integers(1, 10**6), st.booleans())
def test_variance_covers_the_target_and_equals_the_brute_force(steps, num, den, squared):
    """``t c >= steps**2 / (2 rho)`` always (exact Fractions), ``(t, c)`` the oracle's, and the
    rho ``steps**2 / (2 t c)`` equal to the share exactly when the target is an integer with a
    divisor in ``(isqrt / 4, isqrt]``."""
    rho = Fraction(num, den)
    sq = steps * steps + 1 if squared else None
    target = Fraction(sq if sq is not None else steps * steps) / (2 * rho)
    if math.ceil(target) > MAX_VARIANCE:
        return
    t, c = variance_for(steps, rho, sq)
    assert t >= 1 and c >= 1 and t * c >= target
    assert (t, c) == brute_variance_for(steps, rho, sq)
    need = math.ceil(target)
    root = max(1, math.isqrt(need))
    if target.denominator == 1 and any(need % d == 0 for d in range(root, root // 4, -1)):
        assert Fraction(sq if sq is not None else steps * steps, 2 * t * c) == rho


def test_exact_on_small_integer_targets_by_brute_force():
    """Every integer target 1..3000 (steps 1, rho 1 / (2 n)): exact whenever a divisor lies in range."""
    for n in range(1, 3001):
        t, c = variance_for(1, Fraction(1, 2 * n))
        root = math.isqrt(n)
        has = any(n % d == 0 for d in range(root, root // 4, -1))
        assert (t * c == n) if has else (t * c >= n)
        assert (t, c) == brute_variance_for(1, Fraction(1, 2 * n))


def test_a_prime_target_near_the_largest_variance_is_fast():
    """A prime target just below 2**50 has no divisor in ``(isqrt / 4, isqrt]``: the old Python
    loop tried all 2.5e7 candidates (about 2 s); the vectorised search takes about 60 ms. Then the
    memoised call answers at once."""
    prime = 1125899906842597  # the largest prime below 2**50
    rho = Fraction(1, 2 * prime)
    variance_for.cache_clear()
    start = time.perf_counter()
    t, c = variance_for(1, rho)
    assert time.perf_counter() - start < 0.5
    root = math.isqrt(prime)
    assert (t, c) == (root, -(-prime // root)) and t * c > prime
    start = time.perf_counter()
    assert variance_for(1, rho) == (t, c)
    assert time.perf_counter() - start < 0.001


def test_memoised_measurements_are_immutable_and_exact():
    """:func:`gridded` is memoised: the same public parameters give the same (frozen) measurement,
    whose rho is the exact ``steps**2 / (2 t c)`` and at most the share; the memoised midpoint
    sensitivity and square cap are the exact values rounded outwards (checked by Fractions)."""
    import dataclasses

    import pytest

    from sdckit.query.generate import midpoint_sensitivity, square_cap
    from sdckit.query.noisy_gaussian import gridded
    from sdckit.query.variance import square_sensitivity

    rho = Fraction(1, 6)
    m = gridded(200_000.0, rho, 1)
    assert gridded(200_000.0, rho, 1) is m
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.t = 1  # type: ignore[misc]
    assert m.rho == Fraction(m.steps**2, 2 * m.t * m.c) <= rho and m.t * m.c >= Fraction(m.steps**2) / (2 * rho)
    for lo, hi, k in ((0.0, 200_000.0, 1), (-3.5, 0.1, 3), (0.1, 0.7, 2)):
        mid, sens = midpoint_sensitivity(lo, hi, k)
        exact = k * max(Fraction(hi) - Fraction(mid), Fraction(mid) - Fraction(lo))
        assert Fraction(sens) >= exact and Fraction(math.nextafter(sens, 0.0)) < exact
        cap = square_cap(lo, hi)
        a = max(Fraction(hi) - Fraction(mid), Fraction(mid) - Fraction(lo))
        assert Fraction(cap) <= a * a < Fraction(math.nextafter(cap, math.inf))
        half = square_sensitivity(cap, k)
        assert Fraction(half) >= k * Fraction(cap) / 2 > Fraction(math.nextafter(half, 0.0))
