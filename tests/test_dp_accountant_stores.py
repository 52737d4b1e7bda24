"""One privacy accountant over three stores, one refusal, one warning (issue 29 item 4).

The same sequence of charges against the same budget must give the same answers and the same
refusal (type, message, what remains) whether the budget lives in memory, in the command line's
ledger file or in the query service's state database; the refusal is its own error, not a
``ValueError``; and a budget declared with epsilon above 10 warns once, as OpenDP warns on an
unusual privacy loss.
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import BudgetExceeded, ParameterError, PrivacyWarning, SdcError
from sdckit.dp import BudgetAccountant, LaplaceNoise
from sdckit.dp.accountant import Accountant, MemoryStore
from sdckit.dp.ledger import LedgerFileStore, ledger_accountant
from sdckit.query.state import BudgetRefused, State

# Budget 1; charges 1/3, 1/4 (7/12 spent), 1/2 (refused: 13/12 > 1, 5/12 remains), 5/12 (exactly
# the rest), 1/10**9 (refused: 0 remains). Worked by hand.
CHARGES = [Fraction(1, 3), Fraction(1, 4), Fraction(1, 2), Fraction(5, 12), Fraction(1, 10**9)]
EXPECTED = [None, None, ("0.5", "7/12", "5/12"), None, ("0.000000001", "1", "0")]  # exact_text's forms
ADVICE = "Ask for a smaller epsilon/delta, or for a fresh budget only if the data protector's policy allows it."


def _refusal(asked: str, spent: str, remaining: str) -> str:
    return (f"Spending epsilon={asked} on 'the query' would exceed the privacy budget: {spent} of epsilon 1 "
            f"is spent, {remaining} remains. {ADVICE}")


def _memory(tmp_path):
    accountant = Accountant(MemoryStore(Fraction(1)))
    yield lambda eps: accountant.charge(eps, Fraction(0), "the query"), lambda: accountant.budget.spent


def _ledger(tmp_path):
    path = tmp_path / "ledger.json"
    with LedgerFileStore(path, "data-set", Fraction(1)) as store:
        accountant = Accountant(store)
        yield lambda eps: accountant.charge(eps, Fraction(0), "the query"), lambda: accountant.budget.spent
    stored = json.loads(path.read_text())["data_sets"]["data-set"]  # written back when the block ends
    assert (stored["epsilon"], stored["spent"]) == ("1", "1")
    assert [s["epsilon"] for s in stored["spends"]] == ["1/3", "0.25", "5/12"]  # spent = the sum of the spends


def _sqlite(tmp_path):
    state = State(tmp_path / "state.db")
    state.add_analyst("ann", "dp", "1")
    yield lambda eps: state.charge("ann", eps, "SELECT 1", "{}"), lambda: state.analyst("ann").epsilon_spent
    assert state.ledger("ann") == [Fraction(1, 3), Fraction(1, 4), Fraction(5, 12)]
    assert [r["decision"] for r in state.audit_log("ann")] == [
        "charged", "charged", "refused: budget", "charged", "refused: budget"]


@pytest.mark.parametrize("store", [_memory, _ledger, _sqlite], ids=["memory", "ledger-file", "sqlite"])
def test_the_same_charges_give_the_same_refusals_in_every_store(tmp_path, store):
    run = store(tmp_path)
    charge, spent = next(run)
    outcomes = []
    for epsilon in CHARGES:
        try:
            charge(epsilon)
            outcomes.append(None)
        except BudgetExceeded as exc:
            outcomes.append(exc)
    for outcome, expected in zip(outcomes, EXPECTED):
        if expected is None:
            assert outcome is None
        else:
            assert str(outcome) == _refusal(*expected)
            assert outcome.remaining == Fraction(expected[2])
    assert spent() == 1
    with pytest.raises(StopIteration):
        next(run)  # the store's own checks after the block


def test_the_refusal_is_one_type_not_a_value_error():
    assert BudgetRefused is BudgetExceeded  # the service's old name is a deprecated alias
    assert issubclass(BudgetExceeded, SdcError)
    assert not issubclass(BudgetExceeded, ValueError) and not issubclass(BudgetExceeded, ParameterError)
    caught = []
    try:
        try:
            BudgetAccountant(Fraction(1, 10)).spend("0.2", "sum")
        except ValueError:  # a caller's ValueError handler no longer swallows a spent budget
            caught.append("ValueError")
    except BudgetExceeded as exc:
        caught.append(exc.remaining)
    assert caught == [Fraction(1, 10)]


def test_a_refused_ledger_charge_is_not_written_and_the_budget_carries_over(tmp_path):
    path = tmp_path / "ledger.json"
    with ledger_accountant(path, "k", "1/2") as accountant:
        accountant.spend("1/3", "first")
        with pytest.raises(BudgetExceeded, match=r"1/3 of epsilon 0\.5 is spent, 1/6 remains"):
            accountant.spend("1/4", "second")
    with ledger_accountant(path, "k", "0.5") as accountant:  # the same budget read again, exactly
        assert accountant.remaining == Fraction(1, 6) and [s["label"] for s in accountant.spends] == ["first"]


def _privacy_warnings(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, PrivacyWarning)]


def test_a_budget_above_epsilon_10_warns_once_per_call(tmp_path):
    assert issubclass(PrivacyWarning, UserWarning)
    assert _privacy_warnings(lambda: BudgetAccountant(10)) == []  # 10 itself is not unusual
    found = _privacy_warnings(lambda: BudgetAccountant("10.5"))
    assert len(found) == 1 and "epsilon = 10.5" in str(found[0].message)
    assert found[0].filename == __file__  # points at the caller's line

    def ledger_twice() -> None:
        for _ in range(2):  # a new data set, then the stored one: one warning each
            with ledger_accountant(tmp_path / "l.json", "k", 20) as accountant:
                accountant.spend(1)

    found = _privacy_warnings(ledger_twice)
    assert len(found) == 2 and all("the [budget] table" in str(w.message) for w in found)
    assert all(w.filename == __file__ for w in found)

    state = State(tmp_path / "state.db")
    found = _privacy_warnings(lambda: state.add_analyst("ann", "dp", 11))
    assert len(found) == 1 and "analyst add" in str(found[0].message)
    assert _privacy_warnings(lambda: state.charge("ann", Fraction(11), "q", "{}")) == []  # declared already
    assert _privacy_warnings(lambda: state.add_analyst("ben", "dp", 1)) == []


def test_a_method_without_an_accountant_warns_once_in_its_manifest():
    from sdckit.pipeline import protect

    frame = pd.DataFrame({"x": np.linspace(0.0, 10.0, 20)})
    method = LaplaceNoise(epsilon=15, bounds={"x": (0.0, 10.0)}, columns=["x"])
    release = protect(frame, [method], seed="ab" * 16)
    step = release.manifest["methods"][0]
    assert [w for w in step["warnings"] if "epsilon = 15" in w and "unusually large" in w] != []
    assert sum("unusually large" in w for w in step["warnings"]) == 1
