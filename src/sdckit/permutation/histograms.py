"""The distributions the verification compares and the Hellinger distance between them (seed 001,
"data set-level privacy measure"; DESIGN.md section 3).

``P`` and ``Q`` are the distributions of the permutation distances of the original and of the
random records; the verification counts the distances of each replicate in :func:`distance_bins`
(``max(MIN_BINS, sqrt(size))`` bins, issue 17) and compares the histograms with
:func:`hellinger_rows`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

#: The distances are counted in at least this many bins (:func:`distance_bins`).
MIN_BINS = 10


def hellinger(p: Any, q: Any) -> float:
    """Hellinger distance between two discrete distributions, in ``[0, 1]``.

    ``p`` and ``q`` are Series (or mappings) from outcome to probability; missing outcomes
    have probability 0 (seed 001, "data set-level privacy measure").

    Examples
    --------
    >>> hellinger({0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5})
    0.0
    >>> hellinger({0: 1.0}, {1: 1.0})
    1.0
    """
    p, q = pd.Series(p, dtype=float), pd.Series(q, dtype=float)
    p, q = p.align(q, fill_value=0.0)
    return float(hellinger_rows(p.to_numpy(), q.to_numpy()))


def distribution(distances: np.ndarray) -> pd.Series:
    """Relative frequencies of the distances (a Series indexed by distance, summing to 1)."""
    values, counts = np.unique(distances, return_counts=True)
    return pd.Series(counts / counts.sum(), index=pd.Index(values, name="distance"),
                     name="frequency")


def hellinger_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise Hellinger distance of histograms ``p`` (``B x K`` or ``K``) to ``q`` (``K``)."""
    return np.minimum(np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2, axis=-1) / 2.0), 1.0)


def comparison_size(n: int, pool: int, exhaustive: bool) -> int:
    """How many distances each side of the test holds: the original records' ``n``, or as many as
    the null pool can give without replacement (then a random sample of the originals is compared),
    so that the observed sample and the null samples are of like size (issue 17: at n = 10^6 against
    a pool of 5 x 10^4, null samples drawn with replacement were sparser than ``P`` and made a
    release with 5% correct links look deniable). An exhaustive ``T`` is the exact null: any size."""
    return n if exhaustive else min(n, pool)


def distance_bins(q_set: np.ndarray, size: int) -> np.ndarray:
    """Left edges of the bins the distances are counted in: 0 (so that closer-than-random matches
    keep a bin of their own) and the quantiles of ``Q`` at ``1/K, ..., (K-1)/K`` with
    ``K = max(MIN_BINS, ceil(sqrt(size)))``; every distinct distance is its own bin when there are
    at most ``K`` (then ``H`` is the paper's, on the distances themselves).

    A histogram over thousands of distinct distances from a sample of ``size`` is dominated by its
    sparsity, not by the linkage (issue 17); ``sqrt(size)`` bins keep about ``sqrt(size)`` values
    in each bin of ``Q``."""
    k = max(MIN_BINS, int(np.ceil(np.sqrt(size))))
    distinct = np.unique(q_set)
    if len(distinct) <= k:
        cuts = distinct
    else:
        cuts = np.unique(np.quantile(q_set, np.arange(1, k) / k, method="inverted_cdf"))
    return np.union1d([0], cuts).astype(np.int64)


def bin_index(distances: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each distance, given the bins' left edges (:func:`distance_bins`)."""
    return np.searchsorted(edges, distances, side="right") - 1
