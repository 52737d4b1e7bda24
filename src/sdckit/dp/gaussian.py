"""The analytic Gaussian mechanism, sampled exactly as a discrete Gaussian on a fine grid
(Balle & Wang 2018; Canonne, Kamath & Steinke 2020).

Definition
----------
``F(D) = f(D) + N(0, sigma**2)`` is (epsilon, delta)-differentially private when one record
changes ``f`` by at most ``sensitivity`` (``Delta``) and (Balle & Wang 2018, Theorem 8)

    Phi(Delta / (2 sigma) - epsilon sigma / Delta)
        - exp(epsilon) Phi(-Delta / (2 sigma) - epsilon sigma / Delta)  <=  delta.

The *analytic* Gaussian mechanism takes the smallest such sigma (:func:`analytic_sigma`), found by
bisection on this exact condition, not the classical ``sqrt(2 ln(1.25/delta)) Delta / epsilon``
(which is larger, and wrong for epsilon > 1).

Sampling, and what it costs in delta
------------------------------------
As for the Laplace mechanism (:mod:`sdckit.dp.mechanisms`), no float Gaussian is ever drawn.
The input is rounded to a dyadic grid ``g`` about ``2**-20`` of sigma, and an exact discrete
Gaussian integer ``Y`` of variance ``V = t * c`` (in grid steps) is added
(:func:`sdckit.dp.exact_samplers.discrete_gaussian`); one correctly rounded addition gives the output.
On the grid, neighbouring inputs differ by an integer number of steps ``d <= Delta_g = ceil(Delta
/ g) + 1`` (one step lost to rounding), and the discrete Gaussian's exact privacy profile
(CKS20, Theorem 7) is ``delta_Z = P[Y > a] - exp(epsilon) P[Y > b]`` with ``a = epsilon V / d -
d / 2``, ``b = a + d``. Comparing its sums with the Gaussian integrals (the normaliser is at
least ``sqrt(2 pi V)`` by Poisson summation; a tail sum differs from its integral by at most the
density at the threshold) gives, for ``a >= 0`` and every ``d <= Delta_g``,

    delta_Z <= delta_Gauss(sigma_g, Delta_g) + 2 phi(a / sigma_g) / sigma_g

with ``sigma_g = sqrt(V)`` and ``phi`` the standard normal density (the bound grows with ``d``, so
``d = Delta_g`` is the worst case). sdckit chooses ``V`` so that this whole bound is at most
delta; the extra term is below ``1e-6`` of delta for usual parameters, so the noise is within
about ``1e-5`` of the analytic sigma. Draws come from sdckit's seeded generator (reproducible under
``seed``); OpenDP's exact Gaussian cannot be seeded and accounts in zero-concentrated DP only.

References
----------
B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy: Analytical
Calibration and Optimal Denoising", ICML 2018, Theorem 8 and Algorithm 1.
C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS
2020, Theorem 7 and Algorithm 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy.special import log_ndtr, ndtri

from sdckit.core.errors import ParameterError
from sdckit.core.params import Interval, validate_params
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.dp.accountant import ACCOUNTANT
from sdckit.dp.mechanisms import POSITIVE, Mechanism, as_finite_array, finite_scale, add_on_grid, dyadic_grid
from sdckit.dp.exact_samplers import discrete_gaussian

#: The grid is about this many binary orders of magnitude finer than sigma.
GAUSS_GRID_BITS = 20
#: Rule for delta: a probability, strictly between 0 and 1.
DELTA = Interval(float, 0, 1, closed="neither")
#: Relative margin kept below the target delta against float error in evaluating Phi.
_MARGIN = 1e-9


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The smallest delta for which ``N(0, sigma**2)`` noise is (epsilon, delta)-DP at this
    sensitivity (Balle & Wang 2018, Theorem 8), computed in logs so that tiny deltas stay exact."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = float(log_ndtr(a - b))
    second = epsilon + float(log_ndtr(-a - b))
    if second >= first:
        return 0.0
    return math.exp(first) * -math.expm1(second - first)


def _smallest_sigma(condition, start: float) -> float:
    """Smallest sigma > 0 with ``condition(sigma)`` true, for a condition monotone in sigma:
    doubling to a bracket, then bisection to 1e-12 relative; returns the side that holds."""
    lo = hi = start
    while not condition(hi):
        lo, hi = hi, hi * 2.0
        if not math.isfinite(hi):
            raise ParameterError(
                "The Gaussian noise scale is too large for a double: give a smaller "
                "'sensitivity' (rescale the data) or a larger 'epsilon' or 'delta'."
            )
    while condition(lo) and lo > 1e-300:
        lo /= 2.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if condition(mid):
            hi = mid
        else:
            lo = mid
    return hi


def analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The analytic Gaussian mechanism's sigma (Balle & Wang 2018, Algorithm 1): the smallest
    sigma with :func:`gaussian_delta` at most ``delta`` (bisection on the exact condition)."""
    target = delta * (1.0 - _MARGIN)
    return _smallest_sigma(lambda s: gaussian_delta(s, sensitivity, epsilon) <= target, sensitivity)


def discrete_delta_bound(sigma_g: float, sensitivity_g: int, epsilon: float) -> float:
    """Upper bound on the delta of the discrete Gaussian of standard deviation ``sigma_g`` (grid
    steps) for integer shifts up to ``sensitivity_g`` (module docstring); ``inf`` when the bound
    does not apply (``a < 0``, only for deltas near 1/2)."""
    a = epsilon * sigma_g / sensitivity_g - sensitivity_g / (2.0 * sigma_g)  # a / sigma_g
    if a < 0:
        return math.inf
    density = math.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    return gaussian_delta(sigma_g, sensitivity_g, epsilon) + 2.0 * density / sigma_g


@dataclass(frozen=True)
class GaussianCalibration:
    """How :class:`Gaussian` samples: grid ``grid`` (a power of two), discrete variance
    ``t * c`` in grid steps, sensitivity ``steps`` in grid steps, and the resulting ``sigma``
    (``grid * sqrt(t * c)``), at least the analytic sigma."""

    grid: float
    t: int
    c: int
    steps: int

    @property
    def sigma(self) -> float:
        return self.grid * math.sqrt(self.t * self.c)


def calibrate(epsilon: float, delta: float, sensitivity: float) -> GaussianCalibration:
    """The exact discrete sampling of the analytic Gaussian mechanism (module docstring)."""
    sigma = analytic_sigma(epsilon, delta, sensitivity)
    finite_scale(np.asarray(sigma), 1.0)
    grid = float(dyadic_grid(np.asarray(sigma), GAUSS_GRID_BITS))
    steps = math.ceil(sensitivity / grid) + 1
    target = delta * (1.0 - _MARGIN)
    sigma_g = _smallest_sigma(lambda s: discrete_delta_bound(s, steps, epsilon) <= target, sigma / grid)
    t = math.ceil(sigma_g)
    c = math.ceil(sigma_g * sigma_g / t)
    while discrete_delta_bound(math.sqrt(t * c), steps, epsilon) > target:  # float safety
        c += 1
    if t * c > 2**50:
        raise ParameterError(
            "The Gaussian noise cannot be sampled exactly for these parameters (the grid needed "
            "is too fine for the sensitivity); give a larger 'delta' or 'epsilon'."
        )
    return GaussianCalibration(grid, t, c, steps)


@dataclass(frozen=True)
class Gaussian(Mechanism):
    """The analytic Gaussian mechanism on real values: ``x + N(0, sigma**2)``, (epsilon,
    delta)-differentially private (Balle & Wang 2018), sampled exactly (module docstring).

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter. Required.
    delta : float in (0, 1)
        Privacy parameter: the probability mass on which the epsilon bound may fail. Required
        (no default; a common choice is well below 1/n for n records).
    sensitivity : float > 0
        Largest change of a released value caused by one record. Required.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, delta)`` by each :meth:`randomise` call, which is refused once the
        budget is spent.

    Notes
    -----
    Each value gets its own noise, so one :meth:`randomise` call is (epsilon, delta)-DP when one
    record can change at most one of the values; when one record can change several, call once
    per value (basic composition). ``sigma`` is the standard deviation actually used: at least
    the analytic sigma, larger by the rounding grid and the discretisation term (about 1e-5
    relative).

    Examples
    --------
    >>> mech = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
    >>> round(mech.analytic_sigma, 4), round(mech.sigma, 4)
    (4.2247, 4.2247)
    >>> mech.randomise([10.0, 20.0], seed=0).shape
    (2,)
    """

    epsilon: float | None = None
    delta: float | None = None
    sensitivity: float | None = None
    constraints: ClassVar = {"epsilon": POSITIVE, "delta": DELTA, "sensitivity": POSITIVE, "accountant": ACCOUNTANT}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, vars(self), self.constraints)
        _ = self.calibration  # refuses parameters that cannot be sampled exactly

    @cached_property
    def calibration(self) -> GaussianCalibration:
        """Grid, discrete variance and sensitivity in grid steps (:func:`calibrate`)."""
        return calibrate(self.epsilon, self.delta, self.sensitivity)

    @property
    def sigma(self) -> float:
        """The standard deviation of the noise actually added."""
        return self.calibration.sigma

    @property
    def analytic_sigma(self) -> float:
        """Balle & Wang's analytic sigma for these parameters (:func:`analytic_sigma`)."""
        return analytic_sigma(self.epsilon, self.delta, self.sensitivity)

    @property
    def grid(self) -> float:
        """The dyadic grid every output lies on."""
        return self.calibration.grid

    def privacy(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    @renamed_seed("rng")
    def noise(self, size: int, seed: RandomState = None) -> np.ndarray:
        """``size`` draws of the noise alone (exact, on the grid; no data, nothing charged)."""
        cal = self.calibration
        return discrete_gaussian(int(size), cal.t, cal.c, as_generator(seed)) * cal.grid

    @renamed_seed("rng")
    def randomise(self, values: Any, seed: RandomState = None) -> np.ndarray:
        """Return ``values`` plus independent noise (float array of the same shape); charges
        the accountant first."""
        x = as_finite_array(values, type(self).__name__)
        self._charge()
        cal = self.calibration
        steps = discrete_gaussian(x.size, cal.t, cal.c, as_generator(seed)).reshape(x.shape)
        return add_on_grid(x, cal.grid, steps)

    def radius(self, alpha: float) -> float:
        """Half-width ``sigma * Phi^-1((1 + alpha) / 2)`` of the alpha-confidence interval."""
        return self.sigma * float(ndtri(0.5 + 0.5 * alpha))
