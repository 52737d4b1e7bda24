"""Individual and global re-identification risk (Benedetti & Franconi), with households.

The individual risk of a record whose key has sample frequency ``f = fk`` and estimated
population frequency ``F = Fk`` (:func:`~sdckit.risk.frequencies.frequencies`) is the expected
value of ``1/F_pop`` given the sample, under a negative-binomial superpopulation model with
``p = f / F`` (Benedetti & Franconi 1998; Franconi & Polettini 2004, "Individual risk
estimation in mu-Argus: a review", PSD 2004, LNCS 3050, 262-272). As in sdcMicro's
``indivRisk(method="approx")`` and ``measure_risk``:

* ``f = 1``: ``r = p/(1-p) * log(1/p)``
* ``f = 2``: ``r = p/(1-p) - (p/(1-p))**2 * log(1/p)``
* ``f > 2``: ``r = p / (f - (1-p))``
* ``F <= f`` (the sample is the population there, ``p >= 1``): ``r = 1/f``.

Without weights every record weighs 1, so ``F == f`` and ``r = 1/f``. The *global risk* is
the mean of ``r``, the *expected number of re-identifications* its sum. A household's risk is
the probability that at least one member is re-identified, ``1 - prod(1 - r_i)`` over its
members (sdcMicro's hierarchical risk, ``measure_risk(hid=...)`` with ``fast_hier=TRUE``);
each member carries it, and the household global risk is its mean over records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdckit.core.errors import SchemaError
from sdckit.core.matching import MISSING_RULE
from sdckit.core.params import Interval, validated
from sdckit.core.result import Result, plain
from sdckit.risk.frequencies import frequencies

#: Default threshold of the share of records at high risk (sdcMicro's localSupp examples use 0.1).
DEFAULT_THRESHOLD = 0.1


def risk_from_frequencies(fk: np.ndarray, Fk: np.ndarray) -> np.ndarray:
    """Benedetti-Franconi individual risk from ``fk`` and ``Fk`` (module docstring)."""
    f = np.asarray(fk, dtype=float)
    F = np.asarray(Fk, dtype=float)
    census = F <= f
    p = np.where(census, 0.5, f / np.where(census, 1.0, F))  # placeholder p where the formula is unused
    odds = p / (1 - p)
    log_inv = -np.log(p)
    r = np.where(f == 1, odds * log_inv,
                 np.where(f == 2, odds - odds**2 * log_inv, p / (f - (1 - p))))
    return np.where(census, 1.0 / f, r)


@validated(missing=MISSING_RULE)
def individual_risk(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    weight: str | None = None,
    missing: str = "wildcard",
    *,
    strata: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Per record ``fk``, ``Fk`` and the individual ``risk`` (see the module docstring).

    Examples
    --------
    Two records share a key with weights 10 and 30 (f = 2, F = 40, p = 1/20); a third is alone
    with weight 5 (f = 1, F = 5, p = 1/5: r = 0.25 * log 5).

    >>> f = pd.DataFrame({"a": [1, 1, 2], "w": [10.0, 30.0, 5.0]})
    >>> individual_risk(f, ["a"], "w")["risk"].round(6).tolist()
    [0.044333, 0.044333, 0.402359]
    """
    out = frequencies(frame, keys, weight, missing, strata=strata)
    out["risk"] = risk_from_frequencies(out["fk"].to_numpy(), out["Fk"].to_numpy())
    return out


def household_risk(risk: np.ndarray, household: pd.Series) -> np.ndarray:
    """Each record's household risk ``1 - prod(1 - r_i)`` over the members of its household."""
    labels = pd.factorize(household, use_na_sentinel=False)[0]
    with np.errstate(divide="ignore"):  # a member at risk 1 makes log(1 - r) = -inf: household risk 1
        log_safe = np.bincount(labels, weights=np.log1p(-np.clip(risk, 0.0, 1.0)))
    return -np.expm1(log_safe)[labels]


@dataclass(frozen=True)
class GlobalRisk(Result):
    """Headline figures of the re-identification risk of a file.

    Attributes
    ----------
    risk : float
        Mean individual risk (sdcMicro's ``global$risk``).
    expected_reidentifications : float
        Sum of the individual risks (sdcMicro's ``global$risk_ER``).
    threshold : float
        The threshold of ``above_threshold``.
    above_threshold : int
        Records whose individual risk exceeds ``threshold``.
    records : int
    household_risk, household_expected_reidentifications : float or None
        The same from the household risks (``hier_risk``, ``hier_risk_ER``), with a household id.
    individual : DataFrame
        Per record fk, Fk, risk (and household_risk).
    """

    risk: float
    expected_reidentifications: float
    threshold: float
    above_threshold: int
    records: int
    keys: tuple[str, ...]
    weight: str | None
    household_risk: float | None = None
    household_expected_reidentifications: float | None = None
    individual: pd.DataFrame = field(default=None, repr=False)  # type: ignore[assignment]

    @property
    def share_above_threshold(self) -> float:
        return self.above_threshold / self.records

    def to_dict(self) -> dict[str, object]:
        """The figures under their published names (``global_risk``; household ones only with a
        household id), without the per-record frame."""
        out: dict[str, object] = {
            "keys": list(self.keys), "weight": self.weight, "records": self.records,
            "global_risk": self.risk, "expected_reidentifications": self.expected_reidentifications,
            "threshold": self.threshold, "above_threshold": self.above_threshold,
            "share_above_threshold": self.share_above_threshold,
        }
        if self.household_risk is not None:
            out["household_risk"] = self.household_risk
            out["household_expected_reidentifications"] = self.household_expected_reidentifications
        return plain(out)

    def summary(self) -> list[tuple[str, str]]:
        """Records, weight, global risk, expected re-identifications, records above the
        threshold and the household figures (the first rows of ``sdckit risk``)."""
        rows = [("records", f"{self.records:,}"),
                ("weight", str(self.weight or "none (every record weighs 1)")),
                ("global risk (mean individual risk)", f"{self.risk:.6f}"),
                ("expected re-identifications", f"{self.expected_reidentifications:.2f}"),
                (f"records with individual risk > {self.threshold:g}", f"{self.above_threshold:,}")]
        if self.household_risk is not None:
            rows += [("household risk (mean)", f"{self.household_risk:.6f}"),
                     ("expected re-identifications (households)", f"{self.household_expected_reidentifications:.2f}")]
        return rows


@validated(missing=MISSING_RULE, threshold=Interval(float, 0, 1))
def global_risk(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    weight: str | None = None,
    household: str | None = None,
    *,
    missing: str = "wildcard",
    threshold: float = DEFAULT_THRESHOLD,
    strata: Sequence[str] | str | None = None,
) -> GlobalRisk:
    """Global risk, expected re-identifications and records above ``threshold``; with a
    ``household`` id column, the household (hierarchical) risk too.

    Examples
    --------
    >>> f = pd.DataFrame({"a": [1, 1, 2, 3], "hh": [1, 1, 2, 2]})
    >>> g = global_risk(f, ["a"], household="hh")
    >>> g.risk, g.expected_reidentifications, g.household_risk
    (0.75, 3.0, 0.875)
    """
    ind = individual_risk(frame, keys, weight, missing, strata=strata)
    r = ind["risk"].to_numpy()
    hh_mean = hh_sum = None
    if household is not None:
        if household not in frame.columns:
            raise SchemaError(f"Household column {household!r} of global_risk is not in the data; "
                              f"the columns are: {', '.join(map(str, frame.columns))}.")
        hh = household_risk(r, frame[household])
        ind["household_risk"] = hh
        hh_mean, hh_sum = float(hh.mean()), float(hh.sum())
    keys_t = (keys,) if isinstance(keys, str) else tuple(keys)
    return GlobalRisk(float(r.mean()), float(r.sum()), float(threshold), int((r > threshold).sum()),
                      len(r), keys_t, weight, hh_mean, hh_sum, ind)
