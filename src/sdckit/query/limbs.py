"""Exact sums of floats as integer limbs (numpy only): the table service's exact cell sums
(:mod:`sdckit.query.tablesums`) and the cube's exact sums of squares (:mod:`sdckit.query.squares`)
are added up as limbs and rounded once to float64, so any order gives the same number."""

from __future__ import annotations

import math

import numpy as np

from sdckit.core.errors import DataError

#: Bits per limb of the exact sums: a limb's sum over 2**33 records stays below 2**53, exact in
#: the float64 of :func:`numpy.bincount`.
LIMB = 20
#: Most limbs (the values' range of magnitudes: 16 x 20 bits = 2**320 between the smallest
#: bit of the smallest value and the largest value).
MAX_LIMBS = 16


def exact_limbs(x: np.ndarray, index: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Per cell ``0 .. size-1`` (``index`` gives each value's cell) the exact sum of the values
    ``x`` as limbs ``(size, L)`` with ``sum = sum_k limbs[:, k] * 2**(LIMB*k + exponent)``; and
    ``exponent`` (the smallest bit of any value)."""
    mant, exp = np.frexp(np.abs(x))  # |x| = mant * 2**exp, mant in [0.5, 1) or 0
    m = (mant * 2.0 ** 53).astype(np.int64)  # exact: a double has 53 bits
    e = exp.astype(np.int64) - 53
    nz = m != 0
    if not nz.any():
        return np.zeros((size, 1), dtype=np.int64), 0
    low = int(e[nz].min())
    shift = np.where(nz, e - low, 0)
    limbs_needed = -(-(53 + int(shift.max())) // LIMB)
    if limbs_needed > MAX_LIMBS:
        raise DataError(f"The values span more than 2**{LIMB * MAX_LIMBS} between the smallest and the largest "
                        "(exact sums are kept): round the column.")
    sign = np.where(x < 0, -1, 1)
    mask = (1 << LIMB) - 1
    out = np.zeros((size, limbs_needed), dtype=np.int64)
    for k in range(limbs_needed):
        r = LIMB * k - shift  # limb k holds bits r .. r + LIMB - 1 of m (r < 0: m moved up by -r)
        right = np.right_shift(m, np.clip(r, 0, 63)) & mask
        left = np.left_shift(m & ((1 << np.clip(LIMB + r, 0, LIMB)) - 1), np.clip(-r, 0, LIMB)) & mask
        part = np.where(r >= 0, np.where(r < 53, right, 0), np.where(-r < LIMB, left, 0))
        out[:, k] = np.rint(np.bincount(index, weights=(sign * part).astype(float), minlength=size))
    return out, low


def limbs_to_float(limbs: np.ndarray, exponent: int) -> np.ndarray:
    """The sums the limbs hold, each the exact sum rounded once to float64."""
    total = np.zeros(limbs.shape[0], dtype=object)
    for k in range(limbs.shape[1]):
        total = total + (limbs[:, k].astype(object) << (LIMB * k))
    return np.array([math.ldexp(float(t), exponent) for t in total], dtype=float)
