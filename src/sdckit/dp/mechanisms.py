"""The Laplace and geometric mechanisms with explicit sensitivity (seed 002 section 4.6.2,
seed 004 section II-D3).

``F(D) = f(D) + Y`` with ``Y`` Laplace of scale ``sensitivity / epsilon`` is epsilon-differentially
private when ``sensitivity`` bounds how much one record can move ``f``. Following diffprivlib and
OpenDP, the privacy parameters have no defaults and are checked when the mechanism is built;
sdckit never guesses a sensitivity.

How the noise is drawn (the choice, and why)
--------------------------------------------
Textbook sampling ``x + scale * log(U)`` is broken in floating point (Mironov 2012): its
possible outputs depend on ``x`` in their low bits. sdckit uses the construction OpenDP uses for
its float Laplace mechanism:

1. the input is rounded to a dyadic grid ``g = 2**k`` at least ``2**40`` times finer than the
   scale (so the rounding is invisible in the noise: relative change below 1e-12);
2. an *exact* discrete Laplace integer ``Y`` is drawn (:mod:`sdckit.dp.exact_samplers`), with a scale
   in grid units enlarged to cover the sensitivity plus one grid step lost to rounding, so the
   guarantee is exactly epsilon;
3. the output is ``round_to_double(x_grid + g * Y)``: IEEE addition is correctly rounded, so
   the release is a post-processing of an exact epsilon-DP value on the grid ``g * Z``, and the
   set of possible outputs is the same for every input.

Unlike OpenDP's samplers, which draw from the operating system, the draws come from the
:class:`numpy.random.Generator` sdckit passes down, so a release is reproducible under ``seed``
(the seed is never written to the manifest); keep the seed secret.

A mechanism may hold the caller's :class:`~sdckit.dp.BudgetAccountant` (``accountant=``): each
release is then charged before its noise is drawn and refused once the budget is spent, so
repeated releases of the same data cannot be averaged past the budget.

References
----------
I. Mironov, "On significance of the least significant bits for differential privacy", CCS 2012.
C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
OpenDP ``make_laplace`` (discretize to ``2**k``, exact discrete Laplace, round to float).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, Satisfies, validate_params
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.dp.accountant import ACCOUNTANT, BudgetAccountant
from sdckit.dp.exact_samplers import MAX_INT, discrete_laplace

#: The grid is at least this many times finer than the noise scale (rounding cost < 1e-12).
GRID_BITS = 40
#: Denominator of the rational scale of the integer (geometric) mechanism.
SCALE_DENOMINATOR = 2**20


def _positive_finite(value: Any) -> bool:
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


#: Rule for epsilon and for real sensitivities: a finite number > 0 (no silent default).
POSITIVE = Satisfies(_positive_finite, "a finite float > 0")
#: Rule for alpha-confidence levels.
CONFIDENCE = Interval(float, 0, 1, closed="neither")


def confidence_radius(scale: Any, alpha: float) -> Any:
    """Half-width ``r`` with ``P(|Y| <= r) = alpha`` for ``Y ~ Laplace(0, scale)``.

    ``1 - exp(-r/scale) = alpha`` gives ``r = scale * ln(1 / (1 - alpha))`` (seed 004 section
    V-C). ``scale`` is a number or an array.
    """
    return scale * -math.log1p(-alpha)


def as_finite_array(values: Any, owner: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise DataError(f"{owner} got a missing or infinite value; remove or impute it first.")
    return array


#: The smallest positive double (subnormal): the finest grid a float can carry.
SMALLEST_GRID = math.ldexp(1.0, -1074)


def dyadic_grid(scale: np.ndarray, bits: int = GRID_BITS) -> np.ndarray:
    """The grid ``2**k <= scale * 2**-bits`` (largest such power of two) for each scale > 0,
    never finer than the smallest positive double (so a subnormal scale still has a grid)."""
    exponent = np.frexp(np.asarray(scale, dtype=float))[1]
    return np.maximum(np.ldexp(1.0, exponent - 1 - bits), SMALLEST_GRID)


def finite_scale(sensitivity: np.ndarray, epsilon: float) -> np.ndarray:
    with np.errstate(over="ignore"):
        scale = np.asarray(sensitivity, dtype=float) / epsilon
    if not np.all(np.isfinite(scale)):
        raise ParameterError(
            "The noise scale sensitivity / epsilon is too large for a double (above 1.8e308): "
            "give a smaller 'sensitivity' (rescale the data) or a larger 'epsilon'."
        )
    return scale


def grid_scale(
    sensitivity: np.ndarray, epsilon: float, grid: np.ndarray | float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Grid and integer scale (in grid steps) of the exact Laplace noise, per element.

    The grid is :func:`dyadic_grid` of the scale unless a (public) ``grid`` is given. The
    sensitivity in grid steps grows by one step lost to rounding the input; the integer scale
    ``ceil((ceil(sensitivity / g) + 1) / epsilon) + 1`` is rounded up past any float rounding of
    the division, so the noise is never smaller than epsilon requires. With a zero sensitivity
    the scale is still ``ceil(1 / epsilon) + 1`` steps: never zero.
    """
    sensitivity = np.asarray(sensitivity, dtype=float)
    public = grid is not None
    scale = finite_scale(sensitivity, epsilon)
    grid = dyadic_grid(scale) if grid is None else np.broadcast_to(np.asarray(grid, dtype=float), scale.shape)
    with np.errstate(over="ignore"):  # an overflow is refused just below
        steps = np.ceil(sensitivity / grid) + 1.0
        integer_scale = np.ceil(steps / epsilon) + 1.0
    if np.any(integer_scale > MAX_INT):
        if public and epsilon > 2.0**-50:
            raise ParameterError(
                "The noise scale is more than 2**52 steps of the grid: give a coarser grid "
                "('resolution') or a larger 'epsilon'."
            )
        if epsilon >= 1:  # the scale sensitivity / epsilon is too fine for a double's grid
            raise ParameterError(
                f"The 'epsilon' parameter is too large for exact sampling: {epsilon:.6g} with sensitivity "
                f"{float(np.max(sensitivity)):.6g} puts the noise below the finest grid a double carries. "
                "Give a smaller 'epsilon' (or rescale the data)."
            )
        raise ParameterError(
            f"The 'epsilon' parameter must be a float > 2**-50 for exact sampling. Got {epsilon!r} instead."
        )
    return grid, integer_scale.astype(np.int64)


def add_on_grid(values: np.ndarray, grid: np.ndarray | float, steps: np.ndarray) -> np.ndarray:
    """``round_to_double(rint(values / grid) * grid + steps * grid)``, elementwise.

    ``grid`` is a power of two, so both products are exact and the one addition is correctly
    rounded: the output is a post-processing of the exact grid value (Mironov 2012). A value
    of magnitude at least ``2**52 * grid`` is already a multiple of the grid and is not divided
    (``values / grid`` could overflow); a sum past the largest double is clipped to it.
    """
    x = np.asarray(values, dtype=float)
    grid = np.broadcast_to(np.asarray(grid, dtype=float), x.shape)
    coarse = np.abs(x) >= grid * 2.0**52
    with np.errstate(over="ignore", invalid="ignore"):
        on_grid = np.where(coarse, x, np.rint(np.where(coarse, 0.0, x) / grid) * grid)
        out = on_grid + steps.astype(float) * grid
    return np.clip(out, -np.finfo(float).max, np.finfo(float).max)


def laplace_randomise(
    values: np.ndarray, sensitivity: np.ndarray | float, epsilon: float, rng: np.random.Generator,
    grid: np.ndarray | float | None = None, noise_at_zero: bool = False,
) -> np.ndarray:
    """``values + Laplace(0, sensitivity / epsilon)`` elementwise, sampled exactly on a grid.

    ``sensitivity`` is one number or one per value. The construction (grid, exact discrete
    Laplace, one correctly rounded addition) is described in the module docstring. The grid is
    the scale's own (:func:`dyadic_grid`) unless a public ``grid`` is given: with per-element
    sensitivities taken from the data (as (k,epsilon)-anonymity's class diameters are), a
    scale-relative grid would publish each scale in the low bits of the output, so such callers
    pass one grid for all. A value whose sensitivity is 0 is returned unchanged unless
    ``noise_at_zero`` (then it gets the noise of one grid step: never none).
    """
    x = np.asarray(values, dtype=float)
    sens = np.broadcast_to(np.asarray(sensitivity, dtype=float), x.shape)
    out = x.copy()
    noisy = np.ones(x.shape, dtype=bool) if noise_at_zero else sens > 0
    if noisy.any():
        chosen = None if grid is None else np.broadcast_to(np.asarray(grid, dtype=float), x.shape)[noisy]
        step, integer_scale = grid_scale(sens[noisy], epsilon, chosen)
        steps = discrete_laplace(int(noisy.sum()), integer_scale, 1, rng)
        out[noisy] = add_on_grid(x[noisy], step, steps)
    return out


@dataclass(frozen=True)
class Mechanism:
    """What every noise mechanism shares: the accountant the caller holds.

    ``accountant`` (a :class:`~sdckit.dp.BudgetAccountant`, optional) is charged the
    mechanism's (epsilon, delta) by every :meth:`randomise` call, before any noise is drawn;
    when the budget would be passed the call raises :class:`~sdckit.dp.BudgetExceeded` and
    releases nothing. It is not a parameter: mechanisms that differ only in their accountant
    compare equal.
    """

    accountant: BudgetAccountant | None = field(default=None, kw_only=True, compare=False, repr=False)

    def privacy(self) -> tuple[float, float]:  # pragma: no cover - interface
        """The (epsilon, delta) one :meth:`randomise` call costs."""
        raise NotImplementedError

    def _charge(self) -> None:
        if self.accountant is not None:
            epsilon, delta = self.privacy()
            self.accountant.spend(epsilon, f"{type(self).__name__}.randomise", delta=delta)


@dataclass(frozen=True)
class Laplace(Mechanism):
    """The Laplace mechanism on real values: ``x + Laplace(0, sensitivity / epsilon)``.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter. Required: leaving it out raises :class:`ParameterError`.
    sensitivity : float > 0
        Largest change of a released value caused by one record. Required. For one
        record's own value in ``[lo, hi]`` it is the diameter ``hi - lo`` (seed 004 eq. 3).
    accountant : BudgetAccountant, optional
        Charged ``epsilon`` by each :meth:`randomise` call, which is refused once the budget
        is spent (see :class:`Mechanism`).

    Notes
    -----
    Sampling is exact and resists the floating-point attack; see the module docstring.
    Each value gets its own noise, so one :meth:`randomise` call is epsilon-DP when one record
    can change at most one of the values (values of distinct people, counts of disjoint
    groups); when one record can change several, each of them costs epsilon: call once per
    value. A value at or above about ``2**52`` grid steps is already on the grid and is not
    rescaled (no overflow); an output past the largest double is clipped to it.

    Examples
    --------
    >>> mech = Laplace(epsilon=1.0, sensitivity=2.0)
    >>> mech.scale
    2.0
    >>> mech.randomise([10.0, 20.0], seed=0).shape
    (2,)
    """

    epsilon: float | None = None
    sensitivity: float | None = None
    constraints: ClassVar = {"epsilon": POSITIVE, "sensitivity": POSITIVE, "accountant": ACCOUNTANT}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, vars(self), self.constraints)
        grid_scale(self.sensitivity, self.epsilon)  # refuses an epsilon too small to sample

    def privacy(self) -> tuple[float, float]:
        return self.epsilon, 0.0

    @property
    def scale(self) -> float:
        """The Laplace scale ``b = sensitivity / epsilon``; ``E|Y| = b``, ``Var Y = 2 b**2``."""
        return self.sensitivity / self.epsilon

    @property
    def grid(self) -> float:
        """The dyadic grid ``2**k <= scale * 2**-40`` on which the noise is exact."""
        return float(grid_scale(self.sensitivity, self.epsilon)[0])

    @renamed_seed("rng")
    def randomise(self, values: Any, seed: RandomState = None) -> np.ndarray:
        """Return ``values`` plus independent noise (float array of the same shape); charges
        the accountant first."""
        x = as_finite_array(values, type(self).__name__)
        self._charge()
        return laplace_randomise(x, self.sensitivity, self.epsilon, as_generator(seed))

    @renamed_seed("rng")
    def noise(self, size: int, seed: RandomState = None) -> np.ndarray:
        """``size`` draws of the noise alone (exact, on the grid; no data, nothing charged)."""
        return laplace_randomise(np.zeros(int(size)), self.sensitivity, self.epsilon, as_generator(seed))

    def radius(self, alpha: float) -> float:
        """Half-width of the alpha-confidence interval around a released value."""
        return confidence_radius(self.scale, alpha)


@dataclass(frozen=True)
class Geometric(Mechanism):
    """The geometric (discrete Laplace) mechanism on integers: ``x + Y`` with
    ``P(Y = y)`` proportional to ``exp(-epsilon |y| / sensitivity)``.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter. Required: leaving it out raises :class:`ParameterError`.
    sensitivity : int >= 1
        Largest change of a released integer caused by one record. Required.
    accountant : BudgetAccountant, optional
        Charged ``epsilon`` by each :meth:`randomise` call (see :class:`Mechanism`).

    Notes
    -----
    The scale ``sensitivity / epsilon`` is rounded *up* to a multiple of 2**-20 (at most a
    1e-6 relative increase: slightly more noise, never less privacy) and sampled exactly.
    Outputs are integers, so Mironov's low-bit attack does not apply.
    """

    epsilon: float | None = None
    sensitivity: int | None = None
    constraints: ClassVar = {"epsilon": POSITIVE, "sensitivity": Interval(int, 1, None), "accountant": ACCOUNTANT}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, vars(self), self.constraints)
        if self.scale_numerator() > MAX_INT:
            raise ParameterError(
                f"The 'epsilon' parameter of {type(self).__name__} is too small for the "
                f"sensitivity {self.sensitivity} (scale above 2**32). Got {self.epsilon!r} instead."
            )

    @property
    def scale(self) -> float:
        """The scale ``sensitivity / epsilon``."""
        return self.sensitivity / self.epsilon

    def privacy(self) -> tuple[float, float]:
        return self.epsilon, 0.0

    def scale_numerator(self) -> int:
        """The scale actually sampled, as a numerator over ``SCALE_DENOMINATOR`` (2**20): the
        exact ``sensitivity / epsilon`` rounded up, so the noise is never smaller than epsilon
        requires (the query service states and reuses it)."""
        return _scale_numerator(self.sensitivity, self.epsilon)

    @renamed_seed("rng")
    def noise(self, size: int, seed: RandomState = None) -> np.ndarray:
        """``size`` exact draws of the integer noise."""
        return discrete_laplace(int(size), self.scale_numerator(), SCALE_DENOMINATOR, as_generator(seed))

    @renamed_seed("rng")
    def randomise(self, values: Any, seed: RandomState = None) -> np.ndarray:
        """Return integer ``values`` plus integer noise (int64 array); charges the accountant
        first (one call is epsilon-DP when one record changes at most one value)."""
        x = as_finite_array(values, type(self).__name__)
        if np.any(x != np.round(x)) or np.any(np.abs(x) > 2.0**52):
            raise DataError(
                "Geometric adds integer noise to integer values; got a non-integer (or huge) "
                "value. Use Laplace for real values."
            )
        self._charge()
        return x.astype(np.int64) + self.noise(x.size, seed).reshape(x.shape)

    def radius(self, alpha: float) -> float:
        """Half-width of the alpha-confidence interval (continuous approximation)."""
        return confidence_radius(self.scale, alpha)


@functools.lru_cache(maxsize=1024, typed=True)
def _scale_numerator(sensitivity: int, epsilon: float) -> int:
    """``ceil(sensitivity * SCALE_DENOMINATOR / epsilon)`` exactly (memoised: Fraction arithmetic)."""
    return math.ceil(Fraction(sensitivity) * SCALE_DENOMINATOR / Fraction(epsilon))


@functools.lru_cache(maxsize=1024, typed=True)
def geometric(epsilon: float, sensitivity: int) -> Geometric:
    """``Geometric(epsilon=epsilon, sensitivity=sensitivity)`` without accountant, memoised: the
    query service builds the same few query after query, and a :class:`Geometric` is frozen (its
    parameters validated once). ``typed``: ``1`` and ``1.0`` (or ``True``) are not shared."""
    return Geometric(epsilon=epsilon, sensitivity=sensitivity)
