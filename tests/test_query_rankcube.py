"""Fast paths of issue 32 for tables of several rows per person: a smaller ``max_rows_per_unit``
``k'`` answered from the cube with the stored rank as a key (``Cube.ranked``), and a join of two
private tables answered from the cube of the joined relation (``sdckit.query.joincube``). Both
give the scan's true answer exactly (random predicates, every ``k'``, three join keys), fall back
to the scan past their size bound, and leave the seeded answers (noise, budget) unchanged.

Data: persons 0..11 with 1-6 rows each in ``t`` (``k = 4`` keeps up to 4; ``t`` keeps 2 rows per
join key) and 1-5 in ``u`` (3 per join key); missing ages, regions, groups and kinds, a region and
a group outside their domains, incomes and costs above their bounds.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, seeded_answers
from sdckit.query import data as data_module
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.joins import Join, query_table
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse

K = 4
REGIONS = ["N", "S", "E", "W"]
KINDS = ["a", "b", "c"]
CONFIG = f"""[service]
state = "state.db"
cache = false
seed = "{SEED}"
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
max_rows_per_join_key = 2
[table.bounds]
income = [0, 1000]
age = [0, 90]
[table.domains]
region = {REGIONS}
grp = [1, 2, 3]
[[table]]
name = "u"
path = "u.csv"
privacy_unit = "pid"
max_rows_per_unit = 3
max_rows_per_join_key = 3
[table.bounds]
cost = [0, 10]
grp = [0, 5]
[table.domains]
kind = {KINDS}
region = {REGIONS}
[[table]]
name = "p"
path = "p.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
[table.bounds]
income = [0, 1000]
age = [0, 90]
[table.domains]
region = {REGIONS}
grp = [1, 2, 3]
[public_tables.regions]
path = "regions.csv"
"""


def _frames(seed: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)

    def rows(most: int) -> np.ndarray:
        return np.repeat(np.arange(12), rng.integers(1, most + 1, 12))

    pid = rng.permutation(rows(6))  # a person's rows spread over the file
    n = pid.size
    t = pd.DataFrame({"pid": pid, "age": pd.array(rng.integers(-3, 100, n), dtype="Int64"),
                      "income": rng.integers(0, 1500, n), "region": pd.array(rng.choice(REGIONS + ["X"], n), dtype="string"),
                      "grp": pd.array(rng.integers(0, 5, n), dtype="Int64")})
    pid = rng.permutation(rows(5))
    n = pid.size
    u = pd.DataFrame({"pid": pid, "kind": pd.array(rng.choice(KINDS, n), dtype="string"), "cost": rng.integers(0, 14, n),
                      "region": pd.array(rng.choice(REGIONS, n), dtype="string"),
                      "grp": pd.array(rng.integers(0, 5, n), dtype="Int64")})
    for frame, columns in ((t, ("age", "region", "grp")), (u, ("kind", "grp"))):
        for column in columns:
            frame.loc[rng.random(len(frame)) < 0.1, column] = pd.NA
    return t, u


def _write(folder: Path) -> Path:
    t, u = _frames()
    t.to_csv(folder / "t.csv", index=False)
    u.to_csv(folder / "u.csv", index=False)
    t.groupby("pid").head(1).to_csv(folder / "p.csv", index=False)  # one row per person
    pd.DataFrame({"code": REGIONS, "name": ["North", "South", "East", "West"]}).to_csv(folder / "regions.csv", index=False)
    (folder / "service.toml").write_text(CONFIG, encoding="utf-8")
    return folder / "service.toml"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_write(tmp_path_factory.mktemp("rankcube"))))
    yield database
    database.close()


def _scan(db: Database, query: Query, rows: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = query_table(query, db.config)
    plan = noisy.plan(query, table, Fraction(1), rows)
    return noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp", rows=rows)))


def _fast(db: Database, query: Query, rows: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    plan = noisy.plan(query, query_table(query, db.config), Fraction(1), rows)
    return db.fast_cells(query, len(plan.cells), rows)


def _same(a, b) -> None:
    assert a[0].dtype == b[0].dtype and a[0].tolist() == b[0].tolist()
    assert list(a[1]) == list(b[1])
    for column in a[1]:
        assert a[1][column].dtype == b[1][column].dtype and a[1][column].tolist() == b[1][column].tolist()  # exact


# ------------------------------------------------------------------ random predicates
_ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _leaf(column: str, values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(Compare, st.just(column), _ops, values),
        st.builds(InList, st.just(column), st.lists(values, min_size=1, max_size=3).map(tuple), st.booleans()),
        st.builds(Between, st.just(column), values, values, st.booleans()))


def _predicates(leaves: st.SearchStrategy) -> st.SearchStrategy:
    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Not, inner)), max_leaves=5)


_ages = st.one_of(st.integers(-5, 105), st.floats(-5, 105, allow_nan=False).map(lambda x: round(x, 1)))
_own = st.one_of(_leaf("age", _ages), _leaf("grp", st.integers(-1, 6)),
                 _leaf("region", st.sampled_from(REGIONS + ["X", "", "NN"])))
_other = st.one_of(_leaf("kind", st.sampled_from(KINDS + ["z"])), _leaf("cost", st.integers(-1, 15)),
                   _leaf("u__region", st.sampled_from(REGIONS)), _leaf("u__grp", st.integers(-1, 6)))


def _query(table: str, where, outputs, group_by, join: Join | None = None) -> Query:
    return Query(table, tuple(Output("group", c, c) for c in group_by) + tuple(outputs), where, group_by, join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.one_of(st.none(), _predicates(_own)), rows=st.integers(1, K),
       outputs=st.lists(st.sampled_from([Output("count", None, "c"), Output("sum", "income", "s"),
                                         Output("avg", "age", "a")]), min_size=1, max_size=3, unique=True),
       group_by=st.sampled_from([(), ("region",), ("grp",), ("grp", "region")]))
def test_the_ranked_cube_gives_the_scans_answer_at_every_smaller_bound(db, where, rows, outputs, group_by):
    """k' in 1..k on persons of up to 6 rows: the cube's rows of rank <= k' are the scan's."""
    assert not db.unique_units["t"] and db.ranked["t"] is not None
    query = _query("t", where, outputs, group_by)
    fast = _fast(db, query, rows)
    assert fast is not None
    _same(fast, _scan(db, query, rows))


def test_the_ranked_cube_drops_rows_beyond_the_smaller_bound(db):
    """Hand-checked against pandas: each person's first k' rows in file order, income clamped."""
    t, _ = _frames()
    for rows in range(1, K + 1):
        kept = t[t.groupby("pid").cumcount() < rows]
        query = parse("SELECT COUNT(*), SUM(income) FROM t", db.config)
        counts, sums = _fast(db, query, rows)
        assert counts.tolist() == [len(kept)] and sums["income"].tolist() == [float(kept.income.clip(0, 1000).sum())]
    assert len(t) > len(t[t.groupby("pid").cumcount() < K])  # some rows beyond k: k' = k drops them too


_JOINS = [Join("u", "pid", "pid", "inner", True), Join("u", "region", "region", "inner", True),
          Join("u", "grp", "grp", "inner", True)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(["t", "p"]), rows=st.sampled_from([None, 1, 2, K]), join=st.sampled_from(_JOINS),
       where=st.one_of(st.none(), _predicates(st.one_of(_own, _other))),
       outputs=st.lists(st.sampled_from([Output("count", None, "c"), Output("sum", "income", "s"),
                                         Output("sum", "cost", "sc"), Output("avg", "age", "a")]),
                        min_size=1, max_size=3, unique=True),
       group_by=st.sampled_from([(), ("kind",), ("region",), ("kind", "grp"), ("u__region", "region")]))
def test_the_join_cube_gives_the_scans_answer(db, table, rows, join, where, outputs, group_by):
    """A join of two private tables on the privacy unit and on two other keys (each side
    truncated per key value): the joined relation's cube gives the scan's counts and sums; a
    smaller bound k' < k changes the truncation per key (the scan), unless the FROM table has one
    row per person (``p``: every k' keeps its rows)."""
    query = _query(table, where, outputs, group_by, join)
    fast = _fast(db, query, rows)
    if table == "t" and rows not in (None, K):
        assert fast is None
    else:
        assert fast is not None
        _same(fast, _scan(db, query, rows))


def test_the_join_cube_is_built_once_per_table_and_join(db):
    query = parse("SELECT COUNT(*) FROM t JOIN u ON t.pid = u.pid WHERE kind = 'a'", db.config)
    _fast(db, query)
    cube = db.private_joins["t", query.join]
    assert set(cube.keys) == {"income", "age", "grp", "region", "kind", "cost", "u__grp", "u__region"}  # every one
    assert set(cube.sums) == {"income", "age", "cost", "u__grp"}
    _fast(db, query)
    assert db.private_joins["t", query.join] is cube
    reverse = parse("SELECT COUNT(*) FROM u JOIN t ON u.pid = t.pid", db.config)
    _same(_fast(db, reverse), _scan(db, reverse))
    assert db.private_joins["u", reverse.join] is not cube


def test_public_joins_of_two_tables_on_the_same_names_get_their_own_cubes(db):
    """``t`` and ``u`` JOIN regions ON region = code are the same Join: each table's own joined
    cube (the first one built was answering both)."""
    for table in ("t", "u", "t"):
        query = parse(f"SELECT name, COUNT(*) FROM {table} JOIN regions ON region = code GROUP BY name", db.config)
        _same(_fast(db, query), _scan(db, query))


# ------------------------------------------------------------------ the size bound
def test_past_the_size_bound_the_scan_answers(tmp_path, monkeypatch):
    """MAX_CELLS of 30: the ranked cube (more rows) is not kept, the join cube keeps the keys
    that fit (fewest values first; at most 30 combinations) and a query naming another scans; at
    1 no join cube at all."""
    config = _write(tmp_path)
    monkeypatch.setattr(data_module, "MAX_CELLS", 30)
    database = Database(load_config(config))
    try:
        assert database.cubes["t"].size > 30 and database.ranked["t"] is None  # (the cube keeps cube.MAX_CELLS)
        grouped = parse("SELECT region, COUNT(*), SUM(income) FROM t WHERE age > 20 GROUP BY region", database.config)
        assert _fast(database, grouped, 2) is None and _fast(database, grouped) is not None
        by_kind = parse("SELECT kind, COUNT(*), SUM(cost) FROM t JOIN u ON t.pid = u.pid WHERE u.region <> 'N' "
                        "GROUP BY kind", database.config)
        _same(_fast(database, by_kind), _scan(database, by_kind))
        cube = database.private_joins["t", by_kind.join]
        assert set(cube.keys) == {"kind", "cost", "u__grp", "u__region"}  # u's 26 combinations; t's 6 regions do not fit
        by_region = parse("SELECT COUNT(*) FROM t JOIN u ON t.pid = u.pid WHERE t.region <> 'N'", database.config)
        assert _fast(database, by_region) is None
        monkeypatch.setattr(data_module, "MAX_CELLS", 1)
        other = parse("SELECT COUNT(*) FROM t JOIN u ON t.region = u.region", database.config)
        assert _fast(database, other) is None and database.private_joins["t", other.join] is None
    finally:
        database.close()


# ------------------------------------------------------------------ the service
SQLS = [("SELECT SUM(income) FROM t WHERE region <> 'N'", {"max_rows_per_unit": 2}),
        ("SELECT region, COUNT(*), AVG(income) FROM t WHERE age > 30 GROUP BY region", {"max_rows_per_unit": 1}),
        ("SELECT COUNT(*), SUM(cost) FROM t JOIN u ON t.pid = u.pid WHERE age > 30", {}),
        ("SELECT kind, COUNT(*), SUM(income) FROM t JOIN u ON t.region = u.region WHERE t.region <> 'E' GROUP BY kind",
         {})]


def _answers(folder: Path, fast: bool) -> list:
    """Seeded answers of a fresh service (pure and zCDP analysts); ``fast``: every scan
    forbidden, else every fast path off."""
    folder.mkdir()
    requests = [(who, {"sql": sql, **extra}) for who in ("pure", "zcdp") for sql, extra in SQLS]
    return seeded_answers(_write(folder), requests, fast)


def test_answers_and_budgets_are_the_same_with_and_without_the_fast_paths(tmp_path):
    """Every scan forbidden, then every fast path off: the same seeded answers, noise, stated
    bounds and remaining budgets (the privacy accounting is the scan's)."""
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast)
    assert fast == scanned
    assert {body["max_rows_per_unit"] for _, body in fast[:2]} == {1, 2}
