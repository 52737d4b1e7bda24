"""Tables at scale (issue 14): Table.from_file through DuckDB, and suppression by decomposition
(suppress_modular, HiTaS)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import MinFrequency, Table, audit, audit_pattern, sensitivity, suppress
from sdckit.tabular.modular import _Decomposition, audit_primaries, suppress_modular

RECORDS = pd.DataFrame({"a": ["a1", "a1", "a1", "a2"], "b": ["01", "01", "02", "02"],
                        "y": [10.0, 5.0, 7.0, 3.0], "w": [2.0, 1.0, 1.0, 4.0],
                        "h": ["H1", "H2", "H1", "H3"]})


def _write(tmp_path, frame, fmt):
    path = tmp_path / f"records.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def _cell(table, a, b):
    return table.cells.iloc[int(table.locate([(a, b)])[0])]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_from_file_2x2_cells_by_hand(tmp_path, fmt):
    t = Table.from_file(_write(tmp_path, RECORDS, fmt), ["a", "b"], response="y")
    # codes keep their leading zero (CSV read as text)
    assert list(t.hierarchies[1].codes) == ["Total", "01", "02"]
    expect = {("Total", "Total"): (25, 4, 10, 7), ("Total", "01"): (15, 2, 10, 5),
              ("Total", "02"): (10, 2, 7, 3), ("a1", "Total"): (22, 3, 10, 7),
              ("a1", "01"): (15, 2, 10, 5), ("a1", "02"): (7, 1, 7, 0), ("a2", "Total"): (3, 1, 3, 0),
              ("a2", "01"): (0, 0, 0, 0), ("a2", "02"): (3, 1, 3, 0)}
    for (a, b), (v, f, t1, t2) in expect.items():
        c = _cell(t, a, b)
        assert (c["value"], c["freq"], c["contributors"], c["top1"], c["top2"]) == (v, f, f, t1, t2), (a, b)
    assert not t.negative


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_from_file_weight_and_holding_by_hand(tmp_path, fmt):
    path = _write(tmp_path, RECORDS, fmt)
    t = Table.from_file(path, ["a", "b"], response="y", weight="w")
    # value = sum of weight x response; freq = records
    assert _cell(t, "a1", "01")[["value", "freq", "top1", "top2"]].tolist() == [25, 2, 20, 5]
    assert _cell(t, "Total", "Total")[["value", "freq"]].tolist() == [44, 4]
    t = Table.from_file(path, ["a", "b"], response="y", holding="h")
    # holding H1 owns (a1,01)=10 and (a1,02)=7: one contributor of 17 in (a1,Total)
    c = _cell(t, "a1", "Total")
    assert c[["value", "freq", "contributors", "top1", "top2"]].tolist() == [22, 3, 2, 17, 5]
    c = _cell(t, "Total", "02")
    assert c[["contributors", "top1", "top2"]].tolist() == [2, 7, 3]


def _random_records(seed, n=400):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.choice(["a1", "a2", "a3", "b1", "b2"], n, p=[.4, .2, .05, .3, .05]),
        "b": rng.choice(["x", "y", "z"], n, p=[.6, .3, .1]),
        "c": rng.choice(["01", "02"], n),
        "y": rng.normal(50, 60, n).round(2),
        "w": rng.uniform(1, 9, n).round(3),
        "h": rng.choice([f"E{i}" for i in range(60)], n)})


HIER = {"a": {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("kw", [{}, {"response": "y"}, {"response": "y", "weight": "w"},
                                {"response": "y", "holding": "h"}, {"weight": "w", "holding": "h", "top": 2}])
def test_from_file_equals_from_microdata(tmp_path, fmt, kw):
    frame = _random_records(7)
    t0 = Table.from_microdata(frame, ["a", "b", "c"], HIER, **kw)
    t1 = Table.from_file(_write(tmp_path, frame, fmt), ["a", "b", "c"], HIER, **kw)
    pd.testing.assert_frame_equal(t0.cells, t1.cells, check_exact=False, rtol=1e-9)
    assert t0.negative == t1.negative == ("y" in kw.values())


def test_from_file_bad_inputs(tmp_path):
    path = _write(tmp_path, RECORDS, "csv")
    with pytest.raises(DataError, match="does not exist"):
        Table.from_file(tmp_path / "nope.csv", ["a"])
    with pytest.raises(DataError, match="'zz'"):
        Table.from_file(path, ["a", "zz"])
    with pytest.raises(DataError, match="response column 'q'"):
        Table.from_file(path, ["a"], response="q")
    with pytest.raises(ParameterError, match="'top'"):
        Table.from_file(path, ["a"], top=0)
    with pytest.raises(ParameterError, match="repeats"):
        Table.from_file(path, ["a", "a"])
    bad = RECORDS.copy()
    bad["y"] = ["1", "x", "2", "3"]
    with pytest.raises(DataError, match="'y'") as e:
        Table.from_file(_write(tmp_path, bad, "csv"), ["a"], response="y")
    assert "x" not in str(e.value).replace("non-numeric", "").replace("exist", "")
    with pytest.raises(DataError, match="'a' has 1 code\\(s\\) that are not in its hierarchy") as e:
        Table.from_file(path, ["a"], {"a": {"a1": "A", "zz": "A"}})
    assert "a2" not in str(e.value)  # a code outside the published hierarchy is data
    with pytest.raises(DataError, match="subtotal"):
        Table.from_file(path, ["a"], {"a": {"a1": "A", "a3": "a2", "a2": "A"}})
    miss = RECORDS.copy()
    miss.loc[1, "a"] = None
    with pytest.raises(DataError, match="'a' has missing codes"):
        Table.from_file(_write(tmp_path, miss, "parquet"), ["a"])
    (tmp_path / "x.txt").write_text("a\n1\n")
    with pytest.raises((DataError, ParameterError)):
        Table.from_file(tmp_path / "x.txt", ["a"], input_format="stata")


# ------------------------------------------------------------------ decomposition
def _hier_table(seed, n=250):
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({"a": rng.choice(["a1", "a2", "a3", "b1", "b2", "b3"], n, p=[.3, .2, .05, .25, .15, .05]),
                      "b": rng.choice(["x1", "x2", "y1", "y2", "y3"], n, p=[.4, .05, .3, .2, .05]),
                      "c": rng.choice(["u", "v", "w"], n, p=[.6, .3, .1]),
                      "y": rng.lognormal(2, 1, n).round(1)})
    h = {"a": {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "b3": "B"},
         "b": {"x1": "X", "x2": "X", "y1": "Y", "y2": "Y", "y3": "Y"}}
    return Table.from_microdata(f, ["a", "b", "c"], h, response="y")


def test_decomposition_subtables_cover_every_equation():
    t = _hier_table(0)
    dec = _Decomposition(t)
    keys = dec.keys()
    assert len(keys) == 3 * 3 * 1  # non-leaf codes: a (Total, A, B), b (Total, X, Y), c (Total)
    # every equation (a parent and its children along one dimension, others fixed) lies in one
    # sub-table: the union of the sub-tables' equations is the table's
    A = t.equations()
    members = {k: set(dec.cells(k).tolist()) for k in keys}
    for r in range(A.shape[0]):
        cols = set(A.indices[A.indptr[r]:A.indptr[r + 1]].tolist())
        assert any(cols <= m for m in members.values()), r
    for cell in (0, 17, len(t.cells) - 1):
        for k in dec.holding(cell):
            assert cell in members[k]
        assert sum(cell in m for m in members.values()) == len(dec.holding(cell))


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_modular_pattern_is_audit_safe(seed):
    t = _hier_table(seed, n=150)
    r = suppress_modular(t, [MinFrequency(3)])
    assert r.method == "modular" and r.primaries > 0
    assert r.audit.safe
    full = audit(r)  # every suppressed cell's interval, on the whole table
    assert full.safe and full.unprotected == 0
    status = r.cells["status"].to_numpy()
    assert ((status == "primary") == sensitivity(t, [MinFrequency(3)]).primary).all()
    assert not ((status != "safe") & t.empty).any()
    # the primaries-only audit finds the same intervals as the full one on the primaries
    prim = status == "primary"
    np.testing.assert_allclose(r.audit.cells["lo"].to_numpy()[prim], full.cells["lo"].to_numpy()[prim],
                               rtol=1e-7, atol=1e-6)


def _brute_force_cost(table, rules):
    """Cheapest audit-safe pattern by enumeration (cost = value), cheapest subsets first."""
    sens = sensitivity(table, rules)
    v = table.cells["value"].to_numpy(float)
    cand = np.flatnonzero(~table.empty & ~sens.primary)
    subsets = []
    for k in range(len(cand) + 1):
        for s in itertools.combinations(cand.tolist(), k):
            subsets.append((float(v[list(s)].sum()), s))
    subsets.sort(key=lambda x: x[0])
    for cost, s in subsets:
        mask = sens.primary.copy()
        mask[list(s)] = True
        if audit_pattern(table, mask, sens).safe:
            return cost
    raise AssertionError("no safe pattern")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_modular_never_cheaper_than_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    n = 30
    f = pd.DataFrame({"a": rng.choice(["a1", "a2", "b1"], n, p=[.5, .1, .4]),
                      "b": rng.choice(["x", "y"], n, p=[.8, .2]),
                      "y": rng.integers(1, 50, n).astype(float)})
    # a: Total -> (A -> a1, a2), b1: 5 codes x 3 = 15 cells
    t = Table.from_microdata(f, ["a", "b"], {"a": {"a1": "A", "a2": "A", "A": "Total", "b1": "Total"}},
                             response="y")
    rules = [MinFrequency(3)]
    if not sensitivity(t, rules).primary.any():
        pytest.skip("no primary")
    best = _brute_force_cost(t, rules)
    r = suppress_modular(t, rules)
    assert r.audit.safe and audit(r).safe
    assert r.secondary_cost >= best - 1e-9
    o = suppress(t, rules, method="optimal")
    assert o.optimal and o.secondary_cost == pytest.approx(best)


def test_modular_flat_table_is_one_subtable_and_no_primary():
    f = pd.DataFrame({"a": ["p", "p", "q", "q", "q"], "b": ["x", "y", "x", "y", "y"], "y": [5.0, 6, 7, 8, 9]})
    t = Table.from_microdata(f, ["a", "b"], response="y")
    timings = {}
    r = suppress_modular(t, [MinFrequency(2)], timings=timings)
    assert timings["subtables"] == 1
    assert r.audit.safe and audit(r).safe
    r0 = suppress_modular(t, None)
    assert r0.primaries == 0 and r0.secondaries == 0 and r0.audit.safe


def test_modular_bad_parameters():
    t = _hier_table(0)
    with pytest.raises(ParameterError, match="'method'"):
        suppress_modular(t, [MinFrequency(3)], method="hypercube")
    with pytest.raises(ParameterError, match="'table'"):
        suppress_modular(t.cells, [MinFrequency(3)])
    with pytest.raises(ParameterError, match="'cost'"):
        suppress_modular(t, [MinFrequency(3)], cost="gold")


def test_audit_primaries_flags_an_unprotected_primary():
    t = _hier_table(1)
    sens = sensitivity(t, [MinFrequency(3)])
    res = audit_primaries(t, sens.primary, sens)  # primaries alone: recomputable from margins
    assert not res.safe and res.unprotected > 0
