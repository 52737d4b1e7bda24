"""The pre-aggregated fast path of dp COUNT/SUM (sdckit.query.cube): the same true answers as
DuckDB on random predicates, a hand-worked example of three-valued logic, what it declines, and the
service's answers bit-identical with and without it under a fixed seed."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, add_analyst
from sdckit.query import noisy, ranges
from sdckit.query.config import load_config
from sdckit.query.cube import EXACT, Cube
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.service import Service
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse

REGIONS = ["N", "S", "E", "W"]
CONFIG = """[service]
state = "state.db"
{seed}
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = 2
[table.bounds]
income = [0, 1000]
age = [0, 90]
frac = [0, 0.3]
[table.domains]
region = ["N", "S", "E", "W"]
grp = [1, 2, 3]
"""


def _table(folder: Path, n: int = 80, seed: int = 3) -> pd.DataFrame:
    """Small data with every awkward case: missing ages, regions and groups, a region and a group
    outside the domains, incomes above the bound, persons with 1-3 rows (k = 2 keeps 2)."""
    frame = _frame(n, seed)
    frame.to_csv(folder / "t.csv", index=False)
    return frame


def _frame(n: int = 80, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "pid": rng.integers(0, n // 2, n),
        "age": pd.array(rng.integers(-3, 100, n), dtype="Int64"),
        "income": rng.integers(0, 1500, n),
        "region": pd.array(rng.choice(REGIONS + ["X"], n), dtype="string"),
        "grp": pd.array(rng.integers(0, 5, n), dtype="Int64"),
        "frac": rng.random(n),
    })
    for column in ("age", "region", "grp"):
        frame.loc[rng.random(n) < 0.1, column] = pd.NA
    return frame


def _near_data(column: str) -> st.SearchStrategy:
    """Literals at, and half a unit either side of, the column's own values (the boundaries)."""
    values = sorted({int(v) for v in _frame()[column].dropna()})
    return st.builds(lambda v, d: v + d if d else v, st.sampled_from(values), st.sampled_from([0, -0.5, 0.5]))


def _config(folder: Path, seed: bool = False) -> Path:
    path = folder / "service.toml"
    path.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else ""), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cube")
    _table(folder)
    database = Database(load_config(_config(folder)))
    yield database
    database.close()


def _duckdb(db: Database, query: Query) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = db.config.tables[query.table]
    plan = noisy.plan(query, table, Fraction(1))
    return noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))


def _cube(db: Database, query: Query) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = db.config.tables[query.table]
    cube = db.cubes[query.table]
    assert cube.covers(query)
    return cube.cells(query, len(noisy.plan(query, table, Fraction(1)).cells))


def _same(a, b) -> None:
    assert a[0].dtype == b[0].dtype and np.array_equal(a[0], b[0])
    assert list(a[1]) == list(b[1])
    for column in a[1]:
        assert a[1][column].dtype == b[1][column].dtype
        assert np.array_equal(a[1][column], b[1][column])  # exact, not approximately


# ------------------------------------------------------------------ random predicates
_numbers = st.one_of(st.integers(-5, 105), st.floats(-5, 105, allow_nan=False).map(lambda x: round(x, 1)),
                     _near_data("age"))
_texts = st.sampled_from(REGIONS + ["X", "Z", "", "n", "NN"])
_ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _leaf(column: str, values) -> st.SearchStrategy:
    return st.one_of(
        st.builds(Compare, st.just(column), _ops, values),
        st.builds(InList, st.just(column), st.lists(values, min_size=1, max_size=4).map(tuple), st.booleans()),
        st.builds(Between, st.just(column), values, values, st.booleans()))


_leaves = st.one_of(_leaf("age", _numbers), _leaf("grp", st.integers(-1, 6)), _leaf("region", _texts))
_predicates = st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Not, inner)), max_leaves=6)
_outputs = st.lists(st.sampled_from([Output("count", None, "c"), Output("sum", "income", "s"),
                                     Output("avg", "age", "a")]), min_size=1, max_size=3, unique=True)
_groups = st.sampled_from([(), ("region",), ("grp",), ("region", "grp"), ("grp", "region")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.one_of(st.none(), _predicates), outputs=_outputs, group_by=_groups)
def test_the_cube_gives_duckdbs_true_answer_on_random_predicates(db, where, outputs, group_by):
    query = Query("t", tuple(Output("group", c, c) for c in group_by) + tuple(outputs), where, group_by)
    _same(_cube(db, query), _duckdb(db, query))


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*), SUM(income) FROM t WHERE age > 30 AND region = 'N'",
    "SELECT COUNT(*) FROM t WHERE NOT (age > 30) OR region NOT IN ('N', 'X')",
    "SELECT region, grp, COUNT(*), AVG(income) FROM t WHERE age BETWEEN 10.5 AND 60 GROUP BY region, grp",
    "SELECT SUM(age) FROM t WHERE region < 'S' AND grp <> 2",
    "SELECT COUNT(*) FROM t WHERE region = 'Z' OR NOT (grp IN (1, 7))",
])
def test_parsed_sql_through_both_paths(db, sql):
    query = parse(sql, db.config)
    _same(_cube(db, query), _duckdb(db, query))


# ------------------------------------------------------------------ hand-worked
def test_a_hand_worked_example_of_three_valued_logic(tmp_path):
    """Six people, one row each. ``NOT (age > 30)`` is unknown for the missing age, so that row is
    in neither ``age > 30`` nor its negation; ``region <> 'N'`` is unknown for the missing region."""
    pd.DataFrame({"pid": [1, 2, 3, 4, 5, 6], "age": ["20", "40", "", "50", "10", "35"],
                  "income": [100, 2000, 300, 400, 500, 600], "region": ["N", "S", "N", "", "E", "X"],
                  "grp": [1, 2, 3, 1, 2, 3], "frac": [0.0] * 6}).to_csv(tmp_path / "t.csv", index=False)
    db = Database(load_config(_config(tmp_path)))
    try:
        cube = db.cubes["t"]
        def run(sql):
            query = parse(sql, db.config)
            assert cube.covers(query)
            return cube.cells(query, len(noisy.plan(query, db.config.tables["t"], Fraction(1)).cells))
        counts, sums = run("SELECT COUNT(*), SUM(income) FROM t WHERE age > 30")
        assert counts.tolist() == [3] and sums["income"].tolist() == [1000 + 400 + 600]  # 2000 clamped to 1000
        counts, sums = run("SELECT COUNT(*), SUM(income) FROM t WHERE NOT (age > 30)")
        assert counts.tolist() == [2] and sums["income"].tolist() == [600]  # rows 1 and 5, not the missing age
        counts, _ = run("SELECT COUNT(*) FROM t WHERE region <> 'N' OR age < 15")
        assert counts.tolist() == [3]  # S, E (also age 10), X; row 4 (region missing, age 50) is unknown
        counts, sums = run("SELECT region, COUNT(*), SUM(income) FROM t WHERE age >= 10 GROUP BY region")
        # domain order N, S, E, W; X and the missing region belong to no group
        assert counts.tolist() == [1, 1, 1, 0] and sums["income"].tolist() == [100, 1000, 500, 0]
    finally:
        db.close()


# ------------------------------------------------------------------ what the cube declines
def test_the_cube_declines_what_it_cannot_answer_exactly(db):
    cube = db.cubes["t"]
    assert {"age", "region", "grp"} <= set(cube.keys) and "income" in cube.sums
    assert "frac" not in cube.sums  # clamped values like 0.3 are not multiples of 2**-10: sums not exact
    declined = ["SELECT SUM(frac) FROM t", "SELECT COUNT(*) FROM t WHERE frac > 0.5",
                "SELECT MEDIAN(age) FROM t", f"SELECT COUNT(*) FROM t WHERE age < {EXACT}",
                f"SELECT COUNT(*) FROM t WHERE age IN (1, {float(EXACT) * 2})"]
    for sql in declined:
        assert not cube.covers(parse(sql, db.config)), sql
    assert cube.covers(parse(f"SELECT COUNT(*) FROM t WHERE age < {EXACT - 1}", db.config))


def test_a_small_cell_limit_leaves_out_the_most_valued_columns(db):
    table = db.config.tables["t"]
    small = Cube.build(db._con, table, max_cells=40)
    assert set(small.keys) == {"region", "grp"}  # 6 x 6 combinations at most; age, income ~80 values
    assert small.size <= 36
    for sql in ("SELECT COUNT(*) FROM t WHERE age > 3", "SELECT COUNT(*) FROM t WHERE income > 3"):
        assert not small.covers(parse(sql, db.config))
    query = parse("SELECT grp, SUM(income) FROM t WHERE region IN ('N', 'S') GROUP BY grp", db.config)
    table = db.config.tables["t"]
    _same(small.cells(query, len(noisy.plan(query, table, Fraction(1)).cells)), _duckdb(db, query))
    assert Cube.build(db._con, table, max_cells=1) is None


def test_the_service_falls_back_to_duckdb_for_what_the_cube_declines(tmp_path):
    _table(tmp_path)
    config = _config(tmp_path, seed=True)
    key = add_analyst(config, "ann", "dp", "100")
    service = Service(config)
    try:
        status, body = service.query(key, {"sql": "SELECT SUM(frac) FROM t WHERE income > 500", "epsilon": 1})
        assert status == 200 and len(body["rows"]) == 1
    finally:
        service.close()


# ------------------------------------------------------------------ the service, bit-identical
def test_answers_are_bit_identical_with_and_without_the_cube_under_a_seed(tmp_path):
    """Two seeded services on the same data, one with its cubes removed: every answer (noise
    included) is the same, query after query."""
    sqls = ["SELECT COUNT(*), SUM(income) FROM t WHERE age > 30 AND region = 'N'",
            "SELECT COUNT(*), AVG(income) FROM t WHERE NOT (income BETWEEN 100 AND 900.5)",
            "SELECT region, COUNT(*), AVG(age) FROM t WHERE grp IN (1, 2) OR age < 20 GROUP BY region",
            "SELECT SUM(income) FROM t WHERE age BETWEEN 10 AND 70.5",
            "SELECT grp, region, COUNT(*) FROM t GROUP BY grp, region",
            "SELECT COUNT(*) FROM t WHERE NOT (region <> 'E')"]
    answers = []
    for use_cube in (True, False):
        folder = tmp_path / str(use_cube)
        folder.mkdir()
        _table(folder)
        config = _config(folder, seed=True)
        key = add_analyst(config, "ann", "dp", "100")
        service = Service(config)
        if not use_cube:
            service.db.cubes.clear()
            service.db.ranges.clear()
        try:
            answers.append([service.query(key, {"sql": sql, "epsilon": "1/3"}) for sql in sqls])
        finally:
            service.close()
    assert all(status == 200 for status, _ in answers[0])
    assert answers[0] == answers[1]


# ------------------------------------------------------------------ range indexes (sdckit.query.ranges)
@pytest.fixture(scope="module")
def indexes(db):
    table = db.config.tables["t"]
    built = ranges.build(db._con, table, set(), ["income", "age"])
    assert set(built) == {"age", "income", "grp"}  # the integer columns; text and 'frac' (DOUBLE) are not
    return built


_range_leaves = st.one_of(*[
    st.one_of(st.builds(Compare, st.just(c), _ops, v),
              st.builds(InList, st.just(c), st.lists(v, min_size=1, max_size=4).map(tuple), st.booleans()),
              st.builds(Between, st.just(c), v, v, st.booleans()))
    for c, v in (("age", _numbers), ("grp", st.integers(-1, 6)),
                 ("income", st.one_of(st.integers(-10, 1600), st.floats(-10, 1600).map(lambda x: round(x, 2)),
                                      _near_data("income"))))])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(leaf=_range_leaves, negate=st.booleans(),
       outputs=st.lists(st.sampled_from([Output("count", None, "c"), Output("sum", "income", "s"),
                                         Output("avg", "age", "a")]), min_size=1, max_size=3, unique=True))
def test_a_range_index_gives_duckdbs_true_answer(db, indexes, leaf, negate, outputs):
    query = Query("t", tuple(outputs), Not(leaf) if negate else leaf, ())
    index = indexes[leaf.column]
    assert index.covers(query)
    _same(index.cells(query), _duckdb(db, query))


def test_range_intervals_by_hand():
    assert ranges.intervals(Compare("x", "<", 2.5)) == [(-2**62, 2)]
    assert ranges.intervals(Compare("x", ">=", -2.5)) == [(-2, 2**62)]
    assert ranges.intervals(Compare("x", "=", 2.5)) == []
    assert ranges.intervals(Compare("x", "<>", 3)) == [(-2**62, 2), (4, 2**62)]
    assert ranges.intervals(InList("x", (5, 1, 1.5, 3.0), negated=True)) == [(-2**62, 0), (2, 2), (4, 4), (6, 2**62)]
    assert ranges.intervals(Between("x", 7.2, 7.9)) == []
    assert ranges.intervals(Not(Between("x", 1, 3))) == [(-2**62, 0), (4, 2**62)]


def test_a_range_index_declines_other_shapes(indexes, db):
    index = indexes["income"]
    for sql in ("SELECT COUNT(*) FROM t", "SELECT COUNT(*) FROM t WHERE income > 3 AND income < 9",
                "SELECT COUNT(*) FROM t WHERE age > 3", "SELECT region, COUNT(*) FROM t WHERE income > 3 GROUP BY region",
                "SELECT SUM(frac) FROM t WHERE income > 3", "SELECT MEDIAN(age) FROM t WHERE income > 3",
                f"SELECT COUNT(*) FROM t WHERE income > {EXACT}"):
        assert not index.covers(parse(sql, db.config)), sql
    assert index.covers(parse("SELECT COUNT(*), AVG(income) FROM t WHERE NOT (income IN (1, 2))", db.config))


def test_the_database_answers_from_a_range_index_when_the_cube_cannot(db):
    """With a cube too small to hold income, an income range comes from the range index."""
    table = db.config.tables["t"]
    small = Cube.build(db._con, table, max_cells=40)
    built = ranges.build(db._con, table, set(small.keys), list(small.sums))
    assert "income" in built and "region" not in built
    query = parse("SELECT COUNT(*), SUM(income), AVG(age) FROM t WHERE income >= 750", db.config)
    assert not small.covers(query) and built["income"].covers(query)
    _same(built["income"].cells(query), _duckdb(db, query))
    assert ranges.build(db._con, table, set(), ["income"], max_bytes=100) == {}  # over the memory budget


def test_every_comparison_at_every_boundary_on_both_fast_paths(db, indexes):
    """Each operator, with literals at and half a unit either side of three of the data's values, with
    and without NOT: the cube (age) and the range index (income, age) give DuckDB's numbers."""
    frame = _frame()
    cube = db.cubes["t"]
    outputs = (Output("count", None, "c"), Output("sum", "income", "s"))
    for column in ("age", "income"):
        values = sorted({int(v) for v in frame[column].dropna()})
        for base in (values[1], values[len(values) // 2], values[-2]):
            for literal in (base, base - 0.5, base + 0.5):
                leaves = [Compare(column, op, literal) for op in ("=", "<>", "<", "<=", ">", ">=")]
                leaves += [Between(column, literal, literal + 7), InList(column, (literal, base + 1))]
                for leaf in leaves:
                    for where in (leaf, Not(leaf)):
                        query = Query("t", outputs, where, ())
                        truth = _duckdb(db, query)
                        _same(indexes[column].cells(query), truth)
                        if column == "age":
                            _same(cube.cells(query, 1), truth)


def test_an_empty_table_gives_zero_counts_and_sums_on_both_paths(tmp_path):
    pd.DataFrame({"pid": pd.Series([], dtype="int64"), "age": pd.Series([], dtype="int64"),
                  "income": pd.Series([], dtype="int64"), "region": pd.Series([], dtype="str"),
                  "grp": pd.Series([], dtype="int64"), "frac": pd.Series([], dtype="float64")}).to_parquet(tmp_path / "t.parquet")
    (tmp_path / "service.toml").write_text(CONFIG.format(seed="").replace("t.csv", "t.parquet"), encoding="utf-8")
    db = Database(load_config(tmp_path / "service.toml"))
    try:
        for sql in ("SELECT COUNT(*), SUM(income) FROM t WHERE age > 3",
                    "SELECT region, COUNT(*), AVG(age) FROM t WHERE grp IN (1, 2) GROUP BY region"):
            query = parse(sql, db.config)
            _same(_cube(db, query), _duckdb(db, query))
    finally:
        db.close()
