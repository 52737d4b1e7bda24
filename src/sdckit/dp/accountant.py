"""A privacy-budget accountant with sequential and parallel composition (seed 002 section
4.6.2; Dwork & Roth 2014, Theorems 3.14 and McSherry 2009, "Privacy integrated queries").

* Sequential composition: mechanisms run on the same records add up their epsilons.
* Parallel composition: mechanisms run on *disjoint* sets of records (the equivalence classes
  of a k-anonymous partition, the cells of a histogram) cost the largest of their epsilons.

The accountant refuses, before any noise is drawn, a spend that would take the total past
the budget (:class:`BudgetExceeded`), and keeps every spend for the manifest.

Spends are summed exactly as rationals (the binary value of each float); a spend is refused
when the exact total exceeds the budget by more than ``1e-12`` relative, a tolerance that
absorbs decimal rounding such as ``0.1 + 0.2 > 0.3`` in binary and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from sdckit.core.errors import ParameterError
from sdckit.core.params import check_param
from sdckit.dp.mechanisms import POSITIVE

#: Relative slack on the budget (see the module docstring).
TOLERANCE = Fraction(1, 10**12)


class BudgetExceeded(ParameterError):
    """A spend would take the privacy budget past its total."""


@dataclass
class BudgetAccountant:
    """Tracks epsilon spent against a total budget.

    Parameters
    ----------
    epsilon : float > 0
        The total budget (no default).

    Examples
    --------
    >>> acct = BudgetAccountant(1.0)
    >>> acct.spend(0.4, "mean of income")
    >>> with acct.parallel("per class") as group:
    ...     group.spend(0.5, "class 0")
    ...     group.spend(0.5, "class 1")
    >>> round(acct.remaining, 12)
    0.1
    >>> acct.spend(0.2, "one more")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    sdckit.dp.accountant.BudgetExceeded: ...
    """

    epsilon: float
    spends: list[dict[str, Any]] = field(default_factory=list)
    _spent: Fraction = field(default=Fraction(0), repr=False)

    def __post_init__(self) -> None:
        check_param("BudgetAccountant", "epsilon", self.epsilon, POSITIVE)

    @property
    def spent(self) -> float:
        """Epsilon spent so far (sequential sum, parallel groups counted by their maximum)."""
        return float(self._spent)

    @property
    def remaining(self) -> float:
        """Epsilon left."""
        return float(Fraction(self.epsilon) - self._spent)

    def _charge(self, amount: Fraction, label: str, commit: bool = True) -> None:
        total = Fraction(self.epsilon)
        if self._spent + amount > total * (1 + TOLERANCE):
            raise BudgetExceeded(
                f"Spending epsilon={float(amount):g} on {label!r} would exceed the privacy budget: "
                f"{self.spent:g} of {self.epsilon:g} is spent, {max(self.remaining, 0):g} remains. "
                "Ask for a smaller epsilon or a larger budget."
            )
        if commit:
            self._spent += amount

    def check(self, epsilon: float, label: str = "query") -> None:
        """Raise :class:`BudgetExceeded` if ``epsilon`` cannot be spent now (spends nothing)."""
        check_param("BudgetAccountant.check", "epsilon", epsilon, POSITIVE)
        self._charge(Fraction(epsilon), label, commit=False)

    def spend(self, epsilon: float, label: str = "query") -> None:
        """Spend ``epsilon`` (sequential composition) or raise :class:`BudgetExceeded`."""
        check_param("BudgetAccountant.spend", "epsilon", epsilon, POSITIVE)
        self._charge(Fraction(epsilon), label)
        self.spends.append({"label": label, "epsilon": float(epsilon), "composition": "sequential"})

    @contextmanager
    def parallel(self, label: str = "parallel") -> Iterator[ParallelGroup]:
        """Spends on disjoint record sets inside the block cost their maximum (parallel
        composition). Each spend is checked against the budget as it is made."""
        group = ParallelGroup(self, label)
        yield group
        self.spends.append({
            "label": label, "epsilon": float(group.charged), "composition": "parallel",
            "parts": group.parts,
        })

    def to_manifest(self) -> dict[str, Any]:
        """The budget, what was spent and on what, for the manifest."""
        return {"epsilon": self.epsilon, "spent": self.spent, "spends": list(self.spends)}


@dataclass
class ParallelGroup:
    """Spends on disjoint parts of the data; see :meth:`BudgetAccountant.parallel`."""

    accountant: BudgetAccountant
    label: str
    parts: int = 0
    _max: Fraction = Fraction(0)

    @property
    def charged(self) -> float:
        """What the group has cost the budget: the largest epsilon spent in it."""
        return float(self._max)

    def spend(self, epsilon: float, label: str = "part", parts: int = 1) -> None:
        """Spend ``epsilon`` on each of ``parts`` parts (disjoint from each other and the rest)."""
        check_param("BudgetAccountant.spend", "epsilon", epsilon, POSITIVE)
        amount = Fraction(epsilon)
        if amount > self._max:
            self.accountant._charge(amount - self._max, f"{self.label}: {label}")
            self._max = amount
        self.parts += parts
