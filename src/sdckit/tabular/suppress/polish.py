"""The polish of ``method="fast"`` on small tables: a few branch-and-cut rounds of the exact model
(:mod:`sdckit.tabular.suppress.optimal`) started from the flow heuristic's pattern, under work
limits (:mod:`sdckit.tabular.suppress.limits`), then the redundant secondaries published again."""

from __future__ import annotations

import numpy as np

from sdckit.tabular.cutloop import Limits, branch_and_cut
from sdckit.tabular.suppress import limits
from sdckit.tabular.suppress.optimal import complete
from sdckit.tabular.suppress.problem import SuppressionProblem


def polish(prob: SuppressionProblem, y0: np.ndarray, y: np.ndarray, deadline: float, end: float,
           work: bool = True) -> np.ndarray:
    """Improve the heuristic's safe pattern ``y`` by a few branch-and-cut rounds on the exact
    model (Fischetti & Salazar 2001, the loop of ``method="optimal"`` under work limits when
    ``work``, and until ``deadline`` in any case), then publish again, until ``end``, what the
    best pattern does not need; never costlier than ``y``. Deadlines in :func:`cpu_time`."""
    work_limits = (Limits(deadline=deadline, int_rounds=limits.POLISH_ROUNDS, nodes=limits.POLISH_NODES,
                          lp_rounds=limits.POLISH_LP_ROUNDS)
                   if work else Limits(deadline=deadline))
    best, proved, _, _ = branch_and_cut(prob, y0, y, work_limits, lambda z: complete(prob, z))
    if proved:
        return best
    cleaned = prob.drop_redundant(prob.flow_protect(best), deadline=end,
                                  lp_budget=limits.REDUNDANCY_LPS if work else None)
    return min((cleaned, best, y), key=lambda p: float(prob.w @ p))
