"""The parameter rules of the permutation paradigm's public functions, in a module that imports
neither numpy nor scipy: a recipe checks its report settings with them before any data is read,
also when it writes no report (issue 28 item 4, start-up). The functions declare them with
:func:`sdckit.core.params.validated` (issue 29 item 3)."""

from __future__ import annotations

from sdckit.core.params import Interval, IsNone, Options

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

#: How ties of the released data are ranked (:func:`sdckit.core.ranks.ranks`): randomly, the
#: paper's rule, or by order of appearance.
TIES_RULE = Options(("random", "first"))

#: The rules of the random set ``T`` a data subject draws too (:func:`~sdckit.permutation.verify_subject`).
RANDOM_SET_RULES = {name: VERIFY_RULES[name] for name in ("null", "n_random", "exhaustive_limit")}

#: The rules of :func:`~sdckit.permutation.verify_linkage` and :func:`~sdckit.permutation.assess`
#: (``n_null`` and ``max_batches`` are kept for compatibility and may be None).
VERIFY_PARAMETERS = {
    **VERIFY_RULES,
    "n_null": [IsNone(), VERIFY_RULES["n_null"]],
    "max_batches": [IsNone(), VERIFY_RULES["max_batches"]],
    "ties": TIES_RULE,
}

#: Fewest records a sample of originals or of record pairs may have (the measures need 2).
MIN_SAMPLE = 2
