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
2. an *exact* discrete Laplace integer ``Y`` is drawn (:mod:`sdckit.dp.sampling`), with a scale
   in grid units enlarged to cover the sensitivity plus one grid step lost to rounding, so the
   guarantee is exactly epsilon;
3. the output is ``round_to_double(x_grid + g * Y)``: IEEE addition is correctly rounded, so
   the release is a post-processing of an exact epsilon-DP value on the grid ``g * Z``, and the
   set of possible outputs is the same for every input.

Unlike OpenDP's samplers, which draw from the operating system, the draws come from the
:class:`numpy.random.Generator` sdckit passes down, so a release is reproducible under ``seed``
(the seed is never written to the manifest). PCG64 is not a cryptographic generator: for a
production release leave the seed unset (fresh OS entropy) and keep the seed secret if you set one.

References
----------
I. Mironov, "On significance of the least significant bits for differential privacy", CCS 2012.
C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
OpenDP ``make_laplace`` (discretize to ``2**k``, exact discrete Laplace, round to float).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, Satisfies, validate_params
from sdckit.core.random import RandomState, as_generator
from sdckit.dp.sampling import MAX_INT, discrete_laplace

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


def _as_finite_array(values: Any, owner: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise DataError(f"{owner} got a missing or infinite value; remove or impute it first.")
    return array


def dyadic_grid(scale: np.ndarray) -> np.ndarray:
    """The grid ``2**k <= scale * 2**-40`` (largest such power of two) for each scale > 0."""
    exponent = np.frexp(np.asarray(scale, dtype=float))[1]
    return np.ldexp(1.0, exponent - 1 - GRID_BITS)


def grid_scale(sensitivity: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid and integer scale (in grid steps) of the exact Laplace noise, per element.

    The sensitivity in grid steps grows by one step lost to rounding the input; the integer
    scale ``ceil((ceil(sensitivity / g) + 1) / epsilon) + 1`` is rounded up past any float
    rounding of the division, so the noise is never smaller than epsilon requires.
    """
    sensitivity = np.asarray(sensitivity, dtype=float)
    grid = dyadic_grid(sensitivity / epsilon)
    steps = np.ceil(sensitivity / grid) + 1.0
    integer_scale = np.ceil(steps / epsilon) + 1.0
    if np.any(integer_scale > MAX_INT):
        raise ParameterError(
            f"The 'epsilon' parameter must be a float > 2**-50 for exact sampling. Got {epsilon!r} instead."
        )
    return grid, integer_scale.astype(np.int64)


def laplace_randomise(
    values: np.ndarray, sensitivity: np.ndarray | float, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """``values + Laplace(0, sensitivity / epsilon)`` elementwise, sampled exactly on a grid.

    ``sensitivity`` is one number or one per value; a value whose sensitivity is 0 is returned
    unchanged (no variation, no noise: seed 004 section II-D3). The construction (grid, exact
    discrete Laplace, one correctly rounded addition) is described in the module docstring.
    """
    x = np.asarray(values, dtype=float)
    sens = np.broadcast_to(np.asarray(sensitivity, dtype=float), x.shape)
    out = x.copy()
    noisy = sens > 0
    if noisy.any():
        grid, integer_scale = grid_scale(sens[noisy], epsilon)
        steps = discrete_laplace(int(noisy.sum()), integer_scale, 1, rng)
        out[noisy] = np.rint(x[noisy] / grid) * grid + steps.astype(float) * grid
    return out


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism on real values: ``x + Laplace(0, sensitivity / epsilon)``.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter. Required: leaving it out raises :class:`ParameterError`.
    sensitivity : float > 0
        Largest change of the released value caused by one record. Required. For one
        record's own value in ``[lo, hi]`` it is the diameter ``hi - lo`` (seed 004 eq. 3).

    Notes
    -----
    Sampling is exact and resists the floating-point attack; see the module docstring.

    Examples
    --------
    >>> mech = Laplace(epsilon=1.0, sensitivity=2.0)
    >>> mech.scale
    2.0
    >>> mech.randomise([10.0, 20.0], rng=0).shape
    (2,)
    """

    epsilon: float | None = None
    sensitivity: float | None = None
    constraints: ClassVar = {"epsilon": POSITIVE, "sensitivity": POSITIVE}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, vars(self), self.constraints)
        grid_scale(self.sensitivity, self.epsilon)  # refuses an epsilon too small to sample

    @property
    def scale(self) -> float:
        """The Laplace scale ``b = sensitivity / epsilon``; ``E|Y| = b``, ``Var Y = 2 b**2``."""
        return self.sensitivity / self.epsilon

    @property
    def grid(self) -> float:
        """The dyadic grid ``2**k <= scale * 2**-40`` on which the noise is exact."""
        return float(grid_scale(self.sensitivity, self.epsilon)[0])

    def randomise(self, values: Any, rng: RandomState = None) -> np.ndarray:
        """Return ``values`` plus independent noise (float array of the same shape)."""
        x = _as_finite_array(values, type(self).__name__)
        return laplace_randomise(x, self.sensitivity, self.epsilon, as_generator(rng))

    def noise(self, size: int, rng: RandomState = None) -> np.ndarray:
        """``size`` draws of the noise alone (exact, on the grid)."""
        return self.randomise(np.zeros(int(size)), rng)

    def radius(self, alpha: float) -> float:
        """Half-width of the alpha-confidence interval around a released value."""
        return confidence_radius(self.scale, alpha)


@dataclass(frozen=True)
class Geometric:
    """The geometric (discrete Laplace) mechanism on integers: ``x + Y`` with
    ``P(Y = y)`` proportional to ``exp(-epsilon |y| / sensitivity)``.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter. Required: leaving it out raises :class:`ParameterError`.
    sensitivity : int >= 1
        Largest change of the released integer caused by one record. Required.

    Notes
    -----
    The scale ``sensitivity / epsilon`` is rounded *up* to a multiple of 2**-20 (at most a
    1e-6 relative increase: slightly more noise, never less privacy) and sampled exactly.
    Outputs are integers, so Mironov's low-bit attack does not apply.
    """

    epsilon: float | None = None
    sensitivity: int | None = None
    constraints: ClassVar = {"epsilon": POSITIVE, "sensitivity": Interval(int, 1, None)}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, vars(self), self.constraints)
        if self._scale_numerator() > MAX_INT:
            raise ParameterError(
                f"The 'epsilon' parameter of {type(self).__name__} is too small for the "
                f"sensitivity {self.sensitivity} (scale above 2**32). Got {self.epsilon!r} instead."
            )

    @property
    def scale(self) -> float:
        """The scale ``sensitivity / epsilon``."""
        return self.sensitivity / self.epsilon

    def _scale_numerator(self) -> int:
        return math.ceil(Fraction(self.sensitivity) * SCALE_DENOMINATOR / Fraction(self.epsilon))

    def noise(self, size: int, rng: RandomState = None) -> np.ndarray:
        """``size`` exact draws of the integer noise."""
        return discrete_laplace(int(size), self._scale_numerator(), SCALE_DENOMINATOR, as_generator(rng))

    def randomise(self, values: Any, rng: RandomState = None) -> np.ndarray:
        """Return integer ``values`` plus integer noise (int64 array)."""
        x = _as_finite_array(values, type(self).__name__)
        if np.any(x != np.round(x)) or np.any(np.abs(x) > 2.0**52):
            raise DataError(
                "Geometric adds integer noise to integer values; got a non-integer (or huge) "
                "value. Use Laplace for real values."
            )
        return x.astype(np.int64) + self.noise(x.size, rng).reshape(x.shape)

    def radius(self, alpha: float) -> float:
        """Half-width of the alpha-confidence interval (continuous approximation)."""
        return confidence_radius(self.scale, alpha)
