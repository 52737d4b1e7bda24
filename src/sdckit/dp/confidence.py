"""Alpha-confident k-anonymity: suppress the records the noise left too recognisable
(seed 004 section V-C).

After per-class Laplace noise of scale ``b`` an adversary holding the original
epsilon-quasis can draw, around each released value ``y``, the interval that holds the original
value with probability ``alpha``: ``P(|Y - x| <= r) = 1 - exp(-r/b) = alpha`` gives
``r = b ln(1/(1 - alpha))``. The number ``c`` of originals of the record's class inside that
interval is how many people the record can be confused with. Alpha-confident k-anonymity
suppresses the records with ``0 < c < k`` — records with ``c = 0`` were pushed so far out by the
noise that they point at nobody, and are kept (the paper's choice; ``keep_outlying=False``
suppresses them too) — and then every class left with fewer than ``k`` records.

With m epsilon-quasis each column j gets the radius at confidence ``alpha**(1/m)`` (the noises
are independent, so the box of the m intervals holds the original record with probability
``alpha``), and ``c`` counts the originals inside the box. For one column this is exactly the
paper's rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sdckit.core.errors import DataError
from sdckit.core.params import Boolean, Interval, check_param
from sdckit.core.result import Result, plain
from sdckit.dp.mechanisms import CONFIDENCE, confidence_radius
from sdckit.dp.measures import as_matrix, class_codes, count_within, record_scales


@dataclass(frozen=True)
class ConfidenceSuppression(Result):
    """Which records alpha-confident k-anonymity suppresses, and why.

    ``suppressed`` (bool per record), ``counts`` (originals inside each record's alpha-box),
    ``records`` (records suppressed for ``0 < c < k``), ``classes`` (classes suppressed whole)
    and ``total`` (records suppressed in all).
    """

    suppressed: np.ndarray
    counts: np.ndarray
    records: int
    classes: int

    @property
    def total(self) -> int:
        return int(self.suppressed.sum())

    def to_dict(self) -> dict[str, Any]:
        """The counts of suppressed records (not the per-record arrays)."""
        return plain({"records": self.records, "classes": self.classes, "total": self.total})

    def summary(self) -> list[tuple[str, str]]:
        """Records suppressed one by one, classes suppressed whole, and in all."""
        return [("records suppressed (0 < c < k)", f"{self.records:,}"),
                ("classes suppressed whole", f"{self.classes:,}"), ("records suppressed in all", f"{self.total:,}")]


def confidence_suppression(
    original: Any,
    released: Any,
    classes: Any,
    epsilon: float,
    alpha: float,
    k: int,
    keep_outlying: bool = True,
) -> ConfidenceSuppression:
    """The records alpha-confident k-anonymity suppresses (seed 004 section V-C).

    Parameters
    ----------
    original, released : arrays of shape (n,) or (n, m)
        Epsilon-quasis before and after the per-class noise, row i of each the same record.
    classes : array of shape (n,)
        Equivalence-class label of each record.
    epsilon : float > 0
        The epsilon the noise was drawn with (split over the m columns as in
        :func:`sdckit.dp.measures.record_scales`); with the class diameters it fixes the scale.
    alpha : float in (0, 1)
        Confidence of the interval (the paper uses 0.99).
    k : int >= 2
        The k of k-anonymity to keep.
    keep_outlying : bool
        Keep records whose interval holds no original (the paper's choice).
    """
    check_param("confidence_suppression", "alpha", alpha, CONFIDENCE)
    check_param("confidence_suppression", "k", k, Interval(int, 2, None))
    check_param("confidence_suppression", "keep_outlying", keep_outlying, Boolean())
    x = as_matrix(original, "original")
    y = as_matrix(released, "released")
    if x.shape != y.shape:
        raise DataError(f"original and released must have the same shape; got {x.shape} and {y.shape}.")
    codes = class_codes(classes, len(x))
    radius = confidence_radius(record_scales(x, codes, epsilon), alpha ** (1.0 / x.shape[1]))
    # Within a class the radius is the same for every record: divide by it and count the
    # originals in the unit Chebyshev ball. A zero radius means a constant column with no noise.
    unit = np.where(radius > 0, radius, 1.0)
    counts = count_within(y / unit, x / unit, codes, np.ones(len(x)))
    risky = counts < k
    if keep_outlying:
        risky &= counts > 0
    size = np.bincount(codes)
    left = size - np.bincount(codes, weights=risky, minlength=len(size)).astype(np.int64)
    whole = (left < k) & (left > 0)
    suppressed = risky | whole[codes]
    return ConfidenceSuppression(suppressed, counts, int(risky.sum()), int(whole.sum()))
