"""Frequency tables and rule details (issue 14): the threshold rule on counts, singletons, zero
cells, group disclosure, weights (grossed-up counts) and negative response values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from sdckit.core.errors import ParameterError
from sdckit.tabular import (GroupDisclosure, Manual, MinFrequency, PPercent, Table, audit, sensitivity,
                            suppress)

# r1: 4 records in c1; r2: 1 in c1, 2 in c2, 3 in c3
RECORDS = pd.DataFrame({"a": ["r1"] * 4 + ["r2"] * 6,
                        "b": ["c1"] * 4 + ["c1", "c2", "c2", "c3", "c3", "c3"]})


def _flagged(table, mask):
    return sorted(table.cell_name(i) for i in np.flatnonzero(mask))


def test_threshold_rule_on_counts_by_hand():
    t = Table.from_microdata(RECORDS, ["a", "b"])
    assert t.response is None
    s = sensitivity(t, [MinFrequency(3, share=0.25)])
    assert _flagged(t, s.primary) == ["(a=Total, b=c2)", "(a=r2, b=c1)", "(a=r2, b=c2)"]
    i = t.locate([("r2", "c1"), ("r2", "c2"), ("Total", "c2")])
    np.testing.assert_allclose(s.upper[i], [0.25, 0.5, 0.5])
    np.testing.assert_allclose(s.lower[i], [0.25, 0.5, 0.5])
    # the empty cells (r1, c2), (r1, c3) are never primary, though 0 < 3
    assert not s.primary[t.locate([("r1", "c2"), ("r1", "c3")])].any()


def test_singletons_are_flagged_by_frequency_and_p_percent():
    t = Table.from_microdata(RECORDS, ["a", "b"])
    s = sensitivity(t, [MinFrequency(2)])  # a singleton: one contributor
    assert _flagged(t, s.primary) == ["(a=r2, b=c1)"]
    frame = RECORDS.assign(y=[5.0, 6, 7, 8, 100, 1, 1, 2, 2, 2])
    tm = Table.from_microdata(frame, ["a", "b"], response="y")
    sp = sensitivity(tm, [PPercent(10)])
    # p%: X - x1 - x2 = 0 < 10% of x1 for the singleton, whatever its value
    assert sp.primary[tm.locate([("r2", "c1")])[0]]
    assert sp.upper[tm.locate([("r2", "c1")])[0]] == pytest.approx(10.0)


def test_zero_cells_are_never_primary():
    t = Table.from_microdata(RECORDS, ["a", "b"])
    s = sensitivity(t, [Manual([("r1", "c2")]), MinFrequency(100)])
    assert not (s.primary & t.empty).any()
    with pytest.raises(ParameterError, match=r"\(a=r1, b=c3\).*empty"):
        sensitivity(t, None, primary=[("r1", "c3")])


def test_group_disclosure_by_hand():
    t = Table.from_microdata(RECORDS, ["a", "b"])
    s = sensitivity(t, [GroupDisclosure()])
    # row r1: all 4 in c1 (attribute b); columns c2 and c3: all their records in r2 (attribute a)
    assert _flagged(t, s.primary) == ["(a=r1, b=c1)", "(a=r2, b=c2)", "(a=r2, b=c3)"]
    assert s.upper[t.locate([("r1", "c1")])[0]] == pytest.approx(0.4)
    assert _flagged(t, sensitivity(t, [GroupDisclosure(attributes="b")]).primary) == ["(a=r1, b=c1)"]
    assert _flagged(t, sensitivity(t, [GroupDisclosure(attributes=("a",))]).primary) == \
        ["(a=r2, b=c2)", "(a=r2, b=c3)"]
    r = suppress(t, [GroupDisclosure()], method="optimal")
    assert r.audit.safe and audit(r).safe
    # (r1, c1) = (r1, Total) - 0 - 0: the row total is suppressed with it
    status = dict(zip(zip(r.cells["a"], r.cells["b"]), r.cells["status"]))
    assert status[("r1", "Total")] != "safe"


def test_group_disclosure_skips_a_parent_with_one_child():
    hier = {"b": {"c1": "G", "c2": "H", "c3": "H", "G": "Total", "H": "Total"}}
    t = Table.from_microdata(RECORDS, ["a", "b"], hier)
    s = sensitivity(t, [GroupDisclosure(attributes="b")])
    # (r1, c1) = (r1, G), but G has one child; (r1, G) = (r1, Total) with two children: flagged
    assert _flagged(t, s.primary) == ["(a=r1, b=G)"]


def test_group_disclosure_bad_parameters():
    t = Table.from_microdata(RECORDS, ["a", "b"])
    with pytest.raises(ParameterError, match="'zz'"):
        sensitivity(t, [GroupDisclosure(attributes=["zz"])])
    with pytest.raises(ParameterError, match="'share'"):
        GroupDisclosure(share=0)


def test_weighted_frequency_table_by_hand():
    frame = pd.DataFrame({"a": ["p", "p", "q", "q", "q"], "b": ["x", "x", "x", "y", "y"],
                          "w": [100.0, 100.0, 1.0, 2.0, 3.0]})
    t = Table.from_microdata(frame, ["a", "b"], weight="w")
    c = t.cells.set_index(["a", "b"])
    # value = grossed-up count (sum of weights); freq and contributors = records
    assert c.loc[("p", "x"), ["value", "freq", "contributors"]].tolist() == [200, 2, 2]
    assert c.loc[("q", "y"), ["value", "freq"]].tolist() == [5, 2]
    assert c.loc[("Total", "Total"), ["value", "freq"]].tolist() == [206, 5]
    s = sensitivity(t, [MinFrequency(3)])
    # the rule counts records, not weights: (p, x) is primary though it stands for 200 people
    assert s.primary[t.locate([("p", "x")])[0]]
    assert s.upper[t.locate([("p", "x")])[0]] == pytest.approx(20.0)  # 10% of the weighted count
    assert not s.primary[t.locate([("q", "x")])[0]] or c.loc[("q", "x"), "freq"] < 3


NEG = pd.DataFrame({"a": ["p", "p", "p", "p", "p", "q", "q", "q", "q", "q", "q"],
                    "b": ["x", "x", "y", "y", "y", "x", "x", "x", "y", "y", "y"],
                    "y": [5.0, -4.5, 10, 4, 6, 7, 8, 9, -4, 12, 3]})


def test_negative_values_levels_are_not_capped():
    t = Table.from_microdata(NEG, ["a", "b"], response="y")
    assert t.negative
    i = int(t.locate([("p", "x")])[0])
    assert t.cells["value"][i] == pytest.approx(0.5)
    s = sensitivity(t, [PPercent(50)])
    # x1 = 5, x2 = -4.5, rest 0: level 2.5 > value 0.5, and the lower level stays 2.5
    assert s.primary[i] and s.upper[i] == pytest.approx(2.5) and s.lower[i] == pytest.approx(2.5)
    pos = Table.from_microdata(NEG.assign(y=NEG["y"].abs()), ["a", "b"], response="y")
    sp = sensitivity(pos, [Manual([("p", "x")], share=1.0)])
    j = int(pos.locate([("p", "x")])[0])
    assert sp.lower[j] == pytest.approx(pos.cells["value"][j])  # capped at the value when x >= 0


def _linprog_interval(table, mask, cell, free):
    A = table.equations().toarray()
    v = table.cells["value"].to_numpy(float)
    S = np.flatnonzero(mask)
    P = np.flatnonzero(~mask)
    rhs = -A[:, P] @ v[P]
    bounds = [(None, None) if free else (0, None)] * len(S)
    k = int(np.flatnonzero(S == cell)[0])
    out = []
    for sign in (1.0, -1.0):
        c = np.zeros(len(S))
        c[k] = sign
        r = linprog(c, A_eq=A[:, S], b_eq=rhs, bounds=bounds, method="highs")
        out.append(sign * r.fun if r.status == 0 else (-np.inf if sign > 0 else np.inf))
    return out


def test_negative_values_audit_matches_linprog():
    t = Table.from_microdata(NEG, ["a", "b"], response="y")
    r = suppress(t, [PPercent(50)], method="optimal")
    a = audit(r)
    assert a.safe
    mask = r.cells["status"].to_numpy() != "safe"
    i = int(t.locate([("p", "x")])[0])
    lo, hi = _linprog_interval(t, mask, i, free=True)
    assert a.cells["lo"][i] == lo and a.cells["hi"][i] == hi
    # no bound at 0: the intruder's interval goes below zero, which the lower level needs
    assert lo < 0.5 - 2.5
    # with x >= 0 (wrongly assumed), the same pattern would give a lower bound >= 0
    lo0, _ = _linprog_interval(t, mask, i, free=False)
    assert lo0 >= 0
