"""The maximum-knowledge intruder's record linkage (seed 000 section 5.1, Definition 3, Table 5).

The intruder knows ``X`` and ``Y``; he reverse-maps ``Y`` to ``Z`` (Algorithm 1) and links
each original record to its matches in ``Z`` by Algorithm 2 with ``Z`` in place of ``Y``. The
value of ``Z_j`` closest to ``x_j`` is ``x_j`` itself, so ``r_j`` is the (lowest) rank of
``x_j`` among the values of ``Z_j``; the rank vectors of ``Z`` are those of ``Y``.
The protector, who knows the true correspondence, counts the outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.permutation.columns import RankSpace, SchemaLike, check_truth, rank_space
from sdckit.permutation.distance import Progress, distances_and_matches
from sdckit.core.result import Result
from sdckit.permutation.rules import TIES_RULE


@dataclass(frozen=True)
class Linkage(Result):
    """Outcome of :func:`intruder_linkage` (the protector's view of Table 5).

    Attributes
    ----------
    records : DataFrame
        Per original record: ``distance``, ``matches`` (0-based released positions),
        ``truth`` (its true released position) and ``outcome``: ``"correct"`` (one match, the
        true record), ``"multiple"`` (several matches) or ``"wrong"`` (one match, another record).
    correct, multiple, wrong : int
        How many original records have each outcome.
    multiple_with_true : int
        Of the ``multiple`` records, how many have the true record among their matches.
    released_matched_by_several : int
        Released records that are matches of two or more original records.
    released_unmatched : int
        Released records that are the match of no original record.
    """

    records: pd.DataFrame
    correct: int
    multiple: int
    wrong: int
    multiple_with_true: int
    released_matched_by_several: int
    released_unmatched: int

    @property
    def correct_rate(self) -> float:
        """Share of original records linked correctly and uniquely."""
        return self.correct / len(self.records)


def intruder_query(space: RankSpace, rows: np.ndarray | None = None) -> np.ndarray:
    """The intruder's ``r_j``: rank in ``Z_j`` of the value closest to ``x_j`` (of the original
    records at positions ``rows``, default all)."""
    return space.ranks_in(space.z_sorted, space.x if rows is None else space.x[rows])


def linkage_from(space: RankSpace, truth: Any, progress: Progress = None,
                 rows: np.ndarray | None = None) -> Linkage:
    """:class:`Linkage` of the records of ``space`` (shared by :func:`intruder_linkage`), or of the
    original records at positions ``rows`` only (a sample: the counts are then the sample's)."""
    true_pos = check_truth(truth, len(space.x), len(space.y))
    index = space.original_index
    if rows is not None:
        true_pos, index = true_pos[rows], index[rows]
    dist, matches = distances_and_matches(space, intruder_query(space, rows), progress, "linking")
    count = np.fromiter((len(t) for t in matches), dtype=np.int64, count=len(matches))
    first = np.fromiter((t[0] for t in matches), dtype=np.int64, count=len(matches))
    single = count == 1
    outcome = np.where(~single, "multiple", np.where(first == true_pos, "correct", "wrong"))
    several = np.flatnonzero(~single).tolist()
    with_true = sum(int(true_pos[i]) in matches[i] for i in several)
    flat = np.concatenate([first[single], np.fromiter(
        (j for i in several for j in matches[i]), dtype=np.int64)])
    hits = np.bincount(flat, minlength=len(space.y))
    records = pd.DataFrame({"distance": dist}, index=index)
    records["matches"] = pd.Series(matches, dtype=object).to_numpy()
    records["truth"] = true_pos
    records["outcome"] = outcome
    return Linkage(
        records=records,
        correct=int((outcome == "correct").sum()),
        multiple=int((~single).sum()),
        wrong=int((outcome == "wrong").sum()),
        multiple_with_true=int(with_true),
        released_matched_by_several=int((hits >= 2).sum()),
        released_unmatched=int((hits == 0).sum()),
    )


@renamed_seed()
@validated(ties=TIES_RULE)
def intruder_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    truth: Any = None,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    progress: Progress = None,
) -> Linkage:
    """Link every original record as the maximum-knowledge intruder does (seed 000 §5.1).

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y``.
    columns, schema, ties, seed, progress
        As in :func:`~sdckit.permutation.permutation_distances`.
    truth : array of int, optional
        The released position of each original record; default: row ``i`` is row ``i``.

    Returns
    -------
    Linkage
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    return linkage_from(space, truth, progress)
