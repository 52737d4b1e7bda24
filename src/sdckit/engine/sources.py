"""Files read and written in logical chunks with bounded memory (DESIGN.md section 8).

* :func:`iter_chunks` yields a Parquet or CSV file's logical chunks (:data:`CHUNK_ROWS` rows,
  indexed by global row number) whatever the physical batch size the reader uses;
  :func:`read_chunk` reads one chunk by its index (for a distributed task).
* Output goes first to Parquet parts (a spool), from which :func:`stream_fingerprint` computes
  the release's SHA-256 exactly as :func:`sdckit.core.provenance.fingerprint` does on the
  whole frame (column by column), and :func:`finish_output` writes the target file atomically.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sdckit.core.atomic import atomic_path, output_directory, refuse_input_overwrite
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.fingerprint import ColumnDigest, combine
from sdckit.core.result import Result
from sdckit.core.rowwise import CHUNK_ROWS, rechunk
from sdckit.io.files import check_columns, detect_format, sniff_delimiter

#: Formats the streaming engines read and write.
STREAMABLE = ("csv", "tsv", "parquet")


def open_parquet(path: Path) -> pq.ParquetFile:
    """A Parquet file read without pre-buffering (which reads ahead without bound), a megabyte
    of column data at a time."""
    return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)


def source_format(path: Path, format: str | None = None) -> str:
    """The format of an input to stream, refused unless Parquet or CSV/TSV."""
    fmt = detect_format(path, format)
    if fmt not in STREAMABLE:
        raise ParameterError(
            f"The streaming engines read Parquet and CSV/TSV files; {path.name!r} is {fmt}. "
            "Convert it to Parquet, or use engine='memory'."
        )
    if not path.exists():
        raise DataError(f"File not found: {str(path)!r}.")
    if path.stat().st_size == 0:
        raise DataError(f"File {str(path)!r} is empty.")
    return fmt


def csv_options(path: Path, fmt: str, sep: str | None, encoding: str) -> dict[str, Any]:
    if sep is None:
        if fmt == "tsv":
            sep = "\t"
        else:
            with open(path, "rb") as fh:
                head = fh.read(64 * 1024)
            sep = sniff_delimiter(head.decode(encoding, errors="replace"))
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    return {"sep": sep, "encoding": enc}


def csv_dtypes(path: Path, fmt: str = "csv", *, sep: str | None = None, encoding: str = "utf-8",
               batch_rows: int = CHUNK_ROWS) -> dict[str, Any]:
    """The dtype each column of a CSV file has when the whole file is read at once, found chunk
    by chunk: one dtype everywhere is kept; integers, floats and booleans together become
    float64; anything else becomes text."""
    options = csv_options(path, fmt, sep, encoding)
    seen: dict[str, set[str]] = {}
    for chunk in pd.read_csv(path, chunksize=batch_rows, **options):
        for name in chunk.columns:
            seen.setdefault(name, set()).add(str(chunk[name].dtype))
    return merge_csv_dtypes(seen)


def merge_csv_dtypes(seen: dict[str, set[str]]) -> dict[str, Any]:
    """The dtypes to read a CSV file with, from the dtypes its pieces were read with (the rule
    of :func:`csv_dtypes`), as ``pd.read_csv(dtype=...)`` takes them."""
    out: dict[str, Any] = {}
    for name, kinds in seen.items():
        if len(kinds) == 1:
            continue
        if kinds <= {"int64", "float64", "bool"}:
            out[name] = "float64"
        else:
            out[name] = str
    return out


def iter_chunks(path: Path, fmt: str, *, batch_rows: int = CHUNK_ROWS, sep: str | None = None,
                encoding: str = "utf-8", dtypes: dict[str, Any] | None = None,
                columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
    """The logical chunks of a Parquet or CSV file, read ``batch_rows`` records at a time."""
    if fmt == "parquet":
        handle = open_parquet(path)
        batches = (b.to_pandas() for b in handle.iter_batches(batch_size=batch_rows, columns=columns))
    else:
        options = csv_options(path, fmt, sep, encoding)
        batches = pd.read_csv(path, chunksize=batch_rows, dtype=dtypes or None, usecols=columns, **options)
    first = True
    for chunk in rechunk(batches):
        if first:
            check_columns(chunk, str(path))
            first = False
        yield chunk


def count_rows(path: Path, fmt: str, **options: Any) -> int:
    """Records in a file (Parquet: from its metadata; CSV: by reading it once)."""
    if fmt == "parquet":
        return open_parquet(path).metadata.num_rows
    return sum(len(c) for c in iter_chunks(path, fmt, **options))


def read_chunk(path: Path | Sequence[Path], index: int, *, batch_rows: int = CHUNK_ROWS) -> pd.DataFrame:
    """Logical chunk ``index`` of a Parquet file (or of Parquet parts read one after the other),
    reading only the row groups it spans."""
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    start, stop = index * CHUNK_ROWS, (index + 1) * CHUNK_ROWS
    pieces, offset = [], 0
    for file in paths:
        handle = open_parquet(file)
        meta = handle.metadata
        groups, first_row = [], None
        for g in range(meta.num_row_groups):
            rows = meta.row_group(g).num_rows
            if offset < stop and offset + rows > start:
                groups.append(g)
                if first_row is None:
                    first_row = offset
            offset += rows
        if not groups:
            if offset >= stop:
                break
            continue
        at = first_row
        for batch in handle.iter_batches(batch_size=batch_rows, row_groups=groups):
            lo, hi = max(start - at, 0), min(stop - at, batch.num_rows)
            if hi > lo:
                pieces.append(batch.slice(lo, hi - lo))
            at += batch.num_rows
            if at >= stop:
                break
        if offset >= stop:
            break
    if not pieces:
        raise DataError(f"{paths[0].name!r} has no logical chunk {index}.")
    table = pa.concat_tables([pa.Table.from_batches([b]) for b in pieces], promote_options="permissive")
    frame = table.to_pandas()
    return frame.set_axis(pd.RangeIndex(start, start + len(frame)))


# --------------------------------------------------------------------------- output
class PartWriter:
    """Chunks appended to one Parquet file (a part of the output), in one schema."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.dtypes: dict[str, str] = {}

    def write(self, frame: pd.DataFrame) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.writer is None:
            self.dtypes = {str(c): str(frame[c].dtype) for c in frame.columns}
            self.writer = pq.ParquetWriter(self.path, table.schema)
        elif table.schema != self.writer.schema:
            try:
                table = table.cast(self.writer.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                bad = [f.name for f in table.schema if f.type != self.writer.schema.field(f.name).type]
                raise DataError(
                    f"The release's column(s) {', '.join(map(repr, bad))} changed type between chunks "
                    "(e.g. integers in one, decimals in another); declare the column as float "
                    "in the input, or use engine='memory'."
                ) from None
        self.writer.write_table(table)
        self.rows += len(frame)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def stream_fingerprint(parts: Sequence[Path], dtypes: dict[str, str], key: bytes | None = None) -> str:
    """The fingerprint (:func:`sdckit.core.provenance.fingerprint`) of the frame the Parquet
    ``parts`` hold in order, computed one column and one batch at a time over the same canonical
    serialization (:mod:`sdckit.core.fingerprint`), so it equals the in-memory frame's. ``dtypes``
    names the frame's columns in order."""
    rows = sum(open_parquet(p).metadata.num_rows for p in parts)
    columns = []
    for name in dtypes:
        column = ColumnDigest(name)
        for part in parts:
            for batch in open_parquet(part).iter_batches(batch_size=CHUNK_ROWS, columns=[name]):
                column.update(batch.column(0))
        columns.append(column)
    return combine(columns, rows, key)


@contextlib.contextmanager
def spool_beside(target: Path, prefix: str, directory: str | Path | None = None) -> Iterator[Path]:
    """A temporary folder for a streamed run's intermediate files, removed on exit: in
    ``directory`` if given, else in the release's own folder — on the release's disk, where a
    cluster's workers see it —, which is created if missing, as the release's writer creates it
    (every streamed writer takes its spool from here). A folder created for the run is removed
    again if the run fails and leaves it empty."""
    where = Path(directory) / "_" if directory is not None else Path(target)  # a file in the folder
    created = [p for p in (where.parent, *where.parent.parents) if not p.exists()]
    folder = output_directory(where)
    try:
        with tempfile.TemporaryDirectory(prefix=prefix, dir=folder, ignore_cleanup_errors=True) as spool:
            yield Path(spool)
    except BaseException:
        for made in created:  # the deepest first; a folder that holds anything stays
            with contextlib.suppress(OSError):
                made.rmdir()
        raise


def finish_output(parts: Sequence[Path], target: Path, fmt: str, *, sep: str | None = None,
                  inputs: tuple[Path, ...] = ()) -> Path:
    """Write the Parquet ``parts`` (in order) to ``target`` in ``fmt``, atomically, one batch
    at a time."""
    if fmt not in STREAMABLE:
        raise ParameterError(f"The streaming engines write Parquet and CSV/TSV files; not {fmt}.")
    refuse_input_overwrite(target, inputs)
    with atomic_path(target) as tmp:
        if fmt == "parquet" and len(parts) == 1:
            shutil.copyfile(parts[0], tmp)
        elif fmt == "parquet":
            writer = None
            try:
                for part in parts:
                    handle = open_parquet(part)
                    for g in range(handle.metadata.num_row_groups):
                        table = handle.read_row_group(g)
                        writer = writer or pq.ParquetWriter(tmp, table.schema)
                        writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()
        else:
            delimiter = "\t" if fmt == "tsv" else (sep or ",")
            header = True
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                for part in parts:
                    for batch in open_parquet(part).iter_batches(batch_size=CHUNK_ROWS):
                        batch.to_pandas().to_csv(fh, sep=delimiter, index=False, header=header)
                        header = False
    return target


@dataclass(frozen=True)
class WholeFileRelease(Result):
    """What a whole-file step wrote (rank swapping on the external sort, record swapping by
    households): the release, its record count, the method's report and the release's fingerprint."""

    path: Path
    records: int
    info: dict[str, Any]
    fingerprint: str


def write_by_chunks(source: Path, fmt: str, target: Path, fmt_out: str, spool: Path,
                    change: Callable[[pd.DataFrame], pd.DataFrame], *, batch_rows: int, drop: Sequence[str] = (),
                    sep: str | None = None, encoding: str = "utf-8", inputs: tuple[Path, ...] = ()) -> str:
    """The release of a whole-file step: ``source`` read chunk by chunk (``drop`` left out), each
    chunk passed through ``change`` and written to a Parquet part in ``spool``, then moved to
    ``target`` in ``fmt_out`` (atomically; never over an input); returns the release's fingerprint."""
    dtypes = csv_dtypes(source, fmt, sep=sep, encoding=encoding) if fmt != "parquet" else None
    part = spool / "release.parquet"
    writer = PartWriter(part)
    try:
        for chunk in iter_chunks(source, fmt, batch_rows=batch_rows, dtypes=dtypes, sep=sep, encoding=encoding):
            writer.write(change(chunk.drop(columns=list(drop)) if drop else chunk))
    finally:
        writer.close()
    fingerprint = stream_fingerprint([part], writer.dtypes)
    finish_output([part], target, fmt_out, inputs=(source, *inputs))
    return fingerprint
