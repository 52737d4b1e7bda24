"""Numerical tolerances of the tabular methods, and how the LPs are scaled so that HiGHS can
honour its own.

HiGHS decides feasibility and optimality to absolute tolerances (1e-7 by default) on the numbers
it is given. A table's values span many orders of magnitude (a cell of 30 beside a total of
2e11), so no single unit serves both: in the table's own units HiGHS must resolve 1e-7 beside
2e11 (relative 1e-18, below double precision; it ends with status 'Unknown'), and in units of the
largest value its tolerance is 2e4, far above a small cell's level of 3. The LPs are therefore
written in *deviations from the true values* (the equations' right-hand sides become ~0) and
scaled twice over:

- per connected component of the suppressed cells, by the largest |value| there (intervals of
  every suppressed cell; exact to about ``COARSE_BAND`` x that scale);
- per primary cell and side, by its protection level, with every deviation clipped at
  ``CLIP`` levels (a restriction of the intruder's problem, so a pattern proved safe there is
  safe; the flows and attacker LPs of suppression are scaled the same way). The audit's verdict
  on a primary whose interval lies within ``COARSE_BAND`` x scale of its level comes from this LP.

Tolerances relative to the largest |value| keep a large table's small cells meaningful: with
values up to 4e8, an audit tolerance of 1e-7 x 4e8 = 40 would exceed the levels (10% of cells
of value 30) it is meant to check; 1e-10 x 4e8 = 0.04 does not.
"""

from __future__ import annotations

import numpy as np

#: An interval may fall short of a protection level by this (x scale) and still protect ...
AUDIT_TOL = 1e-10
#: ... plus this fraction of the level itself (HiGHS's 1e-7 in units of the level, with room).
LEVEL_RTOL = 1e-6
#: Protection levels below this (x scale), zero included, are raised to it: the intruder's
#: interval must have positive width, larger than the audit's tolerance ("sliding protection").
LEVEL_FLOOR = 1e-9
#: The slack an equation keeps beyond the one its true values leave (x scale): float sums.
EQUATION_SLACK = 1e-12
#: An interval end found by the component-scaled LP within this (x the component's scale) of a
#: primary's level is checked again by the LP scaled by the level.
COARSE_BAND = 1e-6
#: In an LP scaled by a protection level, no deviation goes beyond this many levels.
CLIP = 1e3


def value_scale(values: np.ndarray) -> float:
    """The largest |value|, at least 1: the unit of the relative tolerances above."""
    values = np.asarray(values, float)
    return max(float(np.abs(values).max()) if len(values) else 1.0, 1.0)


def audit_tolerance(scale: float, level) -> np.ndarray:
    """How far an interval may fall short of ``level`` and still protect."""
    return AUDIT_TOL * scale + LEVEL_RTOL * np.asarray(level, float)
