"""Numerical tolerances of the tabular methods, relative to a table's largest |value|.

The LPs (HiGHS) work on 0/±1 equations, so their errors are absolute and of the order of the
floating-point error of the table's sums (~1e-16 x the largest value), far below these margins.
Tolerances relative to the largest value keep a large table's small cells meaningful: with
values up to 4e8, an audit tolerance of 1e-7 x 4e8 = 40 would exceed the levels (10% of cells
of value 30) it is meant to check; 1e-10 x 4e8 = 0.04 does not.
"""

from __future__ import annotations

import numpy as np

#: An interval may fall short of a protection level by this (x scale) and still protect.
AUDIT_TOL = 1e-10
#: Protection levels below this (x scale), zero included, are raised to it: the intruder's
#: interval must have positive width, larger than the audit's tolerance ("sliding protection").
LEVEL_FLOOR = 1e-9
#: The slack an equation keeps beyond the one its true values leave (x scale): float sums.
EQUATION_SLACK = 1e-12


def value_scale(values: np.ndarray) -> float:
    """The largest |value|, at least 1: the unit of the relative tolerances above."""
    values = np.asarray(values, float)
    return max(float(np.abs(values).max()) if len(values) else 1.0, 1.0)
