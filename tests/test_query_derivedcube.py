"""Derived values and binned GROUP BYs of a many-valued column without a per-query scan
(sdckit.query.derivedcube, issue 32): against DuckDB's scan of the generated SQL on random
predicates -- counts exactly, sums exactly when every derived value is an integer (partial sums
exact in any order), else within twice the recursive-summation bound (n - 1) 2**-53 sum |v|; a
hand-worked example; one build per expression, then no scan and no build; what it leaves to
the scan (a column outside the cube in WHERE, two such bins, a column's VAR_POP, past the memory
bound, a build DuckDB refuses); ``[service] prebuild`` at start-up and its refusals; the
service's answers without a scan, bit-identical to the scan's for integer values under a seed."""

from __future__ import annotations

import threading
import time
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, seeded_answers
from sdckit.core.errors import ParameterError
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.derivedcube import DerivedCubes
from sdckit.query.generate import aggregate_sql, square_cap
from sdckit.query.sql import parse

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
age = [0, 100]
frac = [0, 0.3]
[table.domains]
sex = ["F", "M"]
"""

#: (form, exact): integer derived values are summed exactly; the others within the stated bound.
FORMS = [
    ("SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*), SUM(income) FROM t{w} GROUP BY b", True),
    ("SELECT sex, FLOOR(income / 100) AS b, COUNT(*), AVG(age) FROM t{w} GROUP BY sex, b", True),
    ("SELECT FLOOR(age / 25) AS a, CASE WHEN income < 300 THEN 'low' WHEN income < 700 THEN 'mid' END AS c, "
     "COUNT(*) FROM t{w} GROUP BY a, c", True),
    ("SELECT CASE WHEN income < 300 THEN 'low' ELSE 'high' END AS c, sex, COUNT(*), SUM(income) FROM t{w} "
     "GROUP BY c, sex", True),
    ("SELECT sex, SUM(CASE WHEN age >= 65 THEN income ELSE 0 END), COUNT(*) FROM t{w} GROUP BY sex", True),
    ("SELECT SUM(income * 2 - 7), AVG(FLOOR(income / 300)), VAR_POP(income * 2 - 7) FROM t{w}", True),
    ("SELECT FLOOR(age / 10) AS a, STDDEV_POP(income + 1), COUNT(*) FROM t{w} GROUP BY a", True),
    ("SELECT SUM(income / 1000), VAR_POP(income / 7) FROM t{w}", False),
    ("SELECT sex, WIDTH_BUCKET(income, 0, 1000, 3) AS b, STDDEV_POP(income / 3), SUM(ABS(income - 333.3)) "
     "FROM t{w} GROUP BY sex, b", False),
]


def _frame(n: int = 600, persons: int = 400, seed: int = 3) -> pd.DataFrame:
    """Integer ages (a cube column) and text sexes (one outside the domain) with missing values
    and values outside the bounds; integer incomes as DOUBLE (many values: outside the cube)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"pid": rng.permutation(n) % persons,
                          "age": pd.array(rng.integers(-10, 131, n), dtype="Int64"),
                          "income": rng.integers(-100, 1200, n).astype(float),
                          "frac": rng.uniform(-0.1, 0.4, n),
                          "sex": rng.choice(["F", "M", "X"], n).astype(object)})
    frame.loc[rng.choice(n, 25, replace=False), "age"] = pd.NA
    frame.loc[rng.choice(n, 25, replace=False), "income"] = np.nan
    frame.loc[rng.choice(n, 25, replace=False), "sex"] = None
    return frame


def _config(folder: Path, seed: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _frame().to_csv(folder / "t.csv", index=False)
    path = folder / "service.toml"
    path.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else ""), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_config(tmp_path_factory.mktemp("derivedcube"))))
    assert list(database.cubes["t"].keys) == ["age", "sex"] and "income" in database.cubes["t"].sums
    yield database
    database.close()


def _scan(db: Database, sql: str):
    q = parse(sql, db.config)
    t = dp_table(q, db.config.tables["t"])
    p = noisy.plan(q, t, Fraction(1))
    return q, p, noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp")))


def _same(db: Database, sql: str, exact: bool) -> None:
    q, p, (counts, sums) = _scan(db, sql)
    fast = db.fast_cells(q, len(p.cells))
    assert fast is not None, sql
    fast_counts, fast_sums = fast
    assert fast_counts.dtype == counts.dtype and fast_counts.tolist() == counts.tolist(), sql
    assert sorted(fast_sums) == sorted(sums), sql
    for name, values in sums.items():
        assert fast_sums[name].dtype == values.dtype, (sql, name)
        if exact:
            assert fast_sums[name].tolist() == values.tolist(), (sql, name)
            continue
        column = name.removeprefix("sumsq:")
        lo, hi = p.bounds[column]
        most = square_cap(lo, hi) if name != column else max(abs(lo), abs(hi))  # every |v| is at most this
        bound = 2 * counts * (counts * most) * 2.0**-53  # twice (n - 1) 2**-53 sum |v|, per cell
        assert np.all(np.abs(fast_sums[name] - values) <= bound), (sql, name)


# ------------------------------------------------------------------ the same true answers
_ATOMS = st.one_of(
    st.builds(lambda op, v: f"age {op} {v}", st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
              st.one_of(st.integers(-20, 140), st.integers(-40, 280).map(lambda i: i / 2))),
    st.builds(lambda a, b: f"age BETWEEN {a} AND {b}", st.integers(-20, 140), st.integers(-20, 140)),
    st.builds(lambda vs: f"age IN ({', '.join(map(str, vs))})", st.lists(st.integers(-5, 105), min_size=1, max_size=4)),
    st.builds(lambda op, v: f"sex {op} '{v}'", st.sampled_from(["=", "<>"]), st.sampled_from(["F", "M", "X", "Z"])),
    st.builds(lambda vs: f"sex IN ({', '.join(repr(v) for v in vs)})",
              st.lists(st.sampled_from(["F", "M", "X"]), min_size=1, max_size=3)))
_WHERE = st.one_of(st.just(""), st.recursive(_ATOMS, lambda inner: st.one_of(
    st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner), st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
    st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=4).map(lambda w: f" WHERE {w}"))


@given(form=st.sampled_from(FORMS), where=_WHERE)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_structures_give_the_scans_true_answers_on_random_predicates(db, form, where):
    sql, exact = form
    _same(db, sql.format(w=where), exact)


def test_every_form_is_answered_on_its_own_and_after_others(db):
    """Each form with and without a WHERE (structures shared between forms, or not)."""
    for sql, exact in FORMS:
        for where in ("", " WHERE age > 40 OR sex = 'X'", " WHERE age IN (1, 2, 3) AND NOT sex = 'M'"):
            _same(db, sql.format(w=where), exact)


def test_hand_worked_histogram_and_derived_sums(tmp_path):
    """Five persons, k = 2 (person 1's third row left out). Kept rows (age, income clamped to
    [0, 1000], sex): (5, 100, F), (70, 1000, M), (30, missing, M), (80, 500, F), (65, 0, M),
    (20, 1000, F). Ages > 10, WIDTH_BUCKET(income, 0, 1000, 4): 1000 -> 5 (twice), 500 -> 3,
    0 -> 1, missing in no bin: counts 1, 0, 1, 0, 2 over the bins 1..5. By sex: SUM(income / 4)
    is (100 + 500 + 1000) / 4 = 400 for F and (1000 + 0 + 0) / 4 = 250 for M (a missing income
    is 0); SUM(CASE WHEN age >= 65 THEN income ELSE 0 END) is 500 (age 80) and 1000 + 0."""
    frame = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 4, 5], "age": [5, 70, 40, 30, 80, 65, 20],
                          "income": [100, 2000, 50, np.nan, 500, -10, 1000], "sex": ["F", "M", "F", "M", "F", "M", "F"],
                          "frac": [0.1] * 7})
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "service.toml").write_text(CONFIG.format(seed=""), encoding="utf-8")
    database = Database(load_config(tmp_path / "service.toml"))
    try:
        database.aggregate = _forbidden
        q = parse("SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*) FROM t WHERE age > 10 GROUP BY b",
                  database.config)
        counts, _ = database.fast_cells(q, 5)
        assert counts.tolist() == [1, 0, 1, 0, 2]
        q = parse("SELECT sex, SUM(income / 4), SUM(CASE WHEN age >= 65 THEN income ELSE 0 END) FROM t GROUP BY sex",
                  database.config)
        counts, sums = database.fast_cells(q, 2)
        assert counts.tolist() == [3, 3]
        assert sums["income / 4"].tolist() == [400.0, 250.0]
        assert sums["CASE WHEN age >= 65 THEN income ELSE 0 END"].tolist() == [500.0, 1000.0]
    finally:
        database.close()


# ------------------------------------------------------------------ built once, then no scan
def test_one_build_per_expression_then_no_scan_and_no_build(tmp_path):
    database = Database(load_config(_config(tmp_path)))
    try:
        derived = database.derived["t"]
        builds = []
        original = derived._build
        derived._build = lambda *a: builds.append(a[1].sql) or original(*a)
        sql = "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*) FROM t WHERE age > {a} GROUP BY b"
        first = parse(sql.format(a=10), database.config)
        assert database.fast_cells(first, 6) is not None and len(builds) == 1
        database.aggregate = _forbidden
        derived._build = _forbidden  # from here on: neither a scan nor a build
        for a in (0, 30, 70):
            assert database.fast_cells(parse(sql.format(a=a), database.config), 6) is not None
        for text in ("SELECT sex, WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*), SUM(income) FROM t "
                     "WHERE sex <> 'X' GROUP BY sex, b",  # the same structure (the bin, counts, the cube's sums)
                     "SELECT WIDTH_BUCKET(income,0,1000,4) AS bin, COUNT(*) FROM t GROUP BY bin"):  # other text
            q = parse(text, database.config)
            assert database.fast_cells(q, len(noisy.plan(q, dp_table(q, database.config.tables["t"]), Fraction(1)).cells))
        assert len(derived.entries) == 1 and derived.nbytes == derived.cube.size * 5 * 8 * 3  # count, age, income
    finally:
        database.close()


def _forbidden(*args):
    raise AssertionError("a scan or a build")


def test_concurrent_first_askers_build_once(tmp_path):
    database = Database(load_config(_config(tmp_path)))
    try:
        derived = database.derived["t"]
        builds = []
        original = derived._build

        def slow(*args):
            builds.append(1)
            time.sleep(0.2)
            return original(*args)
        derived._build = slow
        q = parse("SELECT SUM(income / 1000) FROM t WHERE age > 30", database.config)
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(database.fast_cells(q, 1))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(builds) == 1 and len(answers) == 4 and all(a is not None for a in answers)
        assert len({a[1]["income / 1000"][0] for a in answers}) == 1
    finally:
        database.close()


# ------------------------------------------------------------------ what is left to the scan
@pytest.mark.parametrize("sql", [
    "SELECT SUM(income / 1000) FROM t WHERE income > 500",  # WHERE on a column outside the cube
    "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, FLOOR(frac * 10) AS f, COUNT(*) FROM t GROUP BY b, f",  # two
    "SELECT SUM(income / 1000), VAR_POP(income) FROM t",  # a column's squares (the moments' exact integers)
    "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, SUM(frac) FROM t GROUP BY b",  # frac: no exact sum
    "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, MEDIAN(age) FROM t GROUP BY b",  # a quantile
    "SELECT SUM(income) FROM t WHERE age > 3",  # no derived value, no bin: the cube's
])
def test_what_it_does_not_answer_is_left_to_the_scan(db, sql):
    q = parse(sql, db.config)
    assert db.derived["t"].cells(q, 100) is None


def test_past_the_memory_bound_or_a_refused_build_the_scan_answers(tmp_path):
    database = Database(load_config(_config(tmp_path)))
    try:
        derived = database.derived["t"]
        q = parse("SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*) FROM t GROUP BY b", database.config)
        derived.max_bytes = derived.cube.size * 5 * 8 * 3 - 1  # one byte short of this structure
        assert database.fast_cells(q, 6) is None and derived.entries == {}
        derived.max_bytes = derived.cube.size * 5 * 8 * 3
        assert database.fast_cells(q, 6) is not None and derived.nbytes == derived.max_bytes
        other = parse("SELECT SUM(income / 1000) FROM t", database.config)  # 16 bytes per cube row: past the bound
        assert database.fast_cells(other, 1) is None and len(derived.entries) == 1

        class Refusing:
            def cursor(self):
                raise duckdb.InvalidInputException("refused")
        small = DerivedCubes(Refusing(), derived.cube)
        assert small.cells(other, 1) is None and len(small.failed) == 1 and small.entries == {}
    finally:
        database.close()


# ------------------------------------------------------------------ built at start-up
def test_prebuild_builds_at_start_up_and_refuses_what_it_cannot_build(tmp_path):
    config = _config(tmp_path)
    text = config.read_text(encoding="utf-8")

    def prebuild(value: str) -> None:
        config.write_text(text.replace("[service]\n", f"[service]\nprebuild = {value}\n"), encoding="utf-8")
    prebuild('["SELECT SUM(income / 1000) FROM t WHERE age > 3", '
             '"SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*) FROM t GROUP BY b"]')
    database = Database(load_config(config))
    try:
        derived = database.derived["t"]
        assert len(derived.entries) == 2
        database.aggregate = derived._build = _forbidden  # no scan, no build: both built at start-up
        for sql in ("SELECT AVG(income / 1000) FROM t WHERE sex = 'F'",
                    "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*), SUM(income) FROM t WHERE age < 9 GROUP BY b"):
            q = parse(sql, database.config)
            assert database.fast_cells(q, len(noisy.plan(q, dp_table(q, database.config.tables["t"]), Fraction(1)).cells))
    finally:
        database.close()
    for bad, message in [('["SELECT SUM(income) FROM t WHERE income > 3"]', "has no derived value"),
                         ('["SELECT SUM(income / 1000) FROM nowhere"]', "nowhere"),
                         ('"SELECT SUM(income / 1000) FROM t"', "must be a list of SQL queries")]:
        prebuild(bad)
        with pytest.raises(ParameterError, match=r"^\[service\] 'prebuild'.*" + message):
            Database(load_config(config))


# ------------------------------------------------------------------ the service
SERVICE_SQLS = ["SELECT WIDTH_BUCKET(income, 0, 1000, 10) AS bin, COUNT(*) FROM t WHERE age > 30 GROUP BY bin",
                "SELECT sex, SUM(CASE WHEN age >= 65 THEN income ELSE 0 END) FROM t WHERE age > 20 GROUP BY sex",
                "SELECT AVG(income * 3), STDDEV_POP(income - 100) FROM t WHERE age BETWEEN 20 AND 60"]


def _answers(folder: Path, fast: bool, sqls: list[str]) -> list:
    return seeded_answers(_config(folder, seed=True), [("pure", {"sql": sql}) for sql in sqls], fast)


def test_the_service_answers_without_a_scan_bit_identical_for_integer_values(tmp_path):
    fast, scanned = _answers(tmp_path / "fast", True, SERVICE_SQLS), _answers(tmp_path / "scan", False, SERVICE_SQLS)
    assert all(status == 200 for status, _ in fast), fast
    assert fast == scanned
    status, body = _answers(tmp_path / "other", True, ["SELECT SUM(income / 1000) FROM t WHERE age > 40"])[0]
    assert status == 200 and body["noise_scale"]  # the derived bounds' scale, as the scan's
