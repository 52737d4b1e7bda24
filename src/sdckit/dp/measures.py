"""Information loss and linking risk of (k,epsilon)-anonymity (seed 004 sections V-A, V-B).

* :func:`expected_relative_error` — the expected average relative error ``E|Y - x| / |x|`` of
  Laplace noise added per equivalence class, per class (eq. 7) and for the data set (eq. 8),
  computed *before* any noise is drawn, so that epsilon can be chosen for a target utility.
* :func:`linking_risk` — the share of released records whose nearest original record, within
  their own equivalence class, is their own original (the nearest-neighbour linking model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.params import check_param
from sdckit.core.result import Result, plain
from sdckit.dp.mechanisms import POSITIVE


def as_matrix(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] == 0:
        raise DataError(f"{name} must be a non-empty 1-D or 2-D array of numbers; got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise DataError(f"{name} holds a missing or infinite value; remove or impute it first.")
    return array


def class_codes(classes: Any, n: int) -> np.ndarray:
    """Equivalence-class labels as codes 0..G-1 (``None``: the whole data set is one class)."""
    if classes is None:
        return np.zeros(n, dtype=np.int64)
    labels = np.asarray(classes)
    if labels.shape != (n,):
        raise DataError(f"classes must hold one label per record ({n}); got shape {labels.shape}.")
    return pd.factorize(labels, sort=True)[0].astype(np.int64)


def class_diameters(values: Any, classes: Any = None) -> np.ndarray:
    """Diameter ``max - min`` of each column within each class (seed 004 eq. 3).

    Returns an array of shape (number of classes, number of columns), classes in the order of
    :func:`class_codes`.
    """
    x = as_matrix(values, "values")
    codes = class_codes(classes, len(x))
    frame = pd.DataFrame(x)
    grouped = frame.groupby(codes, sort=True)
    return (grouped.max() - grouped.min()).to_numpy()


def record_diameters(values: Any, classes: Any = None) -> np.ndarray:
    """For each record and column, the diameter of the column within the record's class,
    shape (n, m): the sensitivity of the per-class Laplace noise (seed 004 section IV)."""
    x = as_matrix(values, "values")
    codes = class_codes(classes, len(x))
    return class_diameters(x, codes)[codes]


def record_scales(values: Any, classes: Any, epsilon: float) -> np.ndarray:
    """Laplace scale of each record's noise in each column, shape (n, m).

    With m epsilon-quasis the record is the unit of privacy (seed 004 section IV): epsilon is
    split equally across the columns (sequential composition), so column j of a record in class
    E gets scale ``m * D_j(E) / epsilon``. An equal split keeps each column's noise proportional
    to its own diameter, whatever its unit (an L1 diameter would add centimetres to kilograms).
    """
    check_param("record_scales", "epsilon", epsilon, POSITIVE)
    diameters = record_diameters(values, classes)
    return diameters * diameters.shape[1] / epsilon


@dataclass(frozen=True)
class ErrorPrediction(Result):
    """Expected average relative error (seed 004 eqs. 7-8).

    ``per_class`` has one row per class: ``size``, ``diameter``, ``harmonic_mean`` (of ``|x|``),
    ``scale`` (``diameter / epsilon``) and ``error`` (eq. 7); ``total`` is eq. 8.
    """

    per_class: pd.DataFrame
    total: float

    def to_dict(self) -> dict[str, Any]:
        """The total error and the number of classes (not the per-class frame)."""
        return plain({"total": self.total, "classes": len(self.per_class)})

    def summary(self) -> list[tuple[str, str]]:
        """The expected average relative error and the classes it is computed over."""
        return [("expected average relative error", f"{self.total:.2%}"), ("classes", f"{len(self.per_class):,}")]


def expected_relative_error(values: Any, classes: Any, epsilon: float, min_diameter: float = 0.0) -> ErrorPrediction:
    """Expected average relative error of per-class Laplace noise (seed 004 section V-A).

    For a class E with diameter ``D(E)`` the noise has scale ``b = D(E) / epsilon`` and
    ``E|Y| = b``, so the average of ``E|Y| / |x|`` over the class is ``b / H(E)``, with ``H(E)``
    the harmonic mean of ``|x|`` over the class (eq. 7). The data set's error weights the classes
    by their sizes: ``sum_E |E| D(E) / (epsilon H(E)) / n`` (eq. 8).

    Parameters
    ----------
    values : array of shape (n,)
        One epsilon-quasi's original values.
    classes : array of shape (n,) or None
        Equivalence-class label of each record; ``None`` treats the data set as one class
        (noise scaled to the whole data set's diameter, i.e. plain differential privacy).
    epsilon : float > 0
        The epsilon spent on this column.
    min_diameter : float >= 0
        The smallest diameter the noise is scaled to (:class:`KEpsilonAnonymity`'s floor).

    Returns
    -------
    ErrorPrediction
        A class holding a value 0 has an infinite relative error (``inf``).
    """
    check_param("expected_relative_error", "epsilon", epsilon, POSITIVE)
    x = as_matrix(values, "values")
    if x.shape[1] != 1:
        raise DataError("expected_relative_error takes one column at a time; got several.")
    x = x[:, 0]
    codes = class_codes(classes, len(x))
    size = np.bincount(codes)
    with np.errstate(divide="ignore"):
        inverse_sum = np.bincount(codes, weights=1.0 / np.abs(x))
    diameter = np.maximum(class_diameters(x, codes)[:, 0], min_diameter)
    scale = diameter / epsilon
    with np.errstate(invalid="ignore"):
        error = np.where(scale == 0, 0.0, scale * inverse_sum / size)
    per_class = pd.DataFrame({
        "size": size, "diameter": diameter, "harmonic_mean": size / inverse_sum,
        "scale": scale, "error": error,
    })
    total = float(np.sum(size * error) / len(x))
    return ErrorPrediction(per_class, total)


def _count_at_most(codes: np.ndarray, x: np.ndarray, qcodes: np.ndarray, q: np.ndarray, inclusive: bool) -> np.ndarray:
    """For each query (c, v): the number of points with code < c, or code == c and x <= v
    (x < v when not ``inclusive``), by one merge sort of points and queries."""
    n = len(x)
    kind = np.concatenate([np.zeros(n), np.ones(len(q))])  # points first on ties: x <= v
    if not inclusive:
        kind = 1.0 - kind
    order = np.lexsort((kind, np.concatenate([x, q]), np.concatenate([codes, qcodes])))
    before = np.cumsum(order < n)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return before[position[n:]]


def count_within(
    centres: np.ndarray, points: np.ndarray, codes: np.ndarray, radius: np.ndarray
) -> np.ndarray:
    """For each record i, how many records j of its own class have
    ``max_c |points[j, c] - centres[i, c]| <= radius[i]`` (Chebyshev ball, bounds included).

    One column: a merge sort, O(n log n) (the bounds ``centre -/+ radius`` are rounded to
    doubles). Several: a KD-tree per class (scipy's cKDTree with ``p=inf``), never all pairs.
    """
    if centres.shape[1] == 1:
        x, c, r = points[:, 0], centres[:, 0], np.asarray(radius, dtype=float)
        return _count_at_most(codes, x, codes, c + r, True) - _count_at_most(codes, x, codes, c - r, False)
    from scipy.spatial import cKDTree  # scipy: only for several columns

    counts = np.zeros(len(centres), dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for members in np.split(order, bounds):
        tree = cKDTree(points[members])
        counts[members] = tree.query_ball_point(
            centres[members], r=radius[members], p=np.inf, return_length=True
        )
    return counts


def linking_risk(original: Any, released: Any, classes: Any) -> dict[str, Any]:
    """Nearest-neighbour linking risk within equivalence classes (seed 004 section V-B).

    Released record i (the noisy version of original record i, same row) is *linked* when its
    own original is strictly closer to it than every other original of its class:
    ``|y_i - x_i| < |y_i - x_j|`` for all ``j != i`` in the class. Records whose class holds
    another record with the same original value are never linked (they stay indistinguishable).
    With several epsilon-quasis the distance is Chebyshev on columns divided by their range
    over the whole data set (for one column: exactly the paper's absolute difference).

    Parameters
    ----------
    original, released : arrays of shape (n,) or (n, m)
        The epsilon-quasis before and after noise, row i of each being the same record (the
        protector's view, before the final shuffle).
    classes : array of shape (n,)
        Equivalence-class label of each record.

    Returns
    -------
    dict
        ``linked`` (int array of 0/1 per record), ``count`` and ``risk`` (share of records linked).
    """
    x = as_matrix(original, "original")
    y = as_matrix(released, "released")
    if x.shape != y.shape:
        raise DataError(f"original and released must have the same shape; got {x.shape} and {y.shape}.")
    codes = class_codes(classes, len(x))
    if x.shape[1] == 1:
        linked = _linked_1d(x[:, 0], y[:, 0], codes)
    else:
        span = np.ptp(x, axis=0)
        span[span == 0] = 1.0
        xs, ys = x / span, y / span
        own = np.max(np.abs(ys - xs), axis=1)
        # The tree computes the same max |difference| as ``own``, so each record counts itself;
        # linked when nobody else is as close.
        linked = count_within(ys, xs, codes, own) <= 1
    linked = linked.astype(np.int64)
    return {"linked": linked, "count": int(linked.sum()), "risk": float(linked.mean())}


def _linked_1d(x: np.ndarray, y: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Exact test ``|y_i - x_i| < min_{j != i, same class} |y_i - x_j|`` for one column.

    The nearest other original is next to ``y_i`` in the class's sorted values: among the two
    positions below and the two above where ``y_i`` would be inserted.
    """
    n = len(x)
    order = np.lexsort((x, codes))
    xs, cs = x[order], codes[order]
    pos = _count_at_most(codes, x, codes, y, True)
    nearest_other = np.full(n, np.inf)
    for shift in (-2, -1, 0, 1):
        idx = np.clip(pos + shift, 0, n - 1)
        valid = (cs[idx] == codes) & (order[idx] != np.arange(n)) & (pos + shift >= 0) & (pos + shift < n)
        nearest_other = np.where(valid, np.minimum(nearest_other, np.abs(y - xs[idx])), nearest_other)
    return np.abs(y - x) < nearest_other
