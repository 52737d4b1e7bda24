"""Permutation distance (seed 000 section 4, Algorithm 2) as a Chebyshev nearest-neighbour search.

For an original record ``x`` let ``r_j`` be the rank in ``Y_j`` of the value of ``Y_j``
closest to ``x_j`` (equal distances: the lower rank). Then

    d(x) = min_i max_j |rank_j(y_i) - r_j|,

and the matches of ``x`` are every released record attaining ``d(x)`` (DESIGN.md section 3).
Algorithm 2 grows ``d`` from 0 until some record fits in the box ``r +- d``; that is exactly a
nearest-neighbour query in the L-infinity metric on the released rank vectors, which a KD-tree
(:class:`scipy.spatial.cKDTree` with ``p=inf``) answers in ``O(log n)`` per record instead of a
scan of all ``n`` records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.random import RandomState
from sdckit.permutation.columns import RankSpace, SchemaLike, rank_space

Progress = Callable[[int, int, str], Any] | None

#: Records per KD-tree query batch (bounds memory and paces the progress callback).
CHUNK = 65_536


def _chunks(total: int, progress: Progress, label: str):
    for start in range(0, total, CHUNK):
        stop = min(start + CHUNK, total)
        yield slice(start, stop)
        if progress is not None:
            progress(stop, total, label)


def nearest_distances(space: RankSpace, query: np.ndarray, progress: Progress = None,
                      label: str = "distances") -> np.ndarray:
    """Chebyshev distance from each query rank vector to the nearest released rank vector."""
    out = np.empty(len(query), dtype=np.int64)
    tree = space.tree
    for part in _chunks(len(query), progress, label):
        dist, _ = tree.query(query[part].astype(float), k=1, p=np.inf, workers=-1)
        out[part] = np.rint(dist).astype(np.int64)
    return out


def distances_and_matches(space: RankSpace, query: np.ndarray, progress: Progress = None,
                          label: str = "distances") -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Distances and all matches (0-based released positions, ascending) of each query.

    The two nearest neighbours are found first; only where the second is as close as the
    first (a tie) is the whole ball of radius ``d(x)`` collected.
    """
    n = len(query)
    tree = space.tree  # the released data has >= 2 records, so two neighbours exist
    dist = np.empty(n, dtype=np.int64)
    matches: list[tuple[int, ...]] = [()] * n
    for part in _chunks(n, progress, label):
        q = query[part].astype(float)
        d, idx = tree.query(q, k=2, p=np.inf, workers=-1)
        d = np.rint(d).astype(np.int64)
        dist[part] = d[:, 0]
        tied = d[:, 1] == d[:, 0]
        base = part.start
        for i, j in zip((base + np.flatnonzero(~tied)).tolist(), idx[~tied, 0].tolist()):
            matches[i] = (j,)
        where = np.flatnonzero(tied)
        if len(where):
            balls = tree.query_ball_point(q[where], r=d[where, 0].astype(float), p=np.inf,
                                          workers=-1, return_sorted=True)
            for i, ball in zip((base + where).tolist(), balls):
                matches[i] = tuple(ball)
    return dist, matches


def distance_frame(space: RankSpace, query: np.ndarray, progress: Progress = None) -> pd.DataFrame:
    """One row per original record: ``distance`` (int) and ``matches`` (tuple)."""
    dist, matches = distances_and_matches(space, query, progress)
    return pd.DataFrame(
        {"distance": dist, "matches": pd.Series(matches, dtype=object).to_numpy()},
        index=space.original_index,
    )


def permutation_distances(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    random_state: RandomState = None,
    progress: Progress = None,
) -> pd.DataFrame:
    """Permutation distance of every original record against the released data (Algorithm 2).

    Seed 000 section 4 (Algorithm 2, Definition 1 condition 1), as settled in DESIGN.md
    section 3: for each original record ``x`` and attribute ``j``, ``r_j`` is the rank in
    ``Y_j`` of the released value closest to ``x_j`` (the lower rank on equal distances);
    ``d(x)`` is the smallest Chebyshev distance between ``(r_1..r_m)`` and the rank vector of a
    released record, and the matches are all released records at that distance. Computed with
    a KD-tree in rank space: ``O(n log n)`` overall.

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y``; the record counts may differ.
    columns : list of str, optional
        Columns to use (default: all of the original's); numeric, date or ordinal.
    schema : Schema or mapping, optional
        Category orders of ordinal columns (a Schema, or ``{column: [categories...]}``).
    ties : {"random", "first"}
        How ties in ``Y`` are ranked: randomly (the paper's rule) or by order of appearance.
    random_state : int or Generator, optional
        Seed for the random tie-breaking.
    progress : callable, optional
        Called as ``progress(done, total, label)`` while the records are processed.

    Returns
    -------
    DataFrame
        Indexed like ``original``: ``distance`` (int) and ``matches`` (tuple of 0-based
        positions in ``released``, ascending).
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       random_state=random_state)
    return distance_frame(space, space.ranks_in(space.y_sorted, space.x), progress)
