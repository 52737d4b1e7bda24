"""The service's analysts as the state database holds them, and their API keys.

An :class:`Analyst` is one row of the ``analysts`` table (never its key or hash): mode, tables,
and in dp mode the budget in its definition (pure epsilon-DP, approximate (epsilon, delta)-DP or
rho-zCDP, fixed at ``analyst add``). API keys are ``<key id>.<secret>`` with 256 bits of OS
entropy (:func:`secrets.token_urlsafe`); only a salted scrypt hash is stored (:func:`hash_key`;
the key id is a public lookup handle).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sdckit.core.result import Result, plain
from sdckit.dp.accountant import exact_text

#: scrypt cost (RFC 7914): n = 2**14, r = 8, p = 1 (16 MiB, about 50 ms per check).
SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MODES = ("dp", "restricted")
#: A dp analyst's budget definition, fixed at ``analyst add`` (issue 32): pure epsilon-DP,
#: approximate (epsilon, delta)-DP (basic composition) or rho-zCDP.
DEFINITIONS = {"pure": "pure epsilon-DP",
               "approx": "approximate (epsilon, delta)-DP, basic composition",
               "zcdp": "rho-zero-concentrated DP (rho-zCDP), rhos add exactly"}
#: Prefix of the ``key_id`` of a revoked analyst (a real key id is hexadecimal, so never matches).
REVOKED = "revoked-"
#: The columns of the ``analysts`` table :func:`analyst_from_row` reads, in its order.
COLUMNS = ("name, mode, epsilon_total, delta_total, epsilon_spent, tables, definition, delta_spent, "
           "rho_total, rho_spent")


@dataclass(frozen=True)
class Analyst(Result):
    """An analyst as the state database holds it (no key, no hash)."""

    name: str
    mode: str
    epsilon_total: Fraction | None
    delta_total: Fraction | None
    epsilon_spent: Fraction
    tables: tuple[str, ...] | None  # None: every table
    definition: str = "pure"  # "pure", "approx" or "zcdp" (DEFINITIONS); fixed at analyst add
    delta_spent: Fraction = Fraction(0)
    rho_total: Fraction | None = None
    rho_spent: Fraction = Fraction(0)

    @property
    def epsilon_remaining(self) -> Fraction | None:
        return None if self.epsilon_total is None else self.epsilon_total - self.epsilon_spent

    @property
    def delta_remaining(self) -> Fraction | None:
        return None if self.delta_total is None else self.delta_total - self.delta_spent

    @property
    def rho_remaining(self) -> Fraction | None:
        return None if self.rho_total is None else self.rho_total - self.rho_spent

    def may_query(self, table: str) -> bool:
        return self.tables is None or table in self.tables

    def budget(self) -> dict[str, Any]:
        """The budget in its definition: ``definition`` (and ``definition_text``), the totals,
        spent and remaining amounts as floats, and exact texts under ``exact``."""
        if self.mode != "dp":
            return {"mode": self.mode, "epsilon_total": None, "epsilon_spent": 0.0, "epsilon_remaining": None}
        names = {"pure": ("epsilon",), "approx": ("epsilon", "delta"), "zcdp": ("rho",)}[self.definition]
        out: dict[str, Any] = {"mode": self.mode, "definition": self.definition,
                               "definition_text": DEFINITIONS[self.definition]}
        if self.definition == "zcdp":  # no epsilon budget: the epsilon fields say so
            out.update({"epsilon_total": None, "epsilon_spent": 0.0, "epsilon_remaining": None})
        exact_out = {}
        for name in names:
            total, spent = getattr(self, f"{name}_total"), getattr(self, f"{name}_spent")
            for part, value in (("total", total), ("spent", spent), ("remaining", total - spent)):
                out[f"{name}_{part}"] = float(value)
                exact_out[f"{name}_{part}"] = exact_text(value)
        out["exact"] = exact_out
        return out

    def to_dict(self) -> dict[str, Any]:
        """Name, mode, the tables (``"all"``) and the budget as :meth:`budget` gives it."""
        return plain({"name": self.name, "mode": self.mode, "tables": list(self.tables) if self.tables else "all",
                      **self.budget()})


@functools.lru_cache(maxsize=4096)
def _fraction(text: str | None) -> Fraction | None:
    """A stored exact text as a Fraction (memoised: a Fraction is immutable, and every query reads the
    same totals and, twice, the same spent amounts)."""
    return None if text is None else Fraction(text)


def analyst_from_row(row: tuple) -> Analyst:
    """The :class:`Analyst` of a row of the ``analysts`` table read as :data:`COLUMNS`."""
    name, mode, eps, dlt, spent, tables, definition, dspent, rho, rspent = row
    return Analyst(name, mode, _fraction(eps), _fraction(dlt), _fraction(spent),
                   None if tables == "*" else _tables(tables), definition,
                   _fraction(dspent), _fraction(rho), _fraction(rspent))


@functools.lru_cache(maxsize=1024)
def _tables(text: str) -> tuple[str, ...]:
    """The stored JSON list of an analyst's tables as a tuple (memoised: read twice a query)."""
    return tuple(json.loads(text))


def hash_key(key: str, salt: bytes) -> bytes:
    """The salted scrypt hash of an API key (:data:`SCRYPT`), the only form of it stored."""
    return hashlib.scrypt(key.encode("utf-8"), salt=salt, maxmem=64 * 2**20, **SCRYPT)


def new_key() -> tuple[str, str, bytes, bytes]:
    """A new API key from OS entropy: (key, key_id, salt, scrypt hash of the key)."""
    key_id = secrets.token_hex(8)
    key = f"{key_id}.{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    return key, key_id, salt, hash_key(key, salt)
