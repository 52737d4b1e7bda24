"""Record-level measures for the protector (seed 001, "data administrator: record-level").

Identity disclosure: the rank displacement of record ``i`` under the true correspondence,
``d_i = max_j |rank(x_ij) - rank(y_ij)|``. Attribute disclosure of ``x_ij``: the population
variance of the ``Y_j`` values whose ranks lie within ``d_i`` of ``rank(x_ij)`` (clipped to
``1..n``). A small displacement with a small variance means that record is exposed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.core.ranks import rank_matrix
from sdckit.permutation.columns import SchemaLike, check_same_size, check_truth, rank_space
from sdckit.permutation.privacy import window_variances
from sdckit.permutation.rules import TIES_RULE


@renamed_seed()
@validated(ties=TIES_RULE)
def rank_displacement(
    original: pd.DataFrame,
    released: pd.DataFrame,
    truth: Any = None,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
) -> pd.DataFrame:
    """Seed 001's record-level identity and attribute-disclosure measures.

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y`` with the same number of records.
    truth : array of int, optional
        The released position of each original record (default: the same row).
    columns, schema, ties, seed
        As in :func:`~sdckit.permutation.permutation_distances`; ties in ``X`` and ``Y``
        are broken by the same rule.

    Returns
    -------
    DataFrame
        Indexed like ``original``: ``displacement`` (int, ``d_i``) and, per column ``c``,
        ``var_{c}`` (the attribute-disclosure variance; small means disclosive).
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    check_same_size(space, "rank_displacement")
    true_pos = check_truth(truth, len(space.x), len(space.y))
    rank_x = rank_matrix(space.x, ties=ties, seed=space.rng)
    shift = np.abs(rank_x - space.rank_y[true_pos])
    displacement = shift.max(axis=1)
    out = pd.DataFrame({"displacement": displacement}, index=space.original_index)
    for name, values in window_variances(space, rank_x, displacement).items():
        out[name] = values
    return out
