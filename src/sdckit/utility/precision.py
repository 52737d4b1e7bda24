"""Information loss of generalized data: precision and discernibility.

* Categorical precision (Sweeney 2002; seed 004 section III): a value generalized to level
  ``l`` of a hierarchy whose top (full suppression) is level ``h`` loses ``l / h``.
* Numerical precision (seed 004 section III): a numeric value generalized to an interval loses
  the interval's width over the attribute's range in the data set.
* Precision is one minus the mean loss over all cells (1: nothing generalized, 0: everything
  fully generalized).
* Discernibility (Bayardo & Agrawal 2005): every record costs the size of its equivalence
  class, a suppressed record the size of the whole data set:
  ``C_DM = sum_E |E|^2 + n_suppressed * n``.

These work on plain arrays (levels, interval bounds, class labels) so that the k-anonymity
code (``sdckit.anonymity``) and the report share one implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, IsNone, validated


def _heights(heights: Mapping[str, int] | Sequence[int], columns: Sequence[str]) -> np.ndarray:
    if isinstance(heights, Mapping):
        missing = [c for c in columns if c not in heights]
        if missing:
            raise ParameterError(f"categorical_precision: no hierarchy height given for column {missing[0]!r}.")
        h = np.array([heights[c] for c in columns], dtype=float)
    else:
        h = np.asarray(list(heights), dtype=float)
    if h.shape != (len(columns),):
        raise ParameterError(f"categorical_precision: {len(columns)} columns of levels but {h.size} heights.")
    if (h <= 0).any() or np.isnan(h).any():
        raise ParameterError(f"categorical_precision: every hierarchy height must be >= 1; got {h.tolist()}.")
    return h


def _as_frame(values: pd.DataFrame | np.ndarray, what: str) -> pd.DataFrame:
    frame = values if isinstance(values, pd.DataFrame) else pd.DataFrame(np.atleast_2d(np.asarray(values)))
    if frame.size == 0:
        raise DataError(f"{what} got no cells to measure.")
    if frame.isna().to_numpy().any():
        raise DataError(f"{what} cannot handle missing values; mark suppressed cells with the top level instead.")
    return frame


def categorical_precision(
    levels: pd.DataFrame | np.ndarray, heights: Mapping[str, int] | Sequence[int]
) -> float:
    """1 minus the mean of ``level / height`` over all cells.

    Parameters
    ----------
    levels : DataFrame or 2-D array (records x attributes)
        Generalization level of each cell (0 = original value, height = fully suppressed).
    heights : mapping column -> height, or sequence in column order
        The top level of each attribute's hierarchy.

    Examples
    --------
    Levels [[0, 1], [2, 1]] with heights (2, 3): losses 0, 1/3, 1, 1/3; mean 5/12.

    >>> round(categorical_precision(np.array([[0, 1], [2, 1]]), [2, 3]), 6)
    0.583333
    """
    frame = _as_frame(levels, "categorical_precision")
    h = _heights(heights, [str(c) for c in frame.columns] if isinstance(heights, Mapping) else list(frame.columns))
    lv = frame.to_numpy(dtype=float)
    if (lv < 0).any() or (lv > h).any():
        raise DataError("categorical_precision: every level must lie between 0 and its hierarchy's height.")
    return float(1.0 - (lv / h).mean())


def numerical_precision(
    lower: pd.DataFrame | np.ndarray,
    upper: pd.DataFrame | np.ndarray,
    ranges: Mapping[str, float] | Sequence[float],
) -> float:
    """1 minus the mean of ``(upper - lower) / range`` over all cells.

    ``lower`` and ``upper`` are the bounds of each cell's generalized interval (equal for an
    ungeneralized value); ``ranges`` the range (max - min) of each attribute in the data set.
    An attribute with range 0 contributes a loss of 0.

    Examples
    --------
    Range 10; intervals of widths 0, 5 and 10 lose 0, 1/2 and 1: precision 1/2.

    >>> numerical_precision(np.array([[3.0], [0.0], [0.0]]), np.array([[3.0], [5.0], [10.0]]), [10.0])
    0.5
    """
    lo, hi = _as_frame(lower, "numerical_precision"), _as_frame(upper, "numerical_precision")
    if lo.shape != hi.shape:
        raise DataError(f"numerical_precision: lower bounds have shape {lo.shape}, upper bounds {hi.shape}.")
    cols = [str(c) for c in lo.columns]
    r = np.array([ranges[c] for c in cols], dtype=float) if isinstance(ranges, Mapping) else np.asarray(list(ranges), dtype=float)
    if r.shape != (len(cols),) or (r < 0).any() or np.isnan(r).any():
        raise ParameterError(f"numerical_precision: give one non-negative range per column ({len(cols)}); got {r.tolist()}.")
    width = hi.to_numpy(dtype=float) - lo.to_numpy(dtype=float)
    if (width < 0).any():
        raise DataError("numerical_precision: an upper bound lies below its lower bound.")
    loss = np.where(r > 0, width / np.where(r > 0, r, 1.0), 0.0)
    return float(1.0 - np.minimum(loss, 1.0).mean())


@validated(n_suppressed=Interval(int, 0, None), n_total=[IsNone(), Interval(int, 0, None)])
def discernibility(classes: Sequence | np.ndarray, n_suppressed: int = 0, n_total: int | None = None) -> int:
    """Discernibility metric ``C_DM = sum_E |E|^2 + n_suppressed * n_total``.

    Parameters
    ----------
    classes : array-like
        The equivalence-class label of each released (non-suppressed) record.
    n_suppressed : int
        Records removed by suppression.
    n_total : int, optional
        Records in the original data; default ``len(classes) + n_suppressed``.

    Examples
    --------
    Classes of sizes 2 and 3, 2 suppressed records out of 7: 4 + 9 + 2 * 7 = 27.

    >>> discernibility([0, 0, 1, 1, 1], n_suppressed=2)
    27
    """
    labels = np.asarray(classes)
    n = len(labels) + int(n_suppressed) if n_total is None else n_total
    if n < len(labels) + n_suppressed:
        raise ParameterError(f"The 'n_total' parameter of discernibility must be >= the released plus suppressed records ({len(labels) + n_suppressed}). Got {n_total!r} instead.")
    _, sizes = np.unique(labels, return_counts=True) if labels.size else (None, np.zeros(0, dtype=np.int64))
    return discernibility_from_sizes(sizes, n_suppressed, n)


def discernibility_from_sizes(sizes: np.ndarray, n_suppressed: int, n_total: int) -> int:
    """``C_DM`` from the released classes' sizes (shared with the k-anonymity search)."""
    return int((np.asarray(sizes).astype(np.int64) ** 2).sum() + int(n_suppressed) * int(n_total))
