"""Rounding to a base (seed 001 section 2: a deterministic non-perturbative method)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval
from sdckit.core.rowwise import sum_counts
from sdckit.core.schema import Schema


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

    needs: ClassVar[str] = "rows"

    def _round(self, values: np.ndarray) -> np.ndarray:
        return np.round(np.round(values / self.base) * self.base, _decimals(self.base))

    def needs_statistics(self) -> bool:
        """With a base that is not a whole number, whether an integer column stays integer
        depends on every value: a first pass finds out."""
        return self.base != round(self.base)

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> dict[str, bool]:
        out = {}
        for name in columns:
            rounded = self._round(chunk[name].to_numpy(dtype=float))
            out[name] = bool(np.all(np.isfinite(rounded)) and np.all(rounded == np.round(rounded)))
        return out

    def merge_statistics(self, first: dict[str, bool], second: dict[str, bool]) -> dict[str, bool]:
        return {name: first[name] and second[name] for name in first}

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: dict[str, bool] | None,
    ) -> Outcome:
        change, finite = {}, {}
        for name in columns:
            values = chunk[name].to_numpy(dtype=float)
            rounded = self._round(values)
            ok = np.isfinite(values)
            change[name] = float(np.abs(rounded[ok] - values[ok]).sum())
            finite[name] = int(ok.sum())
            whole = statistics[name] if statistics is not None else bool(np.all(np.isfinite(rounded)))
            if whole and pd.api.types.is_integer_dtype(chunk[name].dtype):
                chunk[name] = rounded.astype(chunk[name].dtype)
            else:
                chunk[name] = rounded
        return Outcome(chunk, schema, {"change_sum": change, "finite": finite})

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        totals = sum_counts([{"finite": i["finite"]} for i in infos], "finite")["finite"]
        change: dict[str, float] = {}
        for info in infos:
            for name, value in info["change_sum"].items():
                change[name] = change.get(name, 0.0) + value
        return {"mean_absolute_change": {
            name: (change[name] / totals[name] if totals[name] else 0.0) for name in change}}


def _decimals(base: float) -> int:
    """Decimals needed to write ``base`` (0.25 -> 2, 5 -> 0), capped at 15."""
    for d in range(16):
        if math.isclose(round(base, d), base, rel_tol=1e-12, abs_tol=0.0):
            return d
    return 15
