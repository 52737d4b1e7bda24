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
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Options, Satisfies
from sdckit.core.schema import Schema
from sdckit.dp.accountant import ACCOUNTANT, BudgetAccountant, split_epsilon
from sdckit.dp.mechanisms import POSITIVE, Geometric, grid_scale, laplace_randomise

DATA_BOUNDS_WARNING = (
    "bounds were taken from the data (bounds='data'): the noise scale depends on the data's "
    "minimum and maximum, so the release is not differentially private; give public bounds "
    "for a differentially private release."
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
    accountant : BudgetAccountant, optional
        The budget the caller holds for this data set: charged ``epsilon`` before any noise is
        drawn, and the release is refused (:class:`~sdckit.dp.BudgetExceeded`) once it is spent.
        Without one, each release gets a fresh budget of ``epsilon`` (nothing stops repeated
        releases of the same data from being averaged: hold an accountant).

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). An integer column with integer bounds
    gets the geometric mechanism and stays integer; other columns get the Laplace mechanism and
    come out as floats. Both samplers are exact (:mod:`sdckit.dp.mechanisms`). The manifest
    records parameters only — the bounds are the ``bounds`` parameter, ``"taken from the data"``
    with ``bounds="data"`` (then :attr:`claims_dp` is False and a warning says the release is
    not differentially private) — and the budget; never a number computed from the data, such
    as how many values were clamped.

    References
    ----------
    Seed 004 section II-D3 (Laplace mechanism with the diameter), seed 002 section 4.6.2.
    """

    epsilon: float | None = None
    bounds: Mapping[str, tuple[float, float]] | str | None = None
    accountant: BudgetAccountant | None = field(default=None, kw_only=True, compare=False, repr=False)

    name: ClassVar[str] = "laplace_noise"
    constraints: ClassVar = {
        "epsilon": POSITIVE,
        "bounds": [Options(("data",)), Satisfies(
            _is_bounds_mapping, "a mapping from column names to [low, high] with low < high, or 'data'"
        )],
        "accountant": ACCOUNTANT,
    }
    example: ClassVar = {
        "epsilon": 1.0,
        "bounds": {"age": (18, 90), "income": (0.0, 100_000.0), "wealth": (0.0, 400_000.0)},
    }

    @property
    def claims_dp(self) -> bool:
        """Epsilon-DP with public bounds; not when the bounds come from the data."""
        return self.bounds != "data"

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        # Parameters only: no count of clamped values, no data minimum or maximum (issue 19.2).
        info: dict[str, Any] = {"claims_dp": self.claims_dp, "warnings": []}
        if self.bounds == "data":
            info["bounds"] = "taken from the data"
            info["warnings"].append(DATA_BOUNDS_WARNING)
        else:
            missing = [c for c in columns if c not in self.bounds]
            if missing:
                raise self.param_error("bounds", f"a mapping with bounds for every protected column (missing: {missing})")
        per_column = split_epsilon(self.epsilon, len(columns))
        plans = []  # every column's mechanism, checked before anything is charged
        for name in columns:
            values = frame[name].to_numpy()
            lo, hi = (values.min(), values.max()) if self.bounds == "data" else self.bounds[name]
            integral = pd.api.types.is_integer_dtype(frame[name]) and float(lo).is_integer() and float(hi).is_integer()
            geometric = None
            if hi == lo:
                pass
            elif integral:
                geometric = Geometric(epsilon=per_column, sensitivity=int(hi - lo))
            else:
                grid_scale(np.array([float(hi - lo)]), per_column)
            plans.append((name, values, lo, hi, geometric))
        accountant = self.accountant if self.accountant is not None else BudgetAccountant(self.epsilon)
        accountant.spend(self.epsilon, f"{type(self).__name__}: {', '.join(columns)}")  # before any noise
        info["epsilon_per_column"] = per_column
        for name, values, lo, hi, geometric in plans:
            clamped = np.clip(values, lo, hi)
            if hi == lo:  # one possible value: every record is released as it, nothing to hide
                frame[name] = clamped
            elif geometric is not None:
                frame[name] = geometric.randomise(clamped, rng)
            else:
                frame[name] = laplace_randomise(clamped.astype(float), float(hi - lo), per_column, rng)
        info["budget"] = accountant.to_manifest()
        return Outcome(frame, schema, info)
