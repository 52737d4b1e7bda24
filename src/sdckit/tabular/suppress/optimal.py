"""``method="optimal"``: the exact model of Fischetti & Salazar (2001), "Solving the cell
suppression problem on tabular data with linear constraints", *Management Science* 47(7),
1008-1027: binary y_i (cell i suppressed), minimise sum w_i y_i, and for every primary cell p and
each direction the attacker LP  max/min z_p  s.t.  A z = 0,  -LB_i y_i <= z_i <= UB_i y_i  must
reach the upper/lower protection level. Its dual gives the "capacity" cuts
sum_i (UB_i d_i^- + LB_i d_i^+) y_i >= level (section 3), strengthened by capping each
coefficient at the level; they are added lazily to a master MILP solved by HiGHS until no
attacker LP is violated (:mod:`sdckit.tabular.cutloop`, which also adds the rows "no cell
suppressed alone in an equation" that every optimal pattern satisfies).
"""

from __future__ import annotations

import numpy as np

from sdckit.tabular.cutloop import Limits, branch_and_cut, cpu_time
from sdckit.tabular.suppress import limits
from sdckit.tabular.suppress.problem import SuppressionProblem


def solve_optimal(prob: SuppressionProblem, y0: np.ndarray, start: float, time_limit: float
                  ) -> tuple[np.ndarray, bool, float | None, int]:
    """Branch-and-cut in the manner of Fischetti & Salazar (2001) (:mod:`sdckit.tabular.cutloop`)
    warm-started from the heuristic's pattern with its redundant secondaries removed (``fast``
    without its polish: the master's first incumbent, so the search never returns a costlier
    pattern and prunes from the start); each integer point the attacker refutes is completed by
    the flow heuristic into a safe pattern (upper bound). Returns (pattern, proved optimal,
    lower bound, rounds)."""
    deadline = None if not np.isfinite(time_limit) else start + time_limit
    best = prob.drop_redundant(prob.flow_protect(y0), lp_budget=limits.REDUNDANCY_LPS,
                               deadline=None if deadline is None else start + 0.5 * time_limit)
    y, proved, lower, rounds = branch_and_cut(prob, y0, best, Limits(deadline=deadline), lambda y: complete(prob, y))
    if not proved:  # the best pattern may come from a completion: drop what it does not need
        cleaned = prob.drop_redundant(prob.flow_protect(y), deadline=None if deadline is None
                                      else cpu_time() + 0.1 * time_limit)
        y = min((cleaned, y), key=lambda p: float(prob.w @ p))
    return y, proved, lower, rounds


def complete(prob: SuppressionProblem, y: np.ndarray) -> np.ndarray:
    """A safe pattern containing ``y``: the flow heuristic with ``y``'s cells free."""
    return prob.flow_protect(y)
