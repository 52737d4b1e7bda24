"""The privacy-budget accountant: exact (epsilon, delta) budgets, sequential and parallel
composition, atomic charging (issue 19 items 5, 6, 14)."""

from __future__ import annotations

import math
import sys
import threading
from decimal import Decimal
from fractions import Fraction

import pytest

from sdckit import ParameterError, SdcError
from sdckit.dp import BudgetAccountant, BudgetExceeded
from sdckit.dp.accountant import exact, exact_text


def total(spends) -> Fraction:
    return sum((Fraction(s["epsilon"]) for s in spends), Fraction(0))


def test_sequential_spends_add_up_and_an_overspend_is_refused():
    acct = BudgetAccountant(1.0)
    acct.spend(0.25, "count")
    acct.spend(0.5, "mean")
    assert acct.spent == Fraction(3, 4) and acct.remaining == Fraction(1, 4)
    with pytest.raises(BudgetExceeded, match=r"'sum'.*0\.75 of epsilon 1 is spent, 0\.25 remains"):
        acct.spend(0.3, "sum")
    # A refused spend costs nothing and is not recorded.
    assert acct.spent == Fraction(3, 4) and [s["label"] for s in acct.spends] == ["count", "mean"]
    acct.spend(0.25, "last")  # exactly the rest is allowed
    with pytest.raises(BudgetExceeded):
        acct.spend(1e-9, "one more")


def test_the_refusal_is_an_sdc_error_but_not_a_bad_parameter():
    """Issue 29: a refusal is its own error (every parameter may be right), not a ValueError, so
    that ``except ValueError`` around a release never swallows a spent budget."""
    acct = BudgetAccountant(0.1)
    with pytest.raises(SdcError) as info:
        acct.spend(0.2)
    assert type(info.value) is BudgetExceeded
    assert not isinstance(info.value, ValueError) and not isinstance(info.value, ParameterError)
    assert not issubclass(BudgetExceeded, ValueError) and not issubclass(BudgetExceeded, ParameterError)
    assert info.value.remaining == Fraction(1, 10) and info.value.remaining_delta == 0


def test_budgets_are_exact_decimals_not_binary_floats():
    # 0.1 + 0.2 > 0.3 in binary; read as decimals the three fill the budget exactly, with no
    # tolerance: not even 1e-15 more fits.
    acct = BudgetAccountant(0.3)
    acct.spend(0.1)
    acct.spend(0.2)
    assert acct.remaining == 0
    with pytest.raises(BudgetExceeded):
        acct.spend(1e-15)
    ten = BudgetAccountant(1)
    for _ in range(10):
        ten.spend(0.1)
    assert ten.spent == 1 and ten.to_manifest()["spent"] == "1"
    third = BudgetAccountant("1")
    for _ in range(3):
        third.spend("1/3")
    assert third.remaining == 0 and third.to_manifest()["spends"][0]["epsilon"] == "1/3"


@pytest.mark.parametrize(("value", "expected"), [
    (0.1, Fraction(1, 10)), (1, Fraction(1)), ("0.25", Fraction(1, 4)), ("1/3", Fraction(1, 3)),
    (Decimal("0.3"), Fraction(3, 10)), (Fraction(2, 7), Fraction(2, 7)), (1e-20, Fraction(1, 10**20)),
])
def test_exact_reads_users_numbers_exactly(value, expected):
    assert exact(value, "X", "epsilon") == expected


@pytest.mark.parametrize(("value", "text"), [
    (Fraction(1, 10), "0.1"), (Fraction(3), "3"), (Fraction(1, 3), "1/3"), (Fraction(5, 8), "0.625"),
    (Fraction(0), "0"), (Fraction(-1, 4), "-0.25"), (Fraction(1, 10**12), "0.000000000001"),
])
def test_exact_text_is_exact(value, text):
    assert exact_text(value) == text and Fraction(text) == value


def test_parallel_composition_costs_the_largest_part():
    acct = BudgetAccountant(1.0)
    with acct.parallel("classes") as group:
        for c in range(10):
            group.spend(0.5 if c != 3 else 0.7, part=f"class {c}")
    assert acct.spent == Fraction(7, 10)
    assert acct.spends[-1] == {"label": "classes", "epsilon": "0.7", "delta": "0",
                               "composition": "parallel", "parts": 10}
    acct.spend(0.3, "rest")
    with pytest.raises(BudgetExceeded):
        acct.spend(0.01)


def test_spends_on_the_same_part_add_up():
    # Issue 19 item 6: three spends of 0.6 on one part are 1.8, not 0.6.
    acct = BudgetAccountant(2.0)
    with acct.parallel("cells") as group:
        for _ in range(3):
            group.spend(0.6, part="cell A")
        group.spend(0.5, part="cell B")
    assert acct.spent == Fraction(18, 10)
    with pytest.raises(BudgetExceeded):
        with acct.parallel("again") as group:
            group.spend(0.1, part="x")
            group.spend(0.1, part="x")
            group.spend(0.1, part="x")


def test_a_group_is_closed_after_its_block():
    acct = BudgetAccountant(1.0)
    with acct.parallel("classes") as group:
        group.spend(0.2, part=1)
    with pytest.raises(ParameterError, match="closed"):
        group.spend(0.5, part=2)
    assert acct.spent == Fraction(1, 5) and total(acct.spends) == acct.spent


def test_a_refused_spend_leaves_spent_and_spends_consistent():
    acct = BudgetAccountant(1.0)
    acct.spend(0.6)
    with pytest.raises(BudgetExceeded, match="classes: class 1"):
        with acct.parallel("classes") as group:
            group.spend(0.4, part="class 0")
            group.spend(0.5, part="class 1")  # the group would cost 0.5: 1.1 in all
    # The 0.4 the group did spend is charged and recorded; the refused 0.5 is neither.
    assert acct.spent == 1
    assert total(acct.spends) == acct.spent
    assert acct.spends[-1]["epsilon"] == "0.4" and acct.spends[-1]["parts"] == 1
    # Inside a live group the record grows with the charge: consistent at every moment.
    acct2 = BudgetAccountant(1.0)
    with acct2.parallel("g") as group:
        group.spend(0.3, part="a")
        assert total(acct2.spends) == acct2.spent == Fraction(3, 10)
    # A group that spent nothing leaves no record.
    with acct2.parallel("empty"):
        pass
    assert [s["label"] for s in acct2.spends] == ["g"]


def test_delta_composes_sequentially_and_in_parallel():
    acct = BudgetAccountant(2.0, delta=1e-5)
    acct.spend(0.5, "gaussian 1", delta=4e-6)
    with acct.parallel("groups") as group:
        group.spend(0.5, part="a", delta=2e-6)
        group.spend(0.2, part="b", delta=5e-6)  # the group costs max eps 0.5, max delta 5e-6
    assert acct.spent == 1 and acct.spent_delta == Fraction(9, 10**6)
    with pytest.raises(BudgetExceeded, match=r"delta=0\.000002 .*0\.000009 of delta 0\.00001 is spent"):
        acct.spend(0.1, "gaussian 2", delta=2e-6)
    acct.spend(0.1, "gaussian 3", delta=1e-6)
    assert acct.remaining_delta == 0
    # A pure-DP budget refuses any delta.
    with pytest.raises(BudgetExceeded, match="delta"):
        BudgetAccountant(1.0).spend(0.1, delta=1e-9)


def test_concurrent_spends_never_overspend():
    # Issue 19 item 5: 16 threads spend 0.01 each until refused, with the interpreter
    # switching threads every microsecond. Exactly 100 spends fit in a budget of 1.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(3):
            acct = BudgetAccountant(1.0)
            accepted = []
            start = threading.Barrier(16)

            def worker():
                start.wait()
                count = 0
                for _ in range(40):
                    try:
                        acct.spend(0.01, "race")
                        count += 1
                    except BudgetExceeded:
                        pass
                accepted.append(count)

            threads = [threading.Thread(target=worker) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sum(accepted) == 100
            assert acct.spent == 1 and len(acct.spends) == 100 and total(acct.spends) == 1
    finally:
        sys.setswitchinterval(old)


def test_concurrent_parallel_groups_never_overspend():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        acct = BudgetAccountant(1.0)
        start = threading.Barrier(8)

        def worker(i):
            start.wait()
            for _ in range(30):
                try:
                    with acct.parallel(f"g{i}") as group:
                        group.spend(0.01, part="a")
                        group.spend(0.01, part="a")
                except BudgetExceeded:
                    pass

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert acct.spent <= 1 and total(acct.spends) == acct.spent
        assert acct.spent >= Fraction(98, 100)  # the budget was used up, not lost
    finally:
        sys.setswitchinterval(old)


def test_check_spends_nothing():
    acct = BudgetAccountant(1.0)
    acct.check(1.0)
    assert acct.spent == 0
    with pytest.raises(BudgetExceeded):
        acct.check(1.5)


def test_manifest_records_the_spends_exactly_and_round_trips():
    acct = BudgetAccountant(2.0, delta="1e-6")
    acct.spend(0.5, "a")
    with acct.parallel("p") as group:
        group.spend(0.25, part=0, delta=1e-7)
    manifest = acct.to_manifest()
    assert manifest == {
        "epsilon": "2", "delta": "0.000001", "spent": "0.75", "spent_delta": "0.0000001",
        "spends": [{"label": "a", "epsilon": "0.5", "delta": "0", "composition": "sequential"},
                   {"label": "p", "epsilon": "0.25", "delta": "0.0000001", "composition": "parallel", "parts": 1}],
    }
    again = BudgetAccountant.from_manifest(manifest)
    assert again.to_manifest() == manifest
    with pytest.raises(BudgetExceeded):
        BudgetAccountant.from_manifest({**manifest, "epsilon": "0.5"})


@pytest.mark.parametrize("epsilon", [0, -1.0, math.nan, math.inf, "one", None, True, "1/0"])
def test_bad_budgets_and_spends_are_refused(epsilon):
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant must be"):
        BudgetAccountant(epsilon)
    acct = BudgetAccountant(1.0)
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant.spend"):
        acct.spend(epsilon)
    with pytest.raises(ParameterError, match="'epsilon' parameter of BudgetAccountant.spend"):
        with acct.parallel() as group:
            group.spend(epsilon)
    assert acct.spent == 0 and acct.spends == []


@pytest.mark.parametrize("delta", [-1e-9, 1, 1.5, math.nan, "x"])
def test_bad_deltas_are_refused(delta):
    with pytest.raises(ParameterError, match="'delta' parameter of BudgetAccountant must be a number in"):
        BudgetAccountant(1.0, delta)
    with pytest.raises(ParameterError, match="'delta' parameter of BudgetAccountant.spend"):
        BudgetAccountant(1.0, 0.5).spend(0.1, delta=delta)
