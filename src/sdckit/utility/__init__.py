"""Information-loss and utility measures (seed 002 section 4.6.3; seed 004 section III).

* :func:`moment_differences`, :func:`quantile_differences`, :func:`correlation_difference` —
  how the released distribution differs from the original one;
* :func:`il1` — IL1s, the scaled mean absolute deviation of released from original values;
* :func:`pmse` — propensity-score mean squared error (logistic regression or a tree);
* :func:`categorical_precision`, :func:`numerical_precision`, :func:`discernibility` — for
  generalized (k-anonymous) data;
* :func:`utility_loss`, :func:`utility_summary` — one number, or everything, for a release.
"""

from sdckit.utility.il1 import il1, il1_columns
from sdckit.utility.moments import (
    correlation_difference,
    mean_abs_correlation_difference,
    moment_differences,
    quantile_differences,
)
from sdckit.utility.precision import categorical_precision, discernibility, numerical_precision
from sdckit.utility.propensity import Propensity, pmse
from sdckit.utility.summary import MEASURES, utility_loss, utility_summary

__all__ = [
    "MEASURES",
    "Propensity",
    "categorical_precision",
    "correlation_difference",
    "discernibility",
    "il1",
    "il1_columns",
    "mean_abs_correlation_difference",
    "moment_differences",
    "numerical_precision",
    "pmse",
    "quantile_differences",
    "utility_loss",
    "utility_summary",
]
