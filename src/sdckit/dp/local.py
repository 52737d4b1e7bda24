"""Laplace noise on each record's values with declared bounds: the plain, data-set-wide
differential privacy that (k,epsilon)-anonymity improves on (seed 004 sections II-D and III-B;
seed 002 section 4.6.2, noise of scale Delta/epsilon).

Each value is clamped to its column's bounds ``[lo, hi]`` and released with noise of scale
``m (hi - lo) / epsilon`` (m columns share epsilon equally: the record is the unit). The bounds
are public parameters, never read from the data — unless the caller passes ``bounds="data"``,
an explicit opt-in that the manifest records with a warning (diffprivlib's
``PrivacyLeakWarning``, OpenDP's fail-closed habit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Options, Satisfies
from sdckit.core.schema import Schema
from sdckit.dp.accountant import BudgetAccountant
from sdckit.dp.mechanisms import POSITIVE, Geometric, laplace_randomise

DATA_BOUNDS_WARNING = (
    "bounds were taken from the data (bounds='data'): the noise scale depends on the data's "
    "minimum and maximum, which the release can leak; give public bounds for a differentially "
    "private release."
)


def _is_bounds_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) > 0 and all(
        isinstance(k, str)
        and isinstance(v, list | tuple)
        and len(v) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in v)
        and v[0] < v[1]
        for k, v in value.items()
    )


@register
@dataclass(frozen=True)
class LaplaceNoise(Method):
    """Differentially private noise on each record's numeric values, with explicit bounds.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter for the record (split equally over the columns). Required.
    bounds : mapping column -> [low, high], or "data"
        Public bounds of every protected column; values are clamped into them and the noise
        scale is ``m * (high - low) / epsilon``. Required: there is no default. ``"data"`` takes
        each column's minimum and maximum from the data — an opt-in the manifest records.
    columns : list of str, optional
        Columns to protect; default: numeric quasi-identifiers and confidential columns.

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). An integer column with integer bounds
    gets the geometric mechanism and stays integer; other columns get the Laplace mechanism and
    come out as floats. Both samplers are exact (:mod:`sdckit.dp.mechanisms`). The manifest
    records the bounds used, the number of clamped values and the budget.

    References
    ----------
    Seed 004 section II-D3 (Laplace mechanism with the diameter), seed 002 section 4.6.2.
    """

    epsilon: float | None = None
    bounds: Mapping[str, tuple[float, float]] | str | None = None

    name: ClassVar[str] = "laplace_noise"
    constraints: ClassVar = {
        "epsilon": POSITIVE,
        "bounds": [Options(("data",)), Satisfies(
            _is_bounds_mapping, "a mapping from column names to [low, high] with low < high, or 'data'"
        )],
    }
    example: ClassVar = {
        "epsilon": 1.0,
        "bounds": {"age": (18, 90), "income": (0.0, 100_000.0), "wealth": (0.0, 400_000.0)},
    }

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        info: dict[str, Any] = {"bounds": {}, "clamped": {}, "warnings": []}
        if self.bounds == "data":
            info["bounds_from_data"] = True
            info["warnings"].append(DATA_BOUNDS_WARNING)
        else:
            missing = [c for c in columns if c not in self.bounds]
            if missing:
                raise self.param_error("bounds", f"a mapping with bounds for every protected column (missing: {missing})")
        per_column = self.epsilon / len(columns)
        accountant = BudgetAccountant(self.epsilon)
        for name in columns:
            accountant.spend(per_column, name)
            values = frame[name].to_numpy()
            lo, hi = (values.min(), values.max()) if self.bounds == "data" else self.bounds[name]
            info["bounds"][name] = [_plain_number(lo), _plain_number(hi)]
            info["clamped"][name] = int(np.sum((values < lo) | (values > hi)))
            clamped = np.clip(values, lo, hi)
            if hi == lo:
                continue
            integral = pd.api.types.is_integer_dtype(frame[name]) and float(lo).is_integer() and float(hi).is_integer()
            if integral:
                frame[name] = Geometric(epsilon=per_column, sensitivity=int(hi - lo)).randomise(clamped, rng)
            else:
                frame[name] = laplace_randomise(clamped.astype(float), float(hi - lo), per_column, rng)
        info["budget"] = accountant.to_manifest()
        return Outcome(frame, schema, info)


def _plain_number(value: Any) -> float | int:
    return value.item() if isinstance(value, np.generic) else value
