"""One analyst's budget in the service's state database, as the one accountant's store (issue 29).

:class:`SqliteStore` is the :class:`~sdckit.dp.accountant.BudgetStore` the service charges
through (:class:`~sdckit.dp.accountant.Accountant`); :class:`PendingCharge` is a charge waiting
for the state database's group commit (:meth:`sdckit.query.state.State.charge`), which opens the
transaction and the savepoint the store writes in.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import replace
from fractions import Fraction
from typing import Any

from sdckit.core.errors import ParameterError
from sdckit.dp.accountant import Budget, exact_text
from sdckit.query.analysts import COLUMNS, Analyst, analyst_from_row


class PendingCharge:
    """One charge waiting for its group commit (:meth:`sdckit.query.state.State.charge`)."""

    __slots__ = ("name", "epsilon", "sql", "query", "delta", "rho", "done", "result", "error")

    def __init__(self, name: str, epsilon: Fraction, sql: str, query: str, delta: Fraction = Fraction(0),
                 rho: Fraction = Fraction(0)) -> None:
        self.name, self.epsilon, self.sql, self.query = name, epsilon, sql, query
        self.delta, self.rho = delta, rho
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


class SqliteStore:
    """One analyst's epsilon budget in the state database, as the accountant's
    :class:`~sdckit.dp.accountant.BudgetStore`.

    Its transaction is the one the group commit holds (``BEGIN IMMEDIATE``, one savepoint per
    charge: :meth:`sdckit.query.state.State.charge`), so the check and the charge are atomic
    across threads and processes. A charge writes the new totals, the ledger row and the audit
    row and returns ``(ledger id, the analyst after the charge)``; a refusal writes its audit row
    (kept, since a refusal commits). The budget is read in the analyst's definition: epsilon (and
    delta), or rho (then the epsilon and delta totals are 0).
    """

    def __init__(self, con: sqlite3.Connection, request: PendingCharge) -> None:
        self.con, self.request = con, request
        self.now = time.time()
        self.analyst: Analyst | None = None

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()  # the group commit's savepoint, already open

    def read(self) -> Budget:
        name = self.request.name
        row = self.con.execute(f"SELECT {COLUMNS} FROM analysts WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ParameterError(f"No analyst is called {name!r} (`sdckit analyst list` shows them).")
        analyst = self.analyst = analyst_from_row(row)
        if analyst.epsilon_total is None:
            raise ParameterError(f"The analyst {name!r} has no epsilon budget (restricted mode).")
        return Budget(analyst.epsilon_total, analyst.delta_total or Fraction(0), analyst.epsilon_spent,
                      analyst.delta_spent, analyst.rho_total, analyst.rho_spent)

    def add(self, epsilon: Fraction, delta: Fraction, label: str, rho: Fraction = Fraction(0)) -> tuple[int, Analyst]:
        analyst, request, con = self.analyst, self.request, self.con
        spent, dspent, rspent = analyst.epsilon_spent + epsilon, analyst.delta_spent + delta, analyst.rho_spent + rho
        con.execute("UPDATE analysts SET epsilon_spent = ?, delta_spent = ?, rho_spent = ? WHERE name = ?",
                    (str(spent), str(dspent), str(rspent), analyst.name))
        cur = con.execute("INSERT INTO charges (analyst, time, epsilon, query, delta, rho) VALUES (?, ?, ?, ?, ?, ?)",
                          (analyst.name, self.now, str(epsilon), request.query, str(delta), str(rho)))
        charge_id = int(cur.lastrowid)
        con.execute("INSERT INTO audit (analyst, time, sql, decision, status, epsilon, detail) "
                    "VALUES (?, ?, ?, 'charged', 200, ?, ?)",
                    (analyst.name, self.now, request.sql, str(epsilon),
                     f"charge {charge_id}" + (f", rho {exact_text(rho)}" if rho else "")
                     + (f", delta {exact_text(delta)}" if delta else "")))
        return charge_id, replace(analyst, epsilon_spent=spent, delta_spent=dspent, rho_spent=rspent)

    def refused(self, epsilon: Fraction, delta: Fraction, label: str, budget: Budget) -> None:
        self.con.execute("INSERT INTO audit (analyst, time, sql, decision, status, epsilon, detail) "
                         "VALUES (?, ?, ?, 'refused: budget', 403, '0', ?)",
                         (self.request.name, self.now, self.request.sql,
                          f"asked rho {exact_text(self.request.rho)}, remaining {exact_text(budget.remaining_rho)}"
                          if budget.rho is not None else
                          f"asked {exact_text(epsilon)}, remaining {exact_text(budget.remaining)}"
                          + (f"; delta asked {exact_text(delta)}, remaining {exact_text(budget.remaining_delta)}"
                             if delta else "")))
