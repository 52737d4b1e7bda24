"""The string keys values are matched by, and the codes of a column (split from
:mod:`sdckit.core.hierarchy`, which re-exports both).

A hierarchy stores its values as strings; :func:`value_keys` gives the key of each value of a
column so that the values released and the rows of a hierarchy meet on exactly the same text,
and distinct values never share a key within one dtype. :func:`factorize` gives the codes of a
column and its distinct values, faster than pandas on the large common cases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def value_keys(series: pd.Series) -> np.ndarray:
    """The string key of each value of ``series``, as hierarchies store them; distinct values
    always get distinct keys (classes are formed on exactly the values released; issue 19
    item 4).

    Integer-valued floats lose their ``.0`` (``39.0`` -> ``"39"``); integers are written
    exactly (never through a float, which merges values above 2**53); dates without a time of
    day become ``YYYY-MM-DD``, with whole seconds ``YYYY-MM-DDTHH:MM:SS``, otherwise the full
    ISO form down to the nanosecond; everything else goes through ``str``. Timestamps with a
    time zone are written in their local time, and, when they have a time of day, with their
    UTC offset (``2021-10-31T02:30:00+01:00``): in the hour a clock is set back the same local
    time is two instants, which the offset tells apart (issue 27).

    Values of different types may share a key (the number ``1`` and the text ``"1"``);
    :meth:`Hierarchy.rows_of` refuses a column where two distinct values do.
    """
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        stamps = pd.DatetimeIndex(series)
        offsets = None
        if stamps.tz is not None:  # local wall time (never ambiguous as a naive value) + offset
            wall = stamps.tz_localize(None)
            offsets = _utc_offsets(wall - stamps.tz_convert(None))
            stamps = wall
        if bool((stamps.normalize() == stamps).all()):
            return np.asarray(stamps.strftime("%Y-%m-%d"), dtype=object)
        if bool((stamps.floor("s") == stamps).all()):
            keys = np.asarray(stamps.strftime("%Y-%m-%dT%H:%M:%S"), dtype=object)
        else:
            keys = np.asarray([None if pd.isna(t) else t.isoformat() for t in stamps], dtype=object)
        if offsets is not None:
            missing = np.asarray(pd.isna(stamps))
            keys[~missing] = keys[~missing] + offsets[~missing]
        return keys
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.astype(str).to_numpy(dtype=object)
    if pd.api.types.is_float_dtype(series.dtype):
        values = series.to_numpy(dtype=float)
        finite = np.isfinite(values)
        if finite.all() and np.all(values == np.round(values)) and np.all(np.abs(values) < 2.0**63):
            return values.astype(np.int64).astype(str).astype(object)
    return series.astype(str).to_numpy(dtype=object)


def _utc_offsets(delta: pd.TimedeltaIndex) -> np.ndarray:
    """``+HH:MM`` / ``-HH:MM`` of each UTC offset (missing offsets give ``""``)."""
    minutes = np.asarray(delta.total_seconds().fillna(0).to_numpy() // 60, dtype=np.int64)
    sign = np.where(minutes < 0, "-", "+")
    whole = np.abs(minutes)
    return np.array([f"{s}{m // 60:02d}:{m % 60:02d}" for s, m in zip(sign, whole.tolist())], dtype=object)


def factorize(series: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Codes of ``series`` and its distinct values (a Series of its dtype, missing values
    included), like ``pd.factorize(series, use_na_sentinel=False)`` but faster on the two
    common large cases: integers in a short range (a direct table) and Arrow-backed strings
    (Arrow's dictionary encoding, without pandas' round trip). Which value gets which code
    may differ from pandas'; only the pairing of codes and values matters."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iu" and len(series):
        values = series.to_numpy()
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * len(values) + 1024:
            offset = (values - low).astype(np.int64) if low else values.astype(np.int64, copy=False)
            present = np.flatnonzero(np.bincount(offset, minlength=high - low + 1))
            where = np.empty(high - low + 1, dtype=np.int64)
            where[present] = np.arange(len(present))
            return where[offset], pd.Series(present + low, dtype=dtype)
    arrow = getattr(series.array, "__arrow_array__", None)
    if arrow is not None and getattr(dtype, "storage", None) == "pyarrow" and not series.hasnans:
        import pyarrow.compute as pc

        chunked = arrow()
        whole = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
        encoded = pc.dictionary_encode(whole)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        return codes, pd.Series(encoded.dictionary.to_pylist(), dtype=dtype)
    codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return codes, pd.Series(uniques, dtype=dtype if len(uniques) else object)
