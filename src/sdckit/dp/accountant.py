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
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.params import Satisfies


class BudgetExceeded(ParameterError):
    """A spend would take the privacy budget past its total."""


def _is_accountant(value: Any) -> bool:
    return value is None or isinstance(value, BudgetAccountant)


#: The largest epsilon sdckit accepts anywhere (a budget, a spend, a method's or a query's): 10**6.
#: Far past any meaningful guarantee (e**20 already bounds nothing useful), it keeps every
#: exact sampler's grid inside a double and every number short enough to print.
MAX_EPSILON = Fraction(10**6)

#: A number given as text: a decimal (exponent at most 4 digits) or a fraction ``p/q``, at most
#: :data:`_MAX_TEXT` characters, so that parsing it never builds a huge integer.
_NUMBER_TEXT = re.compile(r"[+-]?(?:(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d{1,4})?|\d[\d_]*/\d[\d_]*)")
_MAX_TEXT = 100


def brief(value: Any) -> str:
    """A short form of ``value`` for a message: its repr, cut to 40 characters."""
    if isinstance(value, Fraction) and value.denominator == 1:
        value = value.numerator
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() of it may be refused
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_text(text: str) -> Fraction | None:
    text = text.strip()
    if len(text) > _MAX_TEXT or not _NUMBER_TEXT.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def exact(value: Any, owner: str, name: str, *, positive: bool = True, below_one: bool = False) -> Fraction:
    """``value`` as an exact :class:`~fractions.Fraction`, or :class:`ParameterError`.

    Accepts ints, floats (read by their shortest decimal repr: ``0.1`` is ``1/10``), strings
    such as ``"0.1"``, ``"1e-3"`` or ``"1/3"`` (at most 100 characters, exponents of at most
    4 digits), :class:`~decimal.Decimal` and :class:`~fractions.Fraction`. The number must be
    finite and > 0 (``positive``) or >= 0, and < 1 if ``below_one`` (a delta); any other number
    is an epsilon and must be at most :data:`MAX_EPSILON`. Messages show the value briefly.
    """
    rule = ("a number in [0, 1)" if below_one else
            "a finite number > 0" if positive else "a finite number >= 0")
    rule += " (int, float, Fraction, Decimal or a string such as '0.1' or '1/3')"
    number: Fraction | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, Fraction | int | np.integer):
        number = Fraction(int(value)) if isinstance(value, np.integer) else Fraction(value)
    elif isinstance(value, float | np.floating):
        number = Fraction(repr(float(value))) if math.isfinite(value) else None
    elif isinstance(value, Decimal):
        number = Fraction(value) if value.is_finite() and abs(value.adjusted()) <= 9999 else None
    elif isinstance(value, str):
        number = _parse_text(value)
    ok = number is not None and (number > 0 if positive else number >= 0) and (not below_one or number < 1)
    if not ok:
        raise ParameterError(f"The {name!r} parameter of {owner} must be {rule}. Got {brief(value)} instead.")
    if not below_one and number > MAX_EPSILON:
        raise ParameterError(
            f"The {name!r} parameter of {owner} is too large: {brief(value)}. sdckit accepts an epsilon of "
            f"at most {exact_text(MAX_EPSILON)} (10**6); a useful one is well below 10."
        )
    return number


def split_epsilon(epsilon: Any, parts: int) -> float:
    """``epsilon / parts`` as the largest float not above the exact quotient, so that ``parts``
    mechanisms at this epsilon never cost more than the decimal ``epsilon`` charged for them."""
    share = exact(epsilon, "split_epsilon", "epsilon") / parts
    value = float(share)
    return value if Fraction(value) <= share else math.nextafter(value, 0.0)


def exact_text(value: Fraction) -> str:
    """An exact, readable form: a decimal when it terminates (``"0.25"``), else ``"p/q"``."""
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator
    digits = str(scaled).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return sign + text


class BudgetAccountant:
    """Tracks (epsilon, delta) spent against a total budget; the user holds it across releases.

    Pass one accountant to every mechanism and method that releases the same data
    (``Laplace(..., accountant=acct)``, ``LaplaceNoise(..., accountant=acct)``, ...): each
    release is charged before its noise is drawn and refused when the budget would be passed.

    Parameters
    ----------
    epsilon : number > 0
        The total epsilon (no default). Exact: see :func:`exact`.
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
    sdckit.dp.accountant.BudgetExceeded: ...
    """

    def __init__(self, epsilon: Any, delta: Any = 0) -> None:
        self._epsilon = exact(epsilon, "BudgetAccountant", "epsilon")
        self._delta = exact(delta, "BudgetAccountant", "delta", positive=False, below_one=True)
        self._spent = Fraction(0)
        self._spent_delta = Fraction(0)
        self._spends: list[dict[str, Any]] = []
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (f"BudgetAccountant(epsilon={exact_text(self._epsilon)}, delta={exact_text(self._delta)}, "
                f"spent={exact_text(self.spent)}, spent_delta={exact_text(self.spent_delta)})")

    # ------------------------------------------------------------------ state
    @property
    def epsilon(self) -> Fraction:
        """The total epsilon."""
        return self._epsilon

    @property
    def delta(self) -> Fraction:
        """The total delta."""
        return self._delta

    @property
    def spent(self) -> Fraction:
        """Epsilon spent so far (sequential sum; a parallel group counts its largest part)."""
        with self._lock:
            return self._spent

    @property
    def spent_delta(self) -> Fraction:
        """Delta spent so far."""
        with self._lock:
            return self._spent_delta

    @property
    def remaining(self) -> Fraction:
        """Epsilon left."""
        with self._lock:
            return self._epsilon - self._spent

    @property
    def remaining_delta(self) -> Fraction:
        """Delta left."""
        with self._lock:
            return self._delta - self._spent_delta

    @property
    def spends(self) -> list[dict[str, Any]]:
        """Every spend (a copy), as the manifest shows it; their total is always :attr:`spent`."""
        with self._lock:
            return [self._entry(record) for record in self._spends]

    # ------------------------------------------------------------------ charging
    def _refusal(self, epsilon: Fraction, delta: Fraction, label: str) -> BudgetExceeded | None:
        over_eps = self._spent + epsilon > self._epsilon
        over_delta = self._spent_delta + delta > self._delta
        if not (over_eps or over_delta):
            return None
        what = (f"epsilon={exact_text(epsilon)}" if over_eps else f"delta={exact_text(delta)}")
        if over_eps:
            state = (f"{exact_text(self._spent)} of epsilon {exact_text(self._epsilon)} is spent, "
                     f"{exact_text(self._epsilon - self._spent)} remains")
        else:
            state = (f"{exact_text(self._spent_delta)} of delta {exact_text(self._delta)} is spent, "
                     f"{exact_text(self._delta - self._spent_delta)} remains")
        return BudgetExceeded(
            f"Spending {what} on {label!r} would exceed the privacy budget: {state}. "
            "Ask for a smaller epsilon/delta or release from a fresh budget only if the data "
            "protector's policy allows it."
        )

    def _charge(self, epsilon: Fraction, delta: Fraction, label: str) -> None:
        """Check and add in one step (the caller holds the lock)."""
        refusal = self._refusal(epsilon, delta, label)
        if refusal is not None:
            raise refusal
        self._spent += epsilon
        self._spent_delta += delta

    def check(self, epsilon: Any, label: str = "query", delta: Any = 0) -> None:
        """Raise :class:`BudgetExceeded` if ``(epsilon, delta)`` cannot be spent now (spends
        nothing; a later :meth:`spend` is still checked, since others may spend meanwhile)."""
        eps = exact(epsilon, "BudgetAccountant.check", "epsilon")
        dlt = exact(delta, "BudgetAccountant.check", "delta", positive=False, below_one=True)
        with self._lock:
            refusal = self._refusal(eps, dlt, label)
        if refusal is not None:
            raise refusal

    def spend(self, epsilon: Any, label: str = "query", delta: Any = 0) -> None:
        """Spend ``(epsilon, delta)`` on the whole data (sequential composition), atomically,
        or raise :class:`BudgetExceeded` and change nothing."""
        eps = exact(epsilon, "BudgetAccountant.spend", "epsilon")
        dlt = exact(delta, "BudgetAccountant.spend", "delta", positive=False, below_one=True)
        with self._lock:
            self._charge(eps, dlt, label)
            self._spends.append({"label": str(label), "epsilon": eps, "delta": dlt,
                                 "composition": "sequential"})

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
        with self._lock:
            return {
                "epsilon": exact_text(self._epsilon), "delta": exact_text(self._delta),
                "spent": exact_text(self._spent), "spent_delta": exact_text(self._spent_delta),
                "spends": [self._entry(record) for record in self._spends],
            }

    @classmethod
    def from_manifest(cls, data: Mapping[str, Any]) -> BudgetAccountant:
        """The accountant :meth:`to_manifest` described (used by the CLI's ledger file).

        The spent totals are recomputed from the spends, which must fit the budget.
        """
        if not isinstance(data, Mapping) or "epsilon" not in data:
            raise ParameterError("A stored budget must be a table with 'epsilon' (and 'spends').")
        acct = cls(data["epsilon"], data.get("delta", 0))
        spends = data.get("spends", [])
        if not isinstance(spends, list):
            raise ParameterError("A stored budget's 'spends' must be a list.")
        for record in spends:
            if not isinstance(record, Mapping):
                raise ParameterError("Each stored spend must be a table with 'epsilon' and 'delta'.")
            eps = exact(record.get("epsilon"), "the stored budget", "epsilon", positive=False)
            dlt = exact(record.get("delta", 0), "the stored budget", "delta", positive=False, below_one=True)
            with acct._lock:
                acct._charge(eps, dlt, str(record.get("label", "stored spend")))
                acct._spends.append({**record, "epsilon": eps, "delta": dlt})
        return acct


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
        with accountant._lock:
            accountant._spends.append(self._record)

    @property
    def charged(self) -> Fraction:
        """What the group has cost the budget in epsilon: its largest part's total."""
        with self.accountant._lock:
            return self._record["epsilon"]

    @property
    def charged_delta(self) -> Fraction:
        """What the group has cost in delta: the largest part's total delta."""
        with self.accountant._lock:
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
        with acct._lock:
            if self._closed:
                raise ParameterError(
                    f"The parallel group {self.label!r} is closed (its 'with' block has ended); "
                    "open a new one with accountant.parallel(...)."
                )
            old_eps, old_delta = self._parts.get(part, (Fraction(0), Fraction(0)))
            new_eps, new_delta = old_eps + eps, old_delta + dlt
            cost_eps = max(self._record["epsilon"], new_eps)
            cost_delta = max(self._record["delta"], new_delta)
            acct._charge(cost_eps - self._record["epsilon"], cost_delta - self._record["delta"],
                         f"{self.label}: {part}")
            self._parts[part] = (new_eps, new_delta)
            self._record.update(epsilon=cost_eps, delta=cost_delta, parts=len(self._parts))

    def _close(self) -> None:
        with self.accountant._lock:
            self._closed = True
            if not self._parts:  # nothing was spent: the group leaves no record
                spends = self.accountant._spends
                del spends[next(i for i, r in enumerate(spends) if r is self._record)]


#: Rule for the ``accountant`` parameter of mechanisms and methods.
ACCOUNTANT = Satisfies(_is_accountant, "None or a BudgetAccountant the caller holds")
