"""IL1: mean absolute deviation between original and released values, scaled per attribute.

Seed 002 section 4.6.3 measures information loss of perturbative masking by how far each
released value lies from its original. The plain relative deviation ``|x - y| / |x|`` breaks
on zeros and near-zero values (it is unbounded there, and common in income data), so sdckit
uses the scaled form IL1s of Yancey, Winkler & Creecy (2002), as sdcMicro does::

    IL1s = 1/(n m) * sum_j sum_i |x_ij - y_ij| / (sqrt(2) * S_j)

where ``S_j`` is the standard deviation (ddof=1) of original attribute j. The sqrt(2) makes
IL1s about 0.8 for a release whose values are independent draws from the original's
distribution (E|X - X'| = 2 S / sqrt(pi) for normal data). A constant attribute (S_j = 0)
is scaled by 1 instead. The measure needs the record correspondence: row i of the release
must be the masked version of row i of the original.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.arrays import safe_scale
from sdckit.utility.columns import numeric_pair


def il1_columns(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.Series:
    """IL1s of each column (the mean over records of the scaled absolute deviation)."""
    cols, x, y = numeric_pair(original, released, columns, owner="il1", aligned=True, min_records=2)
    scale = np.sqrt(2.0) * safe_scale(x.std(axis=0, ddof=1))
    return pd.Series((np.abs(x - y) / scale).mean(axis=0), index=pd.Index(cols, name="column"), name="il1")


def il1(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str] | None = None) -> float:
    """IL1s over all cells (see the module docstring); 0 for an unchanged release.

    Examples
    --------
    >>> x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> y = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 7.0]})
    >>> round(il1(x, y), 6)   # 2 / (5 * sqrt(2) * sqrt(2.5)) = 2 / (5 sqrt 5)
    0.178885
    """
    return float(il1_columns(original, released, columns).mean())
