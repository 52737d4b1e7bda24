"""Data fingerprints over a canonical columnar serialization (DESIGN.md section 2, "Fingerprints").

A fingerprint ties a manifest to its data. It must be the same for the same records whatever
engine produced them (a pandas frame in memory, Parquet parts streamed in chunks), however they
were chunked, and whatever file format they came from; and it must be computed at memory speed
(issue 28: the per-cell ``str()`` of the first version took 24 of 34 s of ``protect()`` on 3e6 rows).

The canonical serialization of one column is one of three kinds, chosen from its Arrow type:

* ``number`` — integers, floats, booleans, decimals and all-missing columns: the values as IEEE
  float64, little-endian, a missing value as the one canonical quiet NaN;
* ``time`` — timestamps and dates: the instant in nanoseconds since the Unix epoch (UTC) as
  little-endian int64, a missing value as the int64 minimum (NumPy's ``NaT``);
* ``text`` — everything else: the values' UTF-8 bytes concatenated, and beside them each value's
  byte length as little-endian int64 (a missing value: length -1). Dictionary (categorical)
  columns are decoded to their values first; Python objects that Arrow cannot type (a column
  mixing ``1`` and ``"1"``) are written as ``<type name>:<str(value)>``.

Each stream (values; lengths and bytes for text) is hashed with SHA-256 as it arrives, so a
column's digest does not depend on where the chunks were cut. The frame's digest is taken over
``sdckit-fingerprint-3``, the row and column counts, and per column its name, kind and stream
digests. Without a key it is a plain SHA-256 (``"sha256:<hex>"``), for public data (the release);
with a key, the last step is HMAC-SHA256 (``"hmac-sha256:<hex>"``), for confidential data: the
stream digests are never published, and nobody without the key can test a guess of the data.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.core.errors import DataError

if TYPE_CHECKING:  # pragma: no cover - typing only; pyarrow is imported when a digest is taken
    import pandas as pd
    import pyarrow as pa

#: Version tag of the serialization, hashed first (a change of the rules changes every digest).
FORMAT = b"sdckit-fingerprint-3"

_NAN = np.float64(np.nan)
_NAT = np.iinfo(np.int64).min
_MAX_TEXT = np.iinfo(np.int32).max


def _kind(arrow_type: pa.DataType) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return _kind(arrow_type.value_type)
    if (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
            or pa.types.is_boolean(arrow_type) or pa.types.is_decimal(arrow_type)
            or pa.types.is_null(arrow_type)):
        return "number"
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type):
        return "time"
    return "text"


class ColumnDigest:
    """The running digest of one column, fed Arrow arrays (chunks) in order.

    A chunk of Arrow type ``null`` (all missing, as a part of a streamed column may be typed) is
    held back until a typed chunk tells the column's kind, then written as that kind's missing
    values, so the digest does not depend on where the chunks were cut.

    Parameters
    ----------
    name
        The column's name (part of the digest).
    """

    def __init__(self, name: str) -> None:
        self.name = str(name)
        self.kind: str | None = None
        self._values = hashlib.sha256()
        self._lengths = hashlib.sha256()
        self._pending_missing = 0

    def update(self, array: pa.Array | pa.ChunkedArray) -> None:
        """Add the next values of the column (an Arrow array or chunked array)."""
        import pyarrow as pa

        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        for chunk in chunks:
            self._update_chunk(chunk)

    def _update_chunk(self, chunk: pa.Array) -> None:
        import pyarrow as pa

        if len(chunk) == 0:
            return
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        if pa.types.is_null(chunk.type):
            if self.kind is None:
                self._pending_missing += len(chunk)
            else:
                self._missing(len(chunk))
            return
        kind = _kind(chunk.type)
        if self.kind is None:
            self.kind = kind
            self._missing(self._pending_missing)
            self._pending_missing = 0
        elif kind != self.kind:  # the writers cast every chunk to the first one's types
            raise DataError(f"Column {self.name!r} changes type between chunks ({self.kind}, then {kind}); "
                            "it has no one fingerprint.")
        if kind == "number":
            self._update_numbers(chunk)
        elif kind == "time":
            self._update_times(chunk)
        else:
            self._update_text(chunk)

    def _missing(self, count: int) -> None:
        if count == 0:
            return
        if self.kind == "number":
            self._values.update(np.full(count, _NAN, dtype="<f8").data)
        elif self.kind == "time":
            self._values.update(np.full(count, _NAT, dtype="<i8").data)
        else:
            self._lengths.update(np.full(count, -1, dtype="<i4").data)

    def _update_numbers(self, chunk: pa.Array) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        as_float = pc.cast(chunk, pa.float64(), safe=False)
        values = np.asarray(as_float.to_numpy(zero_copy_only=False), dtype="<f8")
        invalid = np.isnan(values)
        if as_float.null_count:
            invalid |= ~_valid(as_float)
        if invalid.any():
            values = np.where(invalid, _NAN, values)
        self._values.update(np.ascontiguousarray(values).data)

    def _update_times(self, chunk: pa.Array) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_date(chunk.type):
            chunk = pc.cast(chunk, pa.timestamp("s"))
        instants = pc.cast(chunk, pa.timestamp("ns", chunk.type.tz), safe=False)
        values = np.asarray(instants.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype="<i8")
        if instants.null_count:
            values = np.where(_valid(instants), values, _NAT)
        self._values.update(np.ascontiguousarray(values).data)

    def _update_text(self, chunk: pa.Array) -> None:
        import pyarrow as pa

        if not (pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)):
            target = pa.large_binary() if pa.types.is_binary(chunk.type) else pa.large_string()
            try:
                chunk = chunk.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                chunk = pa.array([None if v is None else str(v) for v in chunk.to_pylist()], pa.large_string())
        if chunk.null_count:
            # A missing value's slot may still hold bytes (Arrow leaves them undefined): hash
            # the lengths with -1 for it, and the bytes of the present values only.
            valid = _valid(chunk)
            present = chunk.filter(pa.array(valid))
            lengths = np.full(len(chunk), -1, dtype="<i4")
            lengths[valid] = np.diff(self._offsets(present))
            chunk = present
        else:
            lengths = np.diff(self._offsets(chunk))
        if len(lengths) and lengths.max() > _MAX_TEXT:
            raise DataError(f"Column {self.name!r} holds a text value of 2 GiB or more; sdckit cannot fingerprint it.")
        self._lengths.update(np.ascontiguousarray(lengths, dtype="<i4").data)
        _, _, data_buf = chunk.buffers()
        offsets = self._offsets(chunk)
        if data_buf is not None and offsets[-1] > offsets[0]:
            self._values.update(memoryview(data_buf)[int(offsets[0]): int(offsets[-1])])

    @staticmethod
    def _offsets(chunk: pa.Array) -> np.ndarray:
        offsets_buf = chunk.buffers()[1]
        if len(chunk) == 0 or offsets_buf is None:
            return np.zeros(1, dtype="<i8")
        return np.frombuffer(offsets_buf, dtype="<i8")[chunk.offset: chunk.offset + len(chunk) + 1]

    def header(self) -> bytes:
        """The column's part of the frame digest: name, kind and stream digests."""
        if self.kind is None:  # every value missing (or no rows): hashed as numbers
            self.kind = "number"
            self._missing(self._pending_missing)
            self._pending_missing = 0
        name = self.name.encode("utf-8", "surrogatepass")
        kind = self.kind.encode()
        return (struct.pack("<Q", len(name)) + name + struct.pack("<Q", len(kind)) + kind
                + self._values.digest() + self._lengths.digest())


def _valid(array: pa.Array) -> np.ndarray:
    """A boolean mask of the array's non-missing values."""
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def combine(columns: Iterable[ColumnDigest], rows: int, key: bytes | None = None) -> str:
    """The frame's fingerprint from its columns' digests (in column order)."""
    columns = list(columns)
    digest = hashlib.sha256() if key is None else hmac.new(key, digestmod=hashlib.sha256)
    digest.update(FORMAT + struct.pack("<QQ", rows, len(columns)))
    for column in columns:
        digest.update(column.header())
    return ("sha256:" if key is None else "hmac-sha256:") + digest.hexdigest()


def series_to_arrow(series: pd.Series) -> pa.Array | pa.ChunkedArray:
    """A pandas column as Arrow, as pyarrow writes it to Parquet; Python objects of mixed
    types (which Arrow cannot type) as ``<type name>:<str(value)>`` text."""
    import pandas as pd
    import pyarrow as pa

    try:
        return pa.Array.from_pandas(series)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        texts: list[Any] = [None if (v is None or (not isinstance(v, str) and pd.isna(v)))
                            else f"{type(v).__name__}:{v}" for v in series.tolist()]
        return pa.array(texts, pa.large_string())


def frame_fingerprint(frame: pd.DataFrame, key: bytes | None = None) -> str:
    """The fingerprint of a pandas frame (the index is not part of it)."""
    columns = []
    for position, name in enumerate(frame.columns):
        column = ColumnDigest(name)
        column.update(series_to_arrow(frame.iloc[:, position]))
        columns.append(column)
    return combine(columns, frame.shape[0], key)
