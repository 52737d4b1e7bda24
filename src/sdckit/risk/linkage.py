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

On large files the rate can be estimated from a simple random sample of released records, each
still linked against every original (``sample=``): the estimate is unbiased and its standard
error, ``sqrt(var(credit) / s) * sqrt(1 - s / n)`` (the sample variance of the credits, with the
finite-population correction), is reported with it (issue 12 section 3:
linking 324k records in 13 dimensions took most of a report's 350 s).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from sdckit.core.arrays import standardize
from sdckit.core.errors import ParameterError
from sdckit.core.params import Interval, IsNone, Options, validated
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.risk.gower import gower_linkage
from sdckit.risk.linkage_result import DistanceLinkage, true_originals
from sdckit.utility.columns import numeric_pair

_TIE_RTOL = 1e-9


@renamed_seed()
@validated(metric=Options(("euclidean", "gower")), sample=[IsNone(), Interval(int, 1, None)])
def distance_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    truth: Sequence[int] | np.ndarray | None = None,
    metric: str = "euclidean",
    sample: int | None = None,
    seed: RandomState = None,
) -> DistanceLinkage:
    """Link every released record to its nearest original (see the module docstring).

    ``metric="gower"`` uses Gower's distance on mixed numeric and categorical columns instead
    (:func:`sdckit.risk.gower.gower_linkage`; default columns: all the two files share).

    Parameters
    ----------
    original, released : DataFrame
        The original data and the release.
    columns : sequence of str, optional
        Numeric columns both have (default: all shared numeric columns).
    truth : sequence of int, optional
        For each original record, the 0-based position of its released version (-1: none);
        default: row i is row i.
    metric : {"euclidean", "gower"}
        Euclidean distance on standardized numeric columns, or Gower's on mixed columns.
    sample : int, optional
        Euclidean metric: link only a simple random sample of this many released records (when
        the release has more) and report the estimate with its standard error.
    seed : int or Generator, optional
        Seeds the sample.

    Examples
    --------
    Originals 0, 10, 20; released 1, 19, 9 (row i is row i): 1 -> 0 (correct), 19 -> 20
    (wrong), 9 -> 10 (wrong). After standardizing, the nearest originals stay the same.

    >>> x = pd.DataFrame({"a": [0.0, 10.0, 20.0]}); y = pd.DataFrame({"a": [1.0, 19.0, 9.0]})
    >>> distance_linkage(x, y).rate
    0.3333333333333333
    """
    if metric == "gower":
        if sample is not None:
            raise ParameterError("distance_linkage samples with the euclidean metric only; drop sample= for metric='gower'.")
        return gower_linkage(original, released, columns, truth=truth)
    cols, x, y = numeric_pair(original, released, columns, owner="distance_linkage")
    owner = true_originals(truth, len(x), len(y))
    xs, ys = standardize(x, ddof=1), standardize(y, ddof=1)
    n_released = len(ys)
    rows = np.arange(n_released)
    if sample is not None and sample < n_released:
        rows = np.sort(as_generator(seed, secret=False).choice(n_released, size=sample, replace=False))
        ys, owner = ys[rows], owner[rows]
    tree = cKDTree(xs)
    # the nearest original, then every original tied with it (a ball of that radius): far cheaper
    # in many dimensions than asking for several neighbours, which must be looked for far away
    dist, nearest = tree.query(ys, k=1, workers=-1)
    nearest = nearest.astype(np.int64)
    limit = dist * (1 + _TIE_RTOL) + 1e-12
    tied = np.asarray(tree.query_ball_point(ys, r=limit, return_length=True, workers=-1), dtype=np.int64)
    tied = np.maximum(tied, 1)
    hit = nearest == owner
    several = np.flatnonzero(tied > 1)
    if len(several):
        balls = tree.query_ball_point(ys[several], r=limit[several], workers=-1)
        for i, ball in zip(several, balls):
            ball = np.asarray(ball, dtype=np.int64)
            hit[i], nearest[i] = owner[i] in ball, ball.min()
    credit = np.where(hit, 1.0 / tied, 0.0)
    records = pd.DataFrame(
        {"nearest": nearest, "distance": dist, "tied": tied, "credit": credit},
        index=released.index[rows],
    )
    rate = float(credit.mean())
    if len(rows) == n_released:
        return DistanceLinkage(rate, float(credit.sum()), records)
    s = len(rows)
    se = float(np.sqrt(max(credit.var(ddof=1), 0.0) / s * (1.0 - s / n_released)))
    return DistanceLinkage(rate, rate * n_released, records, sampled=s, standard_error=se)
