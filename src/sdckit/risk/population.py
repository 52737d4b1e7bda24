"""Population uniqueness from a sample: Pitman, Zayatz and SNB models, Dankar's rule, and
the prosecutor, journalist and marketer risks (as ARX computes them).

Input is the sample's equivalence classes on the key variables (missing values form a value of
their own) and the population size N (given, from a sampling fraction ``pi`` as
``N = round(n / pi)``, or as the sum of the sampling weights). With ``u`` classes, ``c_s``
classes of size s and sampling fraction ``pi = n / N``, each model estimates the number of
population uniques among the sample's keys:

* **Pitman** (Hoshino 2001, J. Official Statistics 17:499-520): the maximum-likelihood
  ``(theta, alpha)`` of Pitman's sampling formula solve
  ``sum_{i<u} 1/(theta + i alpha) = sum_{i<n} 1/(theta + i)`` and
  ``sum_{i<u} i/(theta + i alpha) = sum_{s>1} c_s sum_{j<s} 1/(j - alpha)``; the population
  uniques are ``Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha``.
* **Zayatz** (1991, conditional probability of uniqueness): with hypergeometric
  probabilities ``h(s) = P(X = 1)`` for X ~ Hypergeometric(N, s, n), uniques are
  ``c_1 / pi * (c_1/u * h(1)) / sum_s (c_s/u * h(s))``.
* **SNB**, the slide negative binomial (Chen & Keller-McNulty 1998): the number of
  non-empty population classes ``K`` is estimated from the class-size histogram, ``(alpha,
  beta)`` solve the equations matching c_1 and c_2, and uniques are ``K * beta^alpha``.
* **Dankar's rule** (Dankar, El Emam, Neisa & Roffey 2012, BMC Med. Inform. Decis. Mak.
  12:66): Pitman when ``pi <= 0.1`` (Zayatz if Pitman fails), else the smaller of Zayatz and
  SNB (Zayatz if SNB fails).

Equations, initial values and the choice rule follow ARX's ModelPitman, ModelZayatz,
ModelSNB and RiskModelPopulationUniqueness (arx-deidentifier/arx); the solver is scipy's
(MINPACK's hybrid method) instead of ARX's Newton-Raphson, so an estimate may differ where the
equations have several roots. *Fractions* are numbers of uniques divided by N, as ARX reports.

Attacker models (El Emam, "Guide to the de-identification of personal health information",
2013; ARX's RiskModelSampleSummary), over classes of sample size f and population size F
(F = f without weights, else the sum of weights): *prosecutor* — highest risk ``1/min f``,
average ``classes / n``, share of records with ``1/f > threshold``; *journalist* — the same
with F, average ``max(classes / sum_classes F, mean over records of f/F / f)``; *marketer* —
the expected share re-identified, ``sum_classes f/F / n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from sdckit.core.errors import ParameterError
from sdckit.core.matching import check_keys, combine, key_codes
from sdckit.core.params import Interval, IsNone, validated
from sdckit.core.result import Result, plain
from sdckit.risk.frequencies import require_frame, sampling_weights


def _histogram(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, c = np.unique(sizes, return_counts=True)
    return s.astype(float), c.astype(float)


def pitman_uniques(sizes: np.ndarray, population: float) -> float:
    """Population uniques under Pitman's model from the sample's class sizes (NaN: no solution)."""
    s, c = _histogram(sizes)
    n, u = float(np.sum(sizes)), float(len(sizes))
    c1 = float(c[s == 1].sum())
    c2 = float(c[s == 2].sum()) or 1.0
    big = s > 1

    def equations(x):
        t, a = x
        if a <= 0 or a >= 1 or t <= -a:
            return [1e6, 1e6]
        o1 = (special.digamma(t / a + u) - special.digamma(t / a + 1)) / a
        o2 = special.digamma(n + t) - special.digamma(t + 1)
        o3 = (u - 1) / a - t / a * o1
        o4 = float((c[big] * (special.digamma(s[big] - a) - special.digamma(1 - a))).sum())
        return [o1 - o2, o3 - o4]

    cc = c1 * (c1 - 1) / c2
    t0 = (n * u * cc - c1 * (n - 1) * (2 * u + cc)) / (2 * c1 * u + c1 * cc - n * cc)
    a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
    starts = [(t0, a0), (max(t0, 1.0), 0.5), (10.0, 0.5), (100.0, 0.9)]
    for start in starts:
        if not np.all(np.isfinite(start)):
            continue
        sol = optimize.root(equations, start, method="hybr")
        t, a = sol.x
        if sol.success and 0 < a < 1 and t >= 0 and np.abs(equations(sol.x)).max() < 1e-6:
            value = np.exp(special.gammaln(t + 1) - special.gammaln(t + a) + a * np.log(population))
            return float(value) if 0 <= value <= population else float("nan")
    return float("nan")


def zayatz_uniques(sizes: np.ndarray, population: float) -> float:
    """Population uniques under Zayatz's model from the sample's class sizes."""
    s, c = _histogram(sizes)
    n, u = int(np.sum(sizes)), float(len(sizes))
    N = int(population)
    c1 = float(c[s == 1].sum())
    h = stats.hypergeom.pmf(1, N, s.astype(int), n)
    temp = float((c / u * h).sum())
    uniqueness = (c1 / u * stats.hypergeom.pmf(1, N, 1, n)) / temp
    return c1 * uniqueness / (n / population)


def snb_uniques(sizes: np.ndarray, population: float) -> float:
    """Population uniques under the slide negative binomial model (NaN: no solution)."""
    s, c = _histogram(sizes)
    n, u = float(np.sum(sizes)), float(len(sizes))
    f = n / population
    c1 = float(c[s == 1].sum())
    c2 = float(c[s == 2].sum())
    var1 = float((s * f**2 * (1 - f**2) ** (s - 1) * c).sum())
    var2 = float(((1 - f) ** s * c * (1 + f) ** s - 1).sum())
    var3 = float(((1 - f) ** s * c).sum())
    var4 = float((s * f * (1 - f) ** (s - 1) * c).sum())
    k = u + c1 * (var1 / var2) * (var3 / var4) ** 2

    def equations(x):
        a, b = x
        d = (1 - f) * (1 - b)
        if b <= 0 or 1 - d <= 0:
            return [1e6, 1e6]
        e1 = k * f * (b / (1 - d)) ** a * (a * d / (1 - d) + 1) - c1
        e2 = k * a * b**a * f * f * (1 - b) / 2 * (1 - d) ** (a + 2) * (2 - (1 - a) * d) - c2
        return [e1, e2]

    for start in [(1.0, 0.5), (0.5, 0.5), (2.0, 0.1), (0.1, 0.9), (5.0, 0.01)]:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            sol = optimize.root(equations, start, method="hybr")
            a, b = sol.x
            ok = sol.success and np.abs(equations(sol.x)).max() < 1e-6 * max(c1, 1)
        if ok:
            value = k * b**a
            if np.isfinite(value) and 0 < value <= population:
                return float(value)
    return float("nan")


def _valid(value: float) -> bool:
    return bool(np.isfinite(value)) and value != 0


@dataclass(frozen=True)
class PopulationRisk(Result):
    """Population uniqueness under each model, Dankar's choice, and the three attacker models."""

    records: int
    population: float
    sampling_fraction: float
    sample_uniqueness: float
    pitman: float
    zayatz: float
    snb: float
    dankar: float
    dankar_model: str
    prosecutor: dict[str, float]
    journalist: dict[str, float]
    marketer: float

    def to_dict(self) -> dict[str, object]:
        """The fields, with the models' uniqueness grouped under ``population_uniqueness``."""
        return plain({
            "records": self.records, "population": self.population, "sampling_fraction": self.sampling_fraction,
            "sample_uniqueness": self.sample_uniqueness,
            "population_uniqueness": {"pitman": self.pitman, "zayatz": self.zayatz, "snb": self.snb,
                                      "dankar": self.dankar, "dankar_model": self.dankar_model},
            "prosecutor": self.prosecutor, "journalist": self.journalist, "marketer": self.marketer,
        })


def _attacker(f: np.ndarray, F: np.ndarray, n: int, threshold: float) -> dict[str, float]:
    """Risk summary of one attacker model over classes of sample sizes f and class sizes F."""
    return {"highest": float(1 / F.min()), "lowest": float(1 / F.max()),
            "records_at_risk": float(f[1 / F > threshold].sum() / n),
            "average": float(max(len(f) / F.sum(), (f / F).sum() / n))}


@validated(sampling_fraction=[IsNone(), Interval(float, 0, 1, closed="right")],
           population_size=[IsNone(), Interval(float, 1, None)], threshold=Interval(float, 0, 1))
def population_risk(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    *,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    weight: str | None = None,
    threshold: float = 0.2,
) -> PopulationRisk:
    """Population uniqueness (Pitman, Zayatz, SNB, Dankar) and prosecutor / journalist /
    marketer risk of ``frame`` on ``keys``; give exactly one of ``sampling_fraction``,
    ``population_size`` or ``weight`` (module docstring)."""
    owner = "population_risk"
    require_frame(frame, owner)
    keys = check_keys(frame, keys, owner)
    given = [v is not None for v in (sampling_fraction, population_size, weight)]
    if sum(given) != 1:
        raise ParameterError("population_risk needs exactly one of sampling_fraction=, population_size= or weight=.")
    n = len(frame)
    if sampling_fraction is not None:
        population = float(round(n / sampling_fraction))
    elif population_size is not None:
        if population_size < n:
            raise ParameterError(f"The 'population_size' parameter of population_risk must be a number >= the {n} records. Got {population_size!r} instead.")
        population = float(population_size)
    else:
        population = float(sampling_weights(frame, weight, owner).sum())
    labels = pd.factorize(combine(key_codes(frame, keys, missing="category")))[0]
    f = np.bincount(labels).astype(float)
    w = sampling_weights(frame, weight, owner)
    F = f if w is None else np.bincount(labels, weights=w)
    sizes = f.astype(int)
    c1 = int((sizes == 1).sum())
    pi = n / population
    pitman = pitman_uniques(sizes, population) if c1 else 0.0
    zayatz = zayatz_uniques(sizes, population) if c1 else 0.0
    snb = snb_uniques(sizes, population) if c1 else 0.0
    if c1 == 0:
        dankar, model = 0.0, "none"
    elif pi <= 0.1:
        dankar, model = (pitman, "pitman") if _valid(pitman) else (zayatz, "zayatz")
    elif _valid(snb) and snb <= zayatz:
        dankar, model = snb, "snb"
    else:
        dankar, model = zayatz, "zayatz"
    frac = [v / population if _valid(v) else 0.0 for v in (pitman, zayatz, snb, dankar)]
    return PopulationRisk(
        records=n, population=population, sampling_fraction=pi, sample_uniqueness=c1 / n,
        pitman=frac[0], zayatz=frac[1], snb=frac[2], dankar=frac[3], dankar_model=model,
        prosecutor=_attacker(f, f, n, threshold), journalist=_attacker(f, F, n, threshold),
        marketer=float((f / F).sum() / n),
    )
