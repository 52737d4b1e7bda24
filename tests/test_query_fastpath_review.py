"""Review of issue 32's fast paths: ``Database.fast_cells`` against the scan (DuckDB's run of
:func:`~sdckit.query.generate.aggregate_sql`, then :func:`~sdckit.query.noisy.exact_cells`) on
random queries over small tables of several rows per person, with missing values, text outside
its domain, values outside the bounds and negative ones.

Shapes: one-table queries of ``t`` (1-6 rows per person, ``k = 4``) and ``p`` (one row per
person) with a random WHERE over cube keys and over many-valued columns (``wage``, a float;
``income``), GROUP BY a cube key, a bin of a cube key, a bin of a many-valued column (the
derived cube), COUNT / SUM / AVG / VAR_POP / STDDEV_POP of columns and of derived values
(integer ones: exact; ``wage``'s and divisions: within twice the recursive-summation bound, as in
``test_query_derivedcube``), every ``k'`` in ``1..k``; joins of two private tables on three keys
and public joins (inner and LEFT; a key missing, duplicated or outside the FROM table's domain) at
every ``k'``; per-group bounds ``(g, r, k')``. Wherever the fast path answers, its counts are
the scan's exactly and its sums the scan's (exactly unless stated); the noise plan never reads
the fast path (it is made from the query and the declared bounds alone). Locking: a request
holding the CPU slot whose join cube is built never waits for a lock another build holds."""

from __future__ import annotations

import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.query import data as data_module
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.generate import aggregate_sql, square_cap
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.joins import query_table
from sdckit.query.sql import parse

K = 4
REGIONS = ["N", "S", "E", "W"]
KINDS = ["a", "b", "c"]
CONFIG = f"""[service]
state = "state.db"
cache = false
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
max_rows_per_join_key = 2
[table.bounds]
income = [-200, 1000]
age = [0, 90]
wage = [0, 100]
[table.domains]
region = {REGIONS}
grp = [1, 2, 3]
[[table]]
name = "p"
path = "p.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
[table.bounds]
income = [-200, 1000]
age = [0, 90]
wage = [0, 100]
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
[table.domains]
kind = {KINDS}
region = {REGIONS}
grp = [1, 2, 3]
[public_tables.regions]
path = "regions.csv"
[public_tables.grps]
path = "grps.csv"
"""


def _frames(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    persons = 40
    pid = rng.permutation(np.repeat(np.arange(persons), rng.integers(1, 7, persons)))
    n = pid.size
    t = pd.DataFrame({"pid": pid, "age": pd.array(rng.integers(-3, 100, n), dtype="Int64"),
                      "income": rng.integers(-400, 1500, n).astype(float),
                      "wage": np.round(rng.uniform(-10, 120, n), 2),
                      "region": pd.array(rng.choice(REGIONS + ["X", "Y", "n"], n), dtype="string"),
                      "grp": pd.array(rng.integers(0, 5, n), dtype="Int64")})
    pid = rng.permutation(np.repeat(np.arange(persons), rng.integers(1, 5, persons)))
    n = pid.size
    u = pd.DataFrame({"pid": pid, "kind": pd.array(rng.choice(KINDS + ["z"], n), dtype="string"),
                      "cost": rng.integers(-2, 14, n), "region": pd.array(rng.choice(REGIONS + ["Q"], n), dtype="string"),
                      "grp": pd.array(rng.integers(0, 5, n), dtype="Int64")})
    for frame, columns in ((t, ("age", "region", "grp", "income", "wage")), (u, ("kind", "grp", "region", "cost"))):
        for column in columns:
            frame.loc[rng.random(len(frame)) < 0.08, column] = pd.NA if frame[column].dtype != float else np.nan
    return t, u


def _write(folder: Path, seed: int) -> Path:
    t, u = _frames(seed)
    t.to_csv(folder / "t.csv", index=False)
    u.to_csv(folder / "u.csv", index=False)
    t.groupby("pid").head(1).to_csv(folder / "p.csv", index=False)
    pd.DataFrame({"code": REGIONS + ["N", "Z", None], "name": ["North", "South", "East", "West", "Nord", "Zed", "None"]}
                 ).to_csv(folder / "regions.csv", index=False)
    pd.DataFrame({"g": [1, 2, 2, 3, 7, None], "label": ["one", "two", "deux", "three", "seven", "none"]}).to_csv(
        folder / "grps.csv", index=False)
    (folder / "service.toml").write_text(CONFIG, encoding="utf-8")
    return folder / "service.toml"


@pytest.fixture(scope="module", params=[11, 12])
def db(request, tmp_path_factory):
    database = Database(load_config(_write(tmp_path_factory.mktemp("fastreview"), request.param)))
    assert not database.unique_units["t"] and database.unique_units["p"]
    assert "wage" not in database.cubes["t"].keys
    yield database
    database.close()


def _compare(db: Database, sql: str, rows: int | None, groups: GroupBounds | None = None) -> bool:
    """Whether the fast path answered; asserts that its answer is the scan's."""
    query = parse(sql, db.config)
    table = dp_table(query, query_table(query, db.config))
    plan = noisy.plan(query, table, Fraction(1), rows, groups)
    fast = db.fast_cells(query, len(plan.cells), rows, groups)
    if fast is None:
        return False
    counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp", rows=rows,
                                                                             groups=groups)))
    assert fast[0].dtype == counts.dtype and fast[0].tolist() == counts.tolist(), (sql, rows)
    assert sorted(fast[1]) == sorted(sums), (sql, rows)
    for name, values in sums.items():
        assert fast[1][name].dtype == values.dtype, (sql, rows, name)
        column = name.removeprefix("sumsq:")
        if "/" not in column and ("wage" not in column or column == "wage"):  # integers, a cube's sums: exact
            assert fast[1][name].tolist() == values.tolist(), (sql, rows, name)
            continue
        lo, hi = plan.bounds[column]
        most = square_cap(lo, hi) if name != column else max(abs(lo), abs(hi))
        bound = 2 * counts * (counts * most) * 2.0**-53
        assert np.all(np.abs(fast[1][name] - values) <= bound), (sql, rows, name)
    return True


# ------------------------------------------------------------------ strategies (SQL text)
_op = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _atom(column: str, values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.builds(lambda o, v: f"{column} {o} {v}", _op, values),
                     st.builds(lambda a, b: f"{column} BETWEEN {a} AND {b}", values, values),
                     st.builds(lambda vs: f"{column} IN ({', '.join(map(str, vs))})", st.lists(values, min_size=1, max_size=3)))


_text = st.sampled_from(["'N'", "'S'", "'X'", "'Y'", "'n'", "'N '", "'Q'", "''"])


def _own(prefix: str = "") -> st.SearchStrategy:
    """Atoms over the FROM table's columns (``prefix``: its name and a dot, in a join with ``u``)."""
    return st.one_of(_atom("age", st.one_of(st.integers(-5, 100), st.sampled_from([0, 90, 89.5, 90.5]))),
                     _atom(prefix + "grp", st.integers(-1, 5)), _atom(prefix + "region", _text),
                     _atom("wage", st.sampled_from([0, 50, 100, 99.99, -1])),
                     _atom("income", st.sampled_from([-200, 0, 1000])))


_OWN = _own()
_OTHER = st.one_of(_atom("kind", st.sampled_from(["'a'", "'b'", "'z'"])), _atom("cost", st.integers(-2, 14)),
                   _atom("u.region", _text), _atom("u.grp", st.integers(-1, 5)))
_PUBLIC = _atom("name", st.sampled_from(["'North'", "'Nord'", "'South'"]))


def _where(atoms: st.SearchStrategy) -> st.SearchStrategy:
    tree = st.recursive(atoms, lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner), st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=4)
    return st.one_of(st.just(""), tree.map(lambda w: f" WHERE {w}"))


_GROUPS = [[], ["region"], ["grp"], ["FLOOR(age / 30) AS a"], ["WIDTH_BUCKET(wage, 0, 100, 4) AS b"],
           ["region", "WIDTH_BUCKET(wage, 0, 100, 4) AS b"], ["WIDTH_BUCKET(income, -200, 1000, 3) AS b", "grp"],
           ["CASE WHEN income < 0 THEN 'neg' WHEN income < 500 THEN 'low' END AS c", "region"],
           ["FLOOR(age / 30) AS a", "WIDTH_BUCKET(wage, 0, 100, 5) AS b"]]
_AGGREGATES = ["COUNT(*)", "SUM(income)", "AVG(age)", "SUM(income * 2 - 7)", "SUM(CASE WHEN age >= 65 THEN income ELSE 0 END)",
               "VAR_POP(income + 1)", "STDDEV_POP(age * 3)", "SUM(wage / 7)", "AVG(wage)", "SUM(-income)",
               "VAR_POP(income)", "SUM(ABS(income))", "AVG(FLOOR(wage / 10))"]


def _select(groups: list[str], aggregates: list[str], source: str, where: str) -> str:
    names = [g.split(" AS ")[-1] for g in groups]
    return (f"SELECT {', '.join([*groups, *aggregates])} FROM {source}{where}"
            + (f" GROUP BY {', '.join(names)}" if names else ""))


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(["t", "p"]), groups=st.sampled_from(_GROUPS), where=_where(_OWN),
       aggregates=st.lists(st.sampled_from(_AGGREGATES), min_size=1, max_size=3, unique=True),
       rows=st.sampled_from([None, *range(1, K + 1)]))
def test_one_table_fast_paths_give_the_scans_answer(db, table, groups, where, aggregates, rows):
    _compare(db, _select(groups, aggregates, table, where), rows)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(["t", "p"]), groups=st.sampled_from([g for g in _GROUPS if g]), where=_where(_OWN),
       aggregates=st.lists(st.sampled_from(_AGGREGATES), min_size=1, max_size=3, unique=True),
       rows=st.sampled_from([None, *range(1, K + 1)]), g=st.integers(1, 3), r=st.integers(1, 3))
def test_per_group_bounds_fast_paths_give_the_scans_answer(db, table, groups, where, aggregates, rows, g, r):
    _compare(db, _select(groups, aggregates, table, where), rows, GroupBounds(g, r, rows or K))


_JOINS = ["JOIN u ON {t}.pid = u.pid", "JOIN u ON {t}.region = u.region", "JOIN u ON {t}.grp = u.grp",
          "JOIN u ON u.region = {t}.region", "JOIN u ON {t}.region = u.kind", "JOIN u ON {t}.grp = u.cost",
          "JOIN u ON {t}.age = u.cost"]
_JOIN_GROUPS = [[], ["kind"], ["u.region"], ["{t}.region", "kind"], ["{t}.grp", "u.grp"], ["{t}.region", "u.region", "kind"]]
_JOIN_AGGREGATES = ["COUNT(*)", "SUM(income)", "SUM(cost)", "AVG(age)", "AVG(cost)", "SUM(wage)"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(["t", "p"]), join=st.sampled_from(_JOINS), groups=st.sampled_from(_JOIN_GROUPS),
       where=st.data(), aggregates=st.lists(st.sampled_from(_JOIN_AGGREGATES), min_size=1, max_size=3, unique=True),
       rows=st.sampled_from([None, 1, 2, K]))
def test_private_join_fast_paths_give_the_scans_answer(db, table, join, groups, where, aggregates, rows):
    where = where.draw(_where(st.one_of(_own(table + "."), _OTHER)))
    groups = [g.format(t=table) for g in groups]
    _compare(db, _select(groups, aggregates, f"{table} {join.format(t=table)}", where), rows)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(["t", "p"]), kind=st.sampled_from(["JOIN", "LEFT JOIN"]), other=st.booleans(),
       groups=st.sampled_from([[], ["{name}"], ["{name}", "grp"], ["region"]]),
       where=st.data(), rows=st.sampled_from([None, 1, K]),
       aggregates=st.lists(st.sampled_from(["COUNT(*)", "SUM(income)", "AVG(age)", "SUM(wage)"]), min_size=1, max_size=2,
                           unique=True))
def test_public_join_fast_paths_give_the_scans_answer(db, table, kind, other, groups, where, aggregates, rows):
    name, on = ("label", "grps ON grp = g") if other else ("name", "regions ON region = code")
    where = where.draw(_where(st.one_of(_OWN, _PUBLIC if not other else _atom("label", st.sampled_from(["'two'", "'x'"])))))
    groups = [g.format(name=name) for g in groups]
    _compare(db, _select(groups, aggregates, f"{table} {kind} {on}", where), rows)


def test_the_shapes_are_answered_by_the_fast_paths(db):
    """The random tests compare something: these forms are answered without a scan."""
    for sql, rows in [("SELECT WIDTH_BUCKET(wage, 0, 100, 4) AS b, COUNT(*), SUM(income) FROM t WHERE region <> 'X' "
                       "GROUP BY b", None),
                      ("SELECT SUM(wage / 7), VAR_POP(income + 1) FROM t WHERE age > 30", None),
                      ("SELECT region, COUNT(*), SUM(income) FROM t WHERE grp = 2 GROUP BY region", 2),
                      ("SELECT kind, COUNT(*), SUM(cost) FROM t JOIN u ON t.region = u.region GROUP BY kind", None),
                      ("SELECT name, COUNT(*) FROM t LEFT JOIN regions ON region = code GROUP BY name", None)]:
        assert _compare(db, sql, rows), sql


# ------------------------------------------------------------------ locking
def _cells(db: Database, sql: str):
    query = parse(sql, db.config)
    plan = noisy.plan(query, dp_table(query, query_table(query, db.config)), Fraction(1))
    return db.fast_cells(query, len(plan.cells))


def test_a_built_join_cube_answers_while_another_join_is_built(db, monkeypatch):
    """A request holding the CPU slot whose private-join cube is built must not wait for the
    build of another join (which gave its slot back for its scan): waiting there with the slot
    held would hold up every request of the service for the whole build (one scan of both tables,
    17.8 s at 1e8 rows)."""
    built = "SELECT COUNT(*) FROM t JOIN u ON t.pid = u.pid"
    assert _cells(db, built) is not None
    release, entered = threading.Event(), threading.Event()
    real = data_module.private_join_cube

    def slow(*args, **kwargs):
        entered.set()
        release.wait(20)
        return real(*args, **kwargs)

    monkeypatch.setattr(data_module, "private_join_cube", slow)
    other = "SELECT COUNT(*) FROM u JOIN t ON u.cost = t.grp"  # (a join no other test asks)
    builder = threading.Thread(target=db.cpu.run, args=(_cells, db, other))
    assert not _stalled_behind(db, built, builder, entered, release), \
        "an answer from a built join cube waited for another join's build, holding the CPU slot"


def test_a_built_public_join_cube_answers_while_the_units_are_read(db):
    """The public joins' cubes share their lock with the persons' index of restricted mode
    (:meth:`Database.units`, a window over the table, read by a request after its scan gave its
    CPU slot back): a request holding the slot whose public-join cube is built must not wait for it."""
    built = "SELECT name, COUNT(*) FROM t JOIN regions ON region = code GROUP BY name"
    assert _cells(db, built) is not None
    release, entered = threading.Event(), threading.Event()

    def reading_units() -> None:  # what units() does while it reads them: the lock held, no slot
        with db._units_lock:
            entered.set()
            release.wait(20)

    holder = threading.Thread(target=reading_units)
    assert not _stalled_behind(db, built, holder, entered, release), \
        "an answer from a built public-join cube waited for the units' lock, holding the CPU slot"


def _stalled_behind(db, sql: str, blocker: threading.Thread, entered: threading.Event,
                    release: threading.Event) -> bool:
    """Whether an answer to ``sql`` from a thread holding the CPU slot was still waiting after
    5 s while ``blocker`` (started here; it sets ``entered``, then holds what it holds until
    ``release``) held on. The answer must come once it lets go."""
    blocker.start()
    try:
        assert entered.wait(20)
        answered: list = []
        reader = threading.Thread(target=lambda: answered.append(db.cpu.run(_cells, db, sql)))
        reader.start()
        reader.join(5)
        stalled = reader.is_alive()
    finally:
        release.set()
        blocker.join(20)
    reader.join(20)
    assert answered and answered[0] is not None
    return stalled
