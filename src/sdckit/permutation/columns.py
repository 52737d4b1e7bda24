"""The column checks every permutation measure shares, and the rank space they work in.

Seed 000 section 2 needs attributes "whose values can be ranked": numeric, date and ordinal
columns (DESIGN.md section 3). This module turns a pair of frames (original ``X``, released
``Y``) into sortable float matrices once, with one set of clear errors:

* both inputs must be DataFrames with at least 2 records;
* every used column must exist in both (the error names the column and the frame);
* no missing values in a used column (the error names the column, the frame and a row);
* a nominal column needs an order: from ``schema`` (a :class:`~sdckit.core.schema.Schema` or a
  mapping ``column -> category order``) or from an ordered pandas Categorical in the original.

Dates are measured in days, so that variances read as days squared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from sdckit.core.errors import DataError, ParameterError, SchemaError, SdcError
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.ranks import nearest_rank, order_values, rank_matrix
from sdckit.core.schema import Column, Kind, Schema

#: What ``schema=`` may be on the public functions: a Schema, orders by column, or nothing.
SchemaLike = Schema | Mapping[str, Sequence[Any]] | None

_NS_PER_DAY = 86_400e9


def check_frame(frame: Any, what: str, min_records: int = 2) -> pd.DataFrame:
    """Return ``frame`` if it is a DataFrame with at least ``min_records`` rows."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"The {what} data must be a pandas DataFrame; got {type(frame).__name__}.")
    if len(frame) < min_records:
        raise DataError(
            f"The {what} data has {len(frame)} record(s); the permutation measures need at "
            f"least {min_records}."
        )
    return frame


def resolve_columns(original: pd.DataFrame, released: pd.DataFrame, columns: Any,
                    schema: SchemaLike = None) -> list[str]:
    """The columns to use: ``columns`` (all of them in both frames) or, by default, every column
    the original and the release both have (a release drops identifiers) that can be ranked —
    numbers, dates, ordered categories and columns with an order in ``schema``; unordered
    (nominal) columns are left out (issue 12 section 5). The result says which were used."""
    if columns is None:
        shared = [c for c in original.columns if c in set(released.columns)]
        names = [c for c in shared if _rankable(original[c], column_spec(c, original[c], schema))]
        if not names:
            raise SchemaError("The original and the released data share no column that can be ranked "
                              f"(shared: {', '.join(map(str, shared)) or 'none'}); name the columns with "
                              "'columns', or give nominal ones an order.")
    elif isinstance(columns, str):
        names = [columns]
    else:
        names = list(columns)
    if not names:
        raise SchemaError("No columns to compare; name at least one column in 'columns'.")
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise SchemaError(f"Column {dup!r} is named twice in 'columns'; name each column once.")
    for what, frame in (("original", original), ("released", released)):
        for name in names:
            if name not in frame.columns:
                raise SchemaError(
                    f"Column {name!r} is not in the {what} data; its columns are: "
                    f"{', '.join(map(str, frame.columns))}. Choose the columns with 'columns'."
                )
    return names


def _rankable(series: pd.Series, spec: tuple[Column | None, tuple | None]) -> bool:
    column, order = spec
    if order is not None:
        return True
    if column is not None:
        return column.kind is not Kind.NOMINAL
    return (pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)) \
        or pd.api.types.is_datetime64_any_dtype(series.dtype)


def column_spec(name: str, reference: pd.Series, schema: SchemaLike) -> tuple[Column | None, tuple | None]:
    """The schema entry and category order for column ``name`` (order may be None)."""
    if isinstance(schema, Schema):
        column = schema[name] if name in schema else None
        return column, (column.order if column is not None else None)
    if schema is not None:
        if not isinstance(schema, Mapping):
            raise SchemaError(
                "The 'schema' argument must be a Schema or a mapping from column to category "
                f"order; got {type(schema).__name__}."
            )
        if name in schema:
            return None, tuple(schema[name])
    dtype = reference.dtype
    if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
        return None, tuple(dtype.categories)
    return None, None


def sortable(series: pd.Series, column: Column | None, order: tuple | None, what: str) -> np.ndarray:
    """``order_values`` of one column with the frame named in every error; dates in days."""
    if order is not None and isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    try:
        values = order_values(series, column, order)
    except SdcError as exc:
        raise type(exc)(f"In the {what} data: {exc}") from None
    if order is None and (
        (column is not None and column.kind is Kind.DATE)
        or pd.api.types.is_datetime64_any_dtype(series.dtype)
    ):
        values = values / _NS_PER_DAY
    return values


def value_matrix(frame: pd.DataFrame, names: Sequence[str], specs: Sequence[tuple], what: str) -> np.ndarray:
    """An ``n x m`` float matrix whose column order is each column's ranking order."""
    out = np.empty((len(frame), len(names)), dtype=float)
    for j, (name, (column, order)) in enumerate(zip(names, specs)):
        out[:, j] = sortable(frame[name], column, order, what)
    return out


def quantile_index(n_from: int, n_to: int) -> np.ndarray:
    """0-based positions in a sorted column of ``n_from`` values for ranks 1..``n_to``.

    With equal sizes this is ``rank - 1`` (Algorithm 1); otherwise the lower empirical quantile
    at ``(rank - 0.5) / n_to`` (DESIGN.md section 3, records of different counts).
    """
    if n_from == n_to:
        return np.arange(n_to)
    q = (np.arange(1, n_to + 1) - 0.5) / n_to
    return np.clip(np.ceil(q * n_from).astype(np.int64) - 1, 0, n_from - 1)


@dataclass
class RankSpace:
    """Original and released values in sortable form, the released ranks and a KD-tree on them.

    ``z_sorted[j]`` holds the sorted reverse-mapped column ``Z_j`` (a permutation of ``X_j``,
    or its quantiles when the sizes differ); the ranks of ``Z`` are those of ``Y``.
    """

    names: list[Any]
    specs: list[tuple]
    x: np.ndarray
    y: np.ndarray
    rank_y: np.ndarray
    x_sorted: list[np.ndarray]
    y_sorted: list[np.ndarray]
    z_sorted: list[np.ndarray]
    original_index: pd.Index
    released_index: pd.Index
    rng: np.random.Generator
    _tree: cKDTree | None = field(default=None, repr=False)

    @property
    def tree(self) -> cKDTree:
        if self._tree is None:
            self._tree = cKDTree(self.rank_y.astype(float), balanced_tree=False, compact_nodes=False)
        return self._tree

    @property
    def m(self) -> int:
        return len(self.names)

    def ranks_in(self, sorted_cols: Sequence[np.ndarray], values: np.ndarray) -> np.ndarray:
        """Algorithm 2's ``r_j``: rank of the value of each sorted column closest to ``values``."""
        values = np.atleast_2d(values)
        out = np.empty(values.shape, dtype=np.int64)
        for j, s in enumerate(sorted_cols):
            # binary searches of sorted queries stay in cache: several times faster at 10^6
            order = np.argsort(values[:, j], kind="stable")
            out[order, j] = nearest_rank(s, values[order, j])
        return out

    def z_values(self) -> np.ndarray:
        """The reverse-mapped values ``z_ij`` (sortable form): sorted ``Z_j`` at ``rank(y_ij)``."""
        return np.column_stack([self.z_sorted[j][self.rank_y[:, j] - 1] for j in range(self.m)])


@renamed_seed()
def rank_space(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    min_original: int = 2,
) -> RankSpace:
    """Check both frames and build their :class:`RankSpace` (the shared first step)."""
    check_frame(original, "original", min_original)
    check_frame(released, "released")
    rng = as_generator(seed, secret=False)
    names = resolve_columns(original, released, columns, schema)
    specs = [column_spec(name, original[name], schema) for name in names]
    x = value_matrix(original, names, specs, "original")
    y = value_matrix(released, names, specs, "released")
    rank_y = rank_matrix(y, ties=ties, seed=rng)
    x_sorted = [np.sort(x[:, j]) for j in range(len(names))]
    index = quantile_index(len(x), len(y))
    z_sorted = [s[index] for s in x_sorted]
    y_sorted = [np.sort(y[:, j]) for j in range(len(names))]
    return RankSpace(
        names, specs, x, y, rank_y, x_sorted, y_sorted, z_sorted,
        original.index, released.index, rng,
    )


def check_same_size(space: RankSpace, what: str) -> None:
    """Refuse record counts that differ where row ``i`` of ``X`` must meet row ``i`` of ``Y``."""
    if len(space.x) != len(space.y):
        raise DataError(
            f"{what} pairs original and released records, so both need the same number of "
            f"records; got {len(space.x)} original and {len(space.y)} released."
        )


def check_truth(truth: Any, n_original: int, n_released: int) -> np.ndarray:
    """The true released position of each original record (default: the same row)."""
    if truth is None:
        if n_original != n_released:
            raise DataError(
                f"The original data has {n_original} records and the released data "
                f"{n_released}; give 'truth' (the released position of each original record)."
            )
        return np.arange(n_original)
    arr = np.asarray(truth)
    if arr.shape != (n_original,) or not np.issubdtype(arr.dtype, np.integer):
        raise ParameterError(
            f"The 'truth' parameter must be an int array of {n_original} released positions "
            f"(one per original record). Got shape {arr.shape} and dtype {arr.dtype} instead."
        )
    if arr.min() < 0 or arr.max() >= n_released:
        raise ParameterError(
            f"The 'truth' parameter must hold positions in [0, {n_released - 1}]. "
            f"Got values from {arr.min()} to {arr.max()} instead."
        )
    return arr.astype(np.int64)
