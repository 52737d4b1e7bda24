"""The cube's moments (sdckit.query.cube_moments, issue 32): VAR_POP/STDDEV_POP, quantile
histograms (sparse, cumulative, built in bin ranges, switched to cumulative part-way:
sdckit.query.histcube), COUNT(DISTINCT) and keys from the data give exactly DuckDB's true
answers on random predicates (squared deviations near 2**82 too); what they decline (values off
a grid, a person with several rows for data keys, histograms past the memory cap); the service's
answers bit-identical with and without them under a seed, and answered without a scan."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, fast_paths_only, seeded_answers
from sdckit.query import keys, noisy
from sdckit.query.config import load_config
from sdckit.query.cube_moments import Moments
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql, histogram_sql, quantile_columns
from sdckit.query.grid import QUANTILE_GRID, cumulative, quantile_bins
from sdckit.query.histcube import HistCube
from sdckit.query.service import Service
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse
from sdckit.query.state import State

REGIONS = ["N", "S", "E", "W"]
CONFIG = """[service]
state = "state.db"
{seed}
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = {k}
keys_from_data = ["age"]
[table.bounds]
income = [0, 1000]
age = [0, 90]
frac = [0, 0.3]
half = [0, 3]
big = [0, {big}]
[table.domains]
region = ["N", "S", "E", "W"]
grp = [1, 2, 3]
"""


def _frame(n: int, persons: int, seed: int = 5) -> pd.DataFrame:
    """Missing ages, regions and groups, values outside the domains and bounds, ``half`` on a
    quarter grid (its squared deviations from 1.5 are multiples of 2**-4), ``big`` up to 2**41
    (its squared deviations are far past 2**53: exact only as integers)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "pid": rng.permutation(n) % persons,
        "age": pd.array(rng.integers(-3, 100, n), dtype="Int64"),
        "income": rng.integers(0, 1500, n),
        "region": pd.array(rng.choice(REGIONS + ["X"], n), dtype="string"),
        "grp": pd.array(rng.integers(0, 5, n), dtype="Int64"),
        "frac": rng.random(n),
        "half": rng.integers(-4, 17, n) / 4,
        "big": rng.integers(0, 2**41, n),
    })
    for column in ("age", "region", "grp"):
        frame.loc[rng.random(n) < 0.1, column] = pd.NA
    frame.loc[0, ["income", "age", "half"]] = [1000, 90, 3.0]  # edge values: the upper bounds
    frame.loc[1, ["income", "half"]] = [0, 0.0]
    return frame


def _database(folder: Path, n: int = 120, persons: int = 60, k: int = 2, seed: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _frame(n, persons).to_csv(folder / "t.csv", index=False)
    config = folder / "service.toml"
    config.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else "", k=k, big=2**41), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_database(tmp_path_factory.mktemp("moments"))))
    yield database
    database.close()


@pytest.fixture(scope="module")
def forms(db):
    """The moments with income's histograms in each form: as built (sparse), cumulative (built
    in bin ranges of about one pair), sparse built so, and switched from sparse to cumulative
    part-way through the ranges (past 50 pairs)."""
    moments, cube = db.moments["t"], db.cubes["t"]
    assert moments.bins["income"].form == "sparse" and moments.bins["income"].records is None  # one bin per record
    variants = {"cumulative": dict(dense_share=0.0, chunk_pairs=1), "ranges": dict(chunk_pairs=1),
                "switched": dict(max_pairs=50, chunk_pairs=1)}
    out = {"built": moments}
    for name, options in variants.items():
        hist = HistCube.build(db._con, cube, "income", **options)
        assert hist.form == ("sparse" if name == "ranges" else "cumulative"), name
        out[name] = dataclasses.replace(moments, bins={**moments.bins, "income": hist})
    return out


def _same_histograms(mine: dict, theirs: dict, n_cells: int) -> None:
    """Per column and cell, the same records in every bin of the query's grid (either form)."""
    assert sorted(mine) == sorted(theirs)
    size = quantile_bins(n_cells)
    for name in theirs:
        assert len(mine[name]) == len(theirs[name]) == n_cells
        for a, b in zip(mine[name], theirs[name]):
            assert np.array_equal(cumulative(a, size), cumulative(b, size)), name


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One row per person (a key's person count is its row count)."""
    database = Database(load_config(_database(tmp_path_factory.mktemp("single"), persons=120, k=1)))
    yield database
    database.close()


def _truth(db: Database, query: Query):
    """DuckDB's true counts, sums and histograms (the scan the service runs without the cube)."""
    table = db.config.tables["t"]
    plan = noisy.plan(query, table, Fraction(1))
    counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))
    hists = {c: noisy.histograms(plan, table, db.aggregate(histogram_sql(query, table, c)))
             for c in quantile_columns(query)}
    return counts, sums, hists, len(plan.cells)


def _same_arrays(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert np.array_equal(a[name], b[name]), name  # exact, not approximately


# ------------------------------------------------------------------ random predicates
_values = {"age": st.one_of(st.integers(-5, 105), st.floats(-5, 105, allow_nan=False).map(lambda x: round(x, 1))),
           "grp": st.integers(-1, 6), "region": st.sampled_from(REGIONS + ["X", "Z", "", "n"])}
_leaves = st.sampled_from(sorted(_values)).flatmap(lambda c: st.one_of(
    st.builds(Compare, st.just(c), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _values[c]),
    st.builds(InList, st.just(c), st.lists(_values[c], min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(Between, st.just(c), _values[c], _values[c], st.booleans())))
_where = st.one_of(st.none(), st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)), st.builds(Not, inner)), max_leaves=5))
_outputs = st.lists(st.sampled_from([
    Output("count", None, "c"), Output("var", "income", "v"), Output("stddev", "age", "sd"),
    Output("var", "half", "vh"), Output("stddev", "big", "sb"), Output("count_distinct", "age", "da"), Output("count_distinct", "region", "dr"),
    Output("count_distinct", "frac", "df"), Output("count_distinct", "half", "dh"),  # outside the cube: value sets
    Output("quantile", "income", "m", 0.5), Output("quantile", "frac", "f", 0.9), Output("quantile", "half", "qh", 0.25),
    Output("avg", "half", "a")]),
    min_size=1, max_size=4, unique_by=lambda o: o.label)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_where, outputs=_outputs, group_by=st.sampled_from([(), ("region",), ("grp", "region")]),
       form=st.sampled_from(["built", "cumulative", "ranges", "switched"]))
def test_the_moments_give_duckdbs_true_answer_on_random_predicates(db, forms, where, outputs, group_by, form):
    query = Query("t", tuple(Output("group", c, c) for c in group_by) + tuple(outputs), where, group_by)
    moments = forms[form]
    assert moments.covers(query)
    counts, sums, hists, n_cells = _truth(db, query)
    mine_counts, mine_sums = moments.cells(query, n_cells)
    assert mine_counts.dtype == counts.dtype and np.array_equal(mine_counts, counts)
    _same_arrays(mine_sums, sums)
    _same_histograms(moments.histograms(query, n_cells), hists, n_cells)


@pytest.mark.parametrize("form", ["built", "cumulative"])
def test_many_cells_add_up_as_each_cell_alone(forms, form):
    """300 answer cells (past 2**18 / 1024, where the sparse form answers sparsely): each cell's
    histogram on 1024 bins is that of its own cube rows asked as one cell, on a random selection
    and assignment of the cube rows."""
    hist, size = forms[form].bins["income"], 1024
    rng = np.random.default_rng(3)
    keep, cell = rng.random(hist.order.size) < 0.7, rng.integers(0, 300, hist.order.size)
    many = hist.histograms(keep, cell, 300, size)
    for c in range(300):
        alone = hist.histograms(keep & (cell == c), np.zeros_like(cell), 1, size)[0]
        assert np.array_equal(cumulative(many[c], size), alone), c
    assert all(cumulative(h, size)[-1] == 0 for h, c in zip(many, range(300)) if not (keep & (cell == c)).any())


def _candidates(db: Database, query: Query, result: dict) -> list[tuple]:
    found, persons, counts, sums = keys.candidates(query, db.config.tables["t"], result)
    rows = [(k, int(p), int(c), tuple(float(v[i]) for v in sums.values())) for i, (k, p, c) in
            enumerate(zip(found, persons, counts))]
    return sorted(rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_where, group_by=st.sampled_from([("age",), ("age", "region"), ("grp", "age")]),
       summed=st.booleans())
def test_data_keys_from_the_cube_are_duckdbs_when_one_row_is_one_person(single, where, group_by, summed):
    outputs = tuple(Output("group", c, c) for c in group_by) + (Output("count", None, "c"),)
    outputs += (Output("sum", "income", "s"), Output("avg", "half", "a")) if summed else ()
    query = Query("t", outputs, where, group_by)
    assert single.fast_keys(query, 1) is not None
    scan = single.aggregate(aggregate_sql(query, single.config.tables["t"], "dp", persons=True))
    assert _candidates(single, query, single.fast_keys(query, 1)) == _candidates(single, query, scan)


def test_many_records_per_bin_in_each_form(tmp_path):
    """2,000 records in 15 cube rows (region and w), v on 10 values (5 where w = 0): ~16 records
    per (cube row, bin) pair, kept sparse with their records, cumulative, built in bin ranges,
    and begun cumulative on the estimate of 15 x 10 pairs but kept sparse (125 found); each form
    gives the scan's histograms."""
    rng = np.random.default_rng(7)
    w = rng.integers(0, 3, 2000)
    pd.DataFrame({"pid": range(2000), "region": rng.choice(REGIONS + [""], 2000), "w": w,
                  "v": np.where(w == 0, rng.integers(0, 5, 2000), rng.integers(0, 10, 2000)) / 2}
                 ).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     '[table.bounds]\nv = [0, 10]\n[table.domains]\nregion = ["N", "S", "E", "W"]\n'
                                     'w = [0, 1, 2]\n', encoding="utf-8")
    db = Database(load_config(tmp_path / "s.toml"))
    try:
        moments, cube = db.moments["t"], db.cubes["t"]
        assert set(cube.keys) == {"region", "w"} and moments.bins["v"].records is not None
        forms = [moments] + [dataclasses.replace(moments, bins={"v": HistCube.build(db._con, cube, "v", **options)})
                             for options in (dict(dense_share=0.0), dict(chunk_pairs=4),
                                             dict(dense_share=130 / (15 * QUANTILE_GRID)))]
        assert [m.bins["v"].form for m in forms] == ["sparse", "cumulative", "sparse", "sparse"]
        assert cube.size == 15 and forms[0].bins["v"].bins.size == 125  # the pairs holding records
        for sql in ("SELECT MEDIAN(v) FROM t WHERE region IN ('N', 'S')",
                    "SELECT region, QUANTILE_CONT(v, 0.3) FROM t WHERE w <> 1 GROUP BY region",
                    "SELECT region, w, MIN(v), MAX(v) FROM t GROUP BY region, w"):
            query = parse(sql, db.config)
            hists, n_cells = _truth(db, query)[2:]
            for m in forms:
                _same_histograms(m.histograms(query, n_cells), hists, n_cells)
    finally:
        db.close()


# ------------------------------------------------------------------ hand-worked and declined
def test_a_hand_worked_variance_histogram_and_distinct_count(tmp_path):
    """Four people: ages 10, 20, 20, missing; incomes 100, 300, 300, 900 (midpoint 500)."""
    pd.DataFrame({"pid": [1, 2, 3, 4], "age": ["10", "20", "20", ""], "income": [100, 300, 300, 900],
                  "region": ["N", "N", "S", "S"], "grp": [1, 1, 1, 1], "frac": [0.0] * 4, "half": [0.0] * 4,
                  "big": [0] * 4}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "service.toml").write_text(CONFIG.format(seed="", k=1, big=2**41), encoding="utf-8")
    db = Database(load_config(tmp_path / "service.toml"))
    try:
        moments = db.moments["t"]
        query = parse("SELECT COUNT(DISTINCT age), VAR_POP(income), MEDIAN(income) FROM t WHERE region = 'N' "
                      "OR age = 20", db.config)
        counts, sums = moments.cells(query, 1)
        assert counts.tolist() == [3] and sums[noisy.distinct_key("age")].tolist() == [2]
        assert sums[noisy.square_key("income")].tolist() == [400.0**2 + 2 * 200.0**2]  # (x - 500)**2
        bins, records = _nonempty(moments.histograms(query, 1)["income"][0], QUANTILE_GRID)  # the finest grid
        assert bins == [26214, 78643] and records == [1, 2]  # floor(x * 2**18 / 1000)
        by_region = moments.histograms(parse("SELECT region, MEDIAN(income) FROM t GROUP BY region", db.config), 4)
        assert [_nonempty(h, 2**16)[0] for h in by_region["income"]] == [[6553, 19660], [19660, 58982], [], []]
    finally:
        db.close()


def _nonempty(hist, size: int) -> tuple[list[int], list[int]]:
    """The non-empty bins of a histogram (either form) and their records."""
    counts = np.diff(cumulative(hist, size))
    return np.flatnonzero(counts).tolist(), counts[counts > 0].tolist()


def test_the_moments_decline_what_they_cannot_answer_exactly(db):
    moments = db.moments["t"]
    assert {"income", "age", "half", "big"} <= set(moments.squares)  # big: squares near 2**82, exact integers
    assert "frac" not in moments.squares  # clamped values off any 2**-b grid
    for sql in ("SELECT MEDIAN(age) FROM t WHERE frac > 0.5", "SELECT VAR_POP(frac) FROM t"):
        assert not moments.covers(parse(sql, db.config)), sql
    # several rows per person: a key's person count needs COUNT(DISTINCT pid), the scan
    assert db.fast_keys(parse("SELECT age, COUNT(*) FROM t GROUP BY age", db.config), 2) is None
    # over the pair limit: cumulative while it fits the cap (one column: (rows + 1) x (2**18 + 1) int32), else the scan
    rows = db.cubes["t"].size
    assert Moments.build(db._con, db.cubes["t"], False, max_bin_rows=10, max_hist_bytes=10**6).bins == {}
    capped = Moments.build(db._con, db.cubes["t"], False, max_bin_rows=10, max_hist_bytes=130 * 2**20)
    assert {c: h.form for c, h in capped.bins.items()} == {"income": "cumulative"}  # the cap is for all columns
    assert capped.bins["income"].nbytes == (rows + 1) * (2**18 + 1) * 4 + rows * 8 < 130 * 2**20


# ------------------------------------------------------------------ the service
SQLS = ["SELECT VAR_POP(income), STDDEV_POP(age) FROM t WHERE age > 30 AND region = 'N'",
        "SELECT region, MEDIAN(income), QUANTILE_CONT(half, 0.25) FROM t WHERE grp IN (1, 2) OR age < 20 "
        "GROUP BY region",
        "SELECT COUNT(DISTINCT age), COUNT(*) FROM t WHERE NOT (region <> 'E')",
        "SELECT grp, STDDEV_POP(half), COUNT(DISTINCT region) FROM t GROUP BY grp"]


def _answers(folder: Path, fast: bool) -> list:
    return seeded_answers(_database(folder, seed=True), [("pure", {"sql": sql}) for sql in SQLS], fast)


def test_answers_are_bit_identical_with_and_without_the_moments_and_need_no_scan(tmp_path):
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast), fast
    assert fast == scanned


def test_the_service_takes_data_keys_from_the_cube(tmp_path):
    config = _database(tmp_path, persons=120, k=1, seed=True)
    key = State(tmp_path / "state.db").add_analyst("ann", "dp", "10", "1/1000")
    service = Service(config)
    try:
        fast_paths_only(service)
        status, body = service.query(key, {"sql": "SELECT age, COUNT(*) FROM t WHERE region = 'N' GROUP BY age",
                                           "epsilon": 1, "delta": "1/100000"})
        assert status == 200 and body["key_selection"]["columns"] == ["age"]
    finally:
        service.close()
