"""Exact sums of squared deviations for VAR_POP/STDDEV_POP (issue 32).

VAR_POP/STDDEV_POP measure, per cell, ``SUM(LEAST((x - m)**2, cap))`` of the clamped values ``x``
(``m`` the bounds' midpoint, ``cap`` :func:`~sdckit.query.generate.square_cap`). Summed in
double precision that sum depends on the order of the terms (DuckDB's threads, the cube's
grouping) once a partial sum passes 2**53. When the clamped values lie on a grid it is instead
computed exactly, as an integer, in the scan (:func:`~sdckit.query.generate.aggregate_sql`) and
in the cube (:mod:`sdckit.query.cube_moments`), and rounded once to a double at the end: both
paths then give the same double, the correctly rounded true sum.

The rule, for a bounded column ``[lo, hi]`` and ``b`` in :data:`GRID_BITS` (the smallest that
fits; checked once when the data is loaded, :func:`grid_bits`):

* every clamped value ``x`` is a multiple of ``2**-b`` (so ``X2 = x 2**(b+1)`` is an even integer,
  computed exactly in double precision and cast to an integer type);
* ``M = 2 m 2**b`` is an integer (``m`` the double midpoint) and so is ``C = cap 4**(b+1)``;
* then ``T = LEAST((X2 - M)**2, C)`` is an integer and ``T / 4**(b+1) = LEAST((x - m)**2, cap)``
  exactly: the same capping as the double expression, without its rounding (each term still lies
  in ``[0, cap]``);
* no overflow: ``(a 2**(b+1))**2 < 2**126`` (``a = max(hi - m, m - lo)`` bounds ``|x - m|``), and
  ``rows C < 2**126`` (the sum of at most ``rows`` terms each ``<= C``); the terms are BIGINT
  when ``|X2|``, ``|M|`` and ``(a 2**(b+1))**2`` are below 2**62, else HUGEINT, and DuckDB sums them
  as HUGEINT (it raises on an overflow rather than wrap).

A column that fails the rule keeps the double sum, which the cube does not answer (the scan does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.duckdb_session import quote_identifier
from sdckit.query.config import TableConfig
from sdckit.query.relnames import clamp_column, relation_name
from sdckit.query.limbs import LIMB, limbs_to_float

#: The finest grid checked: clamped values that are multiples of ``2**-FRACTION_BITS`` have exact
#: sums in the cube (:func:`~sdckit.query.cube.summable_columns`) and exact squares here.
FRACTION_BITS = 10
#: Candidate grids ``2**-b`` of the clamped values (integers, then the cube's 2**-10 grid).
GRID_BITS = (0, FRACTION_BITS)


@dataclass(frozen=True)
class ColumnGrid:
    """What one scan of the dp relation tells of a bounded column's clamped values: whether every
    one is an integer (``integral``) and a multiple of ``2**-FRACTION_BITS`` (``dyadic``; both
    ``None`` when there are no rows), and the sum of their magnitudes."""

    integral: bool | None
    dyadic: bool | None
    magnitude: float

    def fits(self, bits: int) -> bool:
        """Every clamped value is a multiple of ``2**-bits`` (``bits`` in :data:`GRID_BITS`)."""
        return (self.integral if bits == 0 else self.dyadic) in (True, None)


def column_grids(con: Any, table: TableConfig) -> dict[str, ColumnGrid]:
    """:class:`ColumnGrid` of each bounded column of ``table``, in one scan of its dp relation (read
    by both the cube's exact sums and the exact squares, so the data is loaded with one scan)."""
    columns = list(table.bounds)
    if not columns:
        return {}
    scale = float(2**FRACTION_BITS)
    parts = []
    for c in columns:
        v = quote_identifier(clamp_column(c))
        parts.append(f"bool_and({v} = floor({v})), bool_and({v} * {scale} = floor({v} * {scale})), SUM(abs({v}))")
    row = con.execute(f"SELECT {', '.join(parts)} FROM {quote_identifier(relation_name(table, 'dp'))}").fetchone()
    return {c: ColumnGrid(row[3 * i], row[3 * i + 1], 0.0 if row[3 * i + 2] is None else float(row[3 * i + 2]))
            for i, c in enumerate(columns)}


@dataclass(frozen=True)
class Scaling:
    """One column's integer squares on the grid ``2**-bits``: ``T = LEAST((X2 - midpoint)**2, cap)``."""

    bits: int
    midpoint: int
    cap: int
    sql_type: str

    @property
    def scale(self) -> int:
        """``4**(bits+1)``: an integer term over it is the squared deviation."""
        return 4 ** (self.bits + 1)


def scaling(lo: float, hi: float, m: float, cap: float, bits: int) -> Scaling | None:
    """The integer squares of a column with bounds ``[lo, hi]`` (double midpoint ``m``, ``cap``)
    on the grid ``2**-bits`` (module rule), or ``None`` when they are not exact integers."""
    two = 2 ** (bits + 1)
    midpoint, scaled_cap = Fraction(m) * two, Fraction(cap) * two * two
    if midpoint.denominator != 1 or scaled_cap.denominator != 1:
        return None
    widest = max(Fraction(hi) - Fraction(m), Fraction(m) - Fraction(lo)) * two
    value = max(abs(Fraction(lo)), abs(Fraction(hi))) * two
    limit = 62 if max(value, abs(midpoint)) < 2**62 and widest**2 < 2**62 else 126
    if limit == 126 and not (max(value, abs(midpoint)) < 2**125 and widest**2 < 2**126):
        return None
    return Scaling(bits, int(midpoint), int(scaled_cap), "BIGINT" if limit == 62 else "HUGEINT")


def grid_bits(con: Any, table: TableConfig, rows: int, midpoint_caps: dict[str, tuple[float, float]],
              grids: dict[str, ColumnGrid] | None = None) -> dict[str, int]:
    """Per bounded column of ``table`` whose squares are exact integers on its dp relation (``rows``
    rows; ``midpoint_caps`` each column's ``(m, cap)``), the smallest grid bits that fit;
    ``grids`` the relation's :func:`column_grids` when already read (else read here)."""
    grids = column_grids(con, table) if grids is None else grids
    out: dict[str, int] = {}
    for column, (lo, hi) in table.bounds.items():
        for bits in GRID_BITS:
            found = scaling(lo, hi, *midpoint_caps[column], bits)
            if found is not None and rows * found.cap < 2**126 and grids[column].fits(bits):
                out[column] = bits
                break
    return out


def exact_float(total: int, bits: int) -> float:
    """The squared deviations' sum from the integer sum of the terms: one rounding to a double
    (as :func:`~sdckit.query.limbs.limbs_to_float` rounds the cube's)."""
    return math.ldexp(float(total), -2 * (bits + 1))


def result_ints(values: Any) -> list[int]:
    """A result column of integer sums cast to VARCHAR (missing: 0) as Python ints."""
    missing = np.ma.getmaskarray(values).tolist()
    return [0 if m or v is None else int(v)
            for v, m in zip(np.asarray(np.ma.getdata(values), dtype=object).tolist(), missing)]


def exact_floats(values: Any, bits: int) -> np.ndarray:
    """:func:`exact_float` of each integer sum of a result column (:func:`result_ints`)."""
    return np.array([exact_float(v, bits) for v in result_ints(values)], dtype=float)


def to_limbs(totals: list[int]) -> np.ndarray:
    """Non-negative integers below 2**128 as rows of :data:`~sdckit.query.limbs.LIMB`-bit
    limbs (float64, low limb first), for :func:`~sdckit.query.limbs.limbs_to_float`: adding
    up to 2**33 such rows limb by limb in float64 is exact."""
    mask, count = (1 << LIMB) - 1, -(-128 // LIMB)
    return np.array([[(t >> (LIMB * i)) & mask for i in range(count)] for t in totals],
                    dtype=float).reshape(len(totals), count)


def limb_sums(limbs: np.ndarray, index: np.ndarray, size: int, bits: int) -> np.ndarray:
    """The squared deviations' sum per cell ``0 .. size-1`` of rows of ``limbs`` (:func:`to_limbs`)
    in the cells ``index``: exact integer sums rounded once to a double (:func:`exact_float`)."""
    summed = np.stack([np.bincount(index, weights=limbs[:, j], minlength=size) for j in range(limbs.shape[1])], axis=1)
    return limbs_to_float(np.rint(summed).astype(np.int64), -2 * (bits + 1))
