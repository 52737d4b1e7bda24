"""Auditing of exact answers in the restricted mode (Chin & Ozsoyoglu; Denning's trackers).

Interface settled for the service (``sdckit.query.restricted`` calls it); the algorithm is
filled in by its own change.

The auditor keeps what one knowledge holder (an analyst, or all analysts together when collusion
is audited) has learned from answered queries, each given as the membership of the table's
records (privacy units) in the query set, a boolean vector over a fixed order of the records,
and refuses any new answer that would let a single record's confidential value (or its
membership) be derived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

QueryKind = Literal["count", "sum"]


@dataclass(frozen=True)
class Decision:
    """Whether a set of answers may be given, and why not (a sentence an analyst can act on)."""

    allowed: bool
    reason: str = ""


class Auditor:
    """What one knowledge holder has learned, and the check of a new answer against it.

    Parameters
    ----------
    n_records : int
        Number of records (privacy units) of the table; membership vectors have this length.
    min_query_set : int
        Query-set-size control k: a query set with fewer than k or more than n - k records is
        refused (Denning).
    """

    def __init__(self, n_records: int, min_query_set: int) -> None:
        self.n_records = int(n_records)
        self.min_query_set = int(min_query_set)

    def check(self, memberships: Sequence[np.ndarray], kind: QueryKind, column: str | None) -> Decision:
        """Decide whether the answers to these query sets (one per group of a GROUP BY, or one)
        may be given together, without recording them. ``column`` is the summed column
        (``None`` for COUNT)."""
        k = self.min_query_set
        for m in memberships:
            size = int(np.count_nonzero(m))
            if size < k or size > self.n_records - k:
                return Decision(False, f"the query set has fewer than {k} records or leaves fewer than {k} out (query-set-size control)")
        return Decision(True)

    def record(self, memberships: Sequence[np.ndarray], kind: QueryKind, column: str | None) -> None:
        """Remember answers that were given (after :meth:`check` allowed them)."""
