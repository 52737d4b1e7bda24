"""One-call utility summaries: the numbers the report, compare and tune show.

``utility_loss`` is the single number a comparison plots against risk; ``MEASURES`` names the
choices. ``utility_summary`` gathers every measure that applies to a release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import Options, validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.utility.il1 import il1
from sdckit.utility.moments import correlation_difference, mean_abs_correlation_difference, moment_differences
from sdckit.utility.propensity import pmse


def _correlation(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None) -> float:
    return mean_abs_correlation_difference(correlation_difference(original, released, columns))


def _pmse(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None) -> float:
    return pmse(original, released, columns).pmse


#: The scalar utility-loss measures by name: ``il1`` (IL1s, needs the record correspondence),
#: ``correlation`` (mean absolute difference of the Pearson correlations), ``pmse``.
MEASURES: dict[str, Callable[[pd.DataFrame, pd.DataFrame, Sequence[str] | None], float]] = {
    "il1": il1,
    "correlation": _correlation,
    "pmse": _pmse,
}


@validated(measure=Options(tuple(MEASURES)))
def utility_loss(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None, measure: str = "il1"
) -> float:
    """One number for the utility lost by a release: the measure named ``measure``."""
    return float(MEASURES[measure](original, released, columns))


@renamed_seed()
def utility_summary(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None,
    *, moments: pd.DataFrame | None = None, pmse_sample: int | None = None,
    seed: RandomState = None,
) -> dict[str, Any]:
    """Every utility measure that applies, as a JSON-ready dict.

    Keys: ``moments`` (per-column table as records), ``mean_abs_standardized_mean_difference``,
    ``mean_abs_log_var_ratio``, ``correlation`` (mean absolute Pearson difference), ``pmse``
    (:class:`~sdckit.utility.propensity.Propensity` as a dict) and ``il1`` (``None`` when the
    release does not have the original's records one to one). ``moments``: the
    :func:`~sdckit.utility.moments.moment_differences` of the same columns, if already computed.
    ``pmse_sample``, ``seed``: fit pMSE on samples of at most that many records of each
    (see :func:`~sdckit.utility.propensity.pmse`).
    """
    if moments is None:
        moments = moment_differences(original, released, columns)
    cols = list(moments.index)
    ratio = moments["var_ratio"].to_numpy(dtype=float)
    finite = np.isfinite(ratio) & (ratio > 0)
    aligned = len(original) == len(released)
    return {
        "columns": cols,
        "moments": moments.reset_index().to_dict(orient="records"),
        "mean_abs_standardized_mean_difference": float(moments["standardized_mean_difference"].abs().mean()),
        "mean_abs_log_var_ratio": float(np.abs(np.log(ratio[finite])).mean()) if finite.any() else None,
        "correlation": _correlation(original, released, cols) if len(cols) > 1 else 0.0,
        "pmse": pmse(original, released, cols, sample=pmse_sample, seed=seed).to_dict(),
        "il1": il1(original, released, cols) if aligned else None,
    }
