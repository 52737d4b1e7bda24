"""One call for the protector: every permutation-paradigm measure of a release (seed 000 §§2-5).

:func:`assess` ranks the data once and reports the data-set-level permutation distance and
variances (Definition 2), the rank correlations of reverse mapping (section 2), the intruder's
linkage counts (Table 5) and the verification of his linkages (section 5.2, with DESIGN.md's
corrections). ``sdckit assess`` and the HTML report are thin layers over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import Interval, IsNone, validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.core.result import Result
from sdckit.permutation.columns import SchemaLike, rank_space
from sdckit.permutation.distance import Progress, nearest_distances
from sdckit.permutation.intruder import Linkage, linkage_from
from sdckit.permutation.privacy import minimum_variances, window_variances
from sdckit.permutation.reverse import spearman_xz
from sdckit.permutation.rules import MIN_SAMPLE, VERIFY_PARAMETERS
from sdckit.permutation.sample import sample_pairs
from sdckit.permutation.verify import ALPHA, MAX_REPLICATES, N_RANDOM, RISK, Verification, verification_from


@dataclass(frozen=True)
class Assessment(Result):
    """Outcome of :func:`assess`.

    Attributes
    ----------
    columns : tuple of str
        The columns compared.
    n_original, n_released : int
        Record counts.
    dataset_distance : int
        ``min_x d(x)`` against the release (Definition 2).
    dataset_variances : Series
        Per column, the minimum window variance at ``dataset_distance``.
    rank_correlation : Series or None
        Spearman correlation of ``X_j`` and ``Z_j`` (``None`` when record counts differ).
    linkage : Linkage or None
        The intruder's linkage counts (``None`` when record counts differ and no truth given);
        with ``sampled``, the counts of the sampled original records.
    verification : Verification
        Hellinger distance, null baseline, p-value and per-record ``p_random`` (of the sampled
        original records when ``sampled``).
    sampled : int or None
        How many original records the linkage, the verification and the data-set-level figures
        were computed on, when that was a simple random sample (``None``: all).
    records : int or None
        With ``records=``: how many record pairs the whole assessment was computed on (a simple
        random sample of the release and its originals; ``n_original`` and ``n_released`` are
        the full counts). ``None``: on every record.
    """

    columns: tuple
    n_original: int
    n_released: int
    dataset_distance: int
    dataset_variances: pd.Series
    rank_correlation: pd.Series | None
    linkage: Linkage | None
    verification: Verification
    sampled: int | None = None
    records: int | None = None

    def summary(self) -> list[tuple[str, str]]:
        """Label/value pairs of the headline figures (for the CLI and the report)."""
        v = self.verification
        rows = [
            ("columns assessed", ", ".join(map(str, self.columns))),
            ("records (original / released)", f"{self.n_original} / {self.n_released}"),
            ("data-set-level permutation distance" + (" (minimum over the sample)" if self.sampled else ""),
             str(self.dataset_distance)),
        ]
        if self.records is not None:
            rows.append(("everything on a random sample of record pairs (the sub-release)",
                         f"{self.records} of {self.n_original}"))
        if self.sampled is not None:
            rows.append(("linkage, verification and distance on a random sample of originals",
                         f"{self.sampled} of {self.records or self.n_original}"))
        if self.linkage is not None:
            link = self.linkage
            rows += [
                ("intruder links: correct / multiple / wrong",
                 f"{link.correct} / {link.multiple} / {link.wrong}"),
                ("released records matched by several / none",
                 f"{link.released_matched_by_several} / {link.released_unmatched}"),
            ]
        rows += [
            (f"Hellinger distance H(P, Q) ({v.null} null)", f"{v.hellinger:.3f}"),
            ("null baseline of H", f"{v.hellinger_null:.3f}"),
            ("p-value (99% interval; replicates)",
             f"{v.p_value:.3f} ({v.p_value_low:.3f}-{v.p_value_high:.3f}; {v.replicates})"),
            (f"verdict at {v.alpha:g}", v.verdict),
            ("records whose match is not plausibly random (5%)", f"{v.nonrandom_share:.1%}"),
        ]
        return rows


@renamed_seed()
@validated(**VERIFY_PARAMETERS, sample=[IsNone(), Interval(int, MIN_SAMPLE, None)],
           records=[IsNone(), Interval(int, MIN_SAMPLE, None)])
def assess(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    truth: Any = None,
    null: str = "copula",
    n_random: int = N_RANDOM,
    exhaustive_limit: int = 1_000_000,
    n_null: int | None = None,
    max_batches: int | None = None,
    alpha: float = ALPHA,
    max_replicates: int = MAX_REPLICATES,
    risk: float = RISK,
    sample: int | None = None,
    records: int | None = None,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    progress: Progress = None,
) -> Assessment:
    """Every permutation-paradigm measure of a release, computed on one ranking.

    Parameters are those of :func:`~sdckit.permutation.intruder_linkage` and
    :func:`~sdckit.permutation.verify_linkage`, and

    sample : int, optional
        Link and verify only a simple random sample of this many original records (each
        against every released record) when there are more: the linkage counts and ``P`` are
        then the sample's, and the share of correct links has standard error
        ``sqrt(c (1 - c) / sample)`` for a share ``c`` (issue 17: the intruder's linkage grows as
        ``n log n`` with a large constant in many dimensions). The data-set-level distance and
        variances are then the minimum over the sampled records: an upper bound of the
        data set's (the summary says so).
    records : int, optional
        Bounded memory on large data (issue 28): when there are more than this many records,
        assess only a simple random sample of this many record pairs (row ``i`` of each; drawn
        from ``seed``'s generator, so reproducible), as the release of those records
        alone; ``sample`` then applies within it. Time and memory are those of ``records``
        records, whatever ``n``. Every figure is the sub-release's: ranks and distances are on
        its scale (about ``records / n`` of the whole's), and the p-value's Monte-Carlo error
        (``p_value_se``, the Clopper-Pearson interval) is that of the sub-release's test —
        exact as stated for it; the sub-release's p-value itself estimates the whole's with a
        sampling error that is not stated (see DESIGN.md section 3, "Scale").

    Returns
    -------
    Assessment
    """
    n_original, n_released = len(original), len(released)
    kept = None
    if records is not None:
        original, released, kept, seed = sample_pairs(original, released, records, truth=truth,
                                                              seed=seed)
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    rows = None
    if sample is not None and sample < len(space.x):
        rows = np.sort(space.rng.choice(len(space.x), size=sample, replace=False))
    r = space.ranks_in(space.y_sorted, space.x if rows is None else space.x[rows])
    dist = nearest_distances(space, r, progress, "distances")
    level = int(dist.min())
    variances = minimum_variances(pd.DataFrame(window_variances(space, r, level)), space.names)
    same_size = len(space.x) == len(space.y)
    correlation = spearman_xz(space) if same_size else None
    linkage = linkage_from(space, truth, progress, rows) if same_size or truth is not None else None
    original_d = None if linkage is None else linkage.records["distance"].to_numpy(np.int64)
    verification = verification_from(space, null=null, n_random=n_random,
                                     exhaustive_limit=exhaustive_limit, alpha=alpha,
                                     max_replicates=max_replicates, risk=risk, ties=ties,
                                     original_distances=original_d, rows=rows, progress=progress)
    return Assessment(
        columns=tuple(space.names), n_original=n_original, n_released=n_released,
        dataset_distance=level, dataset_variances=variances, rank_correlation=correlation,
        linkage=linkage, verification=verification, sampled=None if rows is None else len(rows),
        records=kept,
    )
