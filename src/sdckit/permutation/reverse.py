"""Reverse mapping (seed 000 section 2, Algorithm 1) and the permutation paradigm (section 3).

Algorithm 1: ``z_ij`` is the value of ``X_j`` whose rank equals the rank of ``y_ij`` in ``Y_j``.
Each ``Z_j`` is a permutation of ``X_j`` with the ranks of ``Y_j``; hence any masking equals a
permutation (``X -> Z``) plus residual noise that changes no rank (``E = Y - Z``). When the
record counts differ, ``z`` is the lower empirical quantile of ``X_j`` at
``(rank(y) - 0.5) / n_Y`` (DESIGN.md section 3).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.core.ranks import average_ranks
from sdckit.permutation.columns import (
    RankSpace, SchemaLike, check_same_size, quantile_index, rank_space,
)
from sdckit.permutation.rules import TIES_RULE


def _z_frame(space: RankSpace, original: pd.DataFrame) -> pd.DataFrame:
    """Z with the original's values (and dtypes), indexed like the released data."""
    index = quantile_index(len(space.x), len(space.y))
    out = {}
    for j, name in enumerate(space.names):
        by_rank = np.argsort(space.x[:, j], kind="stable")[index]  # original row of each Z rank
        rows = by_rank[space.rank_y[:, j] - 1]
        out[name] = original[name].iloc[rows].to_numpy()
        if isinstance(original[name].dtype, pd.CategoricalDtype):
            out[name] = pd.Categorical(out[name], dtype=original[name].dtype)
    return pd.DataFrame(out, index=space.released_index)


@renamed_seed()
@validated(ties=TIES_RULE)
def reverse_map(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
) -> pd.DataFrame:
    """Reverse-map the released data onto the original values (Algorithm 1 of seed 000).

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y``. With different record counts the quantile mapping is used.
    columns : list of str, optional
        Columns to map (default: all of the original's); numeric, date or ordinal.
    schema : Schema or mapping, optional
        Category orders of ordinal columns.
    ties : {"random", "first"}
        Tie rule for the ranks of ``Y`` (and ``X``): random (the paper) or order of appearance.
    seed : int or Generator, optional
        Seed for random tie-breaking.

    Returns
    -------
    DataFrame
        ``Z``: same index and columns as ``released[columns]``; each column holds original
        values with the ranks of the released column.

    Examples
    --------
    >>> x = pd.DataFrame({"a": [10.0, 20.0, 30.0]})
    >>> y = pd.DataFrame({"a": [2.5, 0.1, 1.0]})
    >>> reverse_map(x, y, ties="first")["a"].tolist()
    [30.0, 10.0, 20.0]
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    return _z_frame(space, original)


@renamed_seed()
@validated(ties=TIES_RULE)
def decompose(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a release into its permutation part ``Z`` and residual noise ``E = Y - Z``.

    Seed 000 section 3 (Table 2): any masking is functionally a permutation of ``X`` followed
    by a noise that changes no rank. ``E`` is measured in the columns' units (ordinal columns in
    category positions, dates in days). A pure permutation of ``X`` gives ``E == 0``.

    Returns
    -------
    (Z, E) : tuple of DataFrame
        Both indexed like ``released``, with columns ``columns``.
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    z = _z_frame(space, original)
    e = pd.DataFrame(space.y - space.z_values(), index=space.released_index, columns=space.names)
    return z, e


@renamed_seed()
@validated(ties=TIES_RULE)
def rank_correlation(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
) -> pd.Series:
    """Spearman rank correlation between each ``X_j`` and ``Z_j`` (the disclosure risk of §2).

    Seed 000 section 2: the higher the correlation, the less the release permuted the
    attribute. Needs equal record counts (row ``i`` of ``X`` against row ``i`` of ``Z``).
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    check_same_size(space, "rank_correlation")
    return spearman_xz(space)


def spearman_xz(space: RankSpace) -> pd.Series:
    """Spearman correlation of ``X_j`` and ``Z_j`` per column (equal record counts).

    Undefined (NaN) for a constant column.
    """
    z = space.z_values()
    values = {}
    for j, name in enumerate(space.names):
        xj, zj = space.x[:, j], z[:, j]
        constant = np.ptp(xj) == 0 or np.ptp(zj) == 0
        # Spearman = Pearson on average ranks
        values[name] = np.nan if constant else float(np.corrcoef(average_ranks(xj), average_ranks(zj))[0, 1])
    return pd.Series(values, name="rank_correlation", dtype=float)
