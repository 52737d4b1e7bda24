"""A report's verdict on its release: one value that the report's summary, ``sdckit protect``'s
verdict line and its ``--fail-unsafe`` exit status all read (kept light: the command line imports
it without the measures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sdckit.core.result import Result

if TYPE_CHECKING:
    from sdckit.risk.permutation import PermutationRisk

__all__ = ["BORDERLINE", "DENIABLE", "DP_CLAIMED", "NOT_ASSESSED", "NOT_DENIABLE", "SAFE_STATES", "Verdict", "verification_state"]

#: The states of a report's verdict on its release. Only a plausibly deniable release is shown
#: safe by its report; every other state (the verification flags it, it was not computed, or the
#: release claims differential privacy and the report measures nothing) is not.
DENIABLE = "plausibly deniable"
NOT_DENIABLE = "NOT plausibly deniable"
BORDERLINE = "borderline (undecided within the replicate budget)"
NOT_ASSESSED = "not assessed"
DP_CLAIMED = "differentially private"
SAFE_STATES = frozenset({DENIABLE})


@dataclass(frozen=True)
class Verdict(Result):
    """What a report concludes about its release, as its summary states it.

    Attributes
    ----------
    state : str
        One of :data:`DENIABLE`, :data:`NOT_DENIABLE`, :data:`BORDERLINE` (the sequential test could
        not decide within its replicate budget; not safe), :data:`NOT_ASSESSED`, :data:`DP_CLAIMED`.
    text : str
        The summary's "verification" line, e.g. ``"plausibly deniable (p = 0.430 > alpha = 0.05)"``.
    """

    state: str
    text: str

    @property
    def safe(self) -> bool:
        """Whether the report shows the release safe (plausibly deniable); any other state is not."""
        return self.state in SAFE_STATES

    def to_dict(self) -> dict[str, Any]:
        """The state, the text and whether the release is shown ``safe``."""
        return {**super().to_dict(), "safe": self.safe}


def verification_state(risk: PermutationRisk) -> str:
    """The verdict state of the permutation verification (its sequential test's ``"deniable"``,
    ``"flagged"`` or ``"borderline"``): the one place a report reads it."""
    return {"deniable": DENIABLE, "flagged": NOT_DENIABLE}.get(risk.verdict, BORDERLINE)
