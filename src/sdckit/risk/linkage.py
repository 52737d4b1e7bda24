"""Distance-based record linkage (Domingo-Ferrer & Torra 2001; seed 002 section 4.6.3).

The intruder links each released record to the nearest original record in Euclidean
distance on standardized attributes; the risk is the share of released records whose nearest
original is their true one. Each file is standardized by its own means and standard
deviations (ddof=1; a constant column is only centred), as in Domingo-Ferrer & Torra's
comparison of masking methods, so that a release that rescales an attribute is not protected
by the rescaling alone. The nearest neighbours come from a KD-tree (scipy's cKDTree), so the
work grows as n log n. When several originals are equally near, the link is a random choice
among them: a released record is credited ``1 / (number tied)`` when its true original is
among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from sdckit.core.arrays import standardize
from sdckit.core.errors import DataError, ParameterError
from sdckit.utility.columns import numeric_pair

_TIE_RTOL = 1e-9


@dataclass(frozen=True)
class DistanceLinkage:
    """Result of distance-based record linkage.

    Attributes
    ----------
    rate : float
        Share of released records linked to their true original (ties credited fractionally).
    correct : float
        The same as a count.
    records : DataFrame
        One row per released record (its index): ``nearest`` (0-based position of the nearest
        original, the lowest one on ties), ``distance``, ``tied`` (originals at that distance)
        and ``credit`` (1/tied if the true original is among them, else 0).
    """

    rate: float
    correct: float
    records: pd.DataFrame

    def to_dict(self) -> dict[str, float]:
        return {"rate": self.rate, "correct": self.correct, "records": len(self.records)}


def true_originals(truth: Sequence[int] | np.ndarray | None, n_original: int, n_released: int) -> np.ndarray:
    """For each released record, the 0-based position of its true original (-1: none).

    ``truth`` follows sdckit.permutation's convention: for each original record, the 0-based
    position of its released version (-1 when it has none); ``None`` means row i is row i.
    """
    if truth is None:
        if n_original != n_released:
            raise DataError(
                f"The original has {n_original} records and the release {n_released}; give truth= "
                "(the released position of each original record) to say which record is which."
            )
        return np.arange(n_released)
    t = np.asarray(truth)
    if t.shape != (n_original,) or not np.issubdtype(t.dtype, np.integer):
        raise DataError(f"truth must be {n_original} integers (the released position of each original record); got shape {t.shape}, dtype {t.dtype}.")
    used = t[t >= 0]
    if (t < -1).any() or (used >= n_released).any() or len(np.unique(used)) != len(used):
        raise DataError(f"truth must hold distinct released positions in 0..{n_released - 1} (or -1 for none).")
    owner = np.full(n_released, -1)
    owner[used] = np.flatnonzero(t >= 0)
    return owner


def distance_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    truth: Sequence[int] | np.ndarray | None = None,
    metric: str = "euclidean",
) -> DistanceLinkage:
    """Link every released record to its nearest original (see the module docstring).

    ``metric="gower"`` uses Gower's distance on mixed numeric and categorical columns instead
    (:func:`sdckit.risk.gower.gower_linkage`; default columns: all the two files share).

    Examples
    --------
    Originals 0, 10, 20; released 1, 19, 9 (row i is row i): 1 -> 0 (correct), 19 -> 20
    (wrong), 9 -> 10 (wrong). After standardizing, the nearest originals stay the same.

    >>> x = pd.DataFrame({"a": [0.0, 10.0, 20.0]}); y = pd.DataFrame({"a": [1.0, 19.0, 9.0]})
    >>> distance_linkage(x, y).rate
    0.3333333333333333
    """
    if metric == "gower":
        from sdckit.risk.gower import gower_linkage  # gower builds on this module
        return gower_linkage(original, released, columns, truth=truth)
    if metric != "euclidean":
        raise ParameterError(f"The 'metric' parameter of distance_linkage must be 'euclidean' or 'gower'. Got {metric!r} instead.")
    cols, x, y = numeric_pair(original, released, columns, owner="distance_linkage")
    owner = true_originals(truth, len(x), len(y))
    xs, ys = standardize(x, ddof=1), standardize(y, ddof=1)
    tree = cKDTree(xs)
    k = min(len(xs), 8)
    dist, idx = tree.query(ys, k=k)
    dist, idx = dist.reshape(len(ys), k), idx.reshape(len(ys), k)
    limit = dist[:, :1] * (1 + _TIE_RTOL) + 1e-12
    within = dist <= limit
    tied = within.sum(axis=1)
    hit = (within & (idx == owner[:, None])).any(axis=1)
    nearest = np.where(within, idx, np.iinfo(np.int64).max).min(axis=1)
    # every one of the k neighbours tied: look further with a ball query for those records
    crowded = np.flatnonzero(tied == k) if k < len(xs) else np.zeros(0, dtype=np.int64)
    for i in crowded:
        ball = np.asarray(tree.query_ball_point(ys[i], r=limit[i, 0]), dtype=np.int64)
        tied[i], hit[i], nearest[i] = len(ball), owner[i] in ball, ball.min()
    credit = np.where(hit, 1.0 / tied, 0.0)
    records = pd.DataFrame(
        {"nearest": nearest, "distance": dist[:, 0], "tied": tied, "credit": credit},
        index=released.index,
    )
    return DistanceLinkage(float(credit.mean()), float(credit.sum()), records)
