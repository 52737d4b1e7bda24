"""(d,v)-permuted privacy (seed 000 section 4, Definitions 1 and 2; Table 4).

A release satisfies (d,v)-permuted privacy w.r.t. an original record ``x`` when its
permutation distance ``d(x) >= d`` and, for every attribute ``j``, the population variance
(ddof=0) of the values of sorted ``Y_j`` whose rank lies in ``[r_j - d, r_j + d]`` (clipped to
``1..n``) exceeds ``v_j``; for a data set it must hold for every original record.

The window variances come from prefix sums of the sorted (centred) values, so each costs
``O(1)`` per record and attribute.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.params import Interval, Satisfies, check_param, validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.permutation.columns import RankSpace, SchemaLike, rank_space
from sdckit.core.result import Result
from sdckit.permutation.distance import Progress, distance_frame
from sdckit.permutation.rules import TIES_RULE


class WindowVariance:
    """Population variances of rank windows of one sorted column, from prefix sums."""

    def __init__(self, sorted_values: np.ndarray):
        s = np.asarray(sorted_values, dtype=float)
        centred = s - s.mean()
        self.n = len(s)
        self.s1 = np.concatenate(([0.0], np.cumsum(centred)))
        self.s2 = np.concatenate(([0.0], np.cumsum(centred * centred)))
        # below this, a window variance is rounding error of the prefix sums
        self.floor = 1e-12 * (self.s2[-1] / max(self.n, 1))

    def __call__(self, centre: np.ndarray, radius: np.ndarray | int) -> np.ndarray:
        """Variance of the values of ranks ``[centre - radius, centre + radius]`` (1-based)."""
        centre = np.asarray(centre, dtype=np.int64)
        lo = np.maximum(centre - radius, 1)
        hi = np.minimum(centre + radius, self.n)
        count = hi - lo + 1
        mean = (self.s1[hi] - self.s1[lo - 1]) / count
        var = (self.s2[hi] - self.s2[lo - 1]) / count - mean * mean
        return np.where(var > self.floor, var, 0.0)


@dataclass(frozen=True)
class PermutedPrivacy(Result):
    """Outcome of :func:`permuted_privacy`.

    Attributes
    ----------
    satisfied : bool
        Whether the release satisfies (d,v)-permuted privacy for every original record.
    d : int
        The distance asked for.
    v : Series
        The variance thresholds asked for, per column.
    dataset_distance : int
        The data-set-level permutation distance, ``min_x d(x)``.
    dataset_variances : Series
        Per column, the minimum over records of the window variance at ``dataset_distance``.
    records : DataFrame
        Per original record: ``distance``, ``matches``, ``satisfied``, and per column ``c``
        ``var_{c}`` (window of half-width ``dataset_distance``) and ``var_own_{c}`` (half-width
        the record's own distance).
    """

    satisfied: bool
    d: int
    v: pd.Series
    dataset_distance: int
    dataset_variances: pd.Series
    records: pd.DataFrame


def minimum_variances(records: pd.DataFrame, names: Sequence[str]) -> pd.Series:
    """Data-set-level variance per column: the minimum of the records' ``var_{c}``."""
    return pd.Series([float(records[f"var_{c}"].min()) for c in names], index=list(names),
                     name="dataset_variances")


def window_variances(space: RankSpace, centre: np.ndarray, radius: np.ndarray | int,
                     prefix: str = "var_",
                     windows: Sequence[WindowVariance] | None = None) -> dict[str, np.ndarray]:
    """Per column ``c``, ``{prefix}{c}``: variance of sorted ``Y_c`` within ``radius`` of ``centre``.

    ``windows`` (one :class:`WindowVariance` per column) saves rebuilding the prefix sums when
    several radii are asked of the same release.
    """
    if windows is None:
        windows = [WindowVariance(values) for values in space.y_sorted]
    return {f"{prefix}{name}": windows[j](centre[:, j], radius)
            for j, name in enumerate(space.names)}


def _variances(v: Any) -> bool:
    return isinstance(v, Mapping | Sequence | np.ndarray) and not isinstance(v, str)


#: The rule of ``v`` alone; that it names each column once, and each variance, is checked against
#: the columns (:func:`check_thresholds`).
THRESHOLDS_RULE = [Interval(float, 0, None),
                   Satisfies(_variances, "a sequence or mapping of variances, one per column")]


def check_thresholds(v: Any, names: Sequence[str]) -> pd.Series:
    """``v`` (a sequence in column order or a mapping column -> value) as a Series."""
    if isinstance(v, Mapping):
        unknown = [k for k in v if k not in names]
        missing = [c for c in names if c not in v]
        if unknown or missing:
            raise ParameterError(
                f"The 'v' parameter of permuted_privacy must give one variance per column "
                f"({', '.join(names)}). Got {'unknown column ' + repr(unknown[0]) if unknown else 'no value for column ' + repr(missing[0])} instead."
            )
        values = [v[c] for c in names]
    elif isinstance(v, numbers.Real) and not isinstance(v, bool) and len(names) == 1:
        values = [v]
    elif isinstance(v, Sequence | np.ndarray) and not isinstance(v, str) and len(v) == len(names):
        values = list(v)
    else:
        raise ParameterError(
            f"The 'v' parameter of permuted_privacy must be a sequence of {len(names)} "
            f"variances (one per column: {', '.join(names)}) or a mapping from column to "
            f"variance. Got {v!r} instead."
        )
    for name, value in zip(names, values):
        check_param("permuted_privacy", f"v[{name}]", value, Interval(float, 0, None))
    return pd.Series([float(x) for x in values], index=list(names), name="v")


@renamed_seed()
@validated(d=Interval(int, 0, None), v=THRESHOLDS_RULE, ties=TIES_RULE)
def permuted_privacy(
    original: pd.DataFrame,
    released: pd.DataFrame,
    d: int,
    v: Sequence[float] | Mapping[str, float],
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    progress: Progress = None,
) -> PermutedPrivacy:
    """Check (d,v)-permuted privacy of a release (seed 000 section 4, Definitions 1-2, Table 4).

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y`` (record counts may differ).
    d : int
        Required permutation distance (``>= 0``).
    v : sequence or mapping
        Required variance per column (``>= 0``), in column order or by column name.
    columns, schema, ties, seed, progress
        As in :func:`~sdckit.permutation.permutation_distances`.

    Returns
    -------
    PermutedPrivacy
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    thresholds = check_thresholds(v, space.names)
    r = space.ranks_in(space.y_sorted, space.x)
    records = distance_frame(space, r, progress)
    dist = records["distance"].to_numpy()
    level = int(dist.min())
    satisfied = dist >= d
    windows = [WindowVariance(values) for values in space.y_sorted]
    at_level = window_variances(space, r, level, windows=windows)
    own = window_variances(space, r, dist, "var_own_", windows)
    for name in space.names:
        records[f"var_{name}"] = at_level[f"var_{name}"]
        records[f"var_own_{name}"] = own[f"var_own_{name}"]
    for name, values in window_variances(space, r, d, windows=windows).items():
        satisfied &= values > thresholds[name[len("var_"):]]
    records.insert(2, "satisfied", satisfied)
    dataset_variances = minimum_variances(records, space.names)
    return PermutedPrivacy(
        satisfied=bool(satisfied.all()), d=int(d), v=thresholds, dataset_distance=level,
        dataset_variances=dataset_variances, records=records,
    )
