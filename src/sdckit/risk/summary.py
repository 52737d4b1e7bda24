"""The headline risk figures of a file, as the CLI and the report show them.

:func:`risk_summary` gathers the measures of issue 16 — global and household risk, the
distribution of individual risk, k-anonymity violations, sample uniques, which key variable
drives uniqueness and the SUDA2 scores — into aggregates only: counts and shares, never a
record or a key value, so that the summary can be shown and written without disclosing anyone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdckit.core.matching import MISSING_RULE, check_keys
from sdckit.core.params import Interval, validated
from sdckit.core.result import Result, plain
from sdckit.risk.frequencies import frequencies
from sdckit.risk.individual import DEFAULT_THRESHOLD, GlobalRisk, global_risk
from sdckit.risk.ldiversity import l_diversity
from sdckit.risk.suda import suda2

#: Upper edges of the bands of individual risk shown in the report and the CLI.
RISK_BANDS = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
#: Upper edges of the DIS-SUDA bands (sdcMicro's print.suda2: == 0, (0, 0.1], ... > 0.7).
DIS_BANDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0)
K_VALUES = (2, 3, 5)


def band_counts(values: np.ndarray, edges: Sequence[float]) -> dict[str, int]:
    """Records per band ``(previous edge, edge]`` (the first band is ``[0, edges[0]]``)."""
    out: dict[str, int] = {}
    low = None
    for edge in edges:
        inside = values <= edge if low is None else (values > low) & (values <= edge)
        out[f"<= {edge:g}" if low is None else f"({low:g}, {edge:g}]"] = int(inside.sum())
        low = edge
    if (values > edges[-1]).any():
        out[f"> {edges[-1]:g}"] = int((values > edges[-1]).sum())
    return out


@dataclass(frozen=True)
class RiskSummary(Result):
    """Aggregated risk of a file; ``to_dict()`` is what ``sdckit risk --json`` writes."""

    global_: GlobalRisk
    missing: str
    strata: tuple[str, ...]
    risk_bands: dict[str, int]
    k_violations: dict[int, int]
    uniques: int
    uniques_without: dict[str, int]
    suda: dict[str, object] | None
    population: dict[str, object] | None = None
    diversity: dict[str, dict[str, object]] | None = None

    def to_dict(self) -> dict[str, object]:
        """The global risk's figures followed by the aggregates under their published names."""
        return plain({
            **self.global_.to_dict(), "missing": self.missing, "strata": list(self.strata),
            "risk_bands": self.risk_bands,
            "k_anonymity_violations": {str(k): v for k, v in self.k_violations.items()},
            "sample_uniques": self.uniques,
            "sample_uniques_without_key": self.uniques_without,
            "suda2": self.suda,
            "population": self.population,
            "l_diversity": self.diversity,
        })

    def summary(self) -> list[tuple[str, str]]:
        """The rows ``sdckit risk`` prints: counts and shares only, never a record."""
        rows = self.global_.summary()
        rows.append(("sample uniques (fk = 1)", f"{self.uniques:,}"))
        rows += [(f"records violating {k}-anonymity (fk < {k})", f"{v:,}") for k, v in self.k_violations.items()]
        if self.suda:
            rows += [("records with a minimal sample unique (SUDA2)", f"{self.suda['records_with_msu']:,}"),
                     ("largest SUDA score", f"{self.suda['max_score']:g}")]
        pop = self.population
        if pop:
            uniq = pop["population_uniqueness"]
            rows += [("population (estimated)", f"{pop['population']:,.0f}"),
                     (f"population uniqueness ({uniq['dankar_model']}, Dankar's rule)", f"{uniq['dankar']:.6f}")]
            rows += [(f"{attacker} risk: average / highest",
                      f"{pop[attacker]['average']:.6f} / {pop[attacker]['highest']:.6f}")
                     for attacker in ("prosecutor", "journalist")]
            rows.append(("marketer risk", f"{pop['marketer']:.6f}"))
        for column, div in (self.diversity or {}).items():
            rows += [(f"records whose class has one value of {column}", f"{div['records_with_one_value']:,}"),
                     (f"smallest distinct / entropy l of {column}",
                      f"{div['min_distinct_l']:g} / {div['min_entropy_l']:.3f}")]
        return rows


def diversity_summary(frame: pd.DataFrame, keys: Sequence[str], sensitive: str, missing: str,
                      strata: Sequence[str] | str | None) -> dict[str, object]:
    """Aggregates of :func:`~sdckit.risk.ldiversity.l_diversity` for one sensitive column: the
    smallest distinct and entropy l over the records, and how many records sit in a class whose
    every member shares one sensitive value (attribute disclosure without re-identification)."""
    d = l_diversity(frame, keys, sensitive, missing, strata=strata)
    distinct = d["distinct_l"].to_numpy()
    return {"min_distinct_l": float(distinct.min()), "min_entropy_l": float(d["entropy_l"].min()),
            "records_with_one_value": int((distinct <= 1).sum()),
            "records_below_2_distinct": int((distinct < 2).sum()),
            "records_below_3_distinct": int((distinct < 3).sum())}


def suda_summary(frame: pd.DataFrame, keys: Sequence[str], max_size: int | None = None, missing: str = "wildcard",
                 *, dis_fraction: float = 0.01, strata: Sequence[str] | str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, object]:
    """Aggregates of :func:`~sdckit.risk.suda.suda2` (Elliot et al. 2002; Manning, Haglin and
    Keane 2008): the largest MSU size searched, records with at least one minimal sample unique,
    the MSUs found of each size, the mean and largest SUDA score and the records per DIS-SUDA
    band (:data:`DIS_BANDS`) — counts only, never a record. ``risk_summary(..., suda=True)``
    reports it as ``suda2``; ``progress(done, total)`` is passed to :func:`suda2`."""
    s = suda2(frame, keys, max_size, missing, dis_fraction=dis_fraction, strata=strata, progress=progress)
    msu_cols = [c for c in s.columns if c.startswith("msu_")]
    return {
        "max_size": len(msu_cols), "dis_fraction": dis_fraction,
        "records_with_msu": int((s["score"] > 0).sum()),
        "msu_by_size": {c.removeprefix("msu_"): int(s[c].sum()) for c in msu_cols},
        "mean_score": float(s["score"].mean()), "max_score": float(s["score"].max()),
        "dis_score_bands": band_counts(s["dis_score"].to_numpy(), DIS_BANDS),
    }


@validated(missing=MISSING_RULE, threshold=Interval(float, 0, 1))
def risk_summary(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    weight: str | None = None,
    household: str | None = None,
    *,
    missing: str = "wildcard",
    strata: Sequence[str] | str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    suda: bool = True,
    suda_max_size: int | None = None,
    dis_fraction: float = 0.01,
    sensitive: Sequence[str] | str | None = None,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
) -> RiskSummary:
    """Every headline figure of the file's re-identification risk (module docstring).

    ``sample_uniques_without_key[v]`` is the number of sample uniques left when key variable
    ``v`` is dropped from the key: the variables whose removal helps most drive uniqueness.
    The population models (:func:`~sdckit.risk.population.population_risk`: Pitman, Zayatz, SNB,
    Dankar's choice; prosecutor, journalist and marketer risk) are included when the population
    is known: from ``weight``, ``sampling_fraction`` or ``population_size`` (at most one of the
    last two). ``sensitive`` columns get :func:`diversity_summary`.
    """
    keys = check_keys(frame, keys, "risk_summary")
    strata_t = () if strata is None else ((strata,) if isinstance(strata, str) else tuple(strata))
    g = global_risk(frame, keys, weight, household, missing=missing, threshold=threshold, strata=strata)
    fk = g.individual["fk"].to_numpy()
    without = {}
    for name in keys:
        rest = [k for k in keys if k != name]
        without[name] = (int((frequencies(frame, rest, None, missing, strata=strata)["fk"] == 1).sum())
                         if rest else 0)
    suda_dict = (suda_summary(frame, keys, suda_max_size, missing, dis_fraction=dis_fraction, strata=strata)
                 if suda else None)
    population = None
    if sampling_fraction is not None or population_size is not None:
        from sdckit.risk.population import population_risk  # scipy: only for the population models
        population = population_risk(frame, keys, sampling_fraction=sampling_fraction,
                                     population_size=population_size).to_dict()
    elif weight is not None:
        from sdckit.risk.population import population_risk
        population = population_risk(frame, keys, weight=weight).to_dict()
    sensitive_t = () if sensitive is None else ((sensitive,) if isinstance(sensitive, str) else tuple(sensitive))
    diversity = {c: diversity_summary(frame, keys, c, missing, strata) for c in sensitive_t} or None
    return RiskSummary(
        global_=g, missing=missing, strata=strata_t, population=population, diversity=diversity,
        risk_bands=band_counts(g.individual["risk"].to_numpy(), RISK_BANDS),
        k_violations={k: int((fk < k).sum()) for k in K_VALUES},
        uniques=int((fk == 1).sum()), uniques_without=without, suda=suda_dict,
    )
