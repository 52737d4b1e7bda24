"""tau-ARGUS data files: fixed-width or free-format microdata (``.asc``) and tabular input (``.tab``).

Both are read by the layout of their ``.rda`` (:func:`~sdckit.io.tauargus.rda.read_rda`).
Conventions (tau-ARGUS user's manual, version 4.2, sections 5.1 and 5.4; the reader in
sdcTools/tauargus ``Metadata.java``):

- columns are named and ordered as the ``.rda`` declares them;
- codes of explanatory, holding, request and status variables stay text, stripped of blanks
  (tau-ARGUS pads codes on the left, so ``" 1"`` is the code ``1``); an explanatory variable's
  missing codes stay codes — in tau-ARGUS they are a category of the table, counted in its
  totals;
- numeric variables (``<NUMERIC>``, ``<WEIGHT>``, frequency, ``<MAXSCORE>``, shadow, cost,
  protection levels) are parsed as written (``<DECIMALS>`` is for display); a value equal to one
  of the variable's missing codes becomes NaN (tau-ARGUS leaves it out of every cell), and a
  blank field is 0, as tau-ARGUS reads it (``strtod`` of blanks; libtauargus ``TauArgus.cpp``,
  ``DoMicroRecord`` and ``ConvertNumeric``). In tabular input whose separator is not ``,`` a
  decimal comma is accepted (tau-ARGUS writes ``16847646,84``).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.io.tauargus._text import fail, read_text
from sdckit.io.tauargus.rda import TauMetadata, TauVariable, read_rda


def read_asc(path: str | Path, rda: TauMetadata | str | Path) -> pd.DataFrame:
    """Read tau-ARGUS microdata: fixed-width records (``.asc``) or free format with a separator.

    Parameters
    ----------
    path : str or Path
        The data file (``.gz`` is decompressed).
    rda : TauMetadata or str or Path
        Its metadata, or the ``.rda`` file to read it from.

    Returns
    -------
    pandas.DataFrame
        One row per non-blank line, one column per variable of the ``.rda``.

    Raises
    ------
    DataError
        Missing or empty file; metadata of tabular input; a record (named by line) shorter
        than the last column a variable needs, with the wrong number of fields, or with a
        value that is not a number where the variable is numeric.
    """
    meta = _metadata(rda, "micro")
    if meta.kind not in ("fixed", "free"):
        raise DataError(f"{str(meta.path)!r} describes {_KIND_TEXT[meta.kind]}, not microdata "
                        "in a text file; read it with the matching reader.")
    path, text = read_text(path, "tau-ARGUS microdata (.asc)")
    numbers, records = _records(text)
    del text
    if meta.kind == "fixed":
        fields = _fixed_fields(path, numbers, records, meta)
    else:
        fields = _split_fields(path, numbers, records, meta)
    return _frame(path, numbers, fields, meta, decimal_comma=False)


def read_tab(path: str | Path, rda: TauMetadata | str | Path) -> pd.DataFrame:
    """Read tau-ARGUS tabular input (``.tab``): one given cell per line, fields in ``.rda`` order.

    Parameters
    ----------
    path : str or Path
        The ``.tab`` file.
    rda : TauMetadata or str or Path
        Its metadata (read as tabular metadata when a path is given).

    Returns
    -------
    pandas.DataFrame
        One row per cell: the code of each explanatory variable (totals carry the variable's
        ``<TOTCODE>``), the cell value, frequency, top contributions (``<MAXSCORE>``), status,
        shadow, cost and protection levels as the ``.rda`` declares them. The roles are on the
        metadata: ``rda.explanatory``, ``rda.response``, ``rda.frequency``, ``rda.top``,
        ``rda.status`` (codes ``rda.safe``, ``rda.unsafe``, ``rda.protect``).

    Raises
    ------
    DataError
        Missing or empty file; metadata of microdata; a line (named by number) with the wrong
        number of fields or a value that is not a number where one is expected.
    """
    meta = _metadata(rda, "table")
    if meta.kind != "table":
        raise DataError(f"{str(meta.path)!r} describes {_KIND_TEXT[meta.kind]}, not tabular "
                        "input; read the data with read_asc.")
    path, text = read_text(path, "tau-ARGUS tabular input (.tab)")
    numbers, records = _records(text)
    fields = _split_fields(path, numbers, records, meta)
    return _frame(path, numbers, fields, meta, decimal_comma=meta.separator != ",")


def tab_status(cells: pd.DataFrame, rda: TauMetadata) -> tuple[list[str | None], np.ndarray | None, np.ndarray | None]:
    """The statuses and protection levels a ``.tab`` gives its cells (what :func:`read_tab`
    returned), in tau-ARGUS's meaning (manual 4.2, tabular input): the ``.rda``'s ``<SAFE>``,
    ``<UNSAFE>`` and ``<PROTECT>`` codes (S, U, P by default) become ``"safe"``, ``"unsafe"`` and
    ``"protected"``; with no status column every status is None. Another code (tau-ARGUS writes
    E for an empty cell) is no status, allowed only on a cell of frequency 0. Returns (statuses,
    lower levels, upper levels), a level array None when the ``.rda`` has no such column.

    Raises
    ------
    DataError
        A non-empty cell (named by its row) with a status code that is none of the three.
    """
    n = len(cells)
    levels = []
    for role in ("lower_pl", "upper_pl"):
        col = next((v.name for v in rda.variables if v.role == role), None)
        levels.append(None if col is None else cells[col].to_numpy(float))
    lower, upper = levels
    if rda.status is None:
        return [None] * n, lower, upper
    meaning = {rda.safe: "safe", rda.unsafe: "unsafe", rda.protect: "protected"}
    codes = cells[rda.status].astype(str).str.strip().to_numpy()
    freq = cells[rda.frequency].to_numpy(float) if rda.frequency is not None else np.ones(n)
    out: list[str | None] = []
    for i, code in enumerate(codes):
        if code not in meaning and freq[i] != 0:
            raise DataError(f"Cell on row {i + 1} of the .tab has status {code!r}; tau-ARGUS's status codes "
                            f"are {rda.safe!r} (safe), {rda.unsafe!r} (unsafe) and {rda.protect!r} (protected).")
        out.append(meaning.get(code))
    return out, lower, upper


def rda_beside(path: str | Path) -> Path:
    """The ``.rda`` beside a data file: same name, extension ``.rda``, case ignored (tau-ARGUS
    jobs come from Windows, e.g. ``tau_testW.asc`` with ``Tau_TestW.rda``)."""
    path = Path(path)
    stem = path.name[: -len(".gz")] if path.name.lower().endswith(".gz") else path.name
    wanted = Path(stem).stem.lower() + ".rda"
    exact = path.parent / (Path(stem).stem + ".rda")
    if exact.is_file():
        return exact
    found = sorted(p for p in path.parent.glob("*") if p.name.lower() == wanted and p.is_file())
    if len(found) != 1:
        raise DataError(f"No single .rda file beside {str(path)!r} to describe its layout; pass "
                        "the metadata file (rda=...).")
    return found[0]


def _metadata(rda: TauMetadata | str | Path, kind: Literal["micro", "table"]) -> TauMetadata:
    """``rda`` itself, or the ``.rda`` file read as ``kind``; when that fails but the file reads
    as the other kind, that metadata (so that the caller says which reader fits)."""
    if isinstance(rda, TauMetadata):
        return rda
    try:
        return read_rda(rda, kind=kind)
    except DataError as exc:
        try:
            return read_rda(rda, kind="auto")
        except DataError:
            raise exc from None


_KIND_TEXT = {"fixed": "fixed-width microdata", "free": "free-format microdata",
              "table": "tabular input", "spss": "an SPSS system file"}


def _records(text: str) -> tuple[np.ndarray, list[str]]:
    """The non-blank lines of ``text`` (line ends removed) and their 1-based line numbers."""
    lines = text.split("\n")
    keep = [i for i, line in enumerate(lines) if line.strip()]
    return np.asarray(keep, dtype=np.int64) + 1, [lines[i].rstrip("\r") for i in keep]


def _fixed_fields(path: Path, numbers: np.ndarray, records: list[str],
                  meta: TauMetadata) -> list[np.ndarray]:
    """Each variable's slice of every record; refuses records too short for a variable.

    When every record is ASCII and of one length (the usual fixed-width file) the slices are
    cut from one ``(records, width)`` byte array, without a Python loop per record."""
    lengths = np.fromiter((len(r) for r in records), dtype=np.int64, count=len(records))
    spans = []
    for var in meta.variables:
        assert var.start is not None and var.length is not None
        end = var.start - 1 + var.length
        short = np.flatnonzero(lengths < end)
        if short.size:
            i = short[0]
            raise fail(path, int(numbers[i]), f"the record has {lengths[i]} characters but "
                       f"variable {var.name!r} ends at column {end} (.rda line {var.line}); "
                       "check the .rda positions")
        spans.append((var.start - 1, end))
    if records and lengths.min() == lengths.max() and all(r.isascii() for r in records):
        grid = np.frombuffer("".join(records).encode("ascii"), dtype=np.uint8)
        grid = grid.reshape(len(records), int(lengths[0]))
        return [np.ascontiguousarray(grid[:, a:b]).view(f"S{b - a}").ravel() for a, b in spans]
    return [np.array([r[a:b] for r in records], dtype=str) for a, b in spans]


def _split_fields(path: Path, numbers: np.ndarray, records: list[str],
                  meta: TauMetadata) -> list[np.ndarray]:
    """Each variable's field of every separated record (fields may be quoted with ``"``)."""
    want = len(meta.variables)
    rows = list(csv.reader(records, delimiter=meta.separator, quotechar='"'))
    for i, row in enumerate(rows):
        if len(row) != want:
            raise fail(path, int(numbers[i]), f"has {len(row)} fields separated by "
                       f"{meta.separator!r} but the .rda declares {want} variables")
    if not rows:
        return [np.array([], dtype=str) for _ in range(want)]
    return [np.array(col, dtype=str) for col in zip(*rows)]


def _frame(path: Path, numbers: np.ndarray, fields: list[np.ndarray], meta: TauMetadata,
           decimal_comma: bool) -> pd.DataFrame:
    columns = {}
    for var, values in zip(meta.variables, fields):
        text = np.strings.strip(values)
        columns[var.name] = (_numbers(path, numbers, text, var, decimal_comma) if var.is_numeric
                             else pd.Series(text.astype(str), dtype=object))
    return pd.DataFrame(columns)


def _numbers(path: Path, numbers: np.ndarray, text: np.ndarray, var: TauVariable,
             decimal_comma: bool) -> pd.Series:
    """Stripped ``text`` (str or ASCII bytes) as numbers: missing codes -> NaN, blanks -> 0 (whole
    numbers stay integers when nothing is missing); anything else that is not a finite number is
    refused, naming the first line."""
    def lit(word: str) -> str | bytes:  # a literal of the array's own kind
        return word.encode("ascii", "replace") if text.dtype.kind == "S" else word

    missing = [lit(m) for m in var.missing]
    absent = np.isin(text, missing) if missing else np.zeros(text.shape, bool)
    given = np.where(absent | (text == lit("")), lit("0"), text)
    if decimal_comma:
        given = np.strings.replace(given, lit(","), lit("."))
    whole = not any((np.strings.find(given, lit(c)) >= 0).any() for c in ".eE")
    try:
        values: np.ndarray | None = given.astype(np.int64 if whole else np.float64)
    except (ValueError, OverflowError):
        values = None
    bad = np.strings.find(given, lit("_")) >= 0  # Python's parser takes 1_000; tau-ARGUS does not
    if values is None:  # e.g. a whole number too large for int64, or not a number at all
        as_text = pd.Series(given.astype(str), dtype=object)
        values = pd.to_numeric(as_text, errors="coerce").to_numpy(dtype=np.float64)
    if values.dtype.kind == "f":
        bad |= ~np.isfinite(values)
    first = np.flatnonzero(bad)
    if first.size:
        raise fail(path, int(numbers[first[0]]), f"the value of variable {var.name!r} is not a "
                   "number; tau-ARGUS numeric fields hold digits, a sign and a decimal point")
    if absent.any():
        values = values.astype(np.float64)
        values[absent] = np.nan
    return pd.Series(values)
