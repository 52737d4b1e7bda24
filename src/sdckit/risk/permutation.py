"""The permutation paradigm's results as risk figures (seeds 000 and 001; DESIGN.md section 3).

A thin summary over :func:`sdckit.permutation.assess` (one ranking for everything) and
:func:`sdckit.permutation.rank_displacement`: the maximum-knowledge intruder's verification
(the Hellinger distance between the permutation distances of the original records and of
random records, its null baseline and p-value), his linkage counts, the share of records whose
match is *not* plausibly random (``p_random`` below ``alpha``: a random record would rarely
match as closely) and the protector's rank displacement (seed 001, record-level measures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.permutation.verify import MAX_REPLICATES, N_RANDOM
from sdckit.core.params import Interval, IsNone, validated
from sdckit.permutation.rules import VERIFY_RULES
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.result import Result, plain


@dataclass(frozen=True)
class PermutationRisk(Result):
    """Summary of the permutation-paradigm assessment of a release.

    Attributes
    ----------
    hellinger, hellinger_null, p_value : float
        The verification's Hellinger distance H(P, Q), its null baseline and p-value.
    null : str
        The null model of the random records ("copula" or "independent").
    original_distribution, random_distribution : Series
        P and Q: relative frequencies of the permutation distance, indexed by distance.
    p_random : Series
        Per original record: share of random records matching at least as closely.
    alpha : float
        Level under which a record's match counts as not plausibly random.
    dataset_distance : int
        The data-set-level permutation distance (Definition 2).
    linkage : dict or None
        The intruder's linkage counts ``correct``, ``multiple``, ``wrong``,
        ``released_matched_by_several``, ``released_unmatched`` (None when the release has
        other records than the original, so that no true correspondence exists).
    displacement : Series or None
        Per original record, the rank displacement ``max_j |rank(x_ij) - rank(y_ij)|``.
    p_value_se : float
        Monte-Carlo (binomial) standard error of the p-value.
    sampled : int or None
        Original records the linkage and verification were computed on, when a sample.
    verdict : str
        The verification's sequential test at ``alpha``: ``"deniable"``, ``"flagged"`` or
        ``"borderline"`` (its replicate budget could not decide; DESIGN.md section 3).
    p_value_low, p_value_high : float
        Exact (Clopper-Pearson) 99% interval of the p-value.
    replicates : int
        Replicates the sequential test drew.
    """

    hellinger: float
    hellinger_null: float
    p_value: float
    null: str
    original_distribution: pd.Series
    random_distribution: pd.Series
    p_random: pd.Series
    alpha: float
    dataset_distance: int
    linkage: dict[str, int] | None
    displacement: pd.Series | None
    p_value_se: float = 0.0
    sampled: int | None = None
    verdict: str = "borderline"
    p_value_low: float = 0.0
    p_value_high: float = 1.0
    replicates: int = 0

    @property
    def excess_hellinger(self) -> float:
        """How far H exceeds what a release carrying no link would give (its null baseline)."""
        return self.hellinger - self.hellinger_null

    @property
    def share_not_random(self) -> float:
        """Share of original records whose match is not plausibly random (p_random < alpha)."""
        return float((self.p_random < self.alpha).mean())

    @property
    def plausibly_deniable(self) -> bool:
        """The verification's sequential test decided that its p-value is above ``alpha``
        (``verdict == "deniable"``; a borderline verdict is not deniable)."""
        return self.verdict == "deniable"

    def to_dict(self) -> dict[str, Any]:
        """The headline figures and the two distance distributions (not the per-record series)."""
        return plain({
            "hellinger": self.hellinger, "hellinger_null": self.hellinger_null,
            "excess_hellinger": self.excess_hellinger, "p_value": self.p_value,
            "p_value_se": self.p_value_se, "sampled": self.sampled, "null": self.null,
            "alpha": self.alpha, "plausibly_deniable": self.plausibly_deniable,
            "verdict": self.verdict, "p_value_interval": [self.p_value_low, self.p_value_high],
            "replicates": self.replicates,
            "share_not_random": self.share_not_random, "dataset_distance": self.dataset_distance,
            "linkage": self.linkage,
            "original_distribution": {int(k): float(v) for k, v in self.original_distribution.items()},
            "random_distribution": {int(k): float(v) for k, v in self.random_distribution.items()},
        })

    def summary(self) -> list[tuple[str, str]]:
        """The verification's figures and verdict."""
        return [("Hellinger distance H(P, Q)", f"{self.hellinger:.3f}"),
                ("null baseline of H", f"{self.hellinger_null:.3f}"),
                ("p-value (99% interval; replicates)",
                 f"{self.p_value:.3f} ({self.p_value_low:.3f}-{self.p_value_high:.3f}; {self.replicates})"),
                (f"verdict at {self.alpha:g}", self.verdict),
                ("records whose match is not plausibly random", f"{self.share_not_random:.1%}"),
                ("data-set-level permutation distance", str(self.dataset_distance))]


#: The linkage counts copied from :class:`sdckit.permutation.Linkage`.
LINKAGE_COUNTS = ("correct", "multiple", "wrong", "released_matched_by_several", "released_unmatched")


@renamed_seed()
@validated(null=VERIFY_RULES["null"], n_random=VERIFY_RULES["n_random"], n_null=VERIFY_RULES["n_null"],
           alpha=VERIFY_RULES["alpha"], sample=[IsNone(), Interval(int, 2, None)],
           max_batches=[IsNone(), VERIFY_RULES["max_batches"]], max_replicates=VERIFY_RULES["max_replicates"])
def permutation_risk(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    truth: Any = None,
    schema: Any = None,
    null: str = "copula",
    n_random: int = N_RANDOM,
    n_null: int = 50,
    alpha: float = 0.05,
    sample: int | None = None,
    max_batches: int | None = None,
    max_replicates: int = MAX_REPLICATES,
    seed: RandomState = None,
    progress: Callable[[int, int, str], Any] | None = None,
) -> PermutationRisk:
    """Verification, intruder linkage and rank displacement of a release, summarised.

    Parameters
    ----------
    columns : sequence of str, optional
        Columns to assess (numeric, date or ordinal); default: every column the two share.
    truth, schema, null, n_random, n_null, sample, max_batches, max_replicates, progress
        As in :func:`sdckit.permutation.assess`.
    alpha : float in (0, 1)
        Level for "not plausibly random" (per record) and of the verification's verdict.
    seed : int or Generator
        Seeds ties and the random records.
    """
    from sdckit.permutation import assess, rank_displacement

    rng = as_generator(seed, secret=False)
    result = assess(original, released, columns, truth=truth, null=null, n_random=n_random,
                    n_null=n_null, sample=sample, max_batches=max_batches, alpha=alpha,
                    max_replicates=max_replicates, schema=schema,
                    seed=rng, progress=progress)
    ver = result.verification
    linkage = displacement = None
    if result.linkage is not None:
        linkage = {name: int(getattr(result.linkage, name)) for name in LINKAGE_COUNTS}
        disp = rank_displacement(original, released, truth, list(result.columns), schema=schema, seed=rng)
        displacement = disp["displacement"].astype(np.int64)
    return PermutationRisk(
        hellinger=float(ver.hellinger), hellinger_null=float(ver.hellinger_null),
        p_value=float(ver.p_value), null=ver.null,
        original_distribution=ver.original_distribution, random_distribution=ver.random_distribution,
        p_random=ver.records["p_random"], alpha=float(alpha), dataset_distance=int(result.dataset_distance),
        linkage=linkage, displacement=displacement, p_value_se=float(ver.p_value_se),
        sampled=result.sampled, verdict=ver.verdict, p_value_low=float(ver.p_value_low),
        p_value_high=float(ver.p_value_high), replicates=int(ver.replicates),
    )
