"""Differentially private answers of the query service (seed 002 section 4.6.2; Dwork & Roth 2014).

How one query is answered with budget ``epsilon``:

* **Contributions** are bounded per privacy unit: at most ``max_rows_per_unit`` (``k``) rows
  of each person are kept (:mod:`sdckit.query.data`); values are clamped to the declared public
  bounds ``[lo, hi]`` (a missing value counts as 0, clamped).
* **Measurements**: one noisy COUNT(*) (when the query has COUNT or AVG) and one noisy clamped
  SUM per summed/averaged column. ``epsilon`` is split equally over them (sequential
  composition; each share is the largest float not above the exact quotient, so the shares
  never cost more than the ``epsilon`` charged).
* **Groups**: a GROUP BY returns every combination of the declared domains, empty ones included
  (the keys never depend on the data). One person changes at most ``k`` rows, so the L1
  sensitivity of the whole vector of group counts is ``k`` and of group sums
  ``k * max(|lo|, |hi|)``: every group gets noise of that scale (parallel composition).
* **Noise**: COUNT gets the exact discrete Laplace (geometric) mechanism, SUM the exact Laplace
  mechanism on a dyadic grid (:mod:`sdckit.dp.mechanisms`): floating-point safe (Mironov 2012),
  drawn from a cryptographic generator.
* **AVG** (as Tumult Analytics does it): the averaged column's measurement is the noisy sum of
  the *deviations from the bounds' midpoint* ``D = SUM(clamp(x) - m)``, ``m = (lo + hi) / 2``,
  whose sensitivity ``k (hi - lo) / 2`` is at most half of ``k max(|lo|, |hi|)``; then
  ``AVG = m + noisy D / max(noisy COUNT, 1)``, clamped to ``[lo, hi]``, and a SUM of that column
  in the same query is ``noisy D + m * noisy COUNT`` (post-processing; never more variance than
  a direct SUM at the same share, since ``(|m| + r)**2 >= m**2 + r**2``). To first order
  ``Var(AVG) = (2 b_D**2 + (avg - m)**2 Var(noisy COUNT)) / n**2`` with ``b_D`` the Laplace scale
  of ``D`` and ``Var(noisy COUNT) = 2 p / (1 - p)**2``, ``p = exp(-1 / b_C)``, against
  ``(2 b_S**2 + avg**2 Var(noisy COUNT)) / n**2`` with ``b_S = 2 b_D`` (``lo >= 0``) before. It
  costs the COUNT share and the share of its column (the split is stated in the answer).
* **VAR_POP / STDDEV_POP** (as Tumult Analytics, three measurements): the noisy COUNT, the noisy
  ``D`` above and the noisy ``S = SUM(v - cap / 2)`` of the squared deviations from the midpoint
  ``v = min((clamp(x) - m)**2, cap)`` in ``[0, cap]`` (``cap`` ~ ``((hi - lo) / 2)**2``,
  :func:`~sdckit.query.generate.square_cap`), sensitivity ``k cap / 2`` (Tumult shifts ``x**2``
  by its midpoint instead: ``k max(lo**2, hi**2) / 2`` when ``0`` is in the bounds, four times
  ours when ``lo = 0``). ``VAR = (S / n + cap / 2) - (D / n)**2``, ``n = max(noisy COUNT, 1)``,
  clamped to ``[0, cap]`` (variance is shift-invariant); ``STDDEV`` its square root. ci95: the
  exact range of that function over the box of the three measurements' ``1 - 0.05 / 3`` intervals
  (a union bound), clamped to ``[0, cap]`` (:func:`sdckit.query.variance.variance_range`).
* **COUNT(DISTINCT col)** over the bounded relation: one person holds at most ``k`` rows there,
  so she adds or removes at most ``k`` distinct values over all groups: sensitivity ``k``, the
  COUNT's mechanism, one measurement per column.
* **Quantiles** (``MEDIAN``, ``QUANTILE_CONT(col, q)``): one more measurement each; the answer is
  a point of a public grid of the bounds (2**18 bins without GROUP BY, 2**18 / cells with, at
  least 1024: :func:`sdckit.query.grid.quantile_bins`), chosen by permute-and-flip (McKenna &
  Sheldon 2020) with exact coins (:func:`sdckit.query.quantiles.permute_and_flip`); no ci95 (value intervals would need
  the data's density), but a 95% bound on its rank error (:func:`sdckit.query.quantiles.quantile_rank_radius`).
* **ci95** per value: COUNT ``[c - r, c + r]`` with ``r`` the exact 95% radius of the discrete
  Laplace; SUM ``[s - b ln 20, s + b ln 20]`` (of a midpoint column ``s +/- (r_D + |m| r_C)`` with
  97.5% radii); AVG the range of ``m + (D +/- r_D)/(C -/+ r_C)`` with 97.5% radii (a union bound: coverage >= 95%), within the bounds. Released counts are not
  clamped at 0 (unbiased noise); their intervals are.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result, plain
from sdckit.dp.accountant import exact_text, split_epsilon
from sdckit.dp.mechanisms import geometric, grid_scale, laplace_randomise
from sdckit.query.config import TableConfig
from sdckit.query.generate import square_scaling  # (exact squares, issue 32)
from sdckit.query.generate import (BIN_ALIAS, COUNT_ALIAS, cell_indices, contribution_bound, distinct_alias,
                                   distinct_columns, midpoint_sensitivity, quantile_columns, square_alias, square_cap,
                                   squared_columns, sum_alias, summed_columns)
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.grid import Histogram, quantile_bins, sparse_histograms
from sdckit.query.quantiles import EPS_BITS, choose_quantiles, quantile_key, quantile_scale, quantile_text
from sdckit.query.sql import Query
from sdckit.query.squares import exact_floats
from sdckit.query.variance import VARIANCE_LEVEL, square_sensitivity, variance_estimate, variance_range


def discrete_laplace_radius(scale: float, confidence: float) -> int:
    """Smallest integer ``m`` with ``P(|Y| <= m) >= confidence`` for the discrete Laplace of
    scale ``b`` (``P(Y = y)`` proportional to ``exp(-|y|/b)``).

    ``P(|Y| <= m) = 1 - 2 p**(m+1) / (1 + p)`` with ``p = exp(-1/b)``.
    """
    p = math.exp(-1.0 / scale)
    if p <= 0.0:  # a scale so small (a huge epsilon) that the noise is 0 but with negligible odds
        return 0
    target = (1.0 - confidence) * (1.0 + p) / 2.0
    return max(0, math.ceil(math.log(target) / math.log(p) - 1e-12) - 1)


def laplace_radius(scale: float, confidence: float) -> float:
    """``b ln(1 / (1 - confidence))``: ``P(|Y| <= r) = confidence`` for Laplace(0, b)."""
    return scale * -math.log1p(-confidence)


def square_key(column: str) -> str:
    """The measurement name of a column's sum of squared deviations (VAR_POP, STDDEV_POP)."""
    return f"sumsq:{column}"


def distinct_key(column: str) -> str:
    """The measurement name of a column's COUNT(DISTINCT ...)."""
    return f"distinct:{column}"


@dataclass(frozen=True)
class Plan(Result):
    """The mechanisms one query will use, checked before anything is charged.

    ``shares`` maps each measurement (``"count"``, a summed column, :func:`square_key`,
    :func:`distinct_key`, :func:`quantile_key`) to its epsilon; ``count_scale`` and
    ``sum_scales`` are the noise scales (``other_scales`` of the squared-deviation sums and
    distinct counts); ``sensitivities`` the L1 sensitivities; ``cells`` the group keys (one empty
    tuple without GROUP BY); ``square_caps`` the cap of each variance column's squared deviations.
    """

    query: Query
    epsilon: Fraction
    k: int
    shares: dict[str, float]
    sensitivities: dict[str, float]
    count_scale: float | None
    sum_scales: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    cells: tuple[tuple[Any, ...], ...]
    is_dp: bool
    data_bounded: tuple[str, ...] = field(default=())
    #: Averaged columns -> the bounds' midpoint ``m``: their measurement is ``SUM(clamp(x) - m)``.
    midpoints: dict[str, float] = field(default_factory=dict)
    #: Variance columns -> the cap of their squared deviations (:func:`~sdckit.query.generate.square_cap`).
    square_caps: dict[str, float] = field(default_factory=dict)
    #: :func:`square_key` and :func:`distinct_key` measurements -> their noise's actual scale.
    other_scales: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The fields, with the epsilon as exact text and the number of ``cells``."""
        return plain({"query": self.query, "epsilon": exact_text(self.epsilon), "k": self.k, "shares": self.shares,
                      "sensitivities": self.sensitivities, "count_scale": self.count_scale,
                      "sum_scales": self.sum_scales, "bounds": self.bounds, "cells": len(self.cells),
                      "is_dp": self.is_dp, "data_bounded": self.data_bounded, "midpoints": self.midpoints,
                      "square_caps": self.square_caps, "other_scales": self.other_scales})

    def mechanism(self) -> str:
        """A sentence stating the mechanisms, the sensitivities and the budget split."""
        parts = []
        if "count" in self.shares:
            parts.append(f"COUNT: exact geometric (discrete Laplace), sensitivity {self.k}, "
                         f"epsilon {self.shares['count']:.6g}, scale {self.count_scale:.6g}")
        for column, scale in self.sum_scales.items():
            lo, hi = self.bounds[column]
            if column in self.midpoints:
                m = self.midpoints[column]
                parts.append(f"SUM({column} - {m:g}) of {column} clamped to [{lo:g}, {hi:g}] (deviations from the bounds' "
                             f"midpoint): exact Laplace on a dyadic grid, sensitivity {self.sensitivities[column]:g}, "
                             f"epsilon {self.shares[column]:.6g}, scale {scale:.6g}")
                continue
            parts.append(f"SUM({column}) clamped to [{lo:g}, {hi:g}]: exact Laplace on a dyadic grid, "
                         f"sensitivity {self.sensitivities[column]:g}, epsilon {self.shares[column]:.6g}, scale {scale:.6g}")
        parts.extend(other_texts(self.query, self.square_caps, self.midpoints, self.k,
                                 lambda name: f"exact {'geometric (discrete Laplace)' if name.startswith('distinct:') else 'Laplace on a dyadic grid'}, "
                                 f"sensitivity {self.sensitivities[name]:g}, epsilon {self.shares[name]:.6g}, "
                                 f"scale {self.other_scales[name]:.6g}"))
        for key, o in {quantile_key(o): o for o in self.query.outputs if o.kind == "quantile"}.items():
            parts.append(quantile_text(o, self.bounds[o.column], self.shares[key], self.k, quantile_bins(len(self.cells))))
        if any(o.kind == "avg" for o in self.query.outputs):
            parts.append("AVG = m + noisy SUM(x - m) / max(noisy COUNT, 1) clamped to the bounds, m the bounds' midpoint "
                         "(as Tumult Analytics; variance ~ (2 b_D^2 + (avg - m)^2 Var(noisy COUNT)) / n^2; costs the COUNT "
                         "and SUM shares); a SUM of an averaged column = noisy SUM(x - m) + m noisy COUNT")
        split = f"epsilon {exact_text(self.epsilon)} split equally over {len(self.shares)} measurement(s)"
        groups = (f"; GROUP BY: all {len(self.cells)} groups of the declared domains, parallel composition"
                  if self.query.group_by else "")
        contributions = f"; at most {self.k} row(s) per privacy unit"
        text = "; ".join(parts) + f"; {split}{groups}{contributions}"
        if not self.is_dp:
            text = ("NOT differentially private: bounds of " + ", ".join(self.data_bounded)
                    + " were read from the data. " + text)
        return text


def other_texts(query: Query, caps: dict[str, float], midpoints: dict[str, float], k: int,
                noise: Callable[[str], str]) -> list[str]:
    """The sentences of the squared-deviation sums, the VAR_POP/STDDEV_POP estimator and the
    distinct counts; ``noise(name)`` states a measurement's mechanism and scale (Laplace or
    Gaussian)."""
    parts = []
    for column in squared_columns(query):
        cap = caps[column]
        parts.append(f"SUM(min(({column} - {midpoints[column]:g})^2, {cap:g}) - {cap / 2:g}) (squared deviations from the "
                     f"bounds' midpoint, shifted by half their cap): {noise(square_key(column))}")
    if squared_columns(query):
        parts.append("VAR_POP = (noisy SUM of shifted squared deviations / n + cap/2) - (noisy SUM(x - m) / n)^2 clamped to "
                     "[0, cap], n = max(noisy COUNT, 1), STDDEV_POP its square root (as Tumult Analytics, three "
                     "measurements: COUNT, SUM(x - m), squared deviations; ci95 over the box of their 1 - 0.05/3 intervals)")
    for column in distinct_columns(query):
        parts.append(f"COUNT(DISTINCT {column}) over at most {k} row(s) per privacy unit (one person adds at most {k} "
                     f"distinct values): {noise(distinct_key(column))}")
    return parts


def plan(query: Query, table: TableConfig, epsilon: Fraction, rows: int | None = None,
         groups: GroupBounds | None = None) -> Plan:
    """Check that ``query`` can be answered with ``epsilon`` and fix its mechanisms.

    Raises :class:`~sdckit.core.errors.ParameterError` (an epsilon too small to sample exactly)
    before any budget is charged. ``rows``: the rows per person the query asks, ``k`` in every
    sensitivity (:func:`~sdckit.query.generate.contribution_bound`; the configured bound by default);
    ``groups``: per-group bounds, ``k`` their L1 factor (:class:`~sdckit.query.groupbounds.GroupBounds`).
    """
    k = contribution_bound(table, rows) if groups is None else groups.l1  # (rows per unit, times a join's stability)
    summed = summed_columns(query)
    needs_count = any(o.kind in COUNTED for o in query.outputs)
    quantiles = list(dict.fromkeys(quantile_key(o) for o in query.outputs if o.kind == "quantile"))
    others = [square_key(c) for c in squared_columns(query)] + [distinct_key(c) for c in distinct_columns(query)]
    measurements = (["count"] if needs_count else []) + list(summed) + others + quantiles
    share = split_epsilon(epsilon, len(measurements))
    shares = {m: share for m in measurements}
    if quantiles and math.floor(share * 2**EPS_BITS) < 1:
        raise ParameterError(f"The epsilon share of a quantile ({share:.3g}) is below 2**-{EPS_BITS}: ask with a larger epsilon.")
    sensitivities: dict[str, float] = {}
    count_scale = None
    if needs_count:
        sensitivities["count"] = float(k)
        count_scale = geometric_scale(share, k)
    sum_scales = {}
    averaged = {o.column for o in query.outputs if o.kind in ("avg", "var", "stddev")}
    midpoints: dict[str, float] = {}
    for column in summed:
        lo, hi = table.bounds[column]
        sens = k * max(abs(lo), abs(hi))
        if column in averaged:
            midpoints[column], sens = midpoint_sensitivity(lo, hi, k)
        sensitivities[column] = float(sens)
        grid, steps = grid_scale(np.asarray(sens, dtype=float), share)
        sum_scales[column] = float(steps) * float(grid)  # the noise's actual scale (>= sens/epsilon)
    square_caps = {c: square_cap(*table.bounds[c]) for c in squared_columns(query)}
    other_scales = {}
    for column, cap in square_caps.items():
        name = square_key(column)
        sensitivities[name] = square_sensitivity(cap, k)
        grid, steps = grid_scale(np.asarray(sensitivities[name], dtype=float), share)
        other_scales[name] = float(steps) * float(grid)
    for column in distinct_columns(query):
        name = distinct_key(column)
        sensitivities[name] = float(k)
        other_scales[name] = geometric_scale(share, k)
    cells = tuple(itertools.product(*(table.domains[c] for c in query.group_by)))
    used = list(summed) + list(quantile_columns(query))
    data_bounded = tuple(c for c in dict.fromkeys(used) if c in table.data_bounds)
    return Plan(query, epsilon, k, shares, sensitivities, count_scale, sum_scales,
                {c: table.bounds[c] for c in used}, cells, not data_bounded, data_bounded, midpoints,
                square_caps, other_scales)


@functools.lru_cache(maxsize=4096)  # (public numbers only: a plan's scales are asked several times per answer)
def geometric_scale(epsilon: float, k: int) -> float:
    """The actual scale of the exact geometric noise of a count of sensitivity ``k`` at ``epsilon``
    (``k / epsilon`` rounded up to a multiple of 2**-20)."""
    return geometric(epsilon, k).scale_numerator() / 2**20


#: Output kinds that use the noisy COUNT(*).
COUNTED = ("count", "avg", "var", "stddev")


def deviation_sums(sums: np.ndarray, counts: np.ndarray, m: float) -> np.ndarray:
    """``SUM(clamp(x) - m) = SUM(clamp(x)) - m COUNT`` per cell, computed exactly from the
    (double) sums and the integer counts and rounded once to the nearest double."""
    fm = Fraction(m)
    return np.array([float(Fraction(float(s)) - fm * int(c)) for s, c in zip(sums, counts)], dtype=float)


def exact_cells(plan_: Plan, table: TableConfig, result: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """True counts and clamped sums per cell from the result of
    :func:`~sdckit.query.generate.aggregate_sql` (``n, s0, ..., q0, ..., d0, ..., g0, ...`` as
    numpy arrays; the squared-deviation sums under :func:`square_key`, the distinct counts under
    :func:`distinct_key` among the sums); rows whose group values are outside the declared
    domains belong to no cell."""
    summed = list(plan_.sum_scales)
    size = len(result[COUNT_ALIAS])
    counts = np.zeros(len(plan_.cells), dtype=np.int64)
    sums: dict[str, np.ndarray] = {}
    if plan_.query.group_by:
        cells = cell_indices(table, plan_.query.group_by, result, size)
    else:
        cells = np.zeros(size, dtype=np.int64)
    keep = cells >= 0
    if np.unique(cells[keep]).size != int(keep.sum()):  # each cell is set, never added to: a collision is a bug
        raise RuntimeError("two result rows of one query fell in one answer cell")
    counts[cells[keep]] = np.asarray(result[COUNT_ALIAS], dtype=np.int64)[keep]
    read = ([(column, sum_alias(j)) for j, column in enumerate(summed)]
            + [(square_key(c), square_alias(j)) for j, c in enumerate(squared_columns(plan_.query))])
    exact = {square_key(c): square_scaling(c, table, plan_.query) for c in squared_columns(plan_.query)}
    for name, alias in read:
        values = result[alias]
        if exact.get(name) is not None:  # an exact integer sum (sdckit.query.squares)
            values = exact_floats(values, exact[name].bits)
        values = np.ma.filled(values, 0.0) if isinstance(values, np.ma.MaskedArray) else values
        sums[name] = np.zeros(len(plan_.cells))
        sums[name][cells[keep]] = np.asarray(values, dtype=float)[keep]
    for j, column in enumerate(distinct_columns(plan_.query)):
        values = result[distinct_alias(j)]
        values = np.ma.filled(values, 0) if isinstance(values, np.ma.MaskedArray) else values
        sums[distinct_key(column)] = np.zeros(len(plan_.cells), dtype=np.int64)
        sums[distinct_key(column)][cells[keep]] = np.asarray(values, dtype=np.int64)[keep]
    return counts, sums


def histograms(plan_: Plan, table: TableConfig, result: dict[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per cell, the sorted indices of the non-empty bins (of
    :func:`~sdckit.query.grid.quantile_bins` of the cells) and their records, from
    :func:`~sdckit.query.generate.histogram_sql` (sparse: up to 2**18 bins)."""
    size = len(result[COUNT_ALIAS])
    cells = cell_indices(table, plan_.query.group_by, result, size) if plan_.query.group_by else np.zeros(size, dtype=np.int64)
    bins = np.asarray(np.ma.filled(result[BIN_ALIAS], -1) if isinstance(result[BIN_ALIAS], np.ma.MaskedArray)
                      else result[BIN_ALIAS], dtype=np.int64)
    return sparse_histograms(cells, bins, result[COUNT_ALIAS], len(plan_.cells), quantile_bins(len(plan_.cells)))


def histograms_of(plan_: Any, table: TableConfig | None, hists: dict[str, Any] | None) -> Callable[[str], list[Histogram]]:
    """``column -> its histogram per cell`` for :func:`~sdckit.query.quantiles.choose_quantiles`:
    ``hists[column]`` as given when it is a list (the cube's, :meth:`Database.fast_histograms
    <sdckit.query.data.Database.fast_histograms>`), else :func:`histograms` of the scan's result
    (``plan_`` a pure or Gaussian plan)."""
    return lambda c: hists[c] if isinstance(hists[c], list) else histograms(plan_, table, hists[c])


def answer(plan_: Plan, table: TableConfig, result: dict[str, np.ndarray], rng: np.random.Generator,
           hists: dict[str, dict[str, np.ndarray]] | None = None) -> dict[str, Any]:
    """The noisy answer: ``columns``, ``rows``, ``mechanism``, ``noise_scale``, ``ci95``.

    ``hists`` maps each quantile column to the result of its
    :func:`~sdckit.query.generate.histogram_sql`."""
    counts, sums = exact_cells(plan_, table, result)
    return answer_cells(plan_, table, counts, sums, rng, hists)


def answer_rows(plan_: Any, noisy_count: Any, noisy_sum: dict[str, np.ndarray], count_radius: tuple[Any, Any],
                sum_radius: Callable[[str, float], float], chosen: dict[str, list[float]] | None = None,
                other: dict[str, np.ndarray] | None = None, radius: Callable[[str, float], Any] | None = None
                ) -> tuple[list[list[Any]], list[list[Any]]]:
    """The rows and 95% intervals of a DP answer from its noisy measurements, for the Laplace
    answers here and the Gaussian ones (:mod:`sdckit.query.noisy_gaussian`): ``count_radius`` is
    the noisy COUNT's (95%, 97.5%) radius, ``sum_radius(column, level)`` a noisy sum's, ``chosen``
    the quantiles' answers. COUNT +/- its 95% radius (clipped at 0); SUM +/- its 95% radius, or,
    measured as deviations from the midpoint m, noisy SUM(x - m) + m COUNT with the union of the
    two 97.5% radii; AVG = m + SUM(x - m) / COUNT clamped to the bounds, its interval the corners
    of the two 97.5% intervals (the bounds when the count's may reach 0). ``other`` holds the
    noisy :func:`square_key` and :func:`distinct_key` measurements, ``radius(name, level)`` any
    measurement's radius (``"count"`` included): VAR_POP and STDDEV_POP by
    :func:`variance_estimate`, their interval :func:`variance_range` at :data:`VARIANCE_LEVEL`
    each (STDDEV_POP: its square root); COUNT(DISTINCT) as COUNT."""
    rc95, rc975 = count_radius
    zero = rc95 - rc95  # 0 of the radius's type: an int for the discrete Laplace, a float for the Gaussian
    rows, ci = [], []
    for i, cell in enumerate(plan_.cells):
        group = dict(zip(plan_.query.group_by, cell))
        row, row_ci = [], []
        for o in plan_.query.outputs:
            if o.kind == "group":
                row.append(group[o.column])
                row_ci.append(None)
            elif o.kind == "count":
                c = int(noisy_count[i])
                row.append(c)
                row_ci.append([max(zero, c - rc95), max(zero, c + rc95)])
            elif o.kind == "sum" and o.column in plan_.midpoints:
                m = plan_.midpoints[o.column]
                s = float(noisy_sum[o.column][i]) + m * int(noisy_count[i])
                r = sum_radius(o.column, 0.975) + abs(m) * rc975
                row.append(s)
                row_ci.append([s - r, s + r])
            elif o.kind == "sum":
                s = float(noisy_sum[o.column][i])
                r = sum_radius(o.column, 0.95)
                row.append(s)
                row_ci.append([s - r, s + r])
            elif o.kind == "quantile":
                row.append(chosen[quantile_key(o)][i])
                row_ci.append(None)
            elif o.kind == "count_distinct":
                c = int(other[distinct_key(o.column)][i])
                r = radius(distinct_key(o.column), 0.95)
                row.append(c)
                row_ci.append([max(zero, c - r), max(zero, c + r)])
            elif o.kind in ("var", "stddev"):
                cap, level = plan_.square_caps[o.column], VARIANCE_LEVEL
                s, d, c = float(other[square_key(o.column)][i]), float(noisy_sum[o.column][i]), int(noisy_count[i])
                low, high = variance_range(s, radius(square_key(o.column), level), d, radius(o.column, level), c,
                                           radius("count", level), cap)
                value = variance_estimate(s, d, c, cap)
                if o.kind == "stddev":
                    value, low, high = math.sqrt(value), math.sqrt(low), math.sqrt(high)
                row.append(value)
                row_ci.append([low, high])
            else:
                lo, hi = plan_.bounds[o.column]
                m = plan_.midpoints[o.column]
                s = float(noisy_sum[o.column][i])  # noisy SUM(x - m)
                c = int(noisy_count[i])
                row.append(min(max(m + s / max(c, 1), lo), hi))
                rs = sum_radius(o.column, 0.975)
                if c - rc975 > 0:
                    corners = [m + (s + a) / (c + b) for a in (-rs, rs) for b in (-rc975, rc975)]
                    row_ci.append([max(lo, min(corners)), min(hi, max(corners))])
                else:
                    row_ci.append([lo, hi])
        rows.append(row)
        ci.append(row_ci)
    return rows, ci


def answer_cells(plan_: Plan, table: TableConfig, counts: np.ndarray, sums: dict[str, np.ndarray],
                 rng: np.random.Generator, hists: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`answer` from the true counts and clamped sums per cell (:func:`exact_cells`, or
    :meth:`sdckit.query.cube.Cube.cells`): the same noise from the same ``rng``. ``hists``: per
    quantile column :func:`histograms`' input, or its output (a list, from the cube)."""
    n = len(plan_.cells)
    chosen = choose_quantiles(plan_.query.outputs, plan_.bounds, histograms_of(plan_, table, hists),
                              plan_.shares, plan_.k, quantile_bins(n), rng)
    noisy_count = None
    if plan_.count_scale is not None:
        count_noise = geometric(plan_.shares["count"], plan_.k)
        noisy_count = counts + count_noise.noise(n, rng)
    measured = {c: deviation_sums(sums[c], counts, plan_.midpoints[c]) if c in plan_.midpoints else sums[c]
                for c in plan_.sum_scales}
    noisy_sum = {c: laplace_randomise(measured[c], plan_.sensitivities[c], plan_.shares[c], rng, noise_at_zero=True)
                 for c in plan_.sum_scales}
    other: dict[str, np.ndarray] = {}  # drawn after the others: the answers without them are unchanged
    for name in plan_.other_scales:
        if name.startswith("distinct:"):
            other[name] = sums[name] + geometric(plan_.shares[name], plan_.k).noise(n, rng)
        else:
            column = name.split(":", 1)[1]
            shifted = deviation_sums(sums[name], counts, plan_.square_caps[column] / 2)
            other[name] = laplace_randomise(shifted, plan_.sensitivities[name], plan_.shares[name], rng, noise_at_zero=True)
    rc95 = rc975 = 0
    if plan_.count_scale is not None:
        rc95 = discrete_laplace_radius(plan_.count_scale, 0.95)
        rc975 = discrete_laplace_radius(plan_.count_scale, 0.975)
    columns = [o.label for o in plan_.query.outputs]
    scales: list[Any] = []
    for o in plan_.query.outputs:
        if o.kind == "group":
            scales.append(None)
        elif o.kind == "count":
            scales.append(plan_.count_scale)
        elif o.kind == "sum" and o.column not in plan_.midpoints:
            scales.append(plan_.sum_scales[o.column])
        elif o.kind == "count_distinct":
            scales.append(plan_.other_scales[distinct_key(o.column)])
        elif o.kind in ("var", "stddev"):
            scales.append({"squares": plan_.other_scales[square_key(o.column)], "sum": plan_.sum_scales[o.column],
                           "count": plan_.count_scale, "midpoint": plan_.midpoints[o.column],
                           "cap": plan_.square_caps[o.column]})
        elif o.kind == "quantile":
            scales.append(quantile_scale(plan_.bounds[o.column], plan_.shares[quantile_key(o)], plan_.k, quantile_bins(n), o.q))
        else:  # AVG, or the SUM of an averaged column: the deviations' scale, the count's, the midpoint
            scales.append({"sum": plan_.sum_scales[o.column], "count": plan_.count_scale,
                           "midpoint": plan_.midpoints[o.column]})
    def radius(name: str, level: float) -> Any:
        if name == "count":
            return discrete_laplace_radius(plan_.count_scale, level)
        if name.startswith("distinct:"):
            return discrete_laplace_radius(plan_.other_scales[name], level)
        return laplace_radius(plan_.other_scales[name] if name.startswith("sumsq:") else plan_.sum_scales[name], level)

    out_rows, ci = answer_rows(plan_, noisy_count, noisy_sum, (rc95, rc975),
                               lambda column, level: laplace_radius(plan_.sum_scales[column], level), chosen, other, radius)
    return {"columns": columns, "rows": out_rows, "mechanism": plan_.mechanism(), "noise_scale": scales,
            "ci95": ci, "dp": plan_.is_dp}
