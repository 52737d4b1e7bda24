"""What a distance-based linkage found (:class:`DistanceLinkage`) and which original each released
record truly is (:func:`true_originals`): shared by the Euclidean linkage
(:mod:`sdckit.risk.linkage`) and Gower's (:mod:`sdckit.risk.gower`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.result import Result, plain


@dataclass(frozen=True)
class DistanceLinkage(Result):
    """Result of distance-based record linkage.

    Attributes
    ----------
    rate : float
        Share of released records linked to their true original (ties credited fractionally).
    correct : float
        The same as a count.
    records : DataFrame
        One row per linked released record (its index): ``nearest`` (0-based position of the
        nearest original, the lowest one on ties), ``distance``, ``tied`` (originals at that
        distance) and ``credit`` (1/tied if the true original is among them, else 0).
    sampled : int or None
        How many released records were linked when the rate was estimated from a sample
        (``None``: every record was linked and ``rate`` is exact).
    standard_error : float
        Standard error of ``rate`` (0 when exact).
    """

    rate: float
    correct: float
    records: pd.DataFrame
    sampled: int | None = None
    standard_error: float = 0.0

    def to_dict(self) -> dict[str, float | int | None]:
        """The fields, with ``records`` as the number of linked records."""
        return plain({"rate": self.rate, "correct": self.correct, "records": len(self.records),
                      "sampled": self.sampled, "standard_error": self.standard_error})

    def summary(self) -> list[tuple[str, str]]:
        """The linkage rate, the correct links and the linked records."""
        rows = [("linkage rate", f"{self.rate:.4f}"), ("correct links", f"{self.correct:g}"),
                ("records linked", f"{len(self.records):,}")]
        if self.sampled is not None:
            rows.append(("standard error of the rate (sampled)", f"{self.standard_error:.4f}"))
        return rows


def true_originals(truth: Sequence[int] | np.ndarray | None, n_original: int, n_released: int) -> np.ndarray:
    """For each released record, the 0-based position of its true original (-1: none).

    ``truth`` follows sdckit.permutation's convention: for each original record, the 0-based
    position of its released version (-1 when it has none); ``None`` means row i is row i.
    """
    if truth is None:
        if n_original != n_released:
            raise DataError(
                f"The original has {n_original} records and the release {n_released}; give truth= "
                "(the released position of each original record) to say which record is which."
            )
        return np.arange(n_released)
    t = np.asarray(truth)
    if t.shape != (n_original,) or not np.issubdtype(t.dtype, np.integer):
        raise DataError(f"truth must be {n_original} integers (the released position of each original record); got shape {t.shape}, dtype {t.dtype}.")
    used = t[t >= 0]
    if (t < -1).any() or (used >= n_released).any() or len(np.unique(used)) != len(used):
        raise DataError(f"truth must hold distinct released positions in 0..{n_released - 1} (or -1 for none).")
    owner = np.full(n_released, -1)
    owner[used] = np.flatnonzero(t >= 0)
    return owner
