"""A simple random sample of record pairs, for assessing a release too large to rank whole (issue 28).

The permutation measures rank every released record and search a KD-tree over all of them: at
10^7 records x 5 that holds the values, ranks, sorted columns and the tree (about 4 GB beside the
two frames) and takes many minutes. :func:`sample_pairs` draws the rows once, from the
assessment's own generator, so that the same ``seed`` gives the same sample; the measures
are then those of the *sub-release* of the sampled records (as if only they had been published),
computed exactly on it. DESIGN.md section 3 ("Scale") says what that does to the p-value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, validated
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.permutation.rules import MIN_SAMPLE

#: Fewest record pairs a sample may have (the permutation measures need at least 2 records).
MIN_RECORDS = MIN_SAMPLE


def sample_rows(n: int, records: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of a simple random sample (without replacement) of ``records`` of ``n``."""
    return np.sort(rng.choice(n, size=records, replace=False))


@renamed_seed()
@validated(records=Interval(int, MIN_RECORDS, None))
def sample_pairs(
    original: pd.DataFrame,
    released: pd.DataFrame,
    records: int,
    *,
    truth: Any = None,
    seed: RandomState = None,
) -> tuple[pd.DataFrame, pd.DataFrame, int | None, np.random.Generator | RandomState]:
    """The two data sets restricted to a simple random sample of ``records`` record pairs.

    With equal record counts (row ``i`` of the release is row ``i`` of the original) the same
    rows are kept in both; with different counts each is sampled on its own at the same rate
    ``records / max(n_original, n_released)``. Below ``records`` the inputs are returned as they
    are (the assessment stays exact).

    Returns
    -------
    original, released : DataFrame
        The samples (their index is the inputs', so a record keeps its label).
    sampled : int or None
        The original records kept (the record pairs, with equal counts), or ``None`` when
        nothing was sampled.
    seed
        What the assessment continues with: the generator the rows were drawn from (so that the
        rest of it depends on the same ``seed`` only), or ``seed`` untouched when
        nothing was drawn.
    """
    n_x, n_y = len(original), len(released)
    if max(n_x, n_y) <= records:
        return original, released, None, seed
    if truth is not None:
        raise ParameterError("assess samples record pairs only when row i of the release is row i of the "
                             "original; drop 'truth' or 'records' (or put the release in the original's order).")
    rng = as_generator(seed, secret=False)
    if n_x == n_y:
        rows = sample_rows(n_x, records, rng)
        return original.iloc[rows], released.iloc[rows], records, rng
    rate = records / max(n_x, n_y)
    keep_x, keep_y = (max(MIN_RECORDS, min(n, int(round(rate * n)))) for n in (n_x, n_y))
    return original.iloc[sample_rows(n_x, keep_x, rng)], released.iloc[sample_rows(n_y, keep_y, rng)], keep_x, rng


def complete_pairs(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The record pairs present in both data sets on every one of ``columns`` (issue 31).

    The ranks of the permutation paradigm need complete data; a release with suppressed cells
    (local suppression sets key values to missing) is assessed as the release of the record
    pairs that have every column in both — the sub-release of DESIGN.md section 3 ("Scale"),
    chosen by completeness instead of at random. Row ``i`` of the release is row ``i`` of the
    original, so both need the same number of records when a value is missing.

    Returns
    -------
    original, released : DataFrame
        The complete pairs (the inputs themselves when none is left out; the index is kept).
    left_out : int
        The record pairs left out (0 when no value is missing).
    """
    names = list(columns)
    missing_x = original[names].isna().to_numpy().any(axis=1)
    missing_y = released[names].isna().to_numpy().any(axis=1)
    if not missing_x.any() and not missing_y.any():
        return original, released, 0
    if len(original) != len(released):
        what, frame, flags = ("released", released, missing_y) if missing_y.any() else ("original", original, missing_x)
        column = next(c for c in names if frame[c].isna().any())
        raise DataError(
            f"Column {column!r} is missing in {int(flags.sum())} record(s) of the {what} data, and the two have "
            f"different record counts ({len(original)} and {len(released)}), so the complete record pairs are "
            "not known; impute or remove those records first."
        )
    keep = ~(missing_x | missing_y)
    if keep.sum() < MIN_RECORDS:
        raise DataError(
            f"Only {int(keep.sum())} record(s) have every one of the columns {', '.join(map(repr, names))} in "
            f"both data sets (the others hold a suppressed or missing value); the permutation measures need at "
            f"least {MIN_RECORDS}. Leave the most suppressed columns out with 'columns'."
        )
    return original[keep], released[keep], int((~keep).sum())
