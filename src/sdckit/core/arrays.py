"""Small numeric helpers shared by methods and measures: a frame's columns as one array and
back, scaling that survives constant columns, the square root of a covariance matrix, and the
equivalence classes of a frame's rows."""

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


def class_labels(frame: pd.DataFrame, columns: list[str], *, sort: bool) -> tuple[np.ndarray, np.ndarray]:
    """Equivalence classes of the rows of ``frame`` on ``columns`` (missing values form their
    own value): the class of each row, numbered in sorted key order (``sort``) or in order of
    first appearance, and the size of each class."""
    labels = frame.groupby(columns, sort=sort, dropna=False, observed=True).ngroup().to_numpy(dtype=np.int64)
    return labels, np.bincount(labels)


def first_rows(labels: np.ndarray, n_labels: int) -> np.ndarray:
    """The position of the first row of each label ``0..n_labels-1``."""
    first = np.zeros(n_labels, dtype=np.int64)
    first[labels[::-1]] = np.arange(len(labels) - 1, -1, -1)  # the last write wins: first rows
    return first
