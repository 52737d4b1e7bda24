"""Issue 27 (part 4): the LPs of audit and suppression on tables whose values span many orders of
magnitude, and what happens when HiGHS cannot decide an LP. Before the fix the audit LP was
written in the table's units (right-hand sides up to 1e13 beside HiGHS's absolute tolerance of
1e-7) and ended with status 'Unknown', raised as a RuntimeError; now it is written in deviations,
scaled, retried, and an LP still undecided counts as "not proven" (fail safe)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabular_helpers import table2d

from sdckit.tabular import Manual, PPercent, Table, audit_pattern, sensitivity, suppress
from sdckit.tabular.audit import intervals

LPMOD = importlib.import_module("sdckit.tabular.lp")
DATA = Path(__file__).parent / "data"


def interior(t):
    return ((t.cells["r"] != "Total") & (t.cells["c"] != "Total")).to_numpy()


def frechet(values):
    """Every interior cell of a 2-D table suppressed, its margins published: the intruder's
    interval of x_ij is the Frechet bounds [max(0, r_i + c_j - N), min(r_i, c_j)] (the
    transportation polytope's projections)."""
    v = np.asarray(values, float)
    r, c, n = v.sum(axis=1), v.sum(axis=0), v.sum()
    return np.maximum(0.0, r[:, None] + c[None, :] - n), np.minimum(r[:, None], c[None, :])


# values for which HiGHS, given the LP in the table's units, ended 'Unknown' (found by a search
# over random tables; kept literally)
HUGE = [[249514269035.91, 60091080334.8], [14856362716753.28, 203222226010.67]]
MIXED = [[0.0, 0.0, 38.0], [32.0, 275643213239.31, 146187986265.27], [0.0, 23.0, 45994700313.89]]


@pytest.mark.parametrize("values", [HUGE, MIXED], ids=["huge", "huge-and-tiny"])
def test_intervals_of_huge_and_tiny_cells_are_the_frechet_bounds(values):
    t = table2d(values)
    lo, hi, _ = intervals(t, interior(t))
    want_lo, want_hi = frechet(values)
    v = np.asarray(values, float)
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            k = t.locate([(f"r{i}", f"c{j}")])[0]
            # exact to 1e-9 of the largest value: the LP is scaled by it
            assert lo[k] == pytest.approx(want_lo[i, j], abs=1e-9 * v.sum())
            assert hi[k] == pytest.approx(want_hi[i, j], abs=1e-9 * v.sum())


def test_a_tiny_primary_beside_huge_cells_is_audited():
    # MIXED, every interior cell suppressed: x(r0, c2) = 38 is its row's only non-zero cell, so
    # its interval is [max(0, 38 + c2 - N), min(38, c2)] = [0, 38]: it cannot rise. Its level is
    # the floor 1e-9 x N = 468 (the rule's share is smaller): short upwards, met downwards (the
    # lower level is capped at the value). The cell of 32 at (r1, c0): [0, 32] likewise.
    t = table2d(MIXED)
    n = float(np.sum(MIXED))
    s = sensitivity(t, Manual([("r0", "c2"), ("r1", "c0")], share=0.1))
    a = audit_pattern(t, interior(t), s)
    for key, v in ((("r0", "c2"), 38.0), (("r1", "c0"), 32.0)):
        row = a.cells.iloc[t.locate([key])[0]]
        assert row["upper"] == pytest.approx(1e-9 * n) and row["lower"] == pytest.approx(v)
        # (each equation keeps a slack of 1e-12 x N = 0.47 for float sums, precision.py)
        assert v - 1e-6 <= row["hi"] <= v + 2e-12 * n and row["lo"] == pytest.approx(0.0, abs=2e-12 * n)
        assert not row["protected"]
    assert a.unprotected == 2


def _flaky(monkeypatch, failures):
    """LP._solve answers 'Unknown' ``failures`` times (then HiGHS's own answers); returns the count."""
    calls = {"n": 0}
    real = LPMOD.LP._solve

    def fake(self):
        calls["n"] += 1
        if failures is None or calls["n"] <= failures:
            self.h.run()
            return "Unknown"
        return real(self)

    monkeypatch.setattr(LPMOD.LP, "_solve", fake)
    return calls


RECT = [("r0", "c0"), ("r0", "c1"), ("r1", "c0"), ("r1", "c1")]


def test_an_undecided_lp_is_retried_and_gives_the_hand_worked_interval(monkeypatch):
    # interior [[5, 7, 9], [6, 2, 8], [10, 11, 12]], rectangle r0/r1 x c0/c1 suppressed:
    # x00 = 5 lies in [5 - min(5, 2), 5 + min(7, 6)] = [3, 11] (test_tabular_audit's closed form).
    # The first two solves end 'Unknown' (the former code gave up after two and raised).
    t = table2d([[5, 7, 9], [6, 2, 8], [10, 11, 12]])
    m = np.zeros(len(t.cells), bool)
    m[t.locate(RECT)] = True
    calls = _flaky(monkeypatch, 2)
    s = sensitivity(t, Manual([("r0", "c0")], share=0.5))  # level 2.5: 5 +- 2.5 within [3, 11]? no
    a = audit_pattern(t, m, s)
    assert calls["n"] > 2
    row = a.cells.iloc[t.locate([("r0", "c0")])[0]]
    assert row["lo"] == pytest.approx(3.0) and row["hi"] == pytest.approx(11.0)
    assert not a.safe  # needs lo <= 2.5: 3 is short
    ok = audit_pattern(t, m, sensitivity(t, Manual([("r0", "c0")], share=0.4)))  # level 2: lo 3 <= 3
    assert ok.safe


def test_an_lp_never_decided_is_not_proven_safe(monkeypatch):
    # every solve 'Unknown': no RuntimeError, the primary counts as unprotected (fail safe)
    t = table2d([[5, 7, 9], [6, 2, 8], [10, 11, 12]])
    m = np.zeros(len(t.cells), bool)
    m[t.locate(RECT)] = True
    _flaky(monkeypatch, None)
    a = audit_pattern(t, m, sensitivity(t, Manual([("r0", "c0")], share=0.1)))
    row = a.cells.iloc[t.locate([("r0", "c0")])[0]]
    assert np.isnan(row["hi"]) and not row["protected"] and not a.safe


def test_lp_retries_restore_the_options(monkeypatch):
    t = table2d([[5, 7], [6, 2]])
    lp = LPMOD.LP(t.equations(), np.zeros(2 * 3), np.zeros(2 * 3), np.zeros(9), np.full(9, np.inf))
    lp.h.setOptionValue("presolve", "off")
    _flaky(monkeypatch, 3)
    assert lp.solve() == "optimal"
    assert lp.h.getOptionValue("presolve")[1] == "off"
    assert lp.h.getOptionValue("solver")[1] == "choose"


@pytest.fixture(scope="module")
def income_table():
    d = pd.read_csv(DATA / "sdcmicro" / "testdata.csv.gz").astype({c: str for c in ("urbrur", "water", "relat")})
    water = {"1": "W1", "2": "W1", "3": "W1", "4": "W2", "5": "W2", "6": "W3", "7": "W3", "9": "W3"}
    relat = {"1": "R1", "2": "R1", "3": "R1", **{str(k): "R2" for k in range(4, 10)}}
    return Table.from_microdata(d, ["urbrur", "water", "relat"], {"water": water, "relat": relat}, response="income")


@pytest.mark.parametrize("method", ["optimal", "fast"])
def test_testdata_income_table_under_p_percent_is_protected(income_table, method):
    # issue 27: urbrur x water x relat (432 cells, totals up to 2.3e11) with PPercent(10) and
    # method="optimal" raised "audit LP ended with status Unknown"
    t = income_table
    assert len(t.cells) == 432 and t.cells["value"].max() > 1e11
    r = suppress(t, PPercent(10), method=method)
    assert r.audit.safe and r.primaries > 0
    rows = r.audit.cells[r.audit.cells["status"] == "primary"]
    assert (rows["hi"] >= rows["value"] + rows["upper"] * (1 - 1e-6)).all()
    assert (rows["lo"] <= rows["value"] - rows["lower"] * (1 - 1e-6)).all()


def test_rounding_audit_with_an_undecided_lp_is_not_proven(monkeypatch):
    from sdckit.tabular.rounding import audit_rounding, round_table

    t = table2d([[5, 7, 9], [6, 2, 8], [10, 11, 12]])
    res = round_table(t, 5)
    good = audit_rounding(res, primary=[("r1", "c1")])
    assert good.cells.loc[0, "lo"] <= good.cells.loc[0, "hi"]  # decided: an interval
    _flaky(monkeypatch, None)
    bad = audit_rounding(res, primary=[("r1", "c1")])
    assert np.isnan(bad.cells.loc[0, "hi"]) and not bad.cells.loc[0, "protected"] and not bad.safe
