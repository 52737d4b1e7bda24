"""The intruder's best one-to-one linkage (beyond the papers; seed 001 sketches the idea).

Algorithm 2 may give an original record several matches, and several originals the same
match. Seed 001 notes that the intruder can "refine the linkage" by looking at all records at
once; the cleanest form of that refinement is a one-to-one assignment of original to
reverse-mapped records with the least total Chebyshev rank distance (a minimum-weight perfect
matching in a bipartite graph).

Dense assignment needs ``n^2`` memory, so the candidate edges are each original's ``k``
nearest released records and each released record's ``k`` nearest originals in rank space
(KD-trees), and :func:`scipy.sparse.csgraph.min_weight_full_bipartite_matching` solves the
sparse problem. When the candidate graph has no perfect matching, ``k`` is doubled; once
``k >= n`` the exact dense solver (:func:`scipy.optimize.linear_sum_assignment`) is used. The
result is optimal among the candidate edges, and exactly optimal when ``k >= n - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching
from scipy.spatial import cKDTree

from sdckit.core.params import Interval, validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.permutation.columns import SchemaLike, check_same_size, check_truth, rank_space
from sdckit.permutation.distance import Progress
from sdckit.core.result import Result
from sdckit.permutation.intruder import intruder_query
from sdckit.permutation.rules import TIES_RULE


@dataclass(frozen=True)
class Assignment(Result):
    """Outcome of :func:`assign_linkage`.

    Attributes
    ----------
    records : DataFrame
        Per original record: ``assigned`` (0-based released position), ``distance`` (its
        Chebyshev rank distance), ``truth`` and ``correct`` (bool).
    total_distance : int
        Sum of the assigned distances (the minimised cost).
    correct : int
        Original records assigned to their true released record.
    correct_rate : float
        ``correct / n``.
    k : int
        Candidate neighbours per record finally used (``n`` means the dense solver ran).
    """

    records: pd.DataFrame
    total_distance: int
    correct: int
    correct_rate: float
    k: int


def _candidate_graph(query: np.ndarray, points: np.ndarray, k: int) -> csr_matrix:
    """Sparse ``n x n`` graph: weight ``1 + distance`` on each candidate edge."""
    n = len(query)
    kk = min(k, n)
    rows, cols, dists = [], [], []
    for a, b, flip in ((query, points, False), (points, query, True)):
        d, idx = cKDTree(b.astype(float)).query(a.astype(float), k=kk, p=np.inf, workers=-1)
        d, idx = d.reshape(n, kk), idx.reshape(n, kk)
        src = np.repeat(np.arange(n), kk)
        rows.append(idx.ravel() if flip else src)
        cols.append(src if flip else idx.ravel())
        dists.append(d.ravel())
    key = np.concatenate(rows) * n + np.concatenate(cols)
    key, first = np.unique(key, return_index=True)
    weight = np.rint(np.concatenate(dists)[first]) + 1.0  # shift: explicit zeros are no edges
    return csr_matrix((weight, (key // n, key % n)), shape=(n, n))


def _dense_assignment(query: np.ndarray, points: np.ndarray) -> np.ndarray:
    cost = np.abs(query[:, None, :] - points[None, :, :]).max(axis=2)
    rows, cols = linear_sum_assignment(cost)
    out = np.empty(len(query), dtype=np.int64)
    out[rows] = cols
    return out


@renamed_seed()
@validated(k=Interval(int, 1, None), ties=TIES_RULE)
def assign_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    truth: Any = None,
    k: int = 8,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    progress: Progress = None,
) -> Assignment:
    """One-to-one linkage of minimum total Chebyshev rank distance (the intruder's refinement).

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y`` with the same number of records.
    truth : array of int, optional
        The released position of each original record (default: the same row); used only to
        report the correct-link rate.
    k : int
        Candidate neighbours per record (``>= 1``); doubled until a perfect matching exists.
    columns, schema, ties, seed, progress
        As in :func:`~sdckit.permutation.permutation_distances`.

    Returns
    -------
    Assignment
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    check_same_size(space, "assign_linkage")
    true_pos = check_truth(truth, len(space.x), len(space.y))
    query, points = intruder_query(space), space.rank_y
    n = len(query)
    while True:
        if progress is not None:
            progress(0, 1, f"assignment (k={min(k, n)})")
        if k >= n - 1:
            assigned, k = _dense_assignment(query, points), n
            break
        try:
            rows, cols = min_weight_full_bipartite_matching(_candidate_graph(query, points, k))
        except ValueError:  # the candidate graph has no perfect matching: widen it
            k *= 2
            continue
        assigned = np.empty(n, dtype=np.int64)
        assigned[rows] = cols
        break
    if progress is not None:
        progress(1, 1, "assignment")
    distance = np.abs(query - points[assigned]).max(axis=1)
    correct = assigned == true_pos
    records = pd.DataFrame({"assigned": assigned, "distance": distance, "truth": true_pos,
                            "correct": correct}, index=space.original_index)
    return Assignment(records=records, total_distance=int(distance.sum()),
                      correct=int(correct.sum()), correct_rate=float(correct.mean()), k=int(k))
