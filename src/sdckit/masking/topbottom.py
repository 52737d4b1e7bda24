"""Top and bottom coding (seed 002 section 4.6.3, non-perturbative masking)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, IsNone, Options
from sdckit.core.rowwise import sum_counts
from sdckit.core.schema import Schema

_THRESHOLD = [IsNone(), Interval(float)]
_REPLACEMENT = [IsNone(), Interval(float), Options(("mean",))]


@register
@dataclass(frozen=True)
class TopBottomCoding(Method):
    """Top and bottom coding: values above ``top`` (below ``bottom``) are lumped together.

    Every value ``x > top`` becomes ``top_value`` and every value ``x < bottom`` becomes
    ``bottom_value``; values inside ``[bottom, top]`` are released unchanged ("values above,
    resp. below, a certain threshold are lumped into a single top, resp. bottom, category",
    seed 002 section 4.6.3). The replacement is, as in sdcMicro's ``topBotCoding``, a value
    the user chooses; by default the threshold itself, or ``"mean"``: the mean of the values
    coded, computed per column, which keeps the column's total (and mean) unchanged.

    Parameters
    ----------
    top, bottom : float, optional
        Thresholds; at least one is required, and ``bottom < top`` when both are given.
        The same thresholds apply to every column protected: code columns on different
        scales in separate steps (``columns=[...]``).
    top_value, bottom_value : float or "mean", optional
        What coded values become; default the threshold. A number below ``top`` (above
        ``bottom``) is allowed but then coded values no longer sort above (below) the rest.
    columns : list of str, optional
        Numeric columns to code; default the numeric quasi-identifiers and confidential
        columns (every numeric column when no roles are declared).

    Notes
    -----
    ``nan_policy="pass"``: missing values are neither coded nor counted and stay missing.
    The report gives, per column, how many records were top and bottom coded.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "top/bottom coding";
    Templ, Kowarik, Meindl, sdcMicro, ``topBotCoding``.

    Examples
    --------
    >>> import pandas as pd
    >>> data = pd.DataFrame({"income": [10.0, 50.0, 90.0, 200.0]})
    >>> TopBottomCoding(top=100.0, bottom=20.0).apply(data)["income"].tolist()
    [20.0, 50.0, 90.0, 100.0]
    """

    top: float | None = None
    bottom: float | None = None
    top_value: float | str | None = None
    bottom_value: float | str | None = None
    name: ClassVar[str] = "top_bottom_coding"
    constraints: ClassVar = {
        "top": _THRESHOLD,
        "bottom": _THRESHOLD,
        "top_value": _REPLACEMENT,
        "bottom_value": _REPLACEMENT,
    }
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"top": 80.0, "bottom": 20.0, "columns": ["age"]}

    def check_parameters(self) -> None:
        if self.top is None and self.bottom is None:
            raise self.param_error("top", "a float when 'bottom' is None (give at least one threshold)")
        if self.top is not None and self.bottom is not None and not self.bottom < self.top:
            raise self.param_error("bottom", f"a float < top ({self.top!r})")
        if self.top is None and self.top_value is not None:
            raise self.param_error("top_value", "None when 'top' is None")
        if self.bottom is None and self.bottom_value is not None:
            raise self.param_error("bottom_value", "None when 'bottom' is None")

    needs: ClassVar[str] = "rows"

    def _sides(self) -> tuple[tuple[str, float | None, float | str | None, Any], ...]:
        return (("top_coded", self.top, self.top_value, np.greater),
                ("bottom_coded", self.bottom, self.bottom_value, np.less))

    def needs_statistics(self) -> bool:
        """A first pass is needed when a replacement is a column's mean of the coded values, or
        not a whole number (whether an integer column stays integer depends on what is hit)."""
        for _, threshold, replacement, _ in self._sides():
            if threshold is None:
                continue
            value = threshold if replacement is None else replacement
            if value == "mean" or float(value) != round(float(value)):
                return True
        return False

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> dict[str, Any]:
        """Per column and side: how many values are beyond the threshold, and their sum."""
        out: dict[str, Any] = {}
        for name in columns:
            values = chunk[name].to_numpy(dtype=float)
            for side, threshold, _, beyond in self._sides():
                if threshold is not None:
                    hit = beyond(values, threshold)  # NaN compares False: never coded
                    out[(name, side)] = (int(hit.sum()), float(values[hit].sum()))
        return out

    def merge_statistics(self, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
        return {key: (first[key][0] + second[key][0], first[key][1] + second[key][1]) for key in first}

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: dict[str, Any] | None,
    ) -> Outcome:
        info: dict[str, Any] = {"top_coded": {}, "bottom_coded": {}}
        for name in columns:
            values = chunk[name].to_numpy(dtype=float)
            coded = values.copy()
            whole = True  # every replacement used on the whole data is a whole number
            for side, threshold, replacement, beyond in self._sides():
                if threshold is None:
                    continue
                hit = beyond(values, threshold)  # NaN compares False: never coded
                info[side][name] = int(hit.sum())
                count, total = statistics[(name, side)] if statistics is not None else (None, None)
                if replacement == "mean":
                    replacement = total / count if count else threshold
                value = float(threshold if replacement is None else replacement)
                coded[hit] = value
                if count != 0 and value != round(value):
                    whole = False
            frame_values = coded.astype(chunk[name].dtype) if (
                whole and pd.api.types.is_integer_dtype(chunk[name].dtype) and np.all(np.isfinite(coded))
            ) else coded
            chunk[name] = frame_values
        return Outcome(chunk, schema, info)

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        return sum_counts(infos, "top_coded", "bottom_coded")


def _keep_integer_dtype(original: pd.Series, values: np.ndarray) -> pd.Series | np.ndarray:
    """``values`` in ``original``'s integer dtype when they are all whole numbers, else floats."""
    if pd.api.types.is_integer_dtype(original.dtype) and np.all(np.isfinite(values)) and np.all(
        values == np.round(values)
    ):
        return values.astype(original.dtype)
    return values
