"""The service's state database: analysts, budgets, the spend ledger, the audit log, answers.

SQLite (stdlib ``sqlite3``) in WAL mode with ``synchronous = FULL`` (``[service] sync = "normal"``
trades survival of a power loss for speed; both survive a crash of the server); every change is one
``BEGIN IMMEDIATE`` transaction (the database's write lock, held across threads *and*
processes), so

* a charge checks ``spent + cost <= total`` (the one accountant, :class:`sdckit.dp.accountant.Accountant`,
  over a :class:`SqliteStore`) and writes the new total, the ledger row and the audit row in one
  transaction, *before* the answer is computed; it is never refunded. A
  committed charge survives a crash or ``kill -9`` of the server at any moment (the WAL is on
  disk before ``COMMIT`` returns), so spent budget never decreases;
* charges asked at the same time share one transaction (group commit, :meth:`State.charge`):
  one fsync for all of them, each still checked against the total the ones before it left and
  returned only once committed;
* budgets are exact :class:`fractions.Fraction` values, stored as text ``"numerator/denominator"``
  and never summed as floats: ten charges of 0.1 fill a budget of 1 exactly.

An analyst's row is an :class:`~sdckit.query.analysts.Analyst`; API keys are ``<key id>.<secret>``
with 256 bits of OS entropy, of which only a salted scrypt hash is stored
(:mod:`sdckit.query.analysts`; the key id is a public lookup handle), and a presented key is
checked with :func:`hmac.compare_digest` on the hash. The budget is charged through
:class:`~sdckit.query.sqlite_store.SqliteStore`. The database and its ``-wal``/``-shm``
files are readable by their owner only (0600), whatever the umask (issue 27).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

from sdckit.core.atomic import make_private_dir, open_private
from sdckit.core.errors import BudgetExceeded, ParameterError
from sdckit.core.params import Options, check_param
from sdckit.dp.accountant import Accountant, budget_totals, exact
from sdckit.query.analysts import (COLUMNS, DEFINITIONS, MODES, NAME, REVOKED, SCRYPT, Analyst, analyst_from_row,
                                   hash_key, new_key)
from sdckit.query.sqlite_store import PendingCharge, SqliteStore

#: Names this module gave before the analysts and the budget store had their own modules.
__all__ = ["DEFINITIONS", "MODES", "NAME", "REVOKED", "SCRYPT", "Analyst", "BudgetRefused", "SqliteStore", "State"]


#: The rule of ``sync`` (``[service] sync``): SQLite's synchronous mode.
SYNC = Options(("full", "normal"))
#: Columns added after the first schema (``ALTER TABLE`` on an older database; defaults: pure epsilon).
_ADDED = {"analysts": {"definition": "TEXT NOT NULL DEFAULT 'pure'", "rho_total": "TEXT",
                       "rho_spent": "TEXT NOT NULL DEFAULT '0'", "delta_spent": "TEXT NOT NULL DEFAULT '0'"},
          "charges": {"delta": "TEXT NOT NULL DEFAULT '0'", "rho": "TEXT NOT NULL DEFAULT '0'"}}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS analysts (
    name TEXT PRIMARY KEY, key_id TEXT UNIQUE NOT NULL, salt BLOB NOT NULL, key_hash BLOB NOT NULL,
    mode TEXT NOT NULL, epsilon_total TEXT, delta_total TEXT,
    epsilon_spent TEXT NOT NULL DEFAULT '0', tables TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, time REAL NOT NULL,
    epsilon TEXT NOT NULL, query TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT, time REAL NOT NULL, sql TEXT,
    decision TEXT NOT NULL, status INTEGER NOT NULL, epsilon TEXT NOT NULL DEFAULT '0', detail TEXT);
CREATE TABLE IF NOT EXISTS answered (
    id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, tbl TEXT NOT NULL,
    sql TEXT NOT NULL, time REAL NOT NULL, data TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS cache (
    analyst TEXT NOT NULL, key TEXT NOT NULL, response TEXT NOT NULL, PRIMARY KEY (analyst, key));
"""


#: Deprecated alias (before issue 29 the service had its own refusal): a charge past the analyst's
#: budget raises the one :class:`~sdckit.core.errors.BudgetExceeded` (HTTP 403), with ``remaining``.
BudgetRefused = BudgetExceeded


class State:
    """The state database at ``path`` (created on first use)."""

    def __init__(self, path: str | Path, sync: str = "full") -> None:
        check_param("State", "sync", sync, SYNC)
        self.path = Path(path)
        self._sync = sync.upper()
        self._local = threading.local()
        self._verified: dict[bytes, bytes] = {}  # SHA-256 of a verified key -> its stored scrypt hash
        self._verified_lock = threading.Lock()
        self._group = threading.Condition()  # group commit of charges
        self._pending: list[PendingCharge] = []
        self._committing = False
        self._make_private()
        con = self._con()
        con.execute("PRAGMA journal_mode = WAL")
        con.executescript(_SCHEMA)
        for table, columns in _ADDED.items():  # an older database gets the new columns (issue 32)
            have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
            for column, kind in columns.items():
                if column not in have:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA busy_timeout = 60000")
            con.execute(f"PRAGMA synchronous = {self._sync}")
            self._local.con = con
        return con

    def _make_private(self) -> None:
        """The database readable by its owner only, whatever the umask: created 0600 (SQLite gives
        its -wal and -shm files the database file's mode), an older one chmod-ed. Never by opening
        a descriptor of an existing database: closing one would drop this process's SQLite locks."""
        make_private_dir(self.path.parent)
        try:
            os.close(open_private(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            for side in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(f"{self.path}{side}", 0o600)

    def _transaction(self):
        return _Transaction(self._con())

    # ------------------------------------------------------------------ analysts
    def add_analyst(self, name: str, mode: str, epsilon: Any = None, delta: Any = 0,
                    tables: list[str] | None = None, rho: Any = None) -> str:
        """Create an analyst and return the new API key (shown once; only its hash is kept).

        A dp analyst's budget is in one definition, fixed here: ``epsilon`` alone is pure
        epsilon-DP, ``epsilon`` and ``delta > 0`` approximate (epsilon, delta)-DP (Gaussian noise,
        basic composition), ``rho`` alone rho-zCDP (Gaussian noise).
        """
        if not isinstance(name, str) or not NAME.match(name):
            raise ParameterError("The analyst NAME must be 1-64 letters, digits, '_', '.' or '-'.")
        if mode not in MODES:
            raise ParameterError(f"The '--mode' option must be 'dp' or 'restricted'. Got {mode!r} instead.")
        rho_text = None
        definition = "pure"
        if mode == "dp" and rho is not None:
            if epsilon is not None or delta not in (None, 0, "0"):
                raise ParameterError("A rho-zCDP budget is one number: give '--rho' alone, without '--epsilon' "
                                     "and '--delta' (a budget has one definition).")
            rho_text, eps_text, delta_text, definition = str(exact(rho, "analyst add", "rho")), "0", "0", "zcdp"
        elif mode == "dp":
            if epsilon is None:
                raise ParameterError("A dp analyst needs a budget: give '--epsilon' (a number > 0, e.g. 1.0), "
                                     "'--epsilon' and '--delta', or '--rho'.")
            eps, dlt = budget_totals(epsilon, delta if delta is not None else 0, "analyst add", stacklevel=2)
            eps_text, delta_text = str(eps), str(dlt)
            definition = "approx" if dlt > 0 else "pure"
        else:
            if epsilon is not None or rho is not None or delta not in (None, 0):
                raise ParameterError("A restricted analyst gets exact answers and has no privacy budget: "
                                     "leave out '--epsilon', '--delta' and '--rho'.")
            eps_text = delta_text = None
        key, key_id, salt, key_hash = new_key()
        with self._transaction() as con:
            if con.execute("SELECT 1 FROM analysts WHERE name = ?", (name,)).fetchone():
                raise ParameterError(f"The analyst {name!r} exists already; choose another name.")
            con.execute("INSERT INTO analysts (name, key_id, salt, key_hash, mode, epsilon_total, delta_total, "
                        "tables, created, definition, rho_total) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (name, key_id, salt, key_hash, mode, eps_text, delta_text,
                         json.dumps(tables) if tables else "*", time.time(), definition, rho_text))
        return key

    def rekey(self, name: str) -> str:
        """Give ``name`` a new API key (returned once) and make the old one fail at once.

        The analyst keeps its budget, spent epsilon, answered queries and audit log: a lost or
        leaked key never resets what the analyst has learned. A revoked analyst is re-enabled this
        way.
        """
        key, key_id, salt, key_hash = new_key()
        self._replace_key(name, key_id, salt, key_hash, "key replaced")
        return key

    def revoke(self, name: str) -> None:
        """Make ``name``'s key fail from the next request on (401), keeping everything else.

        The row stays (its budget and history must not be reset by re-adding the name); the stored
        hash becomes one of a random key nobody was given, and ``key_id`` is marked ``revoked-``.
        """
        _, key_id, salt, key_hash = new_key()
        self._replace_key(name, REVOKED + key_id, salt, key_hash, "key revoked")

    def _replace_key(self, name: str, key_id: str, salt: bytes, key_hash: bytes, decision: str) -> None:
        with self._transaction() as con:
            if con.execute("UPDATE analysts SET key_id = ?, salt = ?, key_hash = ? WHERE name = ?",
                           (key_id, salt, key_hash, name)).rowcount != 1:
                raise ParameterError(f"No analyst is called {name!r} (`sdckit analyst list` shows them).")
            con.execute("INSERT INTO audit (analyst, time, sql, decision, status) VALUES (?, ?, NULL, ?, 0)",
                        (name, time.time(), decision))

    def revoked(self, name: str) -> bool:
        """Whether ``name``'s key was revoked (and not replaced since)."""
        self.analyst(name)
        row = self._con().execute("SELECT key_id FROM analysts WHERE name = ?", (name,)).fetchone()
        return row[0].startswith(REVOKED)

    def analyst(self, name: str) -> Analyst:
        row = self._con().execute(f"SELECT {COLUMNS} FROM analysts WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ParameterError(f"No analyst is called {name!r} (`sdckit analyst list` shows them).")
        return analyst_from_row(row)

    def analysts(self) -> list[Analyst]:
        rows = self._con().execute(f"SELECT {COLUMNS} FROM analysts ORDER BY name").fetchall()
        return [analyst_from_row(r) for r in rows]

    def authenticate(self, key: str | None) -> Analyst | None:
        """The analyst whose key this is, or ``None`` (missing, malformed or wrong key)."""
        if not key or len(key) > 200 or "." not in key:
            return None
        digest = hashlib.sha256(key.encode("utf-8", "replace")).digest()
        key_id = key.split(".", 1)[0]
        row = self._con().execute(f"SELECT salt, key_hash, {COLUMNS} FROM analysts WHERE key_id = ?",
                                  (key_id,)).fetchone()
        with self._verified_lock:
            known = self._verified.get(digest)
        if known is not None:
            if row is not None and hmac.compare_digest(known, row[1]):
                return analyst_from_row(row[2:])
            with self._verified_lock:  # the key was removed or changed: check it again from scratch
                self._verified.pop(digest, None)
        if row is None:
            hash_key(key, b"0" * 16)  # same work as a real check: no timing hint that the id exists
            return None
        salt, stored = row[0], row[1]
        if not hmac.compare_digest(hash_key(key, salt), stored):
            return None
        with self._verified_lock:
            self._verified[digest] = stored
        return analyst_from_row(row[2:])

    # ------------------------------------------------------------------ budget
    def charge(self, name: str, epsilon: Fraction, sql: str, query: str, delta: Fraction = Fraction(0),
               rho: Fraction = Fraction(0)) -> tuple[int, Analyst]:
        """Charge ``epsilon`` (and ``delta``; or ``rho`` to a zCDP budget) to ``name`` in one transaction, or raise
        :class:`~sdckit.core.errors.BudgetExceeded` (through the one accountant, over a :class:`SqliteStore`).

        Returns the ledger row's id (it numbers the answer's random stream when the service is
        seeded) and the analyst after the charge. The audit row is written in the same
        transaction, so a charge is never without its log line.

        *Group commit*: charges asked while another thread's transaction is committing wait for
        it, then the first of them commits all of them in one transaction (each in its own
        savepoint, checked against the total left by the ones before it), so that one fsync serves
        them all. A call still returns only after the transaction holding its charge is committed
        (on disk with ``sync = "full"``); a refusal or an error of one charge does not touch the
        others.
        """
        request = PendingCharge(name, epsilon, sql, query, delta, rho)
        with self._group:
            self._pending.append(request)
            while not request.done:
                if self._committing:
                    self._group.wait()
                    continue
                batch, self._pending = self._pending, []
                self._committing = True
                self._group.release()
                try:
                    self._commit_charges(batch)
                finally:
                    self._group.acquire()
                    self._committing = False
                    self._group.notify_all()
        if request.error is not None:
            raise request.error
        return request.result

    def _commit_charges(self, batch: list[PendingCharge]) -> None:
        """One transaction for ``batch``; every request is marked done, whatever happens."""
        outcomes: list[tuple[Any, BaseException | None]] = []
        try:
            with self._transaction() as con:
                for request in batch:
                    con.execute("SAVEPOINT charge")
                    try:
                        outcomes.append((self._charge_one(con, request), None))
                    except BudgetExceeded as exc:  # keeps its audit row
                        outcomes.append((None, exc))
                    except Exception as exc:
                        con.execute("ROLLBACK TO charge")
                        outcomes.append((None, exc))
                    con.execute("RELEASE charge")
        except BaseException as exc:  # the transaction failed: no charge of the batch happened
            con = self._con()
            if con.in_transaction:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:  # pragma: no cover - already rolled back by SQLite
                    pass
            outcomes = [(None, exc)] * len(batch)
        for request, (result, error) in zip(batch, outcomes):
            request.result, request.error, request.done = result, error, True

    def _charge_one(self, con: sqlite3.Connection, request: PendingCharge) -> tuple[int, Analyst]:
        return Accountant(SqliteStore(con, request)).charge(request.epsilon, request.delta, "the query",
                                                                  request.rho)

    def ledger(self, name: str) -> list[Fraction]:
        """Every charge of ``name``, in order."""
        rows = self._con().execute("SELECT epsilon FROM charges WHERE analyst = ? ORDER BY id", (name,)).fetchall()
        return [Fraction(r[0]) for r in rows]

    # ------------------------------------------------------------------ audit log, answers
    def log(self, name: str | None, sql: str | None, decision: str, status: int, detail: str = "",
            epsilon: Fraction = Fraction(0)) -> None:
        """Append one request to the audit log."""
        with self._transaction() as con:
            con.execute("INSERT INTO audit (analyst, time, sql, decision, status, epsilon, detail) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (name, time.time(), sql, decision, status, str(epsilon), detail))

    def audit_log(self, name: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The audit log (of one analyst), oldest first; the last ``limit`` rows if given."""
        where, params = ("WHERE analyst = ?", [name]) if name is not None else ("", [])
        sql = f"SELECT id, analyst, time, sql, decision, status, epsilon, detail FROM audit {where} ORDER BY id"
        if limit is not None:
            sql = f"SELECT * FROM ({sql} DESC LIMIT ?) ORDER BY id"
            params.append(int(limit))
        rows = self._con().execute(sql, params).fetchall()
        keys = ("id", "analyst", "time", "sql", "decision", "status", "epsilon", "detail")
        return [dict(zip(keys, r)) for r in rows]

    def record_answered(self, name: str, table: str, sql: str, data: str = "") -> None:
        """Remember an answered restricted-mode query (replayed into the auditor on start) with the
        fingerprint of the data it was answered on, and log it."""
        now = time.time()
        with self._transaction() as con:
            con.execute("INSERT INTO answered (analyst, tbl, sql, time, data) VALUES (?, ?, ?, ?, ?)",
                        (name, table, sql, now, data))
            con.execute("INSERT INTO audit (analyst, time, sql, decision, status, epsilon, detail) "
                        "VALUES (?, ?, ?, 'answered', 200, '0', 'restricted')", (name, now, sql))

    def answered(self, table: str, name: str | None = None) -> list[tuple[str, str, str]]:
        """(analyst, sql, data fingerprint) of the answered restricted queries on ``table`` (of one
        analyst), in order."""
        if name is None:
            rows = self._con().execute("SELECT analyst, sql, data FROM answered WHERE tbl = ? ORDER BY id", (table,))
        else:
            rows = self._con().execute("SELECT analyst, sql, data FROM answered WHERE tbl = ? AND analyst = ? "
                                       "ORDER BY id", (table, name))
        return [tuple(r) for r in rows.fetchall()]

    def cached(self, name: str, key: str) -> dict[str, Any] | None:
        row = self._con().execute("SELECT response FROM cache WHERE analyst = ? AND key = ?", (name, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def store(self, name: str, key: str, response: dict[str, Any]) -> None:
        with self._transaction() as con:
            con.execute("INSERT OR IGNORE INTO cache (analyst, key, response) VALUES (?, ?, ?)",
                        (name, key, json.dumps(response)))


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception other than a refusal)."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    def __enter__(self) -> sqlite3.Connection:
        self.con.execute("BEGIN IMMEDIATE")
        return self.con

    def __exit__(self, kind, value, tb) -> None:
        if kind is None or issubclass(kind, BudgetExceeded):
            self.con.execute("COMMIT")  # a refusal keeps its audit row
        else:
            self.con.execute("ROLLBACK")
def lock_state(state: Path) -> Any:
    """Hold an exclusive lock on ``<state>.lock`` for the life of the process: the restricted mode's
    auditors live in one process, so a second server on the same state database is refused (the
    budget alone would be safe: its charges are transactions). Released when the process ends,
    however it ends."""
    make_private_dir(state.parent)
    handle = os.fdopen(open_private(state.with_name(state.name + ".lock")), "a+")  # 0600
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise ParameterError(f"Another sdckit query service is running on the state database {state}; "
                             "stop it first (one service per state database).") from None
    return handle
