"""The rho-zCDP -> (epsilon, delta) conversion (CKS20 Corollary 13) and back (issue 32): exact up
to rounding against a 40-digit decimal oracle, memoised on the exact inputs, and plain Python
(the query service's first Gaussian answer imported scipy.optimize for it, ~0.4 s)."""

from __future__ import annotations

import ast
import inspect
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

from sdckit.core.errors import ParameterError
from sdckit.dp import zcdp
from sdckit.dp.zcdp import rho_for, zcdp_delta


def oracle_delta(rho: float, epsilon: float) -> float:
    """The infimum over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) (1 - 1/alpha)**alpha,
    at most 1, in 40-digit decimals: the root of the log's derivative (2 alpha - 1) rho - epsilon
    + ln(1 - 1/alpha), increasing in alpha, bisected on ln(alpha - 1) in [-60, 60]."""
    with localcontext() as ctx:
        ctx.prec = 40
        r, e = Decimal(rho), Decimal(epsilon)

        def alpha_of(x: Decimal) -> Decimal:
            return 1 + x.exp()

        def slope(a: Decimal) -> Decimal:
            return (2 * a - 1) * r - e + (1 - 1 / a).ln()

        lo, hi = Decimal(-60), Decimal(60)
        for _ in range(220):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if slope(alpha_of(mid)) < 0 else (lo, mid)
        a = alpha_of((lo + hi) / 2)
        log_delta = (a - 1) * (a * r - e) - (a - 1).ln() + a * (1 - 1 / a).ln()
        return float(min(Decimal(0), log_delta).exp())


POINTS = [(1e-8, 1e-3), (1e-6, 0.01), (1e-4, 0.1), (0.01, 0.5), (0.024, 1.0), (0.1, 1.0), (0.5, 3.0), (1.0, 1.0),
          (3.0, 10.0), (10.0, 1e-4), (6.4e-9, 5e-4), (2e-12, 1e-5)]


@pytest.mark.parametrize("rho, epsilon", POINTS)
def test_the_conversion_is_the_decimal_infimum(rho, epsilon):
    """Within 1e-12 (relative) of the 40-digit infimum; and a valid bound at alpha on a grid is
    never below it (the infimum is the least of them)."""
    want = oracle_delta(rho, epsilon)
    got = zcdp.zcdp_delta.__wrapped__(rho, epsilon)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
    for i in range(-80, 81):
        am1 = math.exp(i / 4)
        alpha = 1 + am1
        log_bound = am1 * (alpha * rho - epsilon) - math.log(am1) + alpha * math.log1p(-1 / alpha)
        assert got <= math.exp(min(log_bound, 0.0)) * (1 + 1e-12)


def test_rho_for_is_the_largest_rho_within_delta():
    """zcdp_delta(rho_for) <= delta, and a rho larger by 1e-11 is past delta (1 - 1e-9): the bisection's edge."""
    for epsilon, delta in ((1.0, 1e-6), (0.1, 1e-9), (3.0, 1e-5), (5e-4, 5e-10), (1e-5, 1e-12)):
        rho = float(rho_for(epsilon, delta))
        assert oracle_delta(rho, epsilon) <= delta * (1 - 1e-9) * (1 + 1e-12)
        assert oracle_delta(rho * (1 + 1e-11), epsilon) > delta * (1 - 1e-9)
    with pytest.raises(ParameterError, match="No rho-zCDP noise"):
        rho_for(1e-300, 1e-300)


def test_both_are_memoised_on_the_exact_inputs():
    """The cached value is the uncached one, and the second call is a cache hit (the same object)."""
    epsilon, delta = 0.000123, 4.56e-10
    before = rho_for.cache_info()
    first = rho_for(epsilon, delta)
    again = rho_for(epsilon, delta)
    after = rho_for.cache_info()
    assert first == rho_for.__wrapped__(epsilon, delta) and isinstance(first, Fraction)
    assert again is first and after.hits == before.hits + 1 and after.misses == before.misses + 1
    assert rho_for.cache_info().maxsize == zcdp.CACHE_SIZE
    value = zcdp_delta(0.0123, 0.456)
    hits = zcdp_delta.cache_info().hits
    assert zcdp_delta(0.0123, 0.456) == value == zcdp_delta.__wrapped__(0.0123, 0.456)
    assert zcdp_delta.cache_info().hits == hits + 1


def test_the_conversion_needs_no_scipy():
    tree = ast.parse(inspect.getsource(zcdp))
    imported = [n.module if isinstance(n, ast.ImportFrom) else a.name for n in ast.walk(tree)
                if isinstance(n, ast.Import | ast.ImportFrom) for a in getattr(n, "names", [])]
    assert not any(str(m).startswith("scipy") for m in imported), imported
