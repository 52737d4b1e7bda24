"""The intruder's random set ``T``: records that belong to nobody (seed 000 section 5.2; DESIGN.md
section 3).

``null="copula"`` draws ``T`` from a Gaussian copula fitted to the normal scores of ``X``, mapped
back through ``X``'s empirical marginals, so ``T`` keeps ``X``'s dependence; ``null="independent"``
is the paper's rule (each attribute drawn independently; all ``n^m`` combinations when
``n^m <= exhaustive_limit``). A record of ``T`` is drawn as its positions in the sorted columns,
and :func:`random_query` gives Algorithm 2's ranks of the drawn values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr

from sdckit.core.ranks import average_ranks, nearest_rank, normal_scores


def copula_correlation(values: np.ndarray) -> np.ndarray:
    """Correlation of the normal scores ``Phi^-1((rank - 1/2) / n)`` of each column."""
    n, m = values.shape
    scores = normal_scores(average_ranks(values), n)
    if m == 1:
        return np.ones((1, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.corrcoef(scores, rowvar=False)
    corr = np.nan_to_num(corr, nan=0.0)  # a constant column is independent of the rest
    np.fill_diagonal(corr, 1.0)
    w, v = np.linalg.eigh(corr)  # make it positive semi-definite
    corr = (v * np.clip(w, 1e-10, None)) @ v.T
    d = np.sqrt(np.diag(corr))
    return corr / np.outer(d, d)


def copula_factor(values: np.ndarray) -> np.ndarray:
    """Cholesky factor of :func:`copula_correlation`: the copula null's ``T`` is
    ``Phi(standard normal @ factor.T)``."""
    m = values.shape[1]
    return np.linalg.cholesky(copula_correlation(values) + 1e-12 * np.eye(m))


def random_positions(
    values: np.ndarray, null: str, n_random: int, exhaustive_limit: int, rng: np.random.Generator,
    factor: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """Positions in each sorted column of ``values`` for the records of ``T``.

    Returns the ``N x m`` positions and whether all ``n^m`` combinations were enumerated.
    ``factor`` is :func:`copula_factor` of ``values`` when the caller has it already.
    """
    n, m = values.shape
    if null == "independent":
        if float(n) ** m <= exhaustive_limit:
            grids = np.indices((n,) * m).reshape(m, -1).T
            return grids, True
        return rng.integers(0, n, size=(n_random, m)), False
    chol = copula_factor(values) if factor is None else factor
    u = ndtr(rng.standard_normal((n_random, m)) @ chol.T)
    return np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1), False


def random_query(
    source: Sequence[np.ndarray], reference: Sequence[np.ndarray], positions: np.ndarray
) -> np.ndarray:
    """Algorithm 2's ``r_j`` of the records of ``T``: ``t_j = source_j[pos]`` against ``reference``.

    Only the drawn values are looked up (the nearest rank of every value of ``source_j`` would
    cost ``n log n`` per replicate: 60% of the report's time at 10^6 records, issue 28), in the
    order of the positions: ``source_j`` is sorted, so the binary searches then walk forward and
    stay in cache (as :meth:`~sdckit.permutation.columns.RankSpace.ranks_in` does)."""
    out = np.empty(positions.shape, dtype=np.int64)
    for j, (src, ref) in enumerate(zip(source, reference)):
        order = np.argsort(positions[:, j], kind="stable")
        out[order, j] = nearest_rank(ref, src[positions[order, j]])
    return out
