"""Record linkage on mixed numeric and categorical data with Gower's distance (Gower 1971).

Gower's dissimilarity of records i and j over columns k is the mean of per-column terms:
``|x_ik - x_jk| / R_k`` for a numeric column (``R_k`` its range over both files, a constant
column contributing 0) and ``0`` if equal else ``1`` for any other column; a column missing in
either record is left out of that pair's mean (Gower's weight 0), and a pair with no column
in common is at distance 1. The intruder links each released record to the nearest original;
ties are credited fractionally as in :func:`sdckit.risk.linkage.distance_linkage`, whose
``metric="gower"`` calls :func:`gower_linkage`. The distances are computed in blocks of
released records against all originals (all pairs: work n_released x n_original).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.risk.linkage_result import DistanceLinkage, true_originals

_TIE_RTOL = 1e-9
_BLOCK_CELLS = 2_000_000


def _columns(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None) -> list[str]:
    for name, frame in (("original", original), ("released", released)):
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"gower_linkage expects the {name} data as a pandas DataFrame; got {type(frame).__name__}.")
        if len(frame) == 0:
            raise DataError(f"gower_linkage got an empty {name} data set (0 records).")
    if columns is None:
        cols = [c for c in released.columns if c in original.columns]
    else:
        cols = [columns] if isinstance(columns, str) else list(columns)
        for name, frame in (("original", original), ("released", released)):
            for c in cols:
                if c not in frame.columns:
                    raise SchemaError(f"gower_linkage: column {c!r} is not in the {name} data; its columns are: {', '.join(map(str, frame.columns))}.")
    if not cols:
        raise SchemaError("gower_linkage found no column shared by the original and released data; name columns=[...].")
    return cols


def _encode(x: pd.Series, y: pd.Series) -> tuple[np.ndarray, np.ndarray, bool, float]:
    """Both columns as floats (NaN: missing), whether numeric, and the numeric range."""
    numeric = all(pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype) for s in (x, y))
    if numeric:
        a, b = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
        both = np.concatenate([a, b])
        both = both[np.isfinite(both)]
        span = float(both.max() - both.min()) if len(both) else 0.0
        return a, b, True, span
    codes = pd.factorize(pd.concat([x, y], ignore_index=True).astype(object))[0].astype(float)
    codes[codes < 0] = np.nan
    return codes[: len(x)], codes[len(x):], False, 1.0


def gower_distances(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None) -> np.ndarray:
    """The full released x original matrix of Gower distances (small data; for tests and inspection)."""
    full = np.empty((len(released), len(original)))

    def keep(start: int, stop: int, d: np.ndarray) -> None:
        full[start:stop] = d

    _blocks(original, released, _columns(original, released, columns), keep)
    return full


def _blocks(original: pd.DataFrame, released: pd.DataFrame, cols: list[str],
            visit: Callable[[int, int, np.ndarray], None]) -> None:
    """Call ``visit(start, stop, d)`` with the Gower distances of released rows start..stop-1
    to every original, block by block."""
    enc = [_encode(original[c], released[c]) for c in cols]
    nx, ny = len(original), len(released)
    step = max(1, _BLOCK_CELLS // max(nx, 1))
    for start in range(0, ny, step):
        stop = min(ny, start + step)
        total = np.zeros((stop - start, nx))
        count = np.zeros((stop - start, nx))
        for a, b, numeric, span in enc:
            bb = b[start:stop, None]
            with np.errstate(invalid="ignore"):
                term = np.abs(bb - a[None, :]) / span if numeric and span > 0 else \
                    (np.zeros((len(bb), nx)) if numeric else (bb != a[None, :]).astype(float))
            present = np.isfinite(bb) & np.isfinite(a[None, :])
            total += np.where(present, term, 0.0)
            count += present
        visit(start, stop, np.where(count > 0, total / np.maximum(count, 1), 1.0))


def gower_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    truth: Sequence[int] | np.ndarray | None = None,
) -> DistanceLinkage:
    """Link every released record to its nearest original in Gower distance (module docstring).

    Examples
    --------
    >>> x = pd.DataFrame({"age": [20, 40, 60], "sex": ["f", "m", "f"]})
    >>> y = pd.DataFrame({"age": [22, 58, 41], "sex": ["f", "f", "m"]})
    >>> gower_linkage(x, y).records["nearest"].tolist()
    [0, 2, 1]
    """
    cols = _columns(original, released, columns)
    owner = true_originals(truth, len(original), len(released))
    ny = len(released)
    nearest = np.empty(ny, dtype=np.int64)
    dist = np.empty(ny)
    tied = np.empty(ny, dtype=np.int64)
    credit = np.empty(ny)

    def take(start: int, stop: int, d: np.ndarray) -> None:
        low = d.min(axis=1, keepdims=True)
        within = d <= low * (1 + _TIE_RTOL) + 1e-12
        rows = np.arange(start, stop)
        nearest[rows] = within.argmax(axis=1)
        dist[rows] = low[:, 0]
        tied[rows] = within.sum(axis=1)
        true = owner[rows]
        hit = (true >= 0) & within[np.arange(stop - start), np.maximum(true, 0)]
        credit[rows] = np.where(hit, 1.0 / tied[rows], 0.0)

    _blocks(original, released, cols, take)
    records = pd.DataFrame({"nearest": nearest, "distance": dist, "tied": tied, "credit": credit}, index=released.index)
    return DistanceLinkage(float(credit.mean()), float(credit.sum()), records)
