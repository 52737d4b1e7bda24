"""Sensitivity rules and protection levels, hand-worked (Hundepool et al. 2012, ch. 4.2-4.3)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.tabular import PQ, Dominance, Manual, MinFrequency, PPercent, Table, sensitivity

DATA = Path(__file__).parent / "data" / "tabular"


def one_cell_table(x1, x2, x3, freq=3):
    """A 1-D table: leaf 'a' with contributions x1 >= x2 >= x3, leaf 'b' (100 from 10 firms)."""
    X = x1 + x2 + x3
    cells = pd.DataFrame({"d": ["a", "b", "Total"], "value": [X, 100.0, X + 100.0], "freq": [freq, 10, freq + 10],
                          "top1": [x1, 20.0, max(x1, 20.0)], "top2": [x2, 15.0, 20.0 if x1 >= 20 else x1],
                          "top3": [x3, 10.0, 15.0]})
    return Table.from_cells(cells, ["d"], top=["top1", "top2", "top3"])


def levels(t, rules):
    s = sensitivity(t, rules)
    i = t.locate([("a",)])[0]
    return bool(s.primary[i]), float(s.upper[i]), float(s.lower[i])


def test_p_percent_hand_worked():
    t = one_cell_table(60.0, 30.0, 10.0)  # X = 100, remainder X - x1 - x2 = 10
    assert levels(t, PPercent(10)) == (False, 0.0, 0.0)  # 10% of 60 = 6 < 10
    prim, up, low = levels(t, PPercent(20))  # 12 > 10: level 12 - 10 = 2
    assert prim and up == pytest.approx(2.0) and low == pytest.approx(2.0)


def test_pq_hand_worked():
    t = one_cell_table(60.0, 30.0, 10.0)
    prim, up, _ = levels(t, PQ(10, 50))  # 6 - 0.5 * 10 = 1
    assert prim and up == pytest.approx(1.0)
    assert levels(t, PQ(5, 60))[0] is False  # 3 - 6 < 0
    assert levels(t, PQ(20, 100)) == levels(t, PPercent(20))  # q = 100 is the p% rule


def test_dominance_hand_worked():
    t = one_cell_table(60.0, 30.0, 10.0)
    prim, up, _ = levels(t, Dominance(1, 50))  # 60 > 50: level 100/50 * 60 - 100 = 20
    assert prim and up == pytest.approx(20.0)
    prim, up, _ = levels(t, Dominance(2, 85))  # 90 > 85: level 100/85 * 90 - 100
    assert prim and up == pytest.approx(100 / 85 * 90 - 100)
    assert levels(t, Dominance(2, 95))[0] is False
    with pytest.raises(ParameterError, match="3 largest.*carries 3|needs the 4"):
        sensitivity(t, Dominance(4, 90))


def test_min_frequency_and_share():
    t = one_cell_table(60.0, 30.0, 10.0, freq=2)
    prim, up, low = levels(t, MinFrequency(3, share=0.25))
    assert prim and up == 25.0 and low == 25.0
    assert levels(t, MinFrequency(2))[0] is False


def test_lower_level_capped_at_the_value():
    t = one_cell_table(60.0, 30.0, 10.0, freq=2)
    prim, up, low = levels(t, MinFrequency(3, share=1.0) | Dominance(1, 10))  # dominance: 600 - 100
    assert prim and up == pytest.approx(500.0) and low == 100.0  # x >= 0: can't go below 0


def test_combined_rules_take_the_largest_level_and_first_reason():
    t = one_cell_table(60.0, 30.0, 10.0, freq=2)
    s = sensitivity(t, [MinFrequency(3, 0.1), PPercent(20)])
    i = t.locate([("a",)])[0]
    assert s.upper[i] == pytest.approx(10.0) and s.reason[i] == "frequency"
    s2 = sensitivity(t, MinFrequency(3, 0.01) | PPercent(20))
    assert s2.upper[i] == pytest.approx(2.0)


def test_single_contributor_is_primary_and_empty_never():
    cells = pd.DataFrame({"d": ["a", "b", "c", "Total"], "value": [50.0, 0.0, 100.0, 150.0],
                          "freq": [1, 0, 10, 11], "top1": [50.0, 0.0, 20.0, 50.0], "top2": [0.0, 0.0, 15.0, 20.0]})
    t = Table.from_cells(cells, ["d"], top=["top1", "top2"])
    s = sensitivity(t, [PPercent(10), MinFrequency(3), Dominance(1, 60)])
    assert dict(zip(t.cells["d"], s.primary)) == {"Total": False, "a": True, "b": False, "c": False}
    assert s.upper[t.locate([("a",)])[0]] == pytest.approx(50.0 * 100 / 60 - 50.0)  # the largest: dominance
    with pytest.raises(ParameterError, match=r"\(d=b\).*structural zero"):
        sensitivity(t, None, primary=[("b",)])


def test_manual_cells_and_given_primary():
    t = one_cell_table(60.0, 30.0, 10.0)
    s = sensitivity(t, Manual([("b",)], share=0.5))
    assert list(s.primary) == [False, False, True] and s.upper[2] == 50.0
    s = sensitivity(t, None, primary=np.array([False, True, False]))
    assert s.primary[1] and s.upper[1] == pytest.approx(10.0) and s.reason[1] == "given"
    with pytest.raises(ParameterError, match="one per cell|entries"):
        sensitivity(t, None, primary=np.array([True]))


def test_p_percent_reproduces_tau_argus_primaries():
    """tau-ARGUS's p% rule (p = 15) on the Simple2D instance: the same 9 primary cells."""
    d = DATA / "tau_simple2d"
    hier = {dim: {r.child: r.parent for r in pd.read_csv(d / f"hierarchy_{dim}.csv", dtype=str).dropna().itertuples()}
            for dim in ("Size", "Region")}
    cells = pd.read_csv(d / "cells.csv", dtype={"Size": str, "Region": str})
    t = Table.from_cells(cells, ["Size", "Region"], hier, top=["top1", "top2"], rtol=1e-6)
    s = sensitivity(t, PPercent(15))
    got = {(a, b) for a, b in t.cells.loc[s.primary, ["Size", "Region"]].itertuples(index=False)}
    want = {(str(a), str(b)) for a, b in pd.read_csv(d / "primary.csv", dtype=str)[["Size", "Region"]].itertuples(index=False)}
    assert got == want


@pytest.mark.parametrize("make, message", [
    (lambda: MinFrequency(0), "'n' parameter of MinFrequency"),
    (lambda: MinFrequency(3, share=0), "'share'"),
    (lambda: Dominance(1, 120), "'k' parameter of Dominance"),
    (lambda: Dominance(1.5, 80), "'n'"),
    (lambda: PPercent(-1), "'p' parameter of PPercent"),
    (lambda: PQ(50, 40), "below q"),
    (lambda: MinFrequency(3) | "x", "must be a Rule"),
])
def test_bad_parameters_named(make, message):
    with pytest.raises(ParameterError, match=message):
        make()


def test_rules_are_frozen_values():
    r = PPercent(10)
    with pytest.raises(Exception):
        r.p = 20
    assert r == PPercent(10) and r.to_dict() == {"rule": "p%", "p": 10}
