"""Ranks, ties and the nearest-value rank (DESIGN.md section 3).

Every method and measure that works with ranks — reverse mapping, permutation distance, rank
swapping, copula synthesis — takes them from here, so that one rule holds everywhere:

* ranks run ``1..n`` in ascending order;
* ties are broken at random (``ties="random"``, the paper's rule; seed 000 section 2) — by
  random keys drawn per logical chunk from a 128-bit key the caller's generator gives (only
  when there are ties), so an out-of-core sort draws the same keys (:func:`tie_keys`) — or by
  order of appearance (``ties="first"``, for exact reproducibility in tests);
* numeric, date and ordinal columns can be ranked; ordinal columns by their schema's category
  order; a nominal column only when an order is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.core.random import RandomState, as_generator, derive_seed, renamed_seed
from sdckit.core.rowwise import chunk_bounds, chunk_generator
from sdckit.core.schema import Column, Kind

TIES = ("random", "first")


def check_ties(ties: str) -> str:
    """Return ``ties`` if it is a known tie rule, else raise :class:`ParameterError`."""
    if ties not in TIES:
        raise ParameterError(
            f"The 'ties' parameter must be one of {{'random', 'first'}}. Got {ties!r} instead."
        )
    return ties


def order_values(
    series: pd.Series, column: Column | None = None, order: Sequence[Any] | None = None
) -> np.ndarray:
    """The values of ``series`` as floats whose ascending order is the column's order.

    Numeric columns are returned as floats, dates as nanoseconds since the epoch, ordinal
    columns as the position of each value in the category order (from ``order``, the
    ``column``'s schema entry, or an ordered pandas Categorical). Missing values are refused.

    Raises
    ------
    SchemaError
        For a nominal column without an order, or a value outside the order.
    DataError
        For a missing value (naming the column and the first row).
    """
    name = series.name
    kind = column.kind if column is not None else None
    if order is None and column is not None:
        order = column.order
    missing = series.isna().to_numpy()
    if missing.any():
        row = series.index[missing.argmax()]
        raise DataError(
            f"Column {name!r} is missing in {int(missing.sum())} record(s), first at row {row!r}; "
            "ranks need complete data. Impute or remove those records first."
        )
    dtype = series.dtype
    if order is None and isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
        return series.cat.codes.to_numpy(dtype=float)
    if order is not None:
        position = {value: i for i, value in enumerate(order)}
        try:
            return np.fromiter((position[v] for v in series.tolist()), dtype=float, count=len(series))
        except KeyError as exc:
            raise SchemaError(
                f"Column {name!r} holds {exc.args[0]!r}, which is not in its category order; "
                "add it to the order."
            ) from None
    if kind is Kind.DATE or pd.api.types.is_datetime64_any_dtype(dtype):
        return series.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(float)
    if kind in (None, Kind.NUMERIC) and pd.api.types.is_numeric_dtype(dtype) and not (
        pd.api.types.is_bool_dtype(dtype)
    ):
        return series.to_numpy(dtype=float)
    if kind is Kind.ORDINAL and pd.api.types.is_numeric_dtype(dtype):
        return series.to_numpy(dtype=float)
    raise SchemaError(
        f"Column {name!r} cannot be ranked: it is nominal and has no order. Declare it "
        "'ordinal' with a category order, or leave it out of the columns."
    )


@renamed_seed()
def ranks(
    values: np.ndarray, *, ties: str = "random", seed: RandomState = None
) -> np.ndarray:
    """Ranks ``1..n`` of ``values`` (1-D), ascending, ties broken by the ``ties`` rule.

    Examples
    --------
    >>> ranks(np.array([3.0, 1.0, 3.0, 2.0]), ties="first").tolist()
    [3, 1, 4, 2]
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise DataError(f"ranks() needs a 1-D array; got shape {values.shape}.")
    return 1 + inverse_permutation(sort_order(values, ties=ties, seed=seed))


@renamed_seed()
def sort_order(
    values: np.ndarray, *, ties: str = "random", seed: RandomState = None
) -> np.ndarray:
    """Positions that sort ``values`` ascending; ``order[r]`` holds the record of rank ``r+1``."""
    check_ties(ties)
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    if ties == "first" or not np.any(values[order[1:]] == values[order[:-1]]):
        return order  # without ties every rule gives this one order, and no draw is needed
    keys = tie_keys(len(values), derive_seed(as_generator(seed)))
    keys[np.isnan(values)] = 0  # missing values are not tied with each other: by position
    # by value, then key, then position (np.lexsort's last key is the primary one)
    return np.lexsort((np.arange(len(values)), keys, values))


def tie_keys(n: int, key: int) -> np.ndarray:
    """Random tie-breaking keys of ``n`` records: uniform 63-bit integers drawn by logical chunks
    of 65,536 records, chunk ``c`` from its own stream (``SeedSequence(key, spawn_key=(c,))``,
    DESIGN.md section 8), so that an engine that sorts a file out of core (DuckDB) can draw the
    same keys chunk by chunk. Sorting by (value, key, position) orders tied records uniformly at
    random (two equal keys, probability about n^2 / 2^64, fall back to their positions)."""
    out = np.empty(n, dtype=np.int64)
    for index, (a, b) in enumerate(chunk_bounds(n)):
        if b > a:
            out[a:b] = chunk_key_block(key, index, b - a)
    return out


def chunk_key_block(key: int, index: int, size: int) -> np.ndarray:
    """The tie keys of logical chunk ``index`` (``size`` records) of the step keyed ``key``."""
    return chunk_generator(key, index).integers(0, np.iinfo(np.int64).max, size=size, dtype=np.int64)


def inverse_permutation(order: np.ndarray) -> np.ndarray:
    """The inverse of a permutation of ``0..n-1``: ``inv[order[i]] == i``."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order), dtype=order.dtype)
    return inverse


@renamed_seed()
def rank_matrix(
    values: np.ndarray, *, ties: str = "random", seed: RandomState = None
) -> np.ndarray:
    """Column-wise :func:`ranks` of an ``n x m`` array, with one generator for all columns."""
    values = np.asarray(values, dtype=float)
    rng = as_generator(seed)
    out = np.empty(values.shape, dtype=np.int64)
    for j in range(values.shape[1]):
        out[:, j] = ranks(values[:, j], ties=ties, seed=rng)
    return out


def nearest_rank(sorted_values: np.ndarray, x: np.ndarray | float) -> np.ndarray:
    """Rank (1-based) in ``sorted_values`` of the value closest to each ``x``.

    When two values are equally close, or the closest value occurs several times, the lowest
    rank is returned (DESIGN.md section 3, Algorithm 2's ``r_j``).

    Examples
    --------
    >>> nearest_rank(np.array([1.0, 2.0, 2.0, 4.0]), np.array([2.1, 3.0, 0.0, 9.0])).tolist()
    [2, 2, 1, 4]
    """
    s = np.asarray(sorted_values, dtype=float)
    x = np.asarray(x, dtype=float)
    n = len(s)
    right = np.searchsorted(s, x, side="left")  # first index with s >= x
    right_c = np.minimum(right, n - 1)
    left_c = np.maximum(right - 1, 0)
    use_left = (right == n) | ((right > 0) & (x - s[left_c] <= s[right_c] - x))
    chosen_value = np.where(use_left, s[left_c], s[right_c])
    # the first occurrence of the chosen value is its lowest rank
    return np.searchsorted(s, chosen_value, side="left") + 1


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks ``1..n`` with ties given their average rank, per column of a 1-D or 2-D array
    (the ranks of Spearman's correlation and of normal scores)."""
    values = np.asarray(values, dtype=float)
    table = pd.Series(values) if values.ndim == 1 else pd.DataFrame(values)
    return table.rank().to_numpy()


def normal_scores(rank_values: np.ndarray, n: int) -> np.ndarray:
    """Normal scores ``Phi^-1((rank - 1/2) / n)`` of ranks ``1..n``."""
    from scipy.special import ndtri  # here, not at the top: most users of ranks never need scipy

    return ndtri((np.asarray(rank_values, dtype=float) - 0.5) / n)
