"""``SELECT BOUNDS(col) FROM t [WHERE ..]``: clamping bounds of a numeric column found under DP
(issue 32; Tumult Analytics ``QueryBuilder.get_bounds``).

The algorithm (Tumult's, with a sign): one histogram of the column's *raw* values (not clamped)
over signed powers-of-2 bins, ``(2**(j-1), 2**j]`` and ``[-2**j, -2**(j-1))`` for ``j`` from
:data:`LOWEST` to :data:`HIGHEST` (magnitudes beyond ``2**HIGHEST`` in the top bins, at most
``2**LOWEST`` in the lowest; zeros and missing values in no bin); every bin count gets the exact
geometric noise of sensitivity ``k`` (one person's ``k`` rows move the whole histogram by at most
``k`` in L1: parallel composition, one epsilon for all bins). The upper bound is ``2**j`` of the
*highest* positive bin whose noisy count reaches the threshold ``T``, the lower bound ``-2**j``
of the most negative one; 0 when no bin of that sign does (so 0, the value a missing one counts
as, is always inside). ``T`` (:func:`threshold_for`) is the smallest integer with
``bins P(Y >= T) <= 0.05`` for the noise ``Y``: with probability >= 95% no bin holding no
record crosses it (a union bound), so the bounds are rarely pushed out by noise alone.

Budget in the analyst's definition (the mechanism is pure epsilon-DP): pure, charged the epsilon
asked; (epsilon, delta), charged ``(epsilon, 0)``; rho-zCDP, the largest epsilon on the 2**-20
grid with ``epsilon**2 / 2 <= rho`` (:func:`~sdckit.query.quantiles.zcdp_epsilon`), charged that
exact ``epsilon**2 / 2`` (Bun & Steinke 2016, Proposition 1.4).

The true bin counts come from the start-up cube when it holds them exactly
(:mod:`sdckit.query.boundscube`: per cube row, the records in each bin, by this very SQL grouped
by the cube's keys; no JOIN, a WHERE on cube columns with exact literals, a contribution bound
keeping every row), else from a scan of :func:`~sdckit.query.generate.magnitude_histogram_sql`:
the same counts either way, so the same noise.

The configuration's ``bounds_from_data = true`` reads a column's exact minimum and maximum (the
answers then say they are NOT differentially private); ``BOUNDS`` is the DP way to the same end:
declare the bounds it finds in ``[table.bounds]`` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result, plain
from sdckit.dp.accountant import exact_text, split_epsilon
from sdckit.dp.mechanisms import SCALE_DENOMINATOR, geometric
from sdckit.query.config import TableConfig
from sdckit.query.generate import BIN_ALIAS, COUNT_ALIAS, rows_per_unit
from sdckit.query.quantiles import zcdp_epsilon
from sdckit.query.sql import Query
from sdckit.query.sqlnodes import UnsupportedQuery

#: The smallest and largest exponents of the bins' edges (2**-30 ~ 9.3e-10, 2**62 ~ 4.6e18).
LOWEST, HIGHEST = -30, 62
#: Bins per sign.
SIDE = HIGHEST - LOWEST + 1
#: Probability allowed (union bound) that some bin holding no record reaches the threshold.
FALSE_CROSSING = 0.05


def threshold_for(scale_numerator: int, bins: int = 2 * SIDE, level: float = FALSE_CROSSING) -> int:
    """The smallest integer ``T >= 1`` with ``bins P(Y >= T) <= level`` for the discrete Laplace
    noise ``Y`` of scale ``scale_numerator / 2**20`` (:class:`~sdckit.dp.mechanisms.Geometric`):
    ``P(Y >= T) = p**T / (1 + p)``, ``p = exp(-2**20 / scale_numerator)``."""
    log_p = -SCALE_DENOMINATOR / scale_numerator
    p = math.exp(log_p)
    t = max(1, math.ceil(math.log(level * (1 + p) / bins) / log_p - 1e-9))
    while bins * p**t / (1 + p) > level:  # guard the float rounding of the ceil above
        t += 1
    return t


@dataclass(frozen=True)
class BoundsPlan(Result):
    """One ``BOUNDS`` query, fixed before anything is charged: the column, the contribution
    bound ``k``, the noise's epsilon and exact scale (numerator over 2**20), the threshold and
    the exact ``(epsilon, delta, rho)`` charged in the analyst's ``definition``."""

    query: Query
    column: str
    label: str
    definition: str
    k: int
    epsilon: float
    scale_numerator: int
    threshold: int
    cost: tuple[Fraction, Fraction, Fraction]

    def to_dict(self) -> dict[str, Any]:
        return plain({"column": self.column, "definition": self.definition, "k": self.k, "epsilon": self.epsilon,
                      "scale": self.scale_numerator / SCALE_DENOMINATOR, "threshold": self.threshold,
                      "cost": [exact_text(c) for c in self.cost]})

    def mechanism(self) -> str:
        """The sentence stating the mechanism, its sensitivity, threshold and charge."""
        eps, delta, rho = self.cost
        charge = {"pure": f"pure epsilon-DP: charged epsilon {exact_text(eps)}",
                  "approx": f"(epsilon, delta)-DP: charged epsilon {exact_text(eps)}, delta 0 (a pure mechanism)",
                  "zcdp": f"rho-zCDP: charged rho {exact_text(rho)} = epsilon^2/2 (Bun & Steinke 2016, Prop. 1.4)"}
        return (f"BOUNDS({self.column}): histogram of the raw values over signed powers-of-2 bins (2^(j-1), 2^j] and "
                f"[-2^j, -2^(j-1)), j from {LOWEST} to {HIGHEST} ({2 * SIDE} bins), each count with exact geometric "
                f"(discrete Laplace) noise, L1 sensitivity {self.k} for the whole histogram, epsilon {self.epsilon:.6g}, "
                f"scale {self.scale_numerator / SCALE_DENOMINATOR:.6g}; upper = 2^j of the highest positive bin whose "
                f"noisy count reaches {self.threshold}, lower = -2^j of the most negative one, 0 when none (0 always "
                f"inside); {self.threshold} is the smallest threshold that a bin holding no record reaches with "
                f"probability <= {FALSE_CROSSING:g} over all bins (as Tumult Analytics get_bounds); declare the bounds "
                f"in [table.bounds] (bounds_from_data reads the exact minimum and maximum, which is not DP); "
                f"{charge[self.definition]}; at most {self.k} row(s) per privacy unit")


def plan(query: Query, table: TableConfig, definition: str, epsilon: Fraction | None = None,
         delta: Fraction | None = None, rho: Fraction | None = None, rows: int | None = None) -> BoundsPlan:
    """Check a ``BOUNDS`` query and fix its noise and charge; :class:`UnsupportedQuery` or
    :class:`ParameterError` before anything is charged."""
    if len(query.outputs) != 1:
        raise UnsupportedQuery("BOUNDS(column) is asked alone: SELECT BOUNDS(column) FROM table [WHERE ...].")
    output = query.outputs[0]
    k = rows_per_unit(table, rows)
    if definition == "zcdp":
        exact_eps = zcdp_epsilon(rho)
        if exact_eps == 0:
            raise ParameterError(f"rho {exact_text(rho)} is too small for BOUNDS (epsilon below 2**-20): ask with a "
                                 "larger rho.")
        eps, cost = float(exact_eps), (Fraction(0), Fraction(0), exact_eps**2 / 2)
    else:
        eps, cost = split_epsilon(epsilon, 1), (epsilon, Fraction(0), Fraction(0))
    try:
        numerator = geometric(eps, k).scale_numerator()  # refuses a scale too large to sample
    except ParameterError:
        raise ParameterError(f"epsilon {eps:.3g} is too small for BOUNDS with {k} row(s) per person: ask with a "
                             "larger epsilon.") from None
    return BoundsPlan(query, output.column, output.label, definition, k, eps, numerator, threshold_for(numerator), cost)


def bin_counts(result: dict[str, np.ndarray]) -> np.ndarray:
    """Counts of the ``2 SIDE`` signed bins (negative bins first, most negative first, then the
    positive ones) from :func:`~sdckit.query.generate.magnitude_histogram_sql`."""
    raw = result[BIN_ALIAS]
    bins = np.asarray(np.ma.filled(raw, 0) if isinstance(raw, np.ma.MaskedArray) else raw, dtype=np.int64)
    counts = np.asarray(result[COUNT_ALIAS], dtype=np.int64)
    out = np.zeros(2 * SIDE, dtype=np.int64)
    keep = (bins != 0) & (np.abs(bins) <= SIDE)
    index = np.where(bins < 0, SIDE + bins, SIDE - 1 + bins)  # -SIDE -> 0, -1 -> SIDE-1, 1 -> SIDE, SIDE -> 2 SIDE-1
    np.add.at(out, index[keep], counts[keep])
    return out


def bounds_from_counts(noisy: np.ndarray, threshold: int) -> tuple[float, float]:
    """``(lower, upper)`` from the noisy bin counts (:func:`bin_counts` order): the outermost
    bins of each sign reaching ``threshold``, 0 for a sign with none."""
    crossing = np.flatnonzero(np.asarray(noisy) >= threshold)
    negative, positive = crossing[crossing < SIDE], crossing[crossing >= SIDE]
    lower = -math.ldexp(1.0, LOWEST + SIDE - 1 - int(negative[0])) if negative.size else 0.0
    upper = math.ldexp(1.0, LOWEST + int(positive[-1]) - SIDE) if positive.size else 0.0
    return lower, upper


def answer(plan_: BoundsPlan, result: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, Any]:
    """The DP bounds: ``columns`` (``<label>_lower_bound``, ``<label>_upper_bound``), one row,
    ``mechanism``, ``noise_scale``, ``ci95`` (none), ``dp``."""
    counts = bin_counts(result)
    noisy = counts + geometric(plan_.epsilon, plan_.k).noise(counts.size, rng)
    lower, upper = bounds_from_counts(noisy, plan_.threshold)
    scale = {"scale": plan_.scale_numerator / SCALE_DENOMINATOR, "epsilon": plan_.epsilon, "threshold": plan_.threshold}
    return {"columns": [f"{plan_.label}_lower_bound", f"{plan_.label}_upper_bound"], "rows": [[lower, upper]],
            "mechanism": plan_.mechanism(), "noise_scale": [scale, scale], "ci95": [[None, None]], "dp": True}
