"""The fingerprint's canonical columnar serialization (issue 28 item 1; DESIGN.md section 2).

The expected digests are built here from the written rules (an independent implementation of
the serialization), and the same records must give the same fingerprint whatever file format
they were read from, whatever engine wrote them and wherever the chunks were cut.
"""

from __future__ import annotations

import hashlib
import hmac
import struct

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.provenance import fingerprint
from sdckit.engine.sources import stream_fingerprint


def _column(name: str, kind: str, values: bytes, lengths: bytes = b"") -> bytes:
    n = name.encode()
    return (struct.pack("<Q", len(n)) + n + struct.pack("<Q", len(kind)) + kind.encode()
            + hashlib.sha256(values).digest() + hashlib.sha256(lengths).digest())


def _expected(rows: int, columns: list[bytes], key: bytes | None = None) -> str:
    body = b"sdckit-fingerprint-3" + struct.pack("<QQ", rows, len(columns)) + b"".join(columns)
    if key is None:
        return "sha256:" + hashlib.sha256(body).hexdigest()
    return "hmac-sha256:" + hmac.new(key, body, hashlib.sha256).hexdigest()


def test_a_small_frame_hashes_as_the_written_rules_say() -> None:
    frame = pd.DataFrame({
        "age": [30, 41, 52],                      # number: float64 little-endian
        "income": [1.5, np.nan, -2.0],            # a missing value: the canonical NaN
        "town": ["Ås", None, "Lyon"],             # text: UTF-8 bytes + int32 lengths (-1 missing)
        "when": pd.to_datetime(["1970-01-01 00:00:01", None, "1970-01-02 00:00:00"]),  # time: ns, NaT
    })
    nan = struct.pack("<d", float("nan"))
    columns = [
        _column("age", "number", struct.pack("<3d", 30.0, 41.0, 52.0)),
        _column("income", "number", struct.pack("<d", 1.5) + nan + struct.pack("<d", -2.0)),
        _column("town", "text", "Ås".encode() + b"Lyon", struct.pack("<3i", 3, -1, 4)),
        _column("when", "time", struct.pack("<3q", 10**9, np.iinfo(np.int64).min, 86_400 * 10**9)),
    ]
    assert fingerprint(frame) == _expected(3, columns)
    key = bytes(range(32))
    assert fingerprint(frame, key) == _expected(3, columns, key)


def test_categories_and_nullable_types_hash_as_their_values() -> None:
    plain = pd.DataFrame({"a": [1.0, 2.0, np.nan], "b": ["x", "y", None]})
    typed = pd.DataFrame({"a": pd.array([1, 2, None], dtype="Int64"),
                          "b": pd.Categorical(["x", "y", None])})
    as_string = pd.DataFrame({"a": [1, 2, None], "b": pd.array(["x", "y", None], dtype="string")})
    assert fingerprint(plain) == fingerprint(typed) == fingerprint(as_string)


def test_every_change_of_a_value_a_name_or_a_missing_changes_the_digest() -> None:
    base = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "yy", "z"]})
    variants = [
        base.assign(a=[1, 2, 4]), base.assign(b=["x", "y", "yz"]), base.rename(columns={"a": "c"}),
        base.assign(b=["x", None, "z"]), base.assign(b=["x", "", "z"]), base.assign(a=[1.0, np.nan, 3.0]),
        base[["b", "a"]], base.iloc[:2],
    ]
    digests = {fingerprint(v) for v in variants} | {fingerprint(base)}
    assert len(digests) == len(variants) + 1


def test_mixed_python_objects_keep_their_types_apart() -> None:
    mixed = pd.DataFrame({"code": pd.Series([1, "1"], dtype=object)})
    same = pd.DataFrame({"code": pd.Series(["1", "1"], dtype=object)})
    assert fingerprint(mixed) != fingerprint(same)


def test_csv_and_parquet_of_the_same_records_give_one_fingerprint(tmp_path) -> None:
    frame = pd.DataFrame({
        "id": np.arange(50), "x": np.linspace(-1, 1, 50), "g": list("abcde") * 10,
        "m": [None if i % 7 == 0 else f"v{i % 3}" for i in range(50)],
    })
    frame.loc[3, "x"] = np.nan
    frame.to_csv(tmp_path / "f.csv", index=False)
    frame.astype({"g": "category"}).to_parquet(tmp_path / "f.parquet", index=False)
    from_csv = pd.read_csv(tmp_path / "f.csv")
    from_parquet = pd.read_parquet(tmp_path / "f.parquet")
    assert str(from_parquet["g"].dtype) == "category" and str(from_csv["g"].dtype) != "category"
    assert fingerprint(from_csv) == fingerprint(from_parquet) == fingerprint(frame)


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=59), max_size=4, unique=True),
       missing_part=st.booleans())
def test_streamed_parts_give_the_in_memory_fingerprint_wherever_they_are_cut(
        tmp_path_factory, cuts, missing_part) -> None:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({
        "n": rng.integers(0, 9, 60), "f": rng.normal(size=60),
        "s": rng.choice(["a", "bb", "ccc"], 60).astype(object),
        "t": pd.date_range("2020-03-29", periods=60, freq="h", tz="Europe/Berlin"),
    })
    if missing_part:  # a stretch of missing text: its own part is typed null in Parquet
        frame.loc[:9, "s"] = None
    folder = tmp_path_factory.mktemp("parts")
    bounds = [0, *sorted(cuts), 60]
    parts = []
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        path = folder / f"part{i}.parquet"
        pq.write_table(pa.Table.from_pandas(frame.iloc[lo:hi], preserve_index=False), path)
        parts.append(path)
    names = {str(c): str(frame[c].dtype) for c in frame.columns}
    assert stream_fingerprint(parts, names) == fingerprint(frame)
    key = b"k" * 32
    assert stream_fingerprint(parts, names, key) == fingerprint(frame, key)


def test_the_fall_back_hour_hashes_two_instants() -> None:
    hours = pd.DatetimeIndex(["2021-10-31 00:30", "2021-10-31 01:30"], tz="UTC").tz_convert("Europe/Berlin")
    assert hours[0].hour == hours[1].hour == 2  # both read 02:30 on the local clock
    a = pd.DataFrame({"t": hours})
    b = pd.DataFrame({"t": hours[[0, 0]]})
    assert fingerprint(a) != fingerprint(b)


@pytest.mark.parametrize("rows", [0, 1])
def test_empty_and_tiny_frames(rows: int) -> None:
    frame = pd.DataFrame({"a": pd.Series([np.nan] * rows, dtype=object)})
    assert fingerprint(frame).startswith("sha256:")


def test_a_column_whose_chunks_change_kind_is_refused() -> None:
    from sdckit.core.errors import DataError
    from sdckit.core.fingerprint import ColumnDigest

    column = ColumnDigest("x")
    column.update(pa.array([1.0, 2.0]))
    with pytest.raises(DataError, match="changes type between chunks"):
        column.update(pa.array(["a"]))
