"""Pairing the columns of an original and a released data set for a measure.

Every utility and risk measure that compares X with Y needs the same checks: both are frames,
the requested columns exist in both and are numeric, no value is missing, and — for measures
built on the record correspondence — both have the same number of records (row i of X is row
i of Y). They live here once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.method import require_no_nan


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def shared_numeric_columns(original: pd.DataFrame, released: pd.DataFrame) -> list[str]:
    """Numeric columns present in both frames, in ``released``'s order."""
    return [c for c in released.columns if c in original.columns
            and _is_numeric(released[c]) and _is_numeric(original[c])]


def numeric_pair(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    owner: str,
    aligned: bool = False,
    min_records: int = 1,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Check and return ``(columns, X, Y)`` as float arrays for a measure named ``owner``.

    Parameters
    ----------
    columns : sequence of str, optional
        Default: every numeric column the two frames share.
    aligned : bool
        The measure uses the record correspondence (row i of X is row i of Y): the frames
        must then have the same number of records.
    min_records : int
        Fewest records each frame must have.
    """
    for name, frame in (("original", original), ("released", released)):
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{owner} expects the {name} data as a pandas DataFrame; got {type(frame).__name__}.")
        if len(frame) < min_records:
            raise DataError(f"{owner} needs at least {min_records} record(s) in the {name} data; it has {len(frame)}.")
    if columns is None:
        cols = shared_numeric_columns(original, released)
        if not cols:
            raise SchemaError(f"{owner} found no numeric column shared by the original and released data; name columns=[...].")
    else:
        cols = [columns] if isinstance(columns, str) else list(columns)
        if not cols:
            raise SchemaError(f"{owner} was given an empty list of columns; name at least one.")
        for name, frame in (("original", original), ("released", released)):
            for c in cols:
                if c not in frame.columns:
                    raise SchemaError(f"{owner}: column {c!r} is not in the {name} data; its columns are: {', '.join(map(str, frame.columns))}.")
                if not _is_numeric(frame[c]):
                    raise SchemaError(f"{owner}: column {c!r} of the {name} data is not numeric (dtype {frame[c].dtype}); leave it out of columns.")
    if aligned and len(original) != len(released):
        raise DataError(
            f"{owner} compares records one to one, but the original has {len(original)} records and "
            f"the release {len(released)}; it applies only to releases with the same records in the same order."
        )
    require_no_nan(original, tuple(cols), f"{owner} (original data)")
    require_no_nan(released, tuple(cols), f"{owner} (released data)")
    return cols, original[cols].to_numpy(dtype=float), released[cols].to_numpy(dtype=float)


