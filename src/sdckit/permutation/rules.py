"""The rules of the verification's settings (:mod:`sdckit.permutation.verify`), in a module that
imports neither numpy nor scipy: a recipe checks its report settings with them before any data
is read, also when it writes no report (issue 28 item 4, start-up)."""

from __future__ import annotations

from sdckit.core.params import Interval, Options

#: Null models of the verification's baseline.
NULLS = ("copula", "independent")

#: The rules of the verification's settings; the report, compare and tune check theirs with these.
VERIFY_RULES = {
    "null": Options(NULLS),
    "n_random": Interval(int, 2, None),  # half defines Q, half gives the null samples
    "exhaustive_limit": Interval(int, 0, None),
    "n_null": Interval(int, 1, None),
    "max_batches": Interval(int, 1, None),
    "alpha": Interval(float, 0, 1, closed="neither"),
    "max_replicates": Interval(int, 1, None),
    "risk": Interval(float, 0, 0.5, closed="neither"),
}
