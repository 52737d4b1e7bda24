"""Differences of means, variances, quantiles and correlations between original and release.

The classic information-loss comparisons of seed 002 section 4.6.3 (and of Domingo-Ferrer &
Torra's score): how far the released data's first and second moments, quantiles and
correlation matrix are from the original's. These need no record correspondence, so they apply
to synthetic data and samples too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.arrays import safe_scale
from sdckit.core.params import Options, Satisfies, validated
from sdckit.utility.columns import numeric_pair

DEFAULT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def moment_differences(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per column: means and variances of X and Y, and how they differ.

    Returns
    -------
    DataFrame indexed by column with ``mean_original``, ``mean_released``, ``mean_difference``
    (Y minus X), ``standardized_mean_difference`` (the difference over X's standard deviation;
    over 1 for a constant column), ``var_original``, ``var_released`` (sample variances,
    ddof=1) and ``var_ratio`` (Y's over X's; 1 when both are 0, inf when only X's is 0).

    Examples
    --------
    >>> x = pd.DataFrame({"a": [1.0, 2.0, 3.0]}); y = pd.DataFrame({"a": [2.0, 3.0, 7.0]})
    >>> moment_differences(x, y).loc["a", ["mean_difference", "var_ratio"]].tolist()
    [2.0, 7.0]
    """
    cols, x, y = numeric_pair(original, released, columns, owner="moment_differences", min_records=2)
    mx, my = x.mean(axis=0), y.mean(axis=0)
    vx, vy = x.var(axis=0, ddof=1), y.var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(vx > 0, vy / np.where(vx > 0, vx, 1.0), np.where(vy > 0, np.inf, 1.0))
    return pd.DataFrame(
        {
            "mean_original": mx,
            "mean_released": my,
            "mean_difference": my - mx,
            "standardized_mean_difference": (my - mx) / safe_scale(np.sqrt(vx)),
            "var_original": vx,
            "var_released": vy,
            "var_ratio": ratio,
        },
        index=pd.Index(cols, name="column"),
    )


@validated(q=Satisfies(lambda q: len(q) > 0 and all(0 <= float(p) <= 1 for p in q),
                       "a non-empty list of probabilities in [0, 1]"))
def quantile_differences(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    q: Sequence[float] = DEFAULT_QUANTILES,
) -> pd.DataFrame:
    """Per column and probability: released quantile minus original quantile.

    Quantiles use numpy's default (linear interpolation, type 7). Returns a DataFrame indexed
    by column with one column per probability in ``q``.
    """
    probs = np.asarray(list(q), dtype=float)
    cols, x, y = numeric_pair(original, released, columns, owner="quantile_differences")
    diff = np.quantile(y, probs, axis=0) - np.quantile(x, probs, axis=0)
    return pd.DataFrame(diff.T, index=pd.Index(cols, name="column"), columns=[float(p) for p in probs])


@validated(method=Options(("pearson", "spearman")))
def correlation_difference(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    method: str = "pearson",
) -> pd.DataFrame:
    """The released correlation matrix minus the original one (``method``: pearson/spearman).

    Entries involving a constant column are NaN (the correlation is undefined there).
    """
    cols, _, _ = numeric_pair(original, released, columns, owner="correlation_difference", min_records=2)
    return released[cols].astype(float).corr(method=method) - original[cols].astype(float).corr(method=method)


def mean_abs_correlation_difference(difference: pd.DataFrame) -> float:
    """Mean absolute value of the off-diagonal entries of a correlation difference (NaN skipped).

    0 when there is a single column.
    """
    values = difference.to_numpy(dtype=float)
    off = values[~np.eye(len(values), dtype=bool)]
    off = off[~np.isnan(off)]
    return float(np.abs(off).mean()) if off.size else 0.0
