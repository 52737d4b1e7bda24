"""Information-loss and utility measures (seed 002 section 4.6.3; seed 004 section III).

* :func:`moment_differences`, :func:`quantile_differences`, :func:`correlation_difference` —
  how the released distribution differs from the original one;
* :func:`il1` — IL1s, the scaled mean absolute deviation of released from original values;
* :func:`pmse` — propensity-score mean squared error (logistic regression or a tree);
* :func:`categorical_precision`, :func:`numerical_precision`, :func:`discernibility` — for
  generalized (k-anonymous) data;
* :func:`utility_loss`, :func:`utility_summary` — one number, or everything, for a release.
"""

from sdckit.core.lazy import lazy_exports

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

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "MEASURES": "sdckit.utility.summary",
    "Propensity": "sdckit.utility.propensity",
    "categorical_precision": "sdckit.utility.precision",
    "correlation_difference": "sdckit.utility.moments",
    "discernibility": "sdckit.utility.precision",
    "il1": "sdckit.utility.il1",
    "il1_columns": "sdckit.utility.il1",
    "mean_abs_correlation_difference": "sdckit.utility.moments",
    "moment_differences": "sdckit.utility.moments",
    "numerical_precision": "sdckit.utility.precision",
    "pmse": "sdckit.utility.propensity",
    "quantile_differences": "sdckit.utility.moments",
    "utility_loss": "sdckit.utility.summary",
    "utility_summary": "sdckit.utility.summary",
})
