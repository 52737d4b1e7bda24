"""The restricted mode's auditor (issue 15; seed 002 §4.6.2; DESIGN.md §7).

Hand-worked attacks (Denning's individual and general trackers, differencing on a known unique),
query-set-size control at its edges, GROUP BY answered together, refusals that record nothing,
and a brute-force oracle (exact rational linear algebra over the records) on random sequences.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_helpers import small_totals_learnt
from sdckit.core.errors import DataError, ParameterError
from sdckit.query.audit.auditor import Auditor, Decision


def _set(n: int, members) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[list(members)] = True
    return m


def _ask(auditor: Auditor, sets, kind="count", column=None) -> bool:
    """Check, and record when allowed (what the server does); return whether it was allowed."""
    decision = auditor.check(sets, kind, column)
    if decision.allowed:
        auditor.record(sets, kind, column)
    return decision.allowed


# -- Denning's individual tracker ----------------------------------------------------------------
# 12 employees; C1 = "woman" = {0..4}; C2 = "over 60" = {0, 7, 8}. C = C1 AND C2 = {0} (Alice) is
# refused by size control; the tracker T = C1 AND NOT C2 = {1..4} gives COUNT(C) = COUNT(C1) -
# COUNT(T) (Denning, Denning & Schwartz 1979). k = 3.
N12 = 12
C1 = _set(N12, range(5))
C2 = _set(N12, [0, 7, 8])


@pytest.mark.parametrize("kind,column", [("count", None), ("sum", "salary")])
def test_individual_tracker_is_refused(kind, column):
    a = Auditor(N12, 3)
    assert not a.check([C1 & C2], kind, column).allowed  # the target itself: size control
    assert _ask(a, [C1], kind, column)
    decision = a.check([C1 & ~C2], kind, column)
    assert not decision.allowed
    assert "fewer than 3 records" in decision.reason


def test_tracker_on_another_column_or_kind_is_separate_knowledge():
    # SUM(salary) over C1 and SUM(age) over T are different unknowns: neither isolates Alice.
    a = Auditor(N12, 3)
    assert _ask(a, [C1], "sum", "salary")
    assert _ask(a, [C1 & ~C2], "sum", "age")
    assert _ask(a, [C1 & ~C2], "count", None)
    assert not a.check([C1 & ~C2], "sum", "salary").allowed


# -- Denning's general tracker -------------------------------------------------------------------
# T = {0..5} with 2k <= |T| <= n - 2k; target C = {11}. q(C) = q(C or T) + q(C or not T) - q(T) - q(not T).
T = _set(N12, range(6))
C = _set(N12, [11])


def test_general_tracker_is_refused_without_known_totals():
    a = Auditor(N12, 3, known_totals=False)
    assert _ask(a, [C | T], "sum", "income")          # atoms: T, {11}, rest; row (1, 1, 0)
    assert _ask(a, [C | ~T], "sum", "income")         # = not T (C is outside T): row (0, 1, 1)
    assert not a.check([T], "sum", "income").allowed  # (1, 1, 0) - (1, 0, 0) = e_{11}
    assert not a.check([~T & ~C], "sum", "income").allowed  # (0, 1, 1) - (0, 0, 1) = e_{11}


def test_general_tracker_is_refused_when_totals_are_known():
    # With the total known, q(C or T) + q(C or not T) - q(all) = q(C): the second query is refused.
    a = Auditor(N12, 3)
    assert _ask(a, [C | T], "count")
    assert not a.check([C | ~T], "count", None).allowed


# -- differencing on a known unique --------------------------------------------------------------
def test_differencing_on_a_known_unique_is_refused():
    # Department A = {2..13}; record 5 is its only manager (a known unique).
    n = 20
    dept = _set(n, range(2, 14))
    a = Auditor(n, 4)
    assert _ask(a, [dept], "sum", "salary")
    assert not a.check([dept & ~_set(n, [5])], "sum", "salary").allowed
    # A difference of two records (size 2 < k) is refused as well.
    assert not a.check([dept & ~_set(n, [5, 6])], "sum", "salary").allowed
    # A difference of k records is a query-set-size-sized total: allowed.
    assert a.check([dept & ~_set(n, [5, 6, 7, 8])], "sum", "salary").allowed


def test_complement_of_a_small_set_is_protected_with_known_totals():
    # With n known, COUNT over n - 1 records is refused by size control, and deriving a set of
    # n - 1 records (the complement of one record) by differencing is refused too.
    n = 10
    a = Auditor(n, 2)
    assert _ask(a, [_set(n, range(5))], "count")
    # rows: all, {0..4}; asking {5..8} makes atom {9} derivable: all - {0..4} - {5..8}.
    assert not a.check([_set(n, range(5, 9))], "count", None).allowed


# -- query-set-size control at its edges ----------------------------------------------------------
@pytest.mark.parametrize("size,allowed", [(3, False), (4, True), (16, True), (17, False), (0, False), (20, False)])
def test_query_set_size_control_edges(size, allowed):
    n, k = 20, 4
    decision = Auditor(n, k).check([_set(n, range(size))], "count", None)
    assert decision.allowed is allowed
    if not allowed:
        assert "query-set-size control" in decision.reason


def test_size_control_applies_to_every_group():
    n = 20
    a = Auditor(n, 4)
    assert not a.check([_set(n, range(10)), _set(n, range(10, 12)), _set(n, range(12, 20))], "count", None).allowed


# -- GROUP BY checked together -------------------------------------------------------------------
def test_group_by_groups_are_checked_together():
    # n = 12, k = 3; answered COUNT(A), A = {0..8}. GROUP BY g: g1 = {0..3}, g2 = {4..7}, g3 = {8..11}.
    # Alone, g1 (or g2) leaves g2 + {8} one atom of 5 records; together A - g1 - g2 = {8}.
    n = 12
    g1, g2, g3 = _set(n, range(4)), _set(n, range(4, 8)), _set(n, range(8, 12))
    a = Auditor(n, 3)
    assert _ask(a, [_set(n, range(9))], "count")
    assert a.check([g1], "count", None).allowed
    assert a.check([g2], "count", None).allowed
    assert not a.check([g1, g2, g3], "count", None).allowed


def test_group_by_over_a_fresh_table_is_allowed():
    n = 30
    groups = [_set(n, range(i, i + 10)) for i in (0, 10, 20)]
    a = Auditor(n, 5)
    assert _ask(a, groups, "sum", "income")
    assert a.answered == 1


# -- refusing never records ------------------------------------------------------------------------
def test_a_refused_answer_is_not_recorded():
    # Knowledge: all, C1. T = C1 - Alice is refused. R = T + {9, 10} (outside C1) is safe with
    # {all, C1} (C1 - R = e_0 - e_{9,10} covers 3 records) but would give the total of records 9
    # and 10 if T had been recorded (R - T = {9, 10}: 2 < k records). (R = T + {9} is refused
    # since issue 27: C1 - R = e_0 - e_9, the difference of two records' values.)
    a = Auditor(N12, 3)
    assert _ask(a, [C1], "count")
    assert not a.check([C1 & ~C2], "count", None).allowed
    assert not a.check([(C1 & ~C2) | _set(N12, [9])], "count", None).allowed
    r = (C1 & ~C2) | _set(N12, [9, 10])
    assert a.check([r], "count", None).allowed
    assert a.answered == 1


def test_check_does_not_change_state_and_record_replays():
    a = Auditor(N12, 3)
    assert a.check([C1], "count", None).allowed  # checked, not recorded
    assert a.check([C1 & ~C2], "count", None).allowed  # so T alone is still fine
    # Replay (a restart): record without check, then the tracker's second half is refused.
    b = Auditor(N12, 3)
    b.record([C1], "count", None)
    assert not b.check([C1 & ~C2], "count", None).allowed


def test_an_already_derivable_set_does_not_block_everything():
    # Replayed history that isolates record 0 (e.g. k raised since): later safe answers still pass.
    a = Auditor(N12, 3)
    a.record([C1], "count", None)
    a.record([C1 & ~C2], "count", None)
    # atoms {0}, {1..4}, {5..8}, {9..11}: only {0} is small and derivable, as before.
    assert a.check([_set(N12, range(1, 9))], "count", None).allowed


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k,culprit", [(0, 1, "n_records"), (10, 0, "min_query_set"), (10, True, "min_query_set"),
                                         (2.5, 1, "n_records")])
def test_bad_parameters(n, k, culprit):
    with pytest.raises(ParameterError, match=culprit):
        Auditor(n, k)


def test_bad_kind_and_column():
    a = Auditor(10, 2)
    m = [_set(10, range(5))]
    with pytest.raises(ParameterError, match="'kind'"):
        a.check(m, "avg", None)
    with pytest.raises(ParameterError, match="'column'"):
        a.check(m, "sum", None)
    with pytest.raises(ParameterError, match="'column'"):
        a.record(m, "sum", "")


def test_bad_memberships():
    a = Auditor(10, 2)
    with pytest.raises(DataError, match="membership 0 .*length n_records=10"):
        a.check([np.ones(9, dtype=bool)], "count", None)
    with pytest.raises(DataError, match="membership 1 must be boolean"):
        a.check([np.ones(10, dtype=bool), np.full(10, 0.5)], "count", None)
    with pytest.raises(DataError, match="empty"):
        a.check([], "count", None)
    with pytest.raises(DataError, match="sequence of membership vectors"):
        a.check(np.ones(10, dtype=bool), "count", None)


def test_zero_one_integers_are_accepted():
    a = Auditor(10, 2)
    assert a.check([np.array([1] * 5 + [0] * 5)], "count", None).allowed


def test_decision_to_dict():
    assert Decision(False, "why").to_dict() == {"allowed": False, "reason": "why"}


# -- brute-force oracle ---------------------------------------------------------------------------
def _oracle_allows(n, k, known, answered, batch) -> bool:
    """Size control, then no new total over fewer than k records derivable (brute force over Q,
    ``query_helpers.small_totals_learnt``; issue 27: unions of small atoms and differences too)."""
    if any(not (k <= int(m.sum()) <= n - k) for m in batch):
        return False
    base = [np.ones(n, dtype=bool)] if known else []
    return not small_totals_learnt(k, base + answered, base + answered + batch)


_query = st.tuples(st.sampled_from(["count", "sum:a", "sum:b"]),
                   st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=2))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 6), k=st.integers(1, 3), known=st.booleans(), queries=st.lists(_query, min_size=1, max_size=7))
def test_auditor_matches_brute_force_oracle(n, k, known, queries):
    a = Auditor(n, k, known_totals=known)
    answered: dict[str, list[np.ndarray]] = {}
    for kind_col, raw in queries:
        kind, _, col = kind_col.partition(":")
        batch = [np.array(r[:n], dtype=bool) for r in raw]
        expected = _oracle_allows(n, k, known, answered.get(kind_col, []), batch)
        got = a.check(batch, kind, col or None).allowed
        assert got == expected
        if got:
            a.record(batch, kind, col or None)
            answered.setdefault(kind_col, []).extend(batch)


@pytest.mark.parametrize("k,allowed", [(3, True), (4, False)])
def test_an_independent_set_that_cuts_no_atom(k, allowed):
    # n = 12; A = {0..5}, B = {3..8}: atoms {0,1,2}, {3,4,5}, {6,7,8}, {9,10,11}. C = {0,1,2,6,7,8} cuts
    # no atom, but (1,0,1,0) is not in span{(1,1,1,1), (1,1,0,0), (0,1,1,0)} over Q, so with C every
    # atom (3 records) becomes derivable: refused when k = 4, allowed when k = 3.
    n = 12
    a = Auditor(n, k)
    assert _ask(a, [_set(n, range(6))], "sum", "x")
    assert _ask(a, [_set(n, range(3, 9))], "sum", "x")
    assert a.check([_set(n, [0, 1, 2, 6, 7, 8])], "sum", "x").allowed is allowed


def test_auditor_matches_oracle_on_range_and_in_list_queries():
    # 30 records with two attributes; conjunctions of a range and an IN-list, as the server sends.
    rng = np.random.default_rng(7)
    n, k = 30, 3
    age = rng.integers(0, 10, n)
    region = rng.integers(0, 4, n)
    for trial in range(4):
        a = Auditor(n, k, known_totals=bool(trial % 2))
        answered: list[np.ndarray] = []
        allowed = refused = 0
        for _ in range(14):
            low = int(rng.integers(0, 8))
            m = (age >= low) & (age <= low + int(rng.integers(1, 6)))
            if rng.random() < 0.6:
                m &= np.isin(region, rng.choice(4, int(rng.integers(1, 4)), replace=False))
            expected = _oracle_allows(n, k, bool(trial % 2), answered, [m])
            assert a.check([m], "count", None).allowed == expected
            if expected:
                a.record([m], "count", None)
                answered.append(m)
                allowed += 1
            else:
                refused += 1
        assert allowed and refused  # the sequence exercised both outcomes


def test_interleaved_checks_then_record_equal_recording_alone():
    # check(Q1), check(Q2), record(Q1): the state must be that of recording Q1 only (the pending
    # check of Q2 and the shared bit store must leave no trace).
    rng = np.random.default_rng(11)
    n, k = 40, 3
    q1, q2 = rng.random(n) < 0.5, rng.random(n) < 0.4
    probes = [rng.random(n) < 0.5 for _ in range(12)]
    a, b = Auditor(n, k), Auditor(n, k)
    a.check([q1], "sum", "x")
    a.check([q2], "sum", "x")
    a.record([q1], "sum", "x")
    b.record([q1], "sum", "x")
    for probe in probes:
        assert a.check([probe], "sum", "x").allowed == b.check([probe], "sum", "x").allowed
        assert a.check([probe], "sum", "x").allowed == _oracle_allows(n, k, True, [q1], [probe])


def test_group_by_many_groups_matches_oracle():
    rng = np.random.default_rng(3)
    n, k = 36, 3
    answered: list[np.ndarray] = []
    a = Auditor(n, k)
    outcomes = set()
    for _ in range(8):
        labels = rng.integers(0, int(rng.integers(2, 6)), n)
        where = rng.random(n) < 0.8
        groups = [where & (labels == g) for g in np.unique(labels[where])]
        expected = _oracle_allows(n, k, True, answered, groups)
        assert a.check(groups, "count", None).allowed == expected
        outcomes.add(expected)
        if expected:
            a.record(groups, "count", None)
            answered.extend(groups)
    assert outcomes == {True, False}


# -- the modular arithmetic under the engine -------------------------------------------------------
def test_random_prime_is_a_31_bit_prime():
    from sdckit.query.audit.modp import random_prime

    for _ in range(3):
        p = random_prime(31)
        assert 2**30 <= p < 2**31
        assert all(p % d for d in range(2, int(p**0.5) + 1))  # trial division: no factor


def test_bordered_inverse_matches_a_direct_inverse_mod_p():
    from sdckit.query.audit.modp import bordered_inverse, inverse

    p = 10007
    m = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], dtype=np.int64)  # det 2
    c, d, e = np.array([1, 0, 1]), np.array([0, 1, 1]), 1
    # inverse of m mod p by the adjugate
    adj = np.round(np.linalg.inv(m) * 2).astype(np.int64)
    minv = (adj * inverse(2, p)) % p
    assert ((m @ minv) % p == np.eye(3, dtype=np.int64)).all()
    gamma, pi = (minv @ c) % p, (d @ minv) % p
    schur = int((e - d @ gamma) % p)
    big = np.block([[m, c[:, None]], [d[None, :], np.array([[e]])]])
    out = bordered_inverse(minv, gamma, pi, schur, p)
    assert ((big @ out) % p == np.eye(4, dtype=np.int64)).all()
