"""The privacy ledger: one budget per data set, kept across releases (issue 19 item 8, issue 27).

A budget that lives only as long as one call stops nothing: 200 releases at epsilon = 1 of the
same data, averaged, cut the error tenfold. The command line therefore keeps a ledger file — the
data protector's private record, never published — with one
:class:`~sdckit.dp.BudgetAccountant` per data set.

* **Key: the records, not the file** (:func:`data_set_key`). The same people under another name,
  in another folder, in another row order, with other line endings or quoting, gzipped, or
  exported to Parquet are one data set: the key is a SHA-256 over the sorted hashes of the rows,
  each row's values put in a canonical text form (columns by name; an integral float is the
  integer; a missing value is one marker whatever the reader made of it).
* **Place: one per user** (:func:`default_ledger_path`): ``$SDCKIT_LEDGER``, else
  ``$XDG_DATA_HOME/sdckit/ledger.json``, else ``~/.local/share/sdckit/ledger.json``; an office
  shares one by naming it (``--ledger PATH`` or the recipe's ``[budget] ledger``).
* Every recipe run with a differentially private method opens the ledger under an exclusive
  lock, charges the data set's accountant (before any noise is drawn) and writes it back, also
  when the run fails after charging, so that a refused or failed release never gives budget back.
  A run that charged nothing (it failed before its first charge) writes nothing: no spend, and no
  budget fixed for the data set.
* The ledger, its lock and its folder are created readable by their owner only (0600, 0700),
  whatever the umask; an existing ledger keeps the mode its owner gave it (a group may share one).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.atomic import make_private_dir, open_private, write_private
from sdckit.core.errors import DataError, ParameterError
from sdckit.dp.accountant import BudgetAccountant, MemoryStore, budget_totals, exact_text

LEDGER_FORMAT = 1
#: Environment variable naming the ledger file (overrides the per-user default).
LEDGER_ENV = "SDCKIT_LEDGER"
#: Prefix of a key computed from the records (:func:`data_set_key`).
RECORDS_KEY = "records-sha256:"
#: How a missing value is written in a row's canonical form (no text value starts with NUL).
_MISSING = "\x00NA"
#: Integral floats below this magnitude are written as integers (every such float is exact).
_INTEGRAL = 2.0**63


def default_ledger_path() -> Path:
    """The per-user ledger: ``$SDCKIT_LEDGER``, else ``$XDG_DATA_HOME/sdckit/ledger.json`` (an
    absolute XDG_DATA_HOME only, as the XDG spec says), else ``~/.local/share/sdckit/ledger.json``."""
    named = os.environ.get(LEDGER_ENV, "").strip()
    if named:
        return Path(named).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "sdckit" / "ledger.json"


def file_key(path: Path) -> str:
    """The key an earlier sdckit gave a data set: the SHA-256 of its file's bytes (looked up so
    that a ledger written before issue 27 keeps its budgets)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _canonical_number(values: np.ndarray) -> np.ndarray:
    """Numbers as float64 (a missing value one NaN, -0.0 as 0.0): an integer column with a missing
    value (a float in CSV, a nullable integer in Parquet) agrees with itself; integers past 2**53
    may round to a neighbour (two data sets then share one budget: the safe side)."""
    out = np.array(values, dtype=float)
    out[np.isnan(out)] = np.nan
    out[out == 0.0] = 0.0
    return out


def _canonical_value(value: Any) -> str:
    """One value of an object column (a mix of types) in the canonical form."""
    if value is None or value is pd.NA or value is pd.NaT:
        return _MISSING
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < _INTEGRAL else repr(number + 0.0)
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _canonical_column(series: pd.Series) -> np.ndarray:
    """A column's values in the canonical form, whatever dtype the reader chose: numbers as
    float64 (:func:`_canonical_number`), anything else as text (object array)."""
    dtype = series.dtype
    if series.isna().all():  # no value at all: the same whatever type a reader gave the column
        return np.full(len(series), np.nan)
    if isinstance(dtype, pd.CategoricalDtype):
        series = series.astype(object)
        dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        missing = series.isna().to_numpy()
        out = np.where(series.fillna(False).to_numpy(dtype=bool), "true", "false").astype(object)
        out[missing] = _MISSING
        return out
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        return _canonical_number(series.to_numpy(dtype=float, na_value=np.nan))
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return np.array([_canonical_value(v) for v in series], dtype=object)
    values = series.to_numpy(dtype=object)
    out = values.copy()
    missing = pd.isna(values)
    out[missing] = _MISSING
    texts = np.fromiter((type(v) is str for v in values), dtype=bool, count=len(values))
    for i in np.flatnonzero(~texts & ~missing):  # numbers, timestamps, ... in a mixed column
        out[i] = _canonical_value(values[i])
    return out


#: An odd 64-bit constant (the golden ratio's) that chains the columns of a row.
_ODD = 0x9E3779B97F4A7C15


def _mix(z: np.ndarray) -> np.ndarray:
    """The SplitMix64 finalizer (Steele, Lea & Flood 2014), elementwise on uint64: every input bit
    reaches every output bit. Defined here, not borrowed, so that the key never changes with a
    library's version."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _column_hashes(values: np.ndarray) -> np.ndarray:
    """One uint64 per value of a canonical column: a number's float64 bits mixed, a text's
    BLAKE2b-64 (each distinct text hashed once)."""
    if values.dtype != object:
        return _mix(values.astype(np.float64).view(np.uint64) ^ np.uint64(_ODD))
    codes, uniques = pd.factorize(values)
    blake = hashlib.blake2b
    digests = b"".join([blake(str(u).encode("utf-8", "surrogatepass"), digest_size=8).digest() for u in uniques])
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)[codes]


def data_set_key(frame: pd.DataFrame) -> str:
    """The ledger's key of a data set: its records, as a set with repetitions (a multiset).

    Each column is put in a canonical form (names sorted; a numeric column as float64, so a
    column of integers with a missing value — a float in CSV, a nullable integer in Parquet —
    agrees, with one NaN for missing and 0.0 for -0.0; any other column as text: booleans
    ``true``/``false``, integral numbers as integers, every missing value one marker); each row
    is hashed to 64 bits (:func:`_column_hashes` chained over the columns by :func:`_mix`); the
    row hashes are sorted, so
    row order does not count, and the SHA-256 of the column names and the sorted hashes is the
    key. The file's bytes — name, folder, line endings, quoting, compression, format — do not
    enter. Like the file hash it replaces, the key is unkeyed: the ledger is private.
    """
    names = sorted(str(c) for c in frame.columns)
    by_name = {str(c): frame[c] for c in frame.columns}
    rows = np.zeros(len(frame), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in names:
            rows = _mix(rows * np.uint64(_ODD) + _column_hashes(_canonical_column(by_name[name])))
    rows = np.sort(rows)
    digest = hashlib.sha256()
    digest.update(json.dumps(names).encode("utf-8") + b"\x00")
    digest.update(rows.astype("<u8").tobytes())
    return RECORDS_KEY + digest.hexdigest()


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"ledger_format": LEDGER_FORMAT, "data_sets": {}}
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise DataError(f"The privacy ledger {str(path)!r} cannot be read as JSON; restore it from a backup.") from None
    if not isinstance(content, dict) or not isinstance(content.get("data_sets"), dict):
        raise DataError(f"The privacy ledger {str(path)!r} is not an sdckit ledger (no 'data_sets').")
    return content


class LedgerFileStore(MemoryStore):
    """One data set's budget in the JSON ledger file (:class:`~sdckit.dp.accountant.BudgetStore`).

    Used as a context manager (:func:`ledger_accountant`): entering takes the ledger's exclusive
    lock (``<ledger>.lock``, ``fcntl.flock``; other processes wait) and reads the data set's entry
    into memory, where charges are checked and added as in a
    :class:`~sdckit.dp.accountant.MemoryStore`; leaving writes the entry back (atomically, fsynced,
    0600 if new) if anything was charged, whatever happened meanwhile, and releases the lock. So a
    charge is atomic against every other process using the ledger, and a refused or failed release
    never gives budget back.

    Parameters
    ----------
    path : path
        The ledger file (created with its folder, 0700, on first use).
    key : str
        The data set's key (:func:`data_set_key`).
    epsilon, delta : Fraction
        The budget a data set seen for the first time gets; a stored one must have the same.
    label : str
        The data set's name as the ledger shows it (optional).
    aliases : iterable of str
        Keys an earlier sdckit gave the data set (:func:`file_key`); an entry under one moves to ``key``.
    """

    def __init__(self, path: str | Path, key: str, epsilon: Fraction, delta: Fraction = Fraction(0),
                 label: str = "", aliases: Iterable[str] = ()) -> None:
        super().__init__(epsilon, delta)
        self.path, self.key, self.label, self.aliases = Path(path), key, label, tuple(aliases)
        self._lock_fd: int | None = None

    def __enter__(self) -> LedgerFileStore:
        make_private_dir(self.path.parent)
        self._lock_fd = open_private(self.path.with_name(self.path.name + ".lock"))
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            self._load()
        except BaseException:
            self._release()
            raise
        return self

    def _load(self) -> None:
        self._content = _read(self.path)
        entries = self._content["data_sets"]
        stored = entries.get(self.key)
        self._moved = [alias for alias in self.aliases if alias in entries and alias != self.key]
        if stored is None and self._moved:
            stored = entries[self._moved[0]]
        self._stored = stored
        if stored is not None:
            epsilon, delta = BudgetAccountant.manifest_totals(stored)
            if (epsilon, delta) != (self.epsilon, self.delta):
                raise ParameterError(
                    f"The ledger gives this data set a budget of epsilon = {exact_text(epsilon)}, "
                    f"delta = {exact_text(delta)}; the recipe says epsilon = {exact_text(self.epsilon)}, "
                    f"delta = {exact_text(self.delta)}. A budget is fixed once: use the ledger's."
                )
            BudgetAccountant.over(self).restore(stored.get("spends", []))
        self._spent_before = (self.spent, self.spent_delta)

    def __exit__(self, *exc_info: object) -> None:
        try:
            if (self.spent, self.spent_delta) != self._spent_before:
                entry = BudgetAccountant.over(self).to_manifest()
                if self.label:
                    entry["data_set"] = self.label
                elif self._stored is not None and "data_set" in self._stored:
                    entry["data_set"] = self._stored["data_set"]
                entries = self._content["data_sets"]
                for alias in self._moved:
                    entries.pop(alias, None)
                entries[self.key] = entry
                write_private(self.path, json.dumps(self._content, indent=2) + "\n")
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


@contextlib.contextmanager
def ledger_accountant(path: str | Path, key: str, epsilon: Any, delta: Any = 0,
                      label: str = "", aliases: Iterable[str] = ()) -> Iterator[BudgetAccountant]:
    """The accountant of data set ``key`` in the ledger at ``path``, locked for the block
    (:class:`LedgerFileStore`).

    A data set seen for the first time gets a budget of ``(epsilon, delta)`` (above epsilon 10,
    with a :class:`~sdckit.core.errors.PrivacyWarning`); one already in the ledger keeps its own,
    and a different ``epsilon`` or ``delta`` is refused (a budget is fixed once; raising it is a
    decision taken by editing the ledger, not by a recipe). An entry stored under one of
    ``aliases`` (the file hash an earlier sdckit used) is this data set's and moves to ``key``.
    The ledger is written back when the block ends if anything was charged, whatever happened in
    the block; a block that charged nothing leaves the ledger as it was.
    """
    total_eps, total_delta = budget_totals(epsilon, delta, "the [budget] table", stacklevel=3)
    with LedgerFileStore(path, key, total_eps, total_delta, label, aliases) as store:
        yield BudgetAccountant.over(store)
