"""GROUP BY keys taken from the data, released by thresholding (issue 32).

A dp GROUP BY on a column without a declared domain (listed in the table's ``keys_from_data``,
:class:`sdckit.query.config.TableConfig`) cannot return "every key of the domain": its keys are
read from the data, and which keys exist is itself private (a key held by one person tells that
she is in the table). They are released as Korolova, Kenthapadi, Mishra & Ntoulas (2009,
"Releasing search queries and clicks privately", WWW) and Wilson, Zhang, Lam, Desfontaines,
Simmons-Marengo & Gipson (2020, "Differentially private SQL with bounded user contribution",
PoPETs 2020(2)) release them, the mechanism behind Tumult Analytics' ``get_groups`` and
SmartNoise SQL's ``censor_dims``:

1. *Contributions*: at most ``k`` = ``max_rows_per_unit`` rows per person (the dp relation of
   :mod:`sdckit.query.data`: the first ``k`` rows of each person), so a person holds at most
   ``k`` keys.
2. *Key counts*: for each key the data holds (under the WHERE condition; a row with a missing
   value, or with a declared-domain column outside its domain, belongs to no key) ``c`` = the
   number of *persons* with a row of that key. One person changes at most ``k`` of these counts,
   each by at most 1: L1 sensitivity ``k``.
3. *Noise*: ``c + Y``, ``Y`` the exact discrete Laplace of scale ``b = k / epsilon_sel`` rounded
   up to a multiple of 2**-20 (the COUNT sampler, :class:`sdckit.dp.mechanisms.Geometric`):
   ``epsilon_sel``-DP on the keys both neighbours hold.
4. *Threshold*: a key is released when ``c + Y >= tau``, ``tau`` the smallest integer with
   ``k P(Y >= tau - 1) <= delta_sel``, where ``P(Y >= m) = p**m / (1 + p)``, ``p = exp(-1/b)``
   (``m >= 1``; checked in 60-digit decimal arithmetic). A key held by the one person in which
   neighbours differ has ``c = 1`` and is released with probability
   ``P(Y >= tau - 1) <= delta_sel / k``; she holds at most ``k`` such keys, so the probability
   ``q`` that any is released is ``<= delta_sel``. Outside that event both neighbours' outputs are
   within ``exp(epsilon_sel)``, so ``P_D'(T) <= e^eps P_D(T) + q`` and (the new keys' noise being
   independent) ``P_D(T) <= min(1, e^eps P_D'(T) / (1 - q)) <= e^eps P_D'(T) + q``: the release is
   ``(epsilon_sel, delta_sel)``-DP under add/remove-one-person. Only the keys are released,
   never their noisy person counts (more than ``MAX_GROUPS`` released keys: those with the
   largest noisy counts are kept, post-processing).
5. *Aggregates* of the released keys: the answers of :mod:`sdckit.query.noisy_gaussian` (Gaussian,
   or pure epsilon-share noise where that is less) exactly as for declared keys (the same noise, sensitivities over the released cells) with the
   rest of the budget; for any fixed set of keys they are ``(epsilon_agg, delta_agg)``-DP, so the
   whole is ``(epsilon, delta)``-DP by adaptive basic composition (Dwork & Roth 2014, Thm 3.16).

*Budget*: thresholding is ``(epsilon, delta)``-DP, never pure, and is not a zCDP mechanism, so it
is answered for ``approx`` budgets only (a pure or zCDP analyst gets a 400, nothing charged). The
query's ``(epsilon, delta)`` is split equally over ``1 + m`` parts (``m`` the Gaussian
measurements): the key selection gets ``(epsilon / (1 + m), delta / (1 + m))`` (its epsilon the
largest float not above that), the aggregates the rest, ``(epsilon m / (1 + m), delta m / (1 + m))``,
and the query is charged the ``(epsilon, delta)`` asked, exactly (Fractions).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result, plain
from sdckit.dp.accountant import exact_text, split_epsilon
from sdckit.dp.mechanisms import SCALE_DENOMINATOR, geometric
from sdckit.query import noisy_gaussian
from sdckit.query.config import MAX_GROUPS, TableConfig
from sdckit.query.generate import (COUNT_ALIAS, PERSONS_ALIAS, group_alias, is_text_domain, rows_per_unit, sum_alias,
                                   summed_columns)
from sdckit.query.sql import Query

#: Decimal digits of the threshold's tail computation.
_DIGITS = 60
#: Relative margin on the tail bound (far above the decimal rounding, far below any delta's scale).
_MARGIN = Decimal("1e-40")


def tail(m: int, scale: Fraction) -> Decimal:
    """``P(Y >= m)`` for the discrete Laplace ``Y`` of scale ``b`` (``P(Y = y)`` proportional to
    ``exp(-|y| / b)``), in 60-digit decimal arithmetic: ``p**m / (1 + p)`` for ``m >= 1`` and
    ``1 - p**(1 - m) / (1 + p)`` for ``m <= 0`` (symmetry), ``p = exp(-1/b)``."""
    ctx = Context(prec=_DIGITS)
    inv_b = ctx.divide(Decimal(scale.denominator), Decimal(scale.numerator))
    p = ctx.exp(-inv_b)
    if m >= 1:
        return ctx.divide(ctx.exp(ctx.multiply(-inv_b, Decimal(m))), ctx.add(1, p))
    return ctx.subtract(1, ctx.divide(ctx.exp(ctx.multiply(-inv_b, Decimal(1 - m))), ctx.add(1, p)))


@functools.lru_cache(maxsize=1024)  # (a pure function of exact values: the same query's tau, not recomputed)
def threshold(scale: Fraction, k: int, delta: Fraction) -> int:
    """The smallest integer ``tau >= 2`` with ``k P(Y >= tau - 1) <= delta`` (:func:`tail`, with a
    relative margin of 1e-40 against the decimal rounding): a key of one person's is then
    released with probability at most ``delta / k``."""
    if not 0 < delta < 1:
        raise ParameterError(f"The key selection's delta must be in (0, 1); got {exact_text(delta)}.")
    bound = Decimal(delta.numerator) / Decimal(delta.denominator) / Decimal(k)
    b = float(scale)
    log_bound = math.log(k) - math.log(delta.numerator) + math.log(delta.denominator)  # ln(k / delta), any size
    m = max(1, math.floor(b * (log_bound - math.log1p(math.exp(-1 / b)))) - 2)  # a few steps below the answer
    while m > 1 and tail(m - 1, scale) * (1 + _MARGIN) <= bound:  # (the guess is normally below the answer)
        m -= 1
    while tail(m, scale) * (1 + _MARGIN) > bound:
        m += 1
    return m + 1


@functools.lru_cache(maxsize=1024)  # (public numbers only: stated twice in every answer)
def _release(m: int, scale: Fraction) -> float:
    """``float(tail(m, scale))``."""
    return float(tail(m, scale))


@dataclass(frozen=True)
class Selection(Result):
    """The thresholded release of data keys: discrete Laplace of scale ``scale`` on each key's
    person count, keys with a noisy count ``>= tau`` released; ``(epsilon, delta)``-DP with
    ``k`` keys per person at most."""

    epsilon: float
    delta: Fraction
    k: int
    scale: Fraction
    tau: int

    @classmethod
    @functools.lru_cache(maxsize=256)
    def make(cls, epsilon: float, delta: Fraction, k: int) -> Selection:
        """The selection for an ``epsilon`` (a float) and ``delta`` share and ``k`` rows per person
        (memoised: public numbers, the threshold's search; a :class:`Selection` is frozen)."""
        scale = Fraction(geometric(epsilon, k).scale_numerator(), SCALE_DENOMINATOR)
        return cls(epsilon, delta, k, scale, threshold(scale, k, delta))

    def release_probability(self, persons: int) -> float:
        """``P(persons + Y >= tau)``: the probability that a key held by ``persons`` persons is released."""
        return _release(self.tau - persons, self.scale)

    def select(self, persons: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(released, noisy)``: a boolean mask of the keys whose noisy person count is at least
        ``tau``, and the noisy counts (kept internal: only the keys are released)."""
        noisy = np.asarray(persons, dtype=np.int64) + geometric(self.epsilon, self.k).noise(len(persons), rng)
        return noisy >= self.tau, noisy

    def text(self) -> str:
        return (f"GROUP BY keys from the data, thresholded (Korolova et al. 2009; Wilson et al. 2020; as Tumult "
                f"get_groups, SmartNoise censor_dims): per key the number of persons (at most {self.k} key(s) per "
                f"person) + exact discrete Laplace of scale {float(self.scale):.6g}, released when at least "
                f"tau = {self.tau}; epsilon {self.epsilon:.6g}, delta {exact_text(self.delta)} (a key of one person "
                f"is released with probability {self.release_probability(1):.3g} <= delta / {self.k}); the noisy "
                "counts are not released")

    def to_dict(self) -> dict[str, Any]:
        return plain({"epsilon": self.epsilon, "delta": float(self.delta), "k": self.k,
                      "noise": "discrete Laplace", "scale": float(self.scale), "tau": self.tau,
                      "singleton_release_probability": self.release_probability(1),
                      "exact": {"delta": exact_text(self.delta), "scale": exact_text(self.scale)}})


@dataclass(frozen=True)
class KeysPlan:
    """A dp GROUP BY with keys from the data: the key :class:`Selection` and the Gaussian plan of
    the aggregates (its ``cells`` filled in once the keys are released), charged ``cost``."""

    query: Query
    columns: tuple[str, ...]
    asked: tuple[Fraction, Fraction]
    selection: Selection
    aggregates: noisy_gaussian.GaussianPlan

    @property
    def cost(self) -> tuple[Fraction, Fraction, Fraction]:
        """``(epsilon, delta, 0)``: the asked loss, charged exactly."""
        return self.asked[0], self.asked[1], Fraction(0)

    def mechanism(self, released: int, truncated: bool) -> str:
        eps, delta = self.asked
        parts = [self.selection.text()] + self.aggregates.measurement_texts()
        kept = (f"; {released} key(s) released" + (f" (the {MAX_GROUPS} with the largest noisy counts kept)"
                                                    if truncated else ""))
        return ("; ".join(parts)
                + f"; (epsilon, delta)-DP by basic composition: charged epsilon {exact_text(eps)}, delta "
                  f"{exact_text(delta)}, split equally over 1 + {len(self.aggregates.measurements)} parts (the key "
                  f"selection, then each measurement over the released keys, calibrated through rho-zCDP, CKS20 "
                  f"Corollary 13){kept}; at most {self.selection.k} row(s) per privacy unit")


def plan(query: Query, table: TableConfig, epsilon: Fraction, delta: Fraction, rows: int | None = None) -> KeysPlan:
    """Fix the key selection and the aggregates' mechanisms for an ``(epsilon, delta)`` charge;
    :class:`ParameterError` before anything is charged when it cannot be answered. ``rows``: the
    rows per person the query asks (:func:`~sdckit.query.generate.rows_per_unit`)."""
    if any(o.kind == "quantile" for o in query.outputs):
        raise ParameterError("Quantiles, MIN and MAX are answered over groups of declared domains only "
                             "(not yet with keys from the data).")
    k = rows_per_unit(table, rows)
    m = len(noisy_gaussian.measurement_names(query))
    parts = 1 + m
    selection = Selection.make(split_epsilon(epsilon, parts), delta / parts, k)
    aggregates = noisy_gaussian.plan(query, table, "approx", epsilon=epsilon * m / parts, delta=delta * m / parts,
                                     cells=(), rows=rows)
    return KeysPlan(query, table.keys_from_data(query.group_by), (epsilon, delta), selection, aggregates)


def _python(value: Any) -> Any:
    """A key value as JSON can hold it (numbers and strings as they are, anything else as text)."""
    if isinstance(value, str | int | float):
        return value
    return str(value)


def candidates(query: Query, table: TableConfig, result: dict[str, np.ndarray]
               ) -> tuple[list[tuple[Any, ...]], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The keys the data holds, from :func:`~sdckit.query.generate.aggregate_sql` with
    ``persons=True``: ``(keys, persons, counts, sums)``. Rows with a missing key value, or a
    declared-domain value outside the domain, belong to no key and are left out."""
    size = len(result[COUNT_ALIAS])
    valid = np.ones(size, dtype=bool)
    columns: list[list[Any]] = []
    for i, column in enumerate(query.group_by):
        raw = result[group_alias(i)]
        mask = np.ma.getmaskarray(raw) if isinstance(raw, np.ma.MaskedArray) else np.zeros(size, dtype=bool)
        data = np.ma.getdata(raw)
        if data.dtype.kind == "f":
            mask = mask | np.isnan(data)
        values = data.tolist()
        if column in table.domains:
            domain = table.domains[column]
            if is_text_domain(table, column):
                values = [domain[v] if v is not None and 0 <= v < len(domain) else None for v in values]
            else:
                position = {float(v): v for v in domain}
                values = [position.get(float(v)) if v is not None else None for v in values]
            mask = mask | np.array([v is None for v in values], dtype=bool)
        else:
            mask = mask | np.array([v is None for v in values], dtype=bool)
            values = [_python(v) for v in values]
        valid &= ~mask
        columns.append(values)
    rows = np.flatnonzero(valid)
    keys = [tuple(col[r] for col in columns) for r in rows.tolist()]
    persons = np.asarray(result[PERSONS_ALIAS], dtype=np.int64)[rows]
    counts = np.asarray(result[COUNT_ALIAS], dtype=np.int64)[rows]
    sums = {}
    for j, column in enumerate(summed_columns(query)):
        values = result[sum_alias(j)]
        values = np.ma.filled(values, 0.0) if isinstance(values, np.ma.MaskedArray) else values
        sums[column] = np.asarray(values, dtype=float)[rows]
    return keys, persons, counts, sums


def answer(plan_: KeysPlan, table: TableConfig, result: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, Any]:
    """The answer: the released keys (sorted) with their Gaussian aggregates, the mechanism
    stated, and ``key_selection`` (the threshold, the noise, the selection's share)."""
    keys, persons, counts, sums = candidates(plan_.query, table, result)
    released, noisy = plan_.selection.select(persons, rng)
    chosen = np.flatnonzero(released)
    truncated = chosen.size > MAX_GROUPS
    if truncated:  # post-processing of the noisy counts: the largest ones
        chosen = chosen[np.argsort(-noisy[chosen], kind="stable")[:MAX_GROUPS]]
    order = sorted(chosen.tolist(), key=lambda i: keys[i])
    cells = tuple(keys[i] for i in order)
    aggregates = replace(plan_.aggregates, cells=cells)
    index = np.asarray(order, dtype=np.int64)
    out = noisy_gaussian.answer_cells(aggregates, counts[index], {c: v[index] for c, v in sums.items()}, rng)
    out["mechanism"] = plan_.mechanism(len(cells), truncated)
    out["key_selection"] = {**plan_.selection.to_dict(), "columns": list(plan_.columns), "released": len(cells),
                            "truncated": truncated}
    return out
