"""Small numeric helpers shared by methods and measures: a frame's columns as one array and
back, scaling that survives constant columns, and the square root of a covariance matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd


def numeric_block(frame: pd.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
    """The ``columns`` of ``frame`` as one float array (records x columns)."""
    return frame.loc[:, list(columns)].to_numpy(dtype=float)


def write_block(frame: pd.DataFrame, columns: tuple[str, ...], values: np.ndarray) -> pd.DataFrame:
    """Put the columns of ``values`` back into ``frame`` (a copy owned by the method)."""
    for j, name in enumerate(columns):
        frame[name] = values[:, j]
    return frame


def safe_scale(scale: np.ndarray) -> np.ndarray:
    """``scale`` with zeros (constant columns) replaced by 1, so divisions stay finite."""
    scale = np.asarray(scale, dtype=float)
    return np.where(scale > 0, scale, 1.0)


def standardize(values: np.ndarray, ddof: int = 0) -> np.ndarray:
    """Columns centred and divided by their standard deviation (``ddof`` as numpy's); a
    constant column, or one with no more than ``ddof`` records, becomes all zeros."""
    values = np.asarray(values, dtype=float)
    sd = values.std(axis=0, ddof=ddof) if len(values) > ddof else np.zeros(values.shape[1:])
    return (values - values.mean(axis=0)) / safe_scale(sd)


def covariance_root(sigma: np.ndarray) -> np.ndarray:
    """A matrix ``L`` with ``L @ L.T == sigma`` for a symmetric positive semi-definite ``sigma``.

    Taken from the eigen-decomposition (negative rounding-error eigenvalues clipped to 0), so
    that singular covariance matrices — a constant column, collinear columns — still work.
    """
    w, v = np.linalg.eigh(sigma)
    return v * np.sqrt(np.clip(w, 0.0, None))
