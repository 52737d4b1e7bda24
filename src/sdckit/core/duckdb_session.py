"""DuckDB sessions and SQL quoting: the one place sdckit opens a DuckDB connection, reads a file
as a relation and writes a name or a value into SQL text (issue 29 item 5).

Every user (:mod:`sdckit.io`, :mod:`sdckit.engine`, :mod:`sdckit.tabular`, :mod:`sdckit.query`)
goes through these four functions:

* :func:`connect` -- a connection with the session settings (memory limit in bytes, spill
  directory, threads); a setting left ``None`` keeps DuckDB's default;
* :func:`relation` -- a CSV/TSV, Parquet file or a table of a DuckDB file as a ``FROM`` item,
  its columns and their types, with the required columns checked (:func:`check_columns`, one
  message for every caller);
* :func:`quote_identifier` -- a table or column name as a delimited identifier;
* :func:`quote_literal` -- a value written into the SQL text. Prefer bound ``?`` parameters;
  inline a literal only where DuckDB takes none (a file path of ``read_csv`` reused in several
  statements, ``COPY ... TO``, ``ATTACH``).

DuckDB is imported inside the functions that need it, so ``import sdckit`` stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdckit.core.errors import DataError, ParameterError

#: File formats :func:`relation` reads.
FORMATS = ("csv", "tsv", "parquet", "duckdb")
#: Most column names a missing-column message lists.
_LISTED = 30


def quote_identifier(name: str) -> str:
    """``name`` as a DuckDB delimited identifier: in double quotes, an inner ``"`` doubled.

    Any non-empty text names the same table or column back (DuckDB compares identifiers
    case-insensitively, as SQL does).
    """
    if not isinstance(name, str) or not name:
        raise ParameterError(f"A SQL identifier must be a non-empty str. Got {name!r} instead.")
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: Any) -> str:
    """``value`` as a DuckDB literal that evaluates back to it.

    ``None`` is ``NULL``; a bool ``TRUE``/``FALSE``; an int its digits; a float its ``repr``
    read as ``DOUBLE`` (so the double is exact, never a DECIMAL); a str or a path in single
    quotes with an inner ``'`` doubled (DuckDB's standard strings read no backslash escapes).
    A float that is not finite is refused (:class:`ParameterError`).
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"A SQL literal must be a finite number. Got {value!r} instead.")
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ParameterError(f"A SQL literal must be None, a bool, int, float, str or path. Got {type(value).__name__}.")


def connect(database: str | Path = ":memory:", *, memory_limit: int | None = None,
            temp_directory: str | Path | None = None, threads: int | None = None,
            read_only: bool = False) -> Any:
    """A DuckDB connection with sdckit's session settings.

    Parameters
    ----------
    database : str or path
        ``":memory:"`` (default) or a DuckDB file.
    memory_limit : int, optional
        DuckDB's memory limit in bytes; past it sorts, joins and aggregations spill to
        ``temp_directory``. Default: DuckDB's (80% of the machine's memory).
    temp_directory : path, optional
        Where DuckDB spills. Default: DuckDB's (``.tmp`` in the working directory).
    threads : int, optional
        DuckDB's worker threads. Default: DuckDB's (one per core).
    read_only : bool
        Open ``database`` read-only.

    Returns
    -------
    duckdb.DuckDBPyConnection
        The caller closes it.
    """
    import duckdb

    config: dict[str, Any] = {}
    if memory_limit is not None:
        config["memory_limit"] = f"{int(memory_limit)}B"
    if temp_directory is not None:
        config["temp_directory"] = str(temp_directory)
    if threads is not None:
        config["threads"] = int(threads)
    return duckdb.connect(str(database), read_only=read_only, config=config)


def check_columns(wanted: Sequence[str], available: Sequence[str], where: str, *, role: str | None = None) -> None:
    """Raise the one :class:`DataError` for a column of ``wanted`` not in ``available``.

    ``where`` names the data in the message (``"'census.csv'"``, ``"the data"``); ``role``
    names what the column is for (``"dimension"``: "The dimension column 'x' is not in ...").
    The message lists the columns there are and points out a name that differs only in case.
    """
    present = set(available)
    for name in wanted:
        if name in present:
            continue
        what = f"The {role} column" if role else "Column"
        folded = {str(a).lower(): a for a in available}
        hint = ""
        if isinstance(name, str) and name.lower() in folded:
            hint = f" (did you mean {folded[name.lower()]!r}? names are case-sensitive)"
        listed = ", ".join(map(str, list(available)[:_LISTED]))
        if len(available) > _LISTED:
            listed += f", ... ({len(available)} in all)"
        raise DataError(f"{what} {name!r} is not in {where}{hint}; its columns are: {listed or 'none'}.")


@dataclass(frozen=True)
class Relation:
    """A source read by :func:`relation`: ``sql`` goes after ``FROM``; ``types`` maps each column
    to its DuckDB type (upper case, e.g. ``"BIGINT"``, ``"DECIMAL(18,3)"``), in file order;
    ``where`` names it in messages."""

    sql: str
    types: dict[str, str] = field(repr=False)
    where: str
    fmt: str

    @property
    def columns(self) -> list[str]:
        """The column names, in file order."""
        return list(self.types)

    def require(self, columns: Sequence[str], *, role: str | None = None) -> None:
        """:func:`check_columns` against this relation's columns."""
        check_columns(columns, self.columns, self.where, role=role)

    def unreadable(self, exc: BaseException) -> DataError:
        """The one :class:`DataError` for a DuckDB error while reading the source (its type
        only: DuckDB's message may quote data)."""
        return DataError(f"{self.where} cannot be read as {self.fmt}: {type(exc).__name__}.")


def relation(con: Any, path: str | Path, fmt: str, *, columns: Sequence[str] = (), role: str | None = None,
             where: str | None = None, table: str | None = None, alias: str | None = None,
             all_varchar: bool = False, row_numbers: bool = False, sep: str | None = None) -> Relation:
    """Read a file as a relation of ``con`` and check it holds ``columns``.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        From :func:`connect`.
    path : path
        The file.
    fmt : {"csv", "tsv", "parquet", "duckdb"}
        A CSV file is read with a header row and DuckDB's type detection (a TSV one tab
        separated); ``"duckdb"`` attaches the file read-only as ``alias`` and reads ``table``.
    columns : list of str
        Columns that must be present (:func:`check_columns`, with ``role``).
    where : str, optional
        How messages name the source (default: the file's name, quoted).
    all_varchar : bool
        Read every CSV column as text (codes such as ``'01'`` stay ``'01'``).
    row_numbers : bool
        Add ``file_row_number`` (0, 1, ... in file order) to a CSV or Parquet relation.
    sep : str, optional
        The separator of a CSV file (default: detected).

    Returns
    -------
    Relation
        Its ``sql``, column ``types`` and ``where``. A source DuckDB cannot read raises
        :class:`DataError` naming the exception's type.
    """
    import duckdb

    path = Path(path)
    where = where or repr(path.name)
    literal = quote_literal(path)
    if fmt == "parquet":
        sql = f"read_parquet({literal}{', file_row_number=true' if row_numbers else ''})"
    elif fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else sep
        options = ", all_varchar=true" if all_varchar else ""
        options += "" if sep is None else f", delim={quote_literal(sep)}"
        sql = f"read_csv({literal}, header=true{options})"
        if row_numbers:
            sql = f"(SELECT *, row_number() OVER () - 1 AS file_row_number FROM {sql})"
    elif fmt == "duckdb":
        if not table or not alias:
            raise ParameterError("relation() reads a DuckDB file's table: give table= and alias=.")
        sql = f"{quote_identifier(alias)}.{quote_identifier(table)}"
    else:
        raise ParameterError(f"relation() reads {', '.join(FORMATS)}. Got {fmt!r} instead.")
    try:
        if fmt == "duckdb":
            con.execute(f"ATTACH {literal} AS {quote_identifier(alias)} (READ_ONLY)")  # type: ignore[arg-type]
        described = con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()
    except duckdb.Error as exc:
        raise Relation(sql, {}, where, fmt).unreadable(exc) from None
    rel = Relation(sql, {row[0]: str(row[1]).upper() for row in described}, where, fmt)
    rel.require(columns, role=role)
    return rel
