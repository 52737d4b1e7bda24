"""Read and write microdata files: CSV/TSV, Parquet, Stata, SPSS, SAS, DuckDB; read tau-ARGUS ``.asc``.

:func:`read` and :func:`write` choose the format from the file extension unless ``format=``
says otherwise. Every failure is a :class:`~sdckit.core.errors.DataError` that names the file
and says what to do; writes are atomic and never replace an input file.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.duckdb_session import connect, quote_identifier
from sdckit.core.atomic import atomic_path, refuse_input_overwrite, remember_input
from sdckit.io.tauargus import rda_beside, read_asc

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {
    "csv": (".csv", ".txt"),
    "tsv": (".tsv", ".tab"),
    "parquet": (".parquet", ".pq"),
    "stata": (".dta",),
    "spss": (".sav", ".zsav"),
    "sas": (".sas7bdat",),
    "duckdb": (".duckdb", ".ddb", ".db"),
    "tauargus": (".asc",),
}
#: Formats sdckit can write (SAS files are read-only: pyreadstat cannot write them; tau-ARGUS
#: microdata too).
WRITABLE = ("csv", "tsv", "parquet", "stata", "spss", "duckdb")
_SNIFF_BYTES = 64 * 1024
#: The most columns :func:`read` accepts unless told otherwise (``max_columns=``). Microdata
#: files for disclosure control hold tens to a few thousand variables; pandas needs about two
#: minutes and 2.3 GB to parse the header of a CSV file of 700,000 columns, so a file wider than
#: this is refused before it is parsed (issue 27): a CSV file from its header line, a Parquet
#: file from its schema, other formats once read.
MAX_COLUMNS = 10_000
_DELIMITERS = ",;\t|"


def detect_format(path: str | Path, format: str | None = None) -> str:
    """The format named by ``format``, or the one the extension of ``path`` implies."""
    if format is not None:
        fmt = str(format).lower().lstrip(".")
        aliases = {ext.lstrip("."): name for name, exts in FORMATS.items() for ext in exts}
        fmt = aliases.get(fmt, fmt)
        if fmt not in FORMATS:
            raise ParameterError(
                f"Unknown format {format!r}; use one of: {', '.join(FORMATS)}."
            )
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix == ".gz":  # e.g. data.csv.gz
        suffix = Path(Path(path).stem).suffix.lower()
    for name, exts in FORMATS.items():
        if suffix in exts:
            return name
    raise ParameterError(
        f"Cannot tell the format of {str(path)!r} from its extension {suffix or '(none)'!r}; "
        f"pass format= (one of: {', '.join(FORMATS)})."
    )


# =============================================================================== read
def read(
    path: str | Path,
    *,
    format: str | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
    table: str | None = None,
    query: str | None = None,
    max_columns: int = MAX_COLUMNS,
    **options: Any,
) -> pd.DataFrame:
    """Read a data file into a DataFrame.

    Parameters
    ----------
    path : str or Path
        The file. Its extension picks the format unless ``format`` is given.
    format : {"csv", "tsv", "parquet", "stata", "spss", "sas", "duckdb", "tauargus"}, optional
        ``tauargus``: tau-ARGUS fixed-width microdata (``.asc``) laid out by the ``.rda`` file
        beside it (same name, case ignored) or the one given as ``rda=``.
    sep : str, optional
        CSV delimiter; sniffed from the first 64 KiB among ``, ; TAB |`` when not given.
    encoding : str
        Text encoding of a CSV/TSV file (default UTF-8; a byte-order mark is skipped).
    table, query : str, optional
        For a DuckDB file: the table to read, or a SQL query to run. With neither, the file
        must hold exactly one table.
    max_columns : int, default :data:`MAX_COLUMNS` (10,000)
        A file with more columns is refused (a CSV file from its header line, before it is
        parsed; a Parquet file from its schema), unless ``usecols=`` / ``columns=`` pick fewer.
    **options
        For tau-ARGUS microdata only ``rda=`` (the metadata file); otherwise
        passed to the underlying reader (pandas.read_csv, pandas.read_parquet, pyreadstat).

    Raises
    ------
    DataError
        The file is missing, empty, undecodable or malformed.
    """
    path = Path(path)
    fmt = detect_format(path, format)
    if not path.exists():
        raise DataError(f"File not found: {str(path)!r}.")
    if path.is_dir():
        raise DataError(f"{str(path)!r} is a directory, not a data file.")
    if path.stat().st_size == 0:
        raise DataError(f"File {str(path)!r} is empty.")
    if fmt not in ("csv", "tsv", "duckdb") and (table or query):
        raise ParameterError("table= and query= apply to DuckDB files only.")
    if isinstance(max_columns, bool) or not isinstance(max_columns, int | np.integer) or max_columns < 1:
        raise ParameterError(f"The 'max_columns' parameter of read must be an int >= 1. Got {max_columns!r} instead.")
    try:
        if fmt in ("csv", "tsv"):
            frame = _read_text(path, "\t" if fmt == "tsv" and sep is None else sep, encoding, options,
                               int(max_columns))
        elif fmt == "parquet":
            if "columns" not in options:
                import pyarrow.parquet as pq

                check_width(len(pq.read_schema(path).names), int(max_columns), path)
            frame = pd.read_parquet(path, **options)
        elif fmt in ("stata", "spss", "sas"):
            frame = _read_stat(path, fmt, options)
        elif fmt == "tauargus":
            frame = _read_tauargus(path, options)
        else:
            frame = _read_duckdb(path, table, query)
    except (DataError, ParameterError):
        raise
    except Exception as exc:  # any reader failure becomes one clear message
        raise DataError(
            f"Cannot read {str(path)!r} as {fmt}: {_reason(exc)}. Check that the file is a "
            f"valid {fmt} file, or pass format=."
        ) from None
    if frame.shape[1] == 0:
        raise DataError(f"File {str(path)!r} has no columns.")
    check_width(frame.shape[1], int(max_columns), path)
    check_columns(frame, str(path))
    remember_input(path)
    return frame


def check_width(columns: int, max_columns: int, path: Path) -> None:
    """Refuse a file of more than ``max_columns`` columns (:data:`MAX_COLUMNS`), in one line."""
    if columns > max_columns:
        raise DataError(
            f"File {str(path)!r} has {columns:,} columns; sdckit reads at most {max_columns:,} "
            "(sdckit.io.MAX_COLUMNS). Keep only the columns you need, or pass max_columns= to sdckit.io.read."
        )


def check_names(names: list[str], where: str) -> None:
    """Refuse duplicate column names (never renamed silently), naming them."""
    duplicated = sorted(n for n, times in Counter(names).items() if times > 1)
    if duplicated:
        raise DataError(f"{where} has duplicate column names: {', '.join(map(repr, duplicated))}; "
                        "rename them so that each column has its own name.")


def check_columns(frame: pd.DataFrame, where: str) -> None:
    """Refuse duplicate column names (never renamed silently) and nested columns (lists,
    structs, maps: sdckit protects flat tables), naming the columns."""
    check_names([str(c) for c in frame.columns], where)
    for name in frame.columns:
        series = frame[name]
        if series.dtype == object:
            sample = series.dropna().head(1000)
            if any(isinstance(v, (list, tuple, dict, set, np.ndarray)) for v in sample):
                raise DataError(f"{where}: column {str(name)!r} is nested (lists, structs or maps); "
                                "flatten it into plain columns first.")


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def _read_text(path: Path, sep: str | None, encoding: str, options: dict[str, Any],
               max_columns: int = MAX_COLUMNS) -> pd.DataFrame:
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":  # data.csv.gz: read as the CSV it holds
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            raise DataError(f"{str(path)!r} is not a valid gzip file.") from None
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        text_head = raw[:_SNIFF_BYTES].decode(enc)
        raw.decode(enc)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"Cannot decode {str(path)!r} as {encoding}: byte 0x{raw[exc.start]:02x} at "
            f"position {exc.start} is invalid. Pass the file's encoding (e.g. encoding='latin-1')."
        ) from None
    except LookupError:
        raise ParameterError(f"Unknown text encoding {encoding!r}.") from None
    if not text_head.strip():
        raise DataError(f"File {str(path)!r} holds no data (only whitespace).")
    if sep is None:
        sep = sniff_delimiter(text_head)
    try:  # the whole header record (it may be longer than the sniffed head), before pandas parses
        header = next(csv.reader(io.TextIOWrapper(io.BytesIO(raw), encoding=enc, newline=""), delimiter=sep), [])
    except csv.Error as exc:
        raise DataError(f"Malformed CSV header in {str(path)!r} (delimiter {sep!r}): {_reason(exc)}.") from None
    if "usecols" not in options:
        check_width(len(header), max_columns, path)
    check_names(header, str(path))
    try:
        return pd.read_csv(io.BytesIO(raw), sep=sep, encoding=enc, **options)
    except pd.errors.ParserError as exc:
        raise DataError(
            f"Malformed CSV in {str(path)!r} (delimiter {sep!r}): {_reason(exc)}. Check the "
            "quoting, or pass sep= explicitly."
        ) from None


def sniff_delimiter(sample: str) -> str:
    """The delimiter of a delimited text sample among ``, ; TAB |`` (default ``,``)."""
    lines = [ln for ln in sample.splitlines() if ln.strip()][:50]
    if len(lines) > 1 and not sample.endswith("\n"):
        lines = lines[:-1]  # the last line may be cut off
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=_DELIMITERS).delimiter
    except csv.Error:
        pass
    # fall back: the candidate that appears the same non-zero number of times in every line
    best, best_count = ",", 0
    for cand in _DELIMITERS:
        counts = {ln.count(cand) for ln in lines}
        if len(counts) == 1 and (n := counts.pop()) > best_count:
            best, best_count = cand, n
    return best


def _read_tauargus(path: Path, options: dict[str, Any]) -> pd.DataFrame:
    rda = options.pop("rda", None)
    if options:
        raise ParameterError(f"tau-ARGUS microdata take only rda= as an option; got "
                             f"{', '.join(sorted(options))}.")
    return read_asc(path, rda_beside(path) if rda is None else rda)


def _read_stat(path: Path, fmt: str, options: dict[str, Any]) -> pd.DataFrame:
    import pyreadstat

    reader = {
        "stata": pyreadstat.read_dta,
        "spss": pyreadstat.read_sav,
        "sas": pyreadstat.read_sas7bdat,
    }[fmt]
    frame, _meta = reader(str(path), **options)
    return frame


def _read_duckdb(path: Path, table: str | None, query: str | None) -> pd.DataFrame:
    import duckdb

    if table and query:
        raise ParameterError("Give either table= or query= for a DuckDB file, not both.")
    con = connect(path, read_only=True)
    try:
        if query is None:
            tables = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
            if table is None:
                if len(tables) != 1:
                    raise DataError(
                        f"DuckDB file {str(path)!r} holds {len(tables)} tables "
                        f"({', '.join(tables) or 'none'}); pass table= or query=."
                    )
                table = tables[0]
            elif table not in tables:
                raise DataError(
                    f"DuckDB file {str(path)!r} has no table {table!r}; its tables are: "
                    f"{', '.join(tables) or 'none'}."
                )
            return con.execute(f"SELECT * FROM {quote_identifier(table)}").df()
        try:
            return con.execute(query).df()
        except duckdb.Error as exc:
            raise DataError(f"The query on {str(path)!r} failed: {_reason(exc)}.") from None
    finally:
        con.close()


# =============================================================================== write
def write(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    format: str | None = None,
    sep: str | None = None,
    table: str = "data",
    inputs: tuple[str | Path, ...] = (),
) -> Path:
    """Write ``frame`` to ``path`` atomically (temporary file, then rename).

    Parameters
    ----------
    frame : DataFrame
    path : str or Path
    format : str, optional
        One of ``csv, tsv, parquet, stata, spss, duckdb``; default from the extension.
    sep : str, optional
        CSV delimiter (default ``,``; TSV always uses a tab).
    table : str
        Table name in a DuckDB file; an existing table of that name is replaced, other
        tables are kept.
    inputs : paths
        Files that must not be overwritten (files read with :func:`read` are protected
        already).

    Returns
    -------
    Path
        The written file.
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"write() expects a pandas DataFrame, got {type(frame).__name__}.")
    path = Path(path)
    fmt = detect_format(path, format)
    if fmt not in WRITABLE:
        raise ParameterError(
            f"sdckit cannot write {fmt} files; choose one of: {', '.join(WRITABLE)}."
        )
    refuse_input_overwrite(path, tuple(Path(p) for p in inputs))
    with atomic_path(path, copy_existing=(fmt == "duckdb")) as tmp:
        try:
            if fmt in ("csv", "tsv"):
                frame.to_csv(tmp, sep="\t" if fmt == "tsv" else (sep or ","), index=False)
            elif fmt == "parquet":
                frame.to_parquet(tmp, index=False)
            elif fmt == "stata":
                import pyreadstat

                pyreadstat.write_dta(frame, str(tmp))
            elif fmt == "spss":
                import pyreadstat

                pyreadstat.write_sav(frame, str(tmp))
            else:
                _write_duckdb(frame, tmp, table)
        except (DataError, ParameterError):
            raise
        except Exception as exc:
            raise DataError(f"Cannot write {str(path)!r} as {fmt}: {_reason(exc)}.") from None
    return path


def _write_duckdb(frame: pd.DataFrame, path: Path, table: str) -> None:
    con = connect(path)
    try:
        con.register("_sdckit_frame", frame)
        con.execute(f"CREATE OR REPLACE TABLE {quote_identifier(table)} AS SELECT * FROM _sdckit_frame")
        con.unregister("_sdckit_frame")
        con.execute("CHECKPOINT")
    finally:
        con.close()
