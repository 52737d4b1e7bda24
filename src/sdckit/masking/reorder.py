"""Moving a column's own values between records (shared by swapping and shuffling)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdckit.core.ranks import order_values
from sdckit.core.schema import Schema


def column_order_values(frame: pd.DataFrame, name: str, schema: Schema) -> np.ndarray:
    """The values of column ``name`` as sortable floats (numeric, date, or ordinal by its order)."""
    return order_values(frame[name], schema[name] if name in schema else None)


def take_column(frame: pd.DataFrame, name: str, source: np.ndarray) -> None:
    """Set record ``i`` of column ``name`` to the value record ``source[i]`` held, keeping the
    column's dtype (so the column's multiset of values is unchanged when ``source`` is a
    permutation)."""
    series = frame[name]
    frame[name] = pd.Series(series.array.take(source), index=frame.index, name=name)
