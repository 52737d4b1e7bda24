"""Gaussian answers of the query service for (epsilon, delta)-DP and rho-zCDP budgets (issue 32).

A dp analyst's budget has one definition, fixed at ``analyst add``
(:data:`sdckit.query.analysts.DEFINITIONS`). Pure epsilon-DP budgets get the Laplace answers of
:mod:`sdckit.query.noisy`; the two others get the *discrete Gaussian* (Canonne, Kamath & Steinke
2020), sampled exactly (:func:`sdckit.dp.exact_samplers.discrete_gaussian`):

* **Measurements** as for Laplace: one COUNT (when COUNT or AVG is asked) and one clamped SUM per
  summed column, the SUM of an averaged column being the sum of deviations from the bounds'
  midpoint (:func:`sdckit.query.noisy.midpoint_sensitivity`). The budget is split equally.
* **Sensitivity** (L2, add/remove one person of at most ``k`` rows, every declared group):
  COUNT ``k`` (integers: the noise is an integer, no grid); SUM ``k M`` with ``M`` the largest
  magnitude of a clamped value (or of a deviation), put on a dyadic grid ``g`` about ``2**-20`` of
  the noise's standard deviation, in grid steps ``ceil(k M / g) + k`` with GROUP BY (each of the
  at most ``k`` cells a person touches loses one step to rounding) and ``ceil(k M / g) + 1``
  without.
* **rho-zCDP**: a measurement with rho share ``rho_i`` (exact) gets a discrete Gaussian of
  variance ``V = t c >= Delta**2 / (2 rho_i)`` (integers ``t``, ``c``; ``V`` equal to it when that
  is an integer with a divisor near its square root), which is ``Delta**2 / (2 V)``-zCDP for the
  whole vector of groups (CKS20, Theorem 14; L2 sensitivity ``Delta`` in grid steps). The query
  is *charged* the sum of these exact rhos (a :class:`~fractions.Fraction`), which is at most
  the rho asked and equal to it whenever every ``V`` is exact: the budget holds the mechanisms'
  true zCDP cost.
* **(epsilon, delta)-DP**: basic composition (Dwork & Roth 2014, Theorem 3.16), exact: the query
  is charged the ``(epsilon, delta)`` asked; each of its ``m`` measurements gets
  ``(epsilon / m, delta / m)`` (floats rounded down) and, through :func:`sdckit.dp.zcdp.rho_for`
  (CKS20, Corollary 13), the largest rho whose conversion is within them, then the zCDP noise
  above. (For one scalar this is about 7% more noise than Balle & Wang's analytic Gaussian at
  epsilon 1, delta 1e-6, but it holds for the multivariate discrete Gaussian of a GROUP BY.)
  A measurement whose Gaussian would have a larger median absolute error than the pure
  ``epsilon / m`` noise of :mod:`sdckit.query.noisy` gets that noise instead
  (:class:`LaplaceMeasurement`, :func:`cheaper`; ``(epsilon / m, 0)``-DP, the charge unchanged):
  at the small deltas asked that is every measurement, as in Tumult Analytics, whose
  ``ApproxDPBudget`` aggregations use Laplace noise with delta 0.
* **AVG** ``= m + noisy D / max(noisy COUNT, 1)`` clamped, a SUM of an averaged column
  ``noisy D + m noisy COUNT`` (as in :mod:`sdckit.query.noisy`).
* **VAR_POP / STDDEV_POP** and **COUNT(DISTINCT)** as in :mod:`sdckit.query.noisy`: the sum of
  squared deviations shifted by half their cap is one more SUM measurement (L2 sensitivity
  ``k cap / 2``), a distinct count one more COUNT measurement (L2 sensitivity ``k``).
* **ci95**: the discrete Gaussian of variance ``V`` is sub-Gaussian with ``P(|Y| >= r) <= 2
  exp(-r**2 / (2 V))`` (CKS20, Proposition 25), so ``r = sqrt(2 V ln(2 / 0.05))``; AVG the corners
  at 97.5% each; SUM of an averaged column ``+/- (r_D + |m| r_C)`` at 97.5% each.

Quantiles, MIN and MAX keep their pure epsilon-DP mechanism (permute-and-flip,
:mod:`sdckit.query.quantiles`), one more measurement each in the equal split: under
(epsilon, delta)-DP it gets the share ``epsilon / m`` (a pure mechanism is (epsilon, 0)-DP; the
query is charged what it asked), under rho-zCDP the largest ``epsilon`` with ``epsilon**2 / 2``
within its rho share (:func:`~sdckit.query.quantiles.zcdp_epsilon`), and the query is charged
that exact ``epsilon**2 / 2`` (Bun & Steinke 2016, Proposition 1.4).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.dp.accountant import exact_text
from sdckit.dp.zcdp import rho_for
from sdckit.dp.exact_samplers import discrete_gaussian
from sdckit.dp.mechanisms import add_on_grid, geometric, dyadic_grid, grid_scale, laplace_randomise
from sdckit.query.config import TableConfig
from sdckit.query.generate import (contribution_bound, distinct_columns, midpoint_sensitivity, square_cap, squared_columns,
                                   summed_columns)
from sdckit.query.generate import quantile_columns
from sdckit.query.grid import quantile_bins
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.noisy import (COUNTED, answer_rows, deviation_sums, discrete_laplace_radius, distinct_key,
                                geometric_scale, histograms_of, laplace_radius, other_texts, square_key)
from sdckit.query.quantiles import choose_quantiles, quantile_key, quantile_scale, quantile_text, zcdp_epsilon
from sdckit.query.sql import Query
from sdckit.query.variance import square_sensitivity

#: The grid of a Gaussian SUM is about this many binary orders finer than its standard deviation.
GRID_BITS = 20
#: Largest discrete variance the exact sampler takes (in grid steps squared).
MAX_VARIANCE = 2**50


@functools.lru_cache(maxsize=1024)
def variance_for(steps: int, rho: Fraction, squared: int | None = None) -> tuple[int, int]:
    """Integers ``(t, c)`` with ``t c >= steps**2 / (2 rho)`` (``squared / (2 rho)`` when given: a
    squared L2 sensitivity that is not a square), ``t`` near the standard deviation (the sampler's
    rounds), and ``t c`` equal to it when that is an integer with a divisor in ``(isqrt / 4, isqrt]``
    (the largest such divisor is ``t``; then the mechanism's rho is exactly ``rho``).

    Memoised (the same shares recur query after query; the arguments are exact integers and
    Fractions, the answer a pure function of them) and the divisor found by
    :func:`largest_divisor` (vectorised: at most ``0.75 sqrt(2**50)`` candidates, about 50 ms,
    where a Python loop took seconds)."""
    target = Fraction(steps * steps if squared is None else squared) / (2 * rho)
    need = math.ceil(target)
    if need > MAX_VARIANCE:
        raise ParameterError(f"The Gaussian noise for rho {exact_text(rho)} is too large to sample exactly: ask "
                             "with a larger rho (or epsilon and delta).")
    root = max(1, math.isqrt(need))
    if target.denominator == 1:
        t = largest_divisor(need, root // 4, root)
        if t:
            return t, need // t
    return root, -(-need // root)


def largest_divisor(n: int, low: int, high: int) -> int:
    """The largest divisor ``t`` of ``n`` with ``low < t <= high`` (0 if none), ``0 <= low``,
    ``n <= 2**62``: the candidates from ``high`` downwards in numpy blocks (4,096 first, doubling
    to 2**20), exact in int64."""
    block = 4096
    while high > low:
        stop = max(low, high - block)
        candidates = np.arange(high, stop, -1, dtype=np.int64)
        hits = np.flatnonzero(np.remainder(n, candidates) == 0)
        if hits.size:
            return int(candidates[hits[0]])
        high, block = stop, min(2 * block, 1 << 20)
    return 0


@dataclass(frozen=True)
class Measurement:
    """One Gaussian measurement: L2 sensitivity in grid ``steps``, the grid (1 for a count),
    the discrete variance ``t c`` in steps, and its exact rho ``steps**2 / (2 t c)``."""

    sensitivity: float
    grid: float
    steps: int
    t: int
    c: int
    #: The squared L2 sensitivity in steps when it is not ``steps**2`` (per-group bounds' counts).
    squared: int | None = None

    @functools.cached_property
    def rho(self) -> Fraction:
        return Fraction(self.steps * self.steps if self.squared is None else self.squared, 2 * self.t * self.c)

    @property
    def sigma(self) -> float:
        """The standard deviation parameter of the noise, in data units."""
        return self.grid * math.sqrt(self.t * self.c)

    def radius(self, confidence: float) -> float:
        """``r`` with ``P(|noise| >= r) <= 1 - confidence`` (sub-Gaussian tail, CKS20 Prop. 25)."""
        return self.sigma * math.sqrt(2.0 * math.log(2.0 / (1.0 - confidence)))


@dataclass(frozen=True)
class LaplaceMeasurement:
    """A measurement of an ``approx`` plan answered with pure ``epsilon``-DP noise instead (the
    exact geometric noise of :mod:`sdckit.query.noisy` for a count, ``integer``; the exact Laplace
    on a dyadic grid for a sum): ``(epsilon, 0)``-DP is ``(epsilon, delta)``-DP, and at the small
    deltas asked it is far less noise than the Gaussian calibrated through zCDP (Tumult Analytics
    likewise answers ``ApproxDPBudget`` aggregations with Laplace noise and ``delta`` 0).
    ``sensitivity``: L1, ``k`` for a count."""

    sensitivity: float
    epsilon: float
    integer: bool

    @functools.cached_property
    def scale(self) -> float:
        """The noise's actual Laplace scale ``b`` (>= sensitivity / epsilon), computed once."""
        if self.integer:
            return geometric_scale(self.epsilon, int(self.sensitivity))
        grid, steps = grid_scale(np.asarray(self.sensitivity, dtype=float), self.epsilon)
        return float(steps) * float(grid)

    @property
    def sigma(self) -> float:
        """The noise's standard deviation: ``sqrt(2) b`` (Laplace), ``sqrt(2 p) / (1 - p)``,
        ``p = exp(-1 / b)`` (discrete Laplace)."""
        if self.integer:
            p = math.exp(-1.0 / self.scale)
            return math.sqrt(2.0 * p) / (1.0 - p)
        return math.sqrt(2.0) * self.scale

    def radius(self, confidence: float) -> float:
        """The exact ``confidence`` radius of the (discrete) Laplace noise."""
        return (discrete_laplace_radius(self.scale, confidence) if self.integer
                else laplace_radius(self.scale, confidence))

    def text(self) -> str:
        kind = "geometric (discrete Laplace)" if self.integer else "Laplace on a dyadic grid"
        return (f"exact {kind} (pure epsilon-DP, less noise here than the Gaussian), L1 sensitivity "
                f"{self.sensitivity:g}, epsilon {self.epsilon:.6g}, scale {self.scale:.6g}")


#: The Gaussian is kept only if its median absolute error is below the Laplace's: ``0.6745 sigma
#: <= ln(2) b``, i.e. ``sigma <= 1.0277 b`` (then its variance ``sigma**2 < 2 b**2`` is smaller too).
GAUSSIAN_OVER_LAPLACE = math.log(2.0) / 0.6744897501960817


def cheaper(gaussian: Measurement, epsilon: float, integer: bool) -> Measurement | LaplaceMeasurement:
    """The Gaussian measurement, or the pure ``epsilon``-DP one of the same (L1 = L2) sensitivity
    when the Gaussian's median absolute error would be larger (:data:`GAUSSIAN_OVER_LAPLACE`).
    Decided from public parameters only."""
    laplace = LaplaceMeasurement(gaussian.sensitivity, epsilon, integer)
    return gaussian if gaussian.sigma <= GAUSSIAN_OVER_LAPLACE * laplace.scale else laplace


def draw(m: Measurement | LaplaceMeasurement, values: np.ndarray, integer: bool, rng: np.random.Generator) -> np.ndarray:
    """``values`` plus the measurement's noise: integers (counts) or on its grid (sums)."""
    n = len(values)
    if isinstance(m, LaplaceMeasurement):
        if integer:
            return np.asarray(values, dtype=np.int64) + geometric(m.epsilon, int(m.sensitivity)).noise(n, rng)
        return laplace_randomise(np.asarray(values, dtype=float), m.sensitivity, m.epsilon, rng, noise_at_zero=True)
    if integer:
        return np.asarray(values, dtype=np.int64) + discrete_gaussian(n, m.t, m.c, rng)
    return add_on_grid(np.asarray(values, dtype=float), m.grid, discrete_gaussian(n, m.t, m.c, rng))


@dataclass(frozen=True)
class GaussianPlan:
    """The Gaussian mechanisms of one query and what it is charged, fixed before charging.

    ``definition`` is ``"approx"`` or ``"zcdp"``; ``cost`` the exact ``(epsilon, delta, rho)``
    charged; ``measurements`` maps ``"count"`` and each summed column to its
    :class:`Measurement`; ``sum_scales`` (the SUMs' sigmas) and ``cells`` as in
    :class:`sdckit.query.noisy.Plan`, so :func:`sdckit.query.noisy.exact_cells` reads it too.
    """

    query: Query
    definition: str
    asked: dict[str, Fraction]
    cost: tuple[Fraction, Fraction, Fraction]
    k: int
    measurements: dict[str, Measurement | LaplaceMeasurement]
    sum_scales: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    cells: tuple[tuple[Any, ...], ...]
    is_dp: bool
    midpoints: dict[str, float] = field(default_factory=dict)
    data_bounded: tuple[str, ...] = field(default=())
    #: Variance columns -> the cap of their squared deviations (:func:`~sdckit.query.generate.square_cap`).
    square_caps: dict[str, float] = field(default_factory=dict)
    #: :func:`~sdckit.query.quantiles.quantile_key` -> the epsilon of its pure mechanism (MIN, MAX, quantiles).
    quantile_epsilons: dict[str, float] = field(default_factory=dict)

    def measurement_texts(self) -> list[str]:
        """One sentence per measurement (mechanism, sensitivity, variance, rho), then AVG's."""
        parts = []
        for name, m in self.measurements.items():
            if ":" in name:  # squared deviations and distinct counts: below
                continue
            what = ("COUNT" if name == "count" else
                    f"SUM({name} - {self.midpoints[name]:g}) (deviations from the bounds' midpoint)"
                    if name in self.midpoints else f"SUM({name}) clamped to [{self.bounds[name][0]:g}, {self.bounds[name][1]:g}]")
            if isinstance(m, LaplaceMeasurement):
                parts.append(f"{what}: {m.text()}")
                continue
            grid = "integers" if name == "count" else f"grid {m.grid:.6g}"
            parts.append(f"{what}: exact discrete Gaussian (Canonne, Kamath & Steinke 2020) on {grid}, L2 sensitivity "
                         f"{m.sensitivity:g} ({m.steps} steps), variance {m.t * m.c} steps^2 (sigma {m.sigma:.6g}), "
                         f"rho {exact_text(m.rho)}")
        if any(o.kind == "avg" for o in self.query.outputs):
            parts.append("AVG = m + noisy SUM(x - m) / max(noisy COUNT, 1) clamped to the bounds, m the bounds' midpoint")

        def noise(name: str) -> str:
            m = self.measurements[name]
            if isinstance(m, LaplaceMeasurement):
                return m.text()
            grid = "integers" if name.startswith("distinct:") else f"grid {m.grid:.6g}"
            return (f"exact discrete Gaussian on {grid}, L2 sensitivity {m.sensitivity:g} ({m.steps} steps), variance "
                    f"{m.t * m.c} steps^2 (sigma {m.sigma:.6g}), rho {exact_text(m.rho)}")
        parts.extend(other_texts(self.query, self.square_caps, self.midpoints, self.k, noise))
        for key, o in {quantile_key(o): o for o in self.query.outputs if o.kind == "quantile"}.items():
            eps = self.quantile_epsilons[key]
            rho = f", rho epsilon^2/2 = {exact_text(Fraction(eps) ** 2 / 2)}" if self.definition == "zcdp" else ""
            parts.append(quantile_text(o, self.bounds[o.column], eps, self.k, quantile_bins(len(self.cells))) + rho)
        return parts

    def mechanism(self) -> str:
        """A sentence stating the definition, the mechanisms, the sensitivities and the charge."""
        parts = self.measurement_texts()
        eps, delta, rho = self.cost
        if self.definition == "zcdp":
            charge = (f"rho-zCDP: charged rho {exact_text(rho)} (the exact sum of the measurements' rhos; asked "
                      f"{exact_text(self.asked['rho'])})")
        else:
            charge = (f"(epsilon, delta)-DP by basic composition: charged epsilon {exact_text(eps)}, delta "
                      f"{exact_text(delta)}, split equally over {len(self.measurements) + len(self.quantile_epsilons)} "
                      "measurement(s), each Gaussian one calibrated through rho-zCDP (CKS20 Corollary 13), or pure "
                      "epsilon-DP (delta 0) where that is less noise")
        groups = (f"; GROUP BY: all {len(self.cells)} groups of the declared domains (one vector, L2 sensitivity)"
                  if self.query.group_by else "")
        text = "; ".join(parts) + f"; {charge}{groups}; at most {self.k} row(s) per privacy unit"
        if not self.is_dp:
            text = "NOT differentially private: bounds of " + ", ".join(self.data_bounded) + " were read from the data. " + text
        return text


def measurement_names(query: Query) -> list[str]:
    """The Gaussian measurements of ``query``: ``"count"`` (when COUNT, AVG, VAR_POP or STDDEV_POP
    is asked), each summed or averaged column, each variance column's squared deviations
    (:func:`~sdckit.query.noisy.square_key`), each distinct count (:func:`~sdckit.query.noisy.distinct_key`)."""
    needs_count = any(o.kind in COUNTED for o in query.outputs)
    return ((["count"] if needs_count else []) + list(summed_columns(query)) + [square_key(c) for c in squared_columns(query)]
            + [distinct_key(c) for c in distinct_columns(query)])


def plan(query: Query, table: TableConfig, definition: str, epsilon: Fraction | None = None,
         delta: Fraction | None = None, rho: Fraction | None = None,
         cells: tuple[tuple[Any, ...], ...] | None = None, rows: int | None = None,
         groups: GroupBounds | None = None) -> GaussianPlan:
    """Fix the Gaussian mechanisms of ``query`` for a ``"zcdp"`` (``rho``) or ``"approx"``
    (``epsilon``, ``delta``) charge; :class:`ParameterError` before anything is charged when it
    cannot be answered (noise too large to sample exactly, a quantile epsilon below 2**-20). ``cells``: the group
    keys (default: the product of the declared domains; :mod:`sdckit.query.keys` gives the keys
    its threshold released). ``rows``: the rows per person the query asks, ``k`` in every
    sensitivity (:func:`~sdckit.query.generate.contribution_bound`; the configured bound by default).
    ``groups``: per-group bounds (:class:`~sdckit.query.groupbounds.GroupBounds`): every L2
    sensitivity is the per-row one times ``sqrt(groups.l2_squared)``, ``k`` (quantiles) their L1."""
    k = contribution_bound(table, rows) if groups is None else groups.l1  # (rows per unit, times a join's stability)

    def l2(per_row: float) -> float:  # a SUM's L2 sensitivity
        return k * per_row if groups is None else groups.l2_times(per_row)

    def counted(share: Fraction) -> Measurement:  # a count's (integers)
        if groups is None:
            return Measurement(float(k), 1.0, k, *variance_for(k, share))
        squared = groups.l2_squared
        return Measurement(math.sqrt(squared), 1.0, math.isqrt(squared - 1) + 1, *variance_for(0, share, squared), squared)
    summed = summed_columns(query)
    names = measurement_names(query)
    needs_count = "count" in names
    quantiles = list(dict.fromkeys(quantile_key(o) for o in query.outputs if o.kind == "quantile"))
    parts = len(names) + len(quantiles)
    if definition == "zcdp":
        shares = {n: rho / parts for n in names}
        asked = {"rho": rho}
    else:
        eps_i, delta_i = float(epsilon / parts), float(delta / parts)
        eps_i = eps_i if Fraction(eps_i) <= epsilon / parts else math.nextafter(eps_i, 0.0)
        delta_i = delta_i if Fraction(delta_i) <= delta / parts else math.nextafter(delta_i, 0.0)
        share = rho_for(eps_i, delta_i)
        shares = {n: share for n in names}
        asked = {"epsilon": epsilon, "delta": delta}
    averaged = {o.column for o in query.outputs if o.kind in ("avg", "var", "stddev")}
    extra = (k if groups is None else groups.cells) if query.group_by else 1  # steps lost to rounding, one per cell touched
    measurements: dict[str, Measurement] = {}
    midpoints: dict[str, float] = {}
    if needs_count:
        measurements["count"] = counted(shares["count"])
    for column in summed:
        lo, hi = table.bounds[column]
        sens = l2(max(abs(lo), abs(hi)))
        if column in averaged:
            midpoints[column], sens = midpoint_sensitivity(lo, hi, k)
            sens = sens if groups is None else l2(midpoint_sensitivity(lo, hi, 1)[1])
        measurements[column] = gridded(sens, shares[column], extra)
    square_caps = {c: square_cap(*table.bounds[c]) for c in squared_columns(query)}
    for column, cap in square_caps.items():
        sens = square_sensitivity(cap, k) if groups is None else l2(square_sensitivity(cap, 1))
        measurements[square_key(column)] = gridded(sens, shares[square_key(column)], extra)
    for column in distinct_columns(query):
        measurements[distinct_key(column)] = counted(shares[distinct_key(column)])
    quantile_epsilons = {q: float(zcdp_epsilon(rho / parts)) if definition == "zcdp" else eps_i for q in quantiles}
    if any(math.floor(e * 2**20) < 1 for e in quantile_epsilons.values()):
        raise ParameterError("The epsilon share of a quantile (MIN, MAX) is below 2**-20: ask with a larger "
                             + ("rho." if definition == "zcdp" else "epsilon."))
    total_rho = sum((m.rho for m in measurements.values()), Fraction(0))
    total_rho += sum((Fraction(e) ** 2 / 2 for e in quantile_epsilons.values()), Fraction(0)) if definition == "zcdp" else 0
    cost = (Fraction(0), Fraction(0), total_rho) if definition == "zcdp" else (epsilon, delta, Fraction(0))
    if definition != "zcdp" and groups is None:  # each (eps_i, delta_i)-DP; pure where its median error is smaller
        # (not with per-group bounds: their L1 sensitivity exceeds the L2 one the Gaussian is calibrated to)
        measurements = {name: cheaper(m, eps_i, name == "count" or name.startswith("distinct:"))
                        for name, m in measurements.items()}
    if cells is None:
        cells = tuple(itertools.product(*(table.domains[c] for c in query.group_by)))
    used = list(dict.fromkeys([*summed, *quantile_columns(query)]))
    data_bounded = tuple(c for c in used if c in table.data_bounds)
    return GaussianPlan(query, definition, asked, cost, k, measurements,
                        {c: measurements[c].sigma for c in summed}, {c: table.bounds[c] for c in used},
                        cells, not data_bounded, midpoints, data_bounded, square_caps, quantile_epsilons)


@functools.lru_cache(maxsize=1024)
def gridded(sens: float, rho: Fraction, extra: int) -> Measurement:
    """A SUM's measurement: L2 sensitivity ``sens`` on a dyadic grid about 2**-GRID_BITS of the
    noise's sigma, ``ceil(sens / grid) + extra`` steps, variance for ``rho``. Memoised (a pure
    function of public parameters; a :class:`Measurement` is immutable)."""
    sigma = max(sens, 1e-300) / math.sqrt(2.0 * float(rho))
    grid = float(dyadic_grid(np.asarray(sigma), GRID_BITS))
    steps = math.ceil(sens / grid) + extra
    return Measurement(float(sens), grid, steps, *variance_for(steps, rho))


def answer_cells(plan_: GaussianPlan, counts: np.ndarray, sums: dict[str, np.ndarray],
                 rng: np.random.Generator, table: TableConfig | None = None,
                 hists: dict[str, Any] | None = None) -> dict[str, Any]:
    """The noisy answer from the true counts and clamped sums per cell (as
    :func:`sdckit.query.noisy.answer_cells`): ``columns``, ``rows``, ``mechanism``,
    ``noise_scale`` (sigmas), ``ci95``, ``dp``; ``table`` and ``hists`` (each quantile column's
    :func:`~sdckit.query.generate.histogram_sql` result, or the cube's histograms,
    :func:`~sdckit.query.noisy.histograms_of`) when the query has a quantile, MIN or MAX."""
    ms = plan_.measurements
    chosen = choose_quantiles(plan_.query.outputs, plan_.bounds, histograms_of(plan_, table, hists),
                              plan_.quantile_epsilons, plan_.k, quantile_bins(len(plan_.cells)), rng)
    noisy_count = None
    if "count" in ms:
        noisy_count = draw(ms["count"], counts, True, rng)
    noisy_sum = {}
    for column in plan_.sum_scales:
        values = deviation_sums(sums[column], counts, plan_.midpoints[column]) if column in plan_.midpoints else sums[column]
        noisy_sum[column] = draw(ms[column], values, False, rng)
    other: dict[str, np.ndarray] = {}  # drawn after the others: the answers without them are unchanged
    for name, m in ms.items():
        if name.startswith("distinct:"):
            other[name] = draw(m, sums[name], True, rng)
        elif name.startswith("sumsq:"):
            shifted = deviation_sums(sums[name], counts, plan_.square_caps[name.split(":", 1)[1]] / 2)
            other[name] = draw(m, shifted, False, rng)
    rc95 = ms["count"].radius(0.95) if "count" in ms else 0.0
    rc975 = ms["count"].radius(0.975) if "count" in ms else 0.0
    scales: list[Any] = []
    for o in plan_.query.outputs:
        if o.kind == "group":
            scales.append(None)
        elif o.kind == "count":
            scales.append(scale_of(ms["count"]))
        elif o.kind == "sum" and o.column not in plan_.midpoints:
            scales.append(scale_of(ms[o.column]))
        elif o.kind == "count_distinct":
            scales.append(scale_of(ms[distinct_key(o.column)]))
        elif o.kind == "quantile":
            scales.append(quantile_scale(plan_.bounds[o.column], plan_.quantile_epsilons[quantile_key(o)], plan_.k,
                                         quantile_bins(len(plan_.cells)), o.q))
        elif o.kind in ("var", "stddev"):
            scales.append({"squares_sigma": ms[square_key(o.column)].sigma, "sum_sigma": ms[o.column].sigma,
                           "count_sigma": ms["count"].sigma, "midpoint": plan_.midpoints[o.column],
                           "cap": plan_.square_caps[o.column]})
        else:
            scales.append({"sum_sigma": ms[o.column].sigma, "count_sigma": ms["count"].sigma,
                           "midpoint": plan_.midpoints[o.column]})
    rows, ci = answer_rows(plan_, noisy_count, noisy_sum, (rc95, rc975),
                           lambda column, level: ms[column].radius(level), chosen, other,
                           lambda name, level: ms[name].radius(level))
    return {"columns": [o.label for o in plan_.query.outputs], "rows": rows, "mechanism": plan_.mechanism(),
            "noise_scale": scales, "ci95": ci, "dp": plan_.is_dp}


def scale_of(m: Measurement | LaplaceMeasurement) -> dict[str, float]:
    """A measurement's ``noise_scale``: the standard deviation ``sigma`` (the Gaussian's
    parameter), and ``laplace_scale`` ``b`` for pure epsilon-DP noise."""
    if isinstance(m, LaplaceMeasurement):
        return {"sigma": m.sigma, "laplace_scale": m.scale}
    return {"sigma": m.sigma}
