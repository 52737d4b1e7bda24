"""COUNT(DISTINCT c) of a column outside the cube from per-cube-row bitsets
(sdckit.query.distinct_sets, issue 32): exactly DuckDB's true answers on random predicates and
groupings (integers numbered by their range and by a dictionary, values near +/-2**63, doubles
with -0.0, 0.0, NaN and missing values, text with case, accents and the empty string, a person's
rows past the bound left out); hand-worked counts; the limits; the bit counts; the service's
seeded answers bit-identical with and without the sets, and answered without a scan."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, seeded_answers
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.cube import Cube
from sdckit.query.cube_moments import Moments
from sdckit.query.data import Database
from sdckit.query.distinct_sets import DistinctSets, popcount
from sdckit.query.generate import aggregate_sql
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse

REGIONS = ["N", "S", "E", "W"]
CONFIG = """[service]
state = "state.db"
{seed}
[[table]]
name = "t"
path = "t.parquet"
privacy_unit = "pid"
max_rows_per_unit = 2
keys_from_data = ["name", "x"]
[table.bounds]
age = [0, 90]
income = [0, 1000]
big = [0, 1000]
[table.domains]
region = ["N", "S", "E", "W"]
grp = [1, 2, 3]
"""
#: Columns outside the test cube (region and grp are its keys).
OUTSIDE = ("age", "income", "big", "x", "name")


def _write(folder: Path, n: int = 400, persons: int = 250, seed: bool = False) -> Path:
    """Missing values everywhere; ``age`` -3..100 (numbered by its range), ``income`` sparse in
    +/-10**6 (by a dictionary), ``big`` near +/-2**63 (by a dictionary), ``x`` doubles with
    -0.0, 0.0 and NaN, ``name`` text differing in case and accents, and the empty string."""
    rng = np.random.default_rng(7)

    def missing(values: np.ndarray) -> pa.Array:
        return pa.array(values, mask=rng.random(n) < 0.1)
    names = np.array(["a", "A", "é", "e", "", "ab", "a "], dtype=object)
    doubles = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -1.5, 2.0**-30, 1e300])
    table = pa.table({
        "pid": rng.permutation(n) % persons,
        "region": missing(rng.choice(REGIONS + ["X"], n)),
        "grp": missing(rng.integers(0, 5, n)),
        "age": missing(rng.integers(-3, 101, n)),
        "income": missing(rng.integers(-10**6, 10**6, n) // 997 * 997),
        "big": missing(np.array([2**63 - 1, -2**63, 2**62, 0, 5], dtype=np.int64)[rng.integers(0, 5, n)]
                       - rng.integers(0, 3, n) * (rng.random(n) < 0.5)),
        "x": missing(doubles[rng.integers(0, doubles.size, n)] * rng.integers(1, 4, n)),
        "name": missing(names[rng.integers(0, names.size, n)]),
    })
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "t.parquet")
    config = folder / "service.toml"
    config.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else ""), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_write(tmp_path_factory.mktemp("distinct"))))
    yield database
    database.close()


@pytest.fixture(scope="module")
def moments(db):
    """Moments over a cube of region and grp only (the other columns outside it), with the sets
    of every outside column."""
    cube = Cube.build(db._con, db.config.tables["t"], max_cells=40)
    assert sorted(cube.keys) == ["grp", "region"]
    sets = DistinctSets.build(db._con, cube, bytes_per_record=10**6)
    assert sorted(sets.bits) == sorted(OUTSIDE)
    return Moments(cube, {}, {}, False, sets)


def _truth(db: Database, query: Query) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    table = db.config.tables["t"]
    plan = noisy.plan(query, table, Fraction(1))
    counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))
    return counts, sums, len(plan.cells)


_values = {"grp": st.one_of(st.integers(-1, 6), st.floats(-1, 6, allow_nan=False).map(lambda x: round(x, 1))),
           "region": st.sampled_from(REGIONS + ["X", "Z", "", "n"])}
_leaves = st.sampled_from(sorted(_values)).flatmap(lambda c: st.one_of(
    st.builds(Compare, st.just(c), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _values[c]),
    st.builds(InList, st.just(c), st.lists(_values[c], min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(Between, st.just(c), _values[c], _values[c], st.booleans())))
_where = st.one_of(st.none(), st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)), st.builds(Not, inner)), max_leaves=5))
_outputs = st.lists(st.sampled_from([Output("count", None, "c"), Output("count_distinct", "region", "dr")]
                                    + [Output("count_distinct", c, f"d_{c}") for c in OUTSIDE]),
                    min_size=1, max_size=4, unique_by=lambda o: o.label)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_where, outputs=_outputs, group_by=st.sampled_from([(), ("region",), ("grp", "region"), ("grp",)]))
def test_the_sets_give_duckdbs_true_distinct_counts_on_random_predicates(db, moments, where, outputs, group_by):
    query = Query("t", tuple(Output("group", c, c) for c in group_by) + tuple(outputs), where, group_by)
    assert moments.covers(query)
    counts, sums, n_cells = _truth(db, query)
    mine_counts, mine_sums = moments.cells(query, n_cells)
    assert np.array_equal(mine_counts, counts)
    assert sorted(mine_sums) == sorted(sums)
    for name in sums:
        assert mine_sums[name].dtype == sums[name].dtype and np.array_equal(mine_sums[name], sums[name]), name


def test_integers_are_numbered_by_their_range_or_a_dictionary(db, moments):
    """age spans 104 integers (2 words); income's and big's values are far apart (a dictionary:
    one bit per distinct value); every word of a row ORed gives the row's distinct count."""
    bits = moments.sets.bits
    assert bits["age"].shape == (moments.cube.size, 2)
    for column in ("income", "big", "x", "name"):
        (distinct,) = db.execute(f'SELECT COUNT(DISTINCT "{column}") FROM sdc_dp_t').fetchone()
        assert bits[column].shape == (moments.cube.size, -(-distinct // 64)), column
        assert popcount(np.bitwise_or.reduce(bits[column], axis=0)[None])[0] == distinct, column


# ------------------------------------------------------------------ hand-worked
def test_hand_worked_distinct_counts_of_doubles_and_text(tmp_path):
    """Six people. N: v 1.5, -0.0, NaN; names "a", "", missing. S: v 0.0, NaN, missing; names
    "A", "é", "a". v: N 3, S 2 (0.0 = -0.0, NaN once, missing not counted), all 3 (1.5, 0, NaN);
    names: N 2, S 3, all 4 ("a", "", "A", "é")."""
    v = pa.array(np.array([1.5, -0.0, 0.0, np.nan, -np.nan, 0.0]), mask=np.array([0, 0, 0, 0, 0, 1], dtype=bool))
    pq.write_table(pa.table({"pid": [1, 2, 3, 4, 5, 6], "region": ["N", "N", "S", "N", "S", "S"], "v": v,
                             "name": ["a", "", "A", None, "é", "a"]}), tmp_path / "t.parquet")
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.parquet"\nprivacy_unit = "pid"\n'
                                     'keys_from_data = ["name"]\n[table.bounds]\nv = [0, 2]\n'
                                     '[table.domains]\nregion = ["N", "S"]\n', encoding="utf-8")
    db = Database(load_config(tmp_path / "s.toml"))
    try:
        moments = db.moments["t"]
        assert list(moments.cube.keys) == ["region"]
        whole = parse("SELECT COUNT(DISTINCT v), COUNT(DISTINCT name) FROM t", db.config)
        assert moments.covers(whole)
        _, sums = moments.cells(whole, 1)
        assert sums["distinct:v"].tolist() == [3] and sums["distinct:name"].tolist() == [4]
        by_region = parse("SELECT region, COUNT(DISTINCT v), COUNT(DISTINCT name) FROM t GROUP BY region", db.config)
        _, sums = moments.cells(by_region, 2)
        assert sums["distinct:v"].tolist() == [3, 2] and sums["distinct:name"].tolist() == [2, 3]
        _, sums = moments.cells(parse("SELECT COUNT(DISTINCT v) FROM t WHERE region = 'Z'", db.config), 1)
        assert sums["distinct:v"].tolist() == [0]  # nothing selected
    finally:
        db.close()


def test_columns_named_like_the_build_sqls_names(tmp_path):
    """A cube key named ``w`` and columns outside it named ``bits`` and ``g0``: the same counts
    as the scan (the build's SQL never refers to an alias)."""
    rng = np.random.default_rng(2)
    n = 300
    pq.write_table(pa.table({"pid": np.arange(n), "w": rng.integers(0, 3, n), "bits": rng.integers(0, 90, n) / 4,
                             "g0": rng.integers(0, 10**6, n) + 0.5}), tmp_path / "t.parquet")
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.parquet"\nprivacy_unit = "pid"\n'
                                     '[table.bounds]\nbits = [0, 10]\ng0 = [0, 10]\n[table.domains]\nw = [0, 1, 2]\n',
                                     encoding="utf-8")
    db = Database(load_config(tmp_path / "s.toml"))
    try:
        assert list(db.moments["t"].cube.keys) == ["w"] and sorted(db.moments["t"].sets.bits) == ["bits", "g0"]
        query = parse("SELECT w, COUNT(DISTINCT bits), COUNT(DISTINCT g0) FROM t WHERE w <> 1 GROUP BY w", db.config)
        counts, sums, n_cells = _truth(db, query)
        assert sums["distinct:bits"].tolist()[1] == 0 and sums["distinct:g0"].min() == 0
        _, mine = db.moments["t"].cells(query, n_cells)
        assert {k: v.tolist() for k, v in mine.items()} == {k: v.tolist() for k, v in sums.items()}
    finally:
        db.close()


# ------------------------------------------------------------------ limits and bit counts
def test_sets_past_the_limits_are_left_to_the_scan(db):
    cube = Cube.build(db._con, db.config.tables["t"], max_cells=40)
    row = cube.size * 8  # one word per cube row
    assert DistinctSets.build(db._con, cube, bytes_per_record=10**6, max_bytes=row - 1).bits == {}
    some = DistinctSets.build(db._con, cube, bytes_per_record=10**6, max_bytes=4 * row)
    # in the configuration's order: age 2 words, income 6 (declined), big 1, name 1, then x 1 (past the limit)
    assert sorted(some.bits) == ["age", "big", "name"]
    moments = Moments(cube, {}, {}, False, some)
    assert moments.covers(parse("SELECT COUNT(DISTINCT name) FROM t WHERE region = 'N'", db.config))
    assert not moments.covers(parse("SELECT COUNT(DISTINCT income) FROM t", db.config))
    assert not moments.covers(parse("SELECT COUNT(DISTINCT name) FROM t WHERE age > 3", db.config))  # not a key
    # 1 byte per record: 400 bytes, room for one column of one word per cube row (at most 36 x 8 bytes)
    (records,) = db.execute("SELECT COUNT(*) FROM sdc_dp_t").fetchone()
    assert records == 400 and cube.size <= 36
    assert sorted(DistinctSets.build(db._con, cube, bytes_per_record=1).bits) == ["big"]


@pytest.mark.parametrize("lookup", [False, True])
def test_popcount_against_pythons_bit_count(lookup):
    if not lookup and not hasattr(np, "bitwise_count"):
        pytest.skip("numpy < 2")
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**64, (5, 7), dtype=np.uint64, endpoint=False)
    words[0] = 0
    words[1, 0] = 2**64 - 1
    expected = [sum(bin(int(w)).count("1") for w in row) for row in words]
    got = popcount(words, lookup)
    assert got.dtype == np.int64 and got.tolist() == expected


# ------------------------------------------------------------------ the service
SQLS = ["SELECT COUNT(DISTINCT x), COUNT(*) FROM t WHERE region = 'N'",
        "SELECT region, COUNT(DISTINCT name), COUNT(DISTINCT x) FROM t WHERE grp IN (1, 2) GROUP BY region",
        "SELECT grp, COUNT(DISTINCT x) FROM t WHERE NOT (region <> 'E') GROUP BY grp"]


def _answers(folder: Path, fast: bool) -> list:
    return seeded_answers(_write(folder, seed=True), [("pure", {"sql": sql}) for sql in SQLS], fast)


def test_answers_are_bit_identical_with_and_without_the_sets_and_need_no_scan(tmp_path):
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast), fast
    assert fast == scanned
