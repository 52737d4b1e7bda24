"""A privacy-budget accountant: exact (epsilon, delta) budgets, sequential and parallel
composition, charged atomically (seed 002 section 4.6.2; Dwork & Roth 2014, Theorem 3.16;
McSherry 2009, "Privacy integrated queries", parallel composition).

* **Sequential composition** (basic composition): mechanisms run on the same records add up
  their epsilons and their deltas. sdckit uses only this basic theorem — never the advanced
  composition theorem or a Renyi/zCDP accountant — so the totals are upper bounds that are
  loose for many Gaussian releases but never wrong.
* **Parallel composition**: mechanisms run on *disjoint* sets of records (the equivalence
  classes of a k-anonymous partition, the cells of a histogram) cost the largest of their
  parts. Spends on the *same* part inside a group add up sequentially; the group costs the
  largest part's total, for epsilon and for delta.

What the accountant guarantees (DESIGN.md section 9): every spend that returns has been
checked against the budget and charged in one step under a lock, before any noise is drawn, so
no interleaving of threads can overspend; a refused spend (:class:`BudgetExceeded`) changes
nothing; ``spent`` always equals the sum of ``spends``. Budgets and spends are exact rationals
(:class:`fractions.Fraction`): a float such as ``0.1`` is read by its decimal repr (``1/10``),
so ten spends of 0.1 fill a budget of 1 exactly. Every float epsilon sdckit's mechanisms use is
calibrated conservatively (their noise is never smaller than the decimal epsilon requires), so
charging the decimal value is exact for them.

**One accountant, three stores** (issue 29). :class:`Accountant` is the one check-and-charge: it
reads a :class:`Budget` from a :class:`BudgetStore` and, inside the store's transaction, either
refuses (:class:`~sdckit.core.errors.BudgetExceeded`, one message for every store) or adds the
charge. The stores differ only in where the numbers live and what makes a charge atomic:
:class:`MemoryStore` (a re-entrant lock; behind :class:`BudgetAccountant`),
:class:`sdckit.dp.ledger.LedgerFileStore` (the command line's JSON ledger, under its file lock)
and :class:`sdckit.query.state.SqliteStore` (an analyst's row of the query service's state
database, in the group commit's transaction). A budget declared with an epsilon above
:data:`UNUSUAL_EPSILON` (10) draws one :class:`~sdckit.core.errors.PrivacyWarning` per declaring
call (:func:`budget_totals`), as OpenDP warns on an unusual privacy loss.

**Budget definitions** (issue 32). A budget is in one definition: pure epsilon-DP (delta 0),
approximate (epsilon, delta)-DP (basic composition, as above), or rho-zero-concentrated DP
(Bun & Steinke 2016): a :class:`Budget` with ``rho`` set counts rho instead, and rho-zCDP
mechanisms compose by adding their rhos exactly (Bun & Steinke 2016, Lemma 2.3), so the total
is exact, not a bound. :func:`sdckit.dp.zcdp.zcdp_delta` converts rho-zCDP to (epsilon, delta)-DP
(Canonne, Kamath & Steinke 2020, Corollary 13) and :func:`sdckit.dp.zcdp.rho_for` back (the largest rho whose conversion
is within (epsilon, delta)); pure epsilon-DP is (epsilon**2 / 2)-zCDP exactly.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Hashable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from sdckit.core.errors import BudgetExceeded, ParameterError, PrivacyWarning
from sdckit.core.params import Satisfies

# The accountant's numbers, imported from here by the modules that read or print a budget.
from sdckit.dp.epsilon import MAX_EPSILON, brief, exact, exact_text, split_epsilon  # noqa: F401


def _is_accountant(value: Any) -> bool:
    return value is None or isinstance(value, BudgetAccountant)


#: A budget's epsilon above this draws a :class:`~sdckit.core.errors.PrivacyWarning` (OpenDP warns
#: on an unusual privacy loss likewise): e**10 (about 22,000) already bounds little.
UNUSUAL_EPSILON = Fraction(10)


@dataclass(frozen=True)
class Budget:
    """A budget as its store reads it: the totals and what is spent so far, exact."""

    epsilon: Fraction
    delta: Fraction
    spent: Fraction
    spent_delta: Fraction
    #: A rho-zCDP budget's total rho (then epsilon and delta are 0); ``None``: not a zCDP budget.
    rho: Fraction | None = None
    spent_rho: Fraction = Fraction(0)

    @property
    def remaining(self) -> Fraction:
        """Epsilon left."""
        return self.epsilon - self.spent

    @property
    def remaining_rho(self) -> Fraction | None:
        """Rho left (a zCDP budget), else ``None``."""
        return None if self.rho is None else self.rho - self.spent_rho

    @property
    def remaining_delta(self) -> Fraction:
        """Delta left."""
        return self.delta - self.spent_delta


class BudgetStore(Protocol):
    """Where a budget lives; :class:`Accountant` does the arithmetic and the refusing.

    ``transaction()`` makes what happens inside it one atomic step against other charges (a lock,
    a file lock held around it, a database transaction); ``read()`` gives the budget inside it;
    ``add()`` records a charge the accountant has allowed (its return value is the charge's
    receipt, e.g. a ledger row's id); ``refused()`` records a refusal (e.g. an audit row) and
    must leave the budget as it was.
    """

    def transaction(self) -> AbstractContextManager[Any]: ...

    def read(self) -> Budget: ...

    def add(self, epsilon: Fraction, delta: Fraction, label: str) -> Any: ...

    def refused(self, epsilon: Fraction, delta: Fraction, label: str, budget: Budget) -> None: ...


def budget_totals(epsilon: Any, delta: Any, owner: str, *, stacklevel: int = 2) -> tuple[Fraction, Fraction]:
    """A budget being declared: its ``(epsilon, delta)`` read exactly (:func:`exact`), and one
    :class:`~sdckit.core.errors.PrivacyWarning` if epsilon is above :data:`UNUSUAL_EPSILON`.

    ``owner`` names the declaring call in messages (``"BudgetAccountant"``, ``"the [budget]
    table"``, ``"analyst add"``); ``stacklevel`` counts from the caller of this function.
    """
    total = exact(epsilon, owner, "epsilon")
    total_delta = exact(delta, owner, "delta", positive=False, below_one=True)
    if total > UNUSUAL_EPSILON:
        warnings.warn(
            f"A privacy budget of epsilon = {exact_text(total)} ({owner}) is unusually large: above "
            f"{exact_text(UNUSUAL_EPSILON)}, differential privacy bounds little (an inference's odds may change "
            "by a factor of up to e**epsilon). A typical budget is at most 1; keep this one only if the data "
            "protector's policy chose it.",
            PrivacyWarning, stacklevel=stacklevel + 1)
    return total, total_delta


class Accountant:
    """The one privacy-loss accountant: check-and-charge over a :class:`BudgetStore`.

    Every charge reads the budget and either raises :class:`~sdckit.core.errors.BudgetExceeded`
    (the store records the refusal; the budget is unchanged) or adds the charge, both inside one
    of the store's transactions, so that no interleaving of threads or processes can overspend.
    Epsilons and deltas are exact :class:`~fractions.Fraction` values (see :func:`exact`);
    sequential composition: a charge fits if the spent total plus the charge is at most the
    total, for epsilon and for delta.

    Parameters
    ----------
    store : BudgetStore
        Where the budget lives: :class:`MemoryStore`, :class:`sdckit.dp.ledger.LedgerFileStore`
        or :class:`sdckit.query.state.SqliteStore`.
    """

    def __init__(self, store: BudgetStore) -> None:
        self.store = store

    @property
    def budget(self) -> Budget:
        """The budget now (read in one transaction)."""
        with self.store.transaction():
            return self.store.read()

    @staticmethod
    def refusal(budget: Budget, epsilon: Fraction, delta: Fraction, label: str,
                rho: Fraction = Fraction(0)) -> BudgetExceeded | None:
        """The refusal of charging ``(epsilon, delta)`` (or ``rho``) on ``label`` against
        ``budget``, or ``None`` if it fits (the one place the message is written)."""
        over_eps = budget.spent + epsilon > budget.epsilon
        over_delta = budget.spent_delta + delta > budget.delta
        over_rho = budget.rho is not None and budget.spent_rho + rho > budget.rho
        if not (over_eps or over_delta or over_rho):
            return None
        if over_rho:
            return BudgetExceeded(
                f"Spending rho={exact_text(rho)} on {label!r} would exceed the rho-zCDP budget: "
                f"{exact_text(budget.spent_rho)} of rho {exact_text(budget.rho)} is spent, "
                f"{exact_text(budget.remaining_rho)} remains. Ask for a smaller rho, or for a fresh budget only "
                "if the data protector's policy allows it.", budget.remaining, budget.remaining_delta,
                budget.remaining_rho)
        if over_eps:
            what = f"epsilon={exact_text(epsilon)}"
            state = (f"{exact_text(budget.spent)} of epsilon {exact_text(budget.epsilon)} is spent, "
                     f"{exact_text(budget.remaining)} remains")
        else:
            what = f"delta={exact_text(delta)}"
            state = (f"{exact_text(budget.spent_delta)} of delta {exact_text(budget.delta)} is spent, "
                     f"{exact_text(budget.remaining_delta)} remains")
        return BudgetExceeded(
            f"Spending {what} on {label!r} would exceed the privacy budget: {state}. Ask for a smaller "
            "epsilon/delta, or for a fresh budget only if the data protector's policy allows it.",
            budget.remaining, budget.remaining_delta)

    def charge(self, epsilon: Fraction, delta: Fraction = Fraction(0), label: str = "query",
               rho: Fraction = Fraction(0)) -> Any:
        """Charge ``(epsilon, delta)`` (or, to a zCDP budget, ``rho``) to the budget atomically and
        return the store's receipt, or raise :class:`~sdckit.core.errors.BudgetExceeded` and charge
        nothing. A rho charged to a budget that is not zCDP is a :class:`ParameterError`."""
        with self.store.transaction():
            budget = self.store.read()
            if rho and budget.rho is None:
                raise ParameterError(f"Spending rho={exact_text(rho)} on {label!r} needs a rho-zCDP budget; this "
                                     "budget counts epsilon and delta.")
            refused = self.refusal(budget, epsilon, delta, label, rho)
            if refused is not None:
                self.store.refused(epsilon, delta, label, budget)
                raise refused
            if rho:
                return self.store.add(epsilon, delta, label, rho=rho)
            return self.store.add(epsilon, delta, label)


class MemoryStore:
    """A budget in memory: the totals, the spent sums and the spends' records (the manifest),
    guarded by a re-entrant lock. A charge and its record are one step, so ``spent`` is always the
    sum of the records: each charge adds a sequential record, or grows the record of a parallel
    group (:meth:`growing`).

    Parameters
    ----------
    epsilon, delta : Fraction
        The totals, already exact (:func:`budget_totals`).
    """

    def __init__(self, epsilon: Fraction, delta: Fraction = Fraction(0)) -> None:
        self.epsilon, self.delta = epsilon, delta
        self.spent = self.spent_delta = Fraction(0)
        #: Every spend as the manifest shows it (exact numbers); a parallel group's record grows.
        self.records: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        self._growing: dict[str, Any] | None = None

    def transaction(self) -> AbstractContextManager[Any]:
        return self._lock

    def read(self) -> Budget:
        return Budget(self.epsilon, self.delta, self.spent, self.spent_delta)

    def add(self, epsilon: Fraction, delta: Fraction, label: str) -> None:
        self.spent += epsilon
        self.spent_delta += delta
        if self._growing is None:
            self.records.append({"label": str(label), "epsilon": epsilon, "delta": delta,
                                 "composition": "sequential"})
        else:
            self._growing["epsilon"] += epsilon
            self._growing["delta"] += delta

    @contextmanager
    def growing(self, record: dict[str, Any]) -> Iterator[None]:
        """Charges made in the block (by this thread: it holds the lock) grow ``record`` instead
        of adding records: a parallel group's, which costs its largest part, or a stored one."""
        with self._lock:
            previous, self._growing = self._growing, record
            try:
                yield
            finally:
                self._growing = previous

    def refused(self, epsilon: Fraction, delta: Fraction, label: str, budget: Budget) -> None:
        """A refusal leaves no trace in memory (the caller gets the exception)."""


class BudgetAccountant(Accountant):
    """Tracks (epsilon, delta) spent against a total budget; the user holds it across releases.

    Pass one accountant to every mechanism and method that releases the same data
    (``Laplace(..., accountant=acct)``, ``LaplaceNoise(..., accountant=acct)``, ...): each
    release is charged before its noise is drawn and refused when the budget would be passed.
    It is the :class:`Accountant` over a :class:`MemoryStore` (or, for the command line's ledger,
    a :class:`~sdckit.dp.ledger.LedgerFileStore`: :meth:`over`), with the spends' records for the
    manifest and parallel groups.

    Parameters
    ----------
    epsilon : number > 0
        The total epsilon (no default). Exact: see :func:`exact`. Above 10 it draws a
        :class:`~sdckit.core.errors.PrivacyWarning`.
    delta : number in [0, 1)
        The total delta; 0 (the default) admits only pure epsilon-DP spends.

    Examples
    --------
    >>> acct = BudgetAccountant(1.0)
    >>> acct.spend(0.4, "mean of income")
    >>> with acct.parallel("per class") as group:
    ...     group.spend(0.5, part="class 0")
    ...     group.spend(0.5, part="class 1")
    >>> acct.remaining
    Fraction(1, 10)
    >>> acct.spend(0.2, "one more")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    sdckit.core.errors.BudgetExceeded: ...
    """

    store: MemoryStore

    def __init__(self, epsilon: Any, delta: Any = 0) -> None:
        super().__init__(MemoryStore(*budget_totals(epsilon, delta, "BudgetAccountant", stacklevel=2)))

    @classmethod
    def over(cls, store: MemoryStore) -> BudgetAccountant:
        """The accountant of a budget a :class:`MemoryStore` (or a subclass: the ledger's) holds."""
        accountant = cls.__new__(cls)
        Accountant.__init__(accountant, store)
        return accountant

    def __repr__(self) -> str:
        return (f"BudgetAccountant(epsilon={exact_text(self.epsilon)}, delta={exact_text(self.delta)}, "
                f"spent={exact_text(self.spent)}, spent_delta={exact_text(self.spent_delta)})")

    # ------------------------------------------------------------------ state
    @property
    def epsilon(self) -> Fraction:
        """The total epsilon."""
        return self.store.epsilon

    @property
    def delta(self) -> Fraction:
        """The total delta."""
        return self.store.delta

    @property
    def spent(self) -> Fraction:
        """Epsilon spent so far (sequential sum; a parallel group counts its largest part)."""
        return self.budget.spent

    @property
    def spent_delta(self) -> Fraction:
        """Delta spent so far."""
        return self.budget.spent_delta

    @property
    def remaining(self) -> Fraction:
        """Epsilon left."""
        return self.budget.remaining

    @property
    def remaining_delta(self) -> Fraction:
        """Delta left."""
        return self.budget.remaining_delta

    @property
    def spends(self) -> list[dict[str, Any]]:
        """Every spend (a copy), as the manifest shows it; their total is always :attr:`spent`."""
        with self.store.transaction():
            return [self._entry(record) for record in self.store.records]

    # ------------------------------------------------------------------ charging
    def check(self, epsilon: Any, label: str = "query", delta: Any = 0) -> None:
        """Raise :class:`BudgetExceeded` if ``(epsilon, delta)`` cannot be spent now (spends
        nothing; a later :meth:`spend` is still checked, since others may spend meanwhile)."""
        eps = exact(epsilon, "BudgetAccountant.check", "epsilon")
        dlt = exact(delta, "BudgetAccountant.check", "delta", positive=False, below_one=True)
        refused = self.refusal(self.budget, eps, dlt, label)
        if refused is not None:
            raise refused

    def spend(self, epsilon: Any, label: str = "query", delta: Any = 0) -> None:
        """Spend ``(epsilon, delta)`` on the whole data (sequential composition), atomically,
        or raise :class:`BudgetExceeded` and change nothing."""
        eps = exact(epsilon, "BudgetAccountant.spend", "epsilon")
        dlt = exact(delta, "BudgetAccountant.spend", "delta", positive=False, below_one=True)
        self.charge(eps, dlt, label)

    @contextmanager
    def parallel(self, label: str = "parallel") -> Iterator[ParallelGroup]:
        """A group of spends on disjoint parts of the data (parallel composition).

        Inside the ``with`` block, ``group.spend(epsilon, part=...)`` charges a part; spends on
        the same part add up, and the group costs its largest part. Each spend is checked and
        charged as it is made; the group is closed when the block ends (a later spend on it is
        refused).
        """
        group = ParallelGroup(self, str(label))
        try:
            yield group
        finally:
            group._close()

    # ------------------------------------------------------------------ manifest and ledger
    @staticmethod
    def _entry(record: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in record.items() if not k.startswith("_")}
        out["epsilon"] = exact_text(record["epsilon"])
        out["delta"] = exact_text(record["delta"])
        return out

    def to_manifest(self) -> dict[str, Any]:
        """The budget, what was spent and on what (exact numbers as strings, e.g. ``"0.1"``)."""
        with self.store.transaction():
            budget = self.store.read()
            return {
                "epsilon": exact_text(budget.epsilon), "delta": exact_text(budget.delta),
                "spent": exact_text(budget.spent), "spent_delta": exact_text(budget.spent_delta),
                "spends": [self._entry(record) for record in self.store.records],
            }

    @staticmethod
    def manifest_totals(data: Any) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` of a stored budget (:meth:`to_manifest`'s form), checked."""
        if not isinstance(data, Mapping) or "epsilon" not in data:
            raise ParameterError("A stored budget must be a table with 'epsilon' (and 'spends').")
        return (exact(data["epsilon"], "BudgetAccountant", "epsilon"),
                exact(data.get("delta", 0), "BudgetAccountant", "delta", positive=False, below_one=True))

    def restore(self, spends: Any) -> None:
        """Charge a stored budget's ``spends`` again, in order, with their records (so the spent
        totals are recomputed from them, and they must fit the budget)."""
        if not isinstance(spends, list):
            raise ParameterError("A stored budget's 'spends' must be a list.")
        for record in spends:
            if not isinstance(record, Mapping):
                raise ParameterError("Each stored spend must be a table with 'epsilon' and 'delta'.")
            eps = exact(record.get("epsilon"), "the stored budget", "epsilon", positive=False)
            dlt = exact(record.get("delta", 0), "the stored budget", "delta", positive=False, below_one=True)
            entry = {**record, "epsilon": Fraction(0), "delta": Fraction(0)}
            with self.store.growing(entry):
                self.charge(eps, dlt, str(record.get("label", "stored spend")))
                self.store.records.append(entry)

    @classmethod
    def from_manifest(cls, data: Mapping[str, Any]) -> BudgetAccountant:
        """The accountant :meth:`to_manifest` described.

        The spent totals are recomputed from the spends, which must fit the budget.
        """
        accountant = cls(*cls.manifest_totals(data))
        accountant.restore(data.get("spends", []))
        return accountant


class ParallelGroup:
    """Spends on disjoint parts of the data; made by :meth:`BudgetAccountant.parallel`."""

    def __init__(self, accountant: BudgetAccountant, label: str) -> None:
        self.accountant = accountant
        self.label = label
        self._parts: dict[Hashable, tuple[Fraction, Fraction]] = {}
        self._closed = False
        # The group's record is in the accountant's spends from the start and grows with it,
        # so ``spent`` equals the sum of ``spends`` at every moment.
        self._record: dict[str, Any] = {"label": label, "epsilon": Fraction(0), "delta": Fraction(0),
                                        "composition": "parallel", "parts": 0}
        with accountant.store.transaction():
            accountant.store.records.append(self._record)

    @property
    def charged(self) -> Fraction:
        """What the group has cost the budget in epsilon: its largest part's total."""
        with self.accountant.store.transaction():
            return self._record["epsilon"]

    @property
    def charged_delta(self) -> Fraction:
        """What the group has cost in delta: the largest part's total delta."""
        with self.accountant.store.transaction():
            return self._record["delta"]

    @property
    def parts(self) -> int:
        """Number of distinct parts spent on."""
        return len(self._parts)

    def spend(self, epsilon: Any, part: Hashable = "part", delta: Any = 0) -> None:
        """Spend ``(epsilon, delta)`` on ``part`` (disjoint from the group's other parts).

        Spends on the same part add up (sequential composition within the part). The budget is
        charged at once by what the group's cost grows; a refused spend changes nothing.
        """
        eps = exact(epsilon, "BudgetAccountant.spend", "epsilon")
        dlt = exact(delta, "BudgetAccountant.spend", "delta", positive=False, below_one=True)
        acct = self.accountant
        with acct.store.transaction():
            if self._closed:
                raise ParameterError(
                    f"The parallel group {self.label!r} is closed (its 'with' block has ended); "
                    "open a new one with accountant.parallel(...)."
                )
            old_eps, old_delta = self._parts.get(part, (Fraction(0), Fraction(0)))
            new_eps, new_delta = old_eps + eps, old_delta + dlt
            cost_eps = max(self._record["epsilon"], new_eps)
            cost_delta = max(self._record["delta"], new_delta)
            with acct.store.growing(self._record):  # to the group's cost, cost_eps and cost_delta
                acct.charge(cost_eps - self._record["epsilon"], cost_delta - self._record["delta"],
                            f"{self.label}: {part}")
            self._parts[part] = (new_eps, new_delta)
            self._record["parts"] = len(self._parts)

    def _close(self) -> None:
        with self.accountant.store.transaction():
            self._closed = True
            if not self._parts:  # nothing was spent: the group leaves no record
                records = self.accountant.store.records
                del records[next(i for i, r in enumerate(records) if r is self._record)]


#: Rule for the ``accountant`` parameter of mechanisms and methods.
ACCOUNTANT = Satisfies(_is_accountant, "None or a BudgetAccountant the caller holds")
