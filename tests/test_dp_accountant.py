"""The privacy-budget accountant: sequential and parallel composition, refusing overspends."""

from __future__ import annotations

import math

import pytest

from sdckit import ParameterError, SdcError
from sdckit.dp import BudgetAccountant, BudgetExceeded


def test_sequential_spends_add_up_and_an_overspend_is_refused():
    acct = BudgetAccountant(1.0)
    acct.spend(0.25, "count")
    acct.spend(0.5, "mean")
    assert acct.spent == 0.75 and acct.remaining == 0.25
    with pytest.raises(BudgetExceeded, match=r"'sum'.*0\.75 of 1 is spent, 0\.25 remains"):
        acct.spend(0.3, "sum")
    # A refused spend costs nothing and is not recorded.
    assert acct.spent == 0.75 and [s["label"] for s in acct.spends] == ["count", "mean"]
    acct.spend(0.25, "last")  # exactly the rest is allowed
    with pytest.raises(BudgetExceeded):
        acct.spend(1e-6, "one more")


def test_the_refusal_is_an_sdc_error():
    acct = BudgetAccountant(0.1)
    with pytest.raises(SdcError):
        acct.spend(0.2)
    assert issubclass(BudgetExceeded, ParameterError)


def test_decimal_rounding_is_tolerated_but_nothing_more():
    acct = BudgetAccountant(0.3)
    acct.spend(0.1)
    acct.spend(0.2)  # 0.1 + 0.2 > 0.3 in binary, by 2e-17
    with pytest.raises(BudgetExceeded):
        acct.spend(1e-9)


def test_parallel_composition_costs_the_largest_part():
    acct = BudgetAccountant(1.0)
    with acct.parallel("classes") as group:
        for c in range(10):
            group.spend(0.5 if c != 3 else 0.7, f"class {c}")
    assert acct.spent == pytest.approx(0.7)
    assert acct.spends[-1] == {"label": "classes", "epsilon": pytest.approx(0.7),
                               "composition": "parallel", "parts": 10}
    acct.spend(0.3, "rest")
    with pytest.raises(BudgetExceeded):
        acct.spend(0.01)


def test_a_parallel_part_beyond_the_budget_is_refused_before_it_is_spent():
    acct = BudgetAccountant(1.0)
    acct.spend(0.6)
    with pytest.raises(BudgetExceeded, match="classes: class 1"):
        with acct.parallel("classes") as group:
            group.spend(0.4, "class 0")
            group.spend(0.5, "class 1")
    assert acct.spent == pytest.approx(1.0)


def test_check_spends_nothing():
    acct = BudgetAccountant(1.0)
    acct.check(1.0)
    assert acct.spent == 0
    with pytest.raises(BudgetExceeded):
        acct.check(1.5)


def test_manifest_records_the_spends():
    acct = BudgetAccountant(2.0)
    acct.spend(0.5, "a")
    assert acct.to_manifest() == {
        "epsilon": 2.0, "spent": 0.5,
        "spends": [{"label": "a", "epsilon": 0.5, "composition": "sequential"}],
    }


@pytest.mark.parametrize("epsilon", [0, -1.0, math.nan, math.inf, "1", None])
def test_bad_budgets_and_spends_are_refused(epsilon):
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant must be"):
        BudgetAccountant(epsilon)
    acct = BudgetAccountant(1.0)
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant.spend"):
        acct.spend(epsilon)
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant.spend"):
        with acct.parallel() as group:
            group.spend(epsilon)
