"""Rounding to a base (seed 001 section 2: a deterministic non-perturbative method)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval
from sdckit.core.schema import Schema
from sdckit.masking.topbottom import _keep_integer_dtype


@register
@dataclass(frozen=True)
class Rounding(Method):
    """Round every value to the nearest multiple of ``base``.

    ``y = base * round(x / base)``; a value exactly half-way between two multiples goes to
    the even multiple (numpy's and R's rule, so halves are not biased upwards). Integer
    columns stay integer when ``base`` is a whole number; otherwise the result is cleaned of
    floating-point residue (``0.30000000000000004`` -> ``0.3``) by rounding to the number of
    decimals of ``base``.

    Parameters
    ----------
    base : float in (0, inf)
        The rounding base (e.g. 1000 for incomes, 5 for ages, 0.1 for a measurement).
    columns : list of str, optional
        Numeric columns to round; default the numeric quasi-identifiers and confidential
        columns (every numeric column when no roles are declared).

    Notes
    -----
    ``nan_policy="pass"``: missing values stay missing. The report gives the mean absolute
    change per column.

    References
    ----------
    Seed 001 (Domingo-Ferrer, Muralidhar, Bras-Amorós), section 2, deterministic masking
    ("rounding, generalization, microaggregation"); seed 002 section 4.6.1 (rounding to a
    base, for tables).

    Examples
    --------
    >>> import pandas as pd
    >>> Rounding(base=5.0).apply(pd.DataFrame({"age": [21, 23, 27, 32]}))["age"].tolist()
    [20, 25, 25, 30]
    """

    base: float
    name: ClassVar[str] = "rounding"
    constraints: ClassVar = {"base": Interval(float, 0, math.inf, closed="neither")}
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"base": 5.0}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        decimals = _decimals(self.base)
        change = {}
        for name in columns:
            values = frame[name].to_numpy(dtype=float)
            rounded = np.round(np.round(values / self.base) * self.base, decimals)
            change[name] = float(np.nanmean(np.abs(rounded - values))) if np.isfinite(
                values
            ).any() else 0.0
            frame[name] = _keep_integer_dtype(frame[name], rounded)
        return Outcome(frame, schema, {"mean_absolute_change": change})


def _decimals(base: float) -> int:
    """Decimals needed to write ``base`` (0.25 -> 2, 5 -> 0), capped at 15."""
    for d in range(16):
        if math.isclose(round(base, d), base, rel_tol=1e-12, abs_tol=0.0):
            return d
    return 15
