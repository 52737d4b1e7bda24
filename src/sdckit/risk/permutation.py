"""The permutation paradigm's results as risk figures (seeds 000 and 001; DESIGN.md section 3).

A thin summary over :mod:`sdckit.permutation`: the maximum-knowledge intruder's verification
(the Hellinger distance between the permutation distances of the original records and of
random records, its null baseline and p-value), his linkage counts, the share of records whose
match is *not* plausibly random (``p_random`` below ``alpha``: a random record would rarely
match as closely) and the protector's rank displacement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.params import Interval, check_param
from sdckit.core.random import RandomState, as_generator


@dataclass(frozen=True)
class PermutationRisk:
    """Summary of the permutation-paradigm assessment of a release.

    Attributes
    ----------
    hellinger, hellinger_null, p_value : float
        The verification's Hellinger distance, its null baseline and p-value.
    null : str
        The null model of the random records ("copula" or "independent").
    original_distribution, random_distribution : Series
        Relative frequencies of the permutation distance, indexed by distance.
    p_random : Series
        Per original record: share of random records matching at least as closely.
    alpha : float
        Level under which a record's match counts as not plausibly random.
    linkage : dict or None
        The intruder's linkage counts (None when the release has other records than the
        original, so that no true correspondence exists).
    displacement : Series or None
        Per original record, the rank displacement ``max_j |rank(x_ij) - rank(y_ij)|``.
    """

    hellinger: float
    hellinger_null: float
    p_value: float
    null: str
    original_distribution: pd.Series
    random_distribution: pd.Series
    p_random: pd.Series
    alpha: float
    linkage: dict[str, int] | None
    displacement: pd.Series | None

    @property
    def excess_hellinger(self) -> float:
        return self.hellinger - self.hellinger_null

    @property
    def share_not_random(self) -> float:
        """Share of original records whose match is not plausibly random (p_random < alpha)."""
        return float((self.p_random < self.alpha).mean())

    @property
    def plausibly_deniable(self) -> bool:
        return self.p_value > self.alpha

    def to_dict(self) -> dict[str, Any]:
        return {
            "hellinger": self.hellinger, "hellinger_null": self.hellinger_null,
            "excess_hellinger": self.excess_hellinger, "p_value": self.p_value, "null": self.null,
            "alpha": self.alpha, "plausibly_deniable": self.plausibly_deniable,
            "share_not_random": self.share_not_random, "linkage": self.linkage,
            "original_distribution": {int(k): float(v) for k, v in self.original_distribution.items()},
            "random_distribution": {int(k): float(v) for k, v in self.random_distribution.items()},
        }


#: The linkage counts copied from :class:`sdckit.permutation.Linkage` when it has them.
LINKAGE_COUNTS = ("correct", "multiple", "wrong", "released_multiple", "released_unmatched")


def permutation_risk(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    null: str = "copula",
    n_random: int = 20_000,
    n_null: int = 50,
    alpha: float = 0.05,
    random_state: RandomState = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> PermutationRisk:
    """Run the verification, the intruder's linkage and the rank displacement of a release.

    Parameters
    ----------
    columns : sequence of str, optional
        Columns to assess (numeric, date or ordinal); default: every column the two share.
    null, n_random, n_null : see :func:`sdckit.permutation.verify_linkage`.
    alpha : float in (0, 1)
        Level for "not plausibly random" (per record) and "plausibly deniable" (data set).
    progress : callable, optional
        ``progress(done, total, label)`` after each of the three steps.
    """
    from sdckit import permutation as perm

    check_param("permutation_risk", "alpha", alpha, Interval(float, 0, 1, closed="neither"))
    rng = as_generator(random_state)
    cols = list(columns) if columns is not None else [c for c in released.columns if c in original.columns]
    aligned = len(original) == len(released)
    total = 3 if aligned else 1
    ver = perm.verify_linkage(original[cols], released[cols], null=null, n_random=n_random,
                              n_null=n_null, random_state=rng)
    if progress is not None:
        progress(1, total, "verification")
    linkage = displacement = None
    if aligned:
        link = perm.intruder_linkage(original[cols], released[cols], random_state=rng)
        linkage = {name: int(getattr(link, name)) for name in LINKAGE_COUNTS if hasattr(link, name)}
        if progress is not None:
            progress(2, total, "intruder linkage")
        disp = perm.rank_displacement(original[cols], released[cols])
        displacement = _displacement_series(disp)
        if progress is not None:
            progress(3, total, "rank displacement")
    return PermutationRisk(
        hellinger=float(ver.hellinger), hellinger_null=float(ver.hellinger_null),
        p_value=float(ver.p_value), null=null,
        original_distribution=ver.original_distribution, random_distribution=ver.random_distribution,
        p_random=ver.records["p_random"], alpha=float(alpha), linkage=linkage, displacement=displacement,
    )


def _displacement_series(result: Any) -> pd.Series:
    """The per-record identity measure ``d_i`` out of ``rank_displacement``'s result."""
    if isinstance(result, pd.Series):
        return result.astype(np.int64)
    records = getattr(result, "records", result)
    for name in ("displacement", "distance", "d"):
        if name in records:
            return records[name].astype(np.int64)
    raise TypeError(f"unexpected rank_displacement result: {type(result).__name__}")
