"""BOUNDS from the cube's magnitude bin counts (sdckit.query.boundscube, issue 32): exactly the
scan's bin counts on random WHERE predicates (raw doubles with zeros, -0.0, NaN, +/-inf, powers
of two and their neighbours, values past 2**62 and below 2**-30, missing values; a person's rows
past the bound left out); hand-worked counts; what still scans (a column or literal the cube
cannot evaluate exactly, a smaller contribution bound dropping rows, the cap); the service's
seeded answers bit-identical with every scan forbidden and with every fast path off."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, seeded_answers
from sdckit.query import bounds
from sdckit.query.boundscube import MISSING, BoundsCube
from sdckit.query.config import load_config
from sdckit.query.cube import Cube
from sdckit.query.data import Database
from sdckit.query.generate import BIN_ALIAS, COUNT_ALIAS, magnitude_histogram_sql
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse, predicate_columns

REGIONS = ["N", "S", "E", "W"]
CONFIG = """[service]
state = "state.db"
cache = false
{seed}
[[table]]
name = "t"
path = "t.parquet"
privacy_unit = "pid"
max_rows_per_unit = 2
[table.bounds]
v = [0, 1000]
w = [-5, 5]
[table.domains]
region = ["N", "S", "E", "W"]
grp = [1, 2, 3]
"""
#: Raw values on every side of the bins' edges.
SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.0, 2.0000000000000004, 1.9999999999999998, 0.75,
                    -3.0, 1000.0, 1024.0, 1e-12, -1e-12, 2.0**-30, 2.0**-31, 2.0**62, 2.0**62 * 1.5, -1e300, 5e18])


def _write(folder: Path, n: int = 400, persons: int = 250, seed: bool = False) -> Path:
    rng = np.random.default_rng(11)

    def missing(values: np.ndarray) -> pa.Array:
        return pa.array(values, mask=rng.random(n) < 0.1)
    table = pa.table({
        "pid": rng.permutation(n) % persons,  # some persons have 3 rows: the third is left out
        "region": missing(rng.choice(REGIONS + ["X"], n)),
        "grp": missing(rng.integers(0, 5, n)),
        "v": missing(SPECIAL[rng.integers(0, SPECIAL.size, n)] * rng.choice([1.0, 3.0, -7.0], n)),
        "w": missing(rng.integers(-6, 7, n)),
    })
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "t.parquet")
    config = folder / "service.toml"
    config.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else ""), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_write(tmp_path_factory.mktemp("boundscube"))))
    yield database
    database.close()


@pytest.fixture(scope="module")
def small(db):
    """The bin counts over a cube of region and grp only (w, a few-valued integer, outside it)."""
    cube = Cube.build(db._con, db.config.tables["t"], max_cells=40)
    assert sorted(cube.keys) == ["grp", "region"]
    return BoundsCube.build(db._con, cube)


def _pairs(result: dict[str, np.ndarray]) -> list[tuple[int | None, int]]:
    """The result's rows, (bin or None for a missing value, records), sorted."""
    b, n = result[BIN_ALIAS], np.asarray(result[COUNT_ALIAS]).tolist()
    mask = np.ma.getmaskarray(b).tolist()
    rows = [(None if m else int(x), c) for x, m, c in zip(np.ma.filled(b, 0).tolist(), mask, n)]
    return sorted(rows, key=lambda r: (r[0] is not None, r[0] or 0, r[1]))


def _scan(db: Database, query: Query, rows: int | None = None) -> dict[str, np.ndarray]:
    column = query.outputs[0].column
    return db.aggregate(magnitude_histogram_sql(query, db.config.tables["t"], column, bounds.LOWEST, bounds.HIGHEST,
                                                rows))


_values = {"grp": st.one_of(st.integers(-1, 6), st.floats(-1, 6, allow_nan=False).map(lambda x: round(x, 1))),
           "region": st.sampled_from(REGIONS + ["X", "Z", "", "n"]),
           "w": st.integers(-7, 7)}
_leaves = st.sampled_from(sorted(_values)).flatmap(lambda c: st.one_of(
    st.builds(Compare, st.just(c), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _values[c]),
    st.builds(InList, st.just(c), st.lists(_values[c], min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(Between, st.just(c), _values[c], _values[c], st.booleans())))
_where = st.one_of(st.none(), st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)), st.builds(Not, inner)), max_leaves=5))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=_where, column=st.sampled_from(["v", "w"]))
def test_the_cubes_bin_counts_are_the_scans_on_random_predicates(db, small, where, column):
    """The same rows (bin, records) as DuckDB's GROUP BY, missing and zero bins included, so the
    same :func:`bounds.bin_counts`: from the service's cube (region, grp and w its keys) and from a
    cube of region and grp only (a predicate on w then scans)."""
    query = Query("t", (Output("bounds", column, column),), where, ())
    scanned = _scan(db, query)
    assert sorted(db.cubes["t"].keys) == ["grp", "region", "w"]
    assert small.covers(query) == ("w" not in predicate_columns(where))
    for fast in (db.fast_bounds(query, 2), small.result(query) if small.covers(query) else None):
        if fast is not None:
            assert _pairs(fast) == _pairs(scanned)
            assert (bounds.bin_counts(fast) == bounds.bin_counts(scanned)).all()
    assert db.fast_bounds(query, 2) is not None


def test_hand_worked_counts(tmp_path):
    """v in (1.5, 3, -3, 0, missing, 1024, 1024.5) by region: region 'N' holds 1.5, 3, 0, missing
    -> bins 2**1 (+1 records: 1.5), 2**2 (3), 0, missing; 'S' holds -3, 1024, 1024.5 -> -2**2,
    2**10, 2**11. Bin numbers sign (j - LOWEST + 1)."""
    frame = pa.table({"pid": list(range(7)), "region": ["N", "N", "S", "N", "N", "S", "S"],
                      "v": pa.array([1.5, 3.0, -3.0, 0.0, None, 1024.0, 1024.5])})
    pq.write_table(frame, tmp_path / "t.parquet")
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.parquet"\nprivacy_unit = "pid"\n'
                                     '[table.bounds]\nv = [0, 1]\n[table.domains]\nregion = ["N", "S"]\n')
    database = Database(load_config(tmp_path / "s.toml"))
    try:
        def number(j: int, sign: int = 1) -> int:
            return sign * (j - bounds.LOWEST + 1)
        north = database.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE region = 'N'", database.config), 1)
        assert _pairs(north) == [(None, 1), (0, 1), (number(1), 1), (number(2), 1)]
        south = database.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE region = 'S'", database.config), 1)
        assert _pairs(south) == [(number(2, -1), 1), (number(10), 1), (number(11), 1)]
        assert database.magnitudes["t"].bins["v"].tolist() == sorted(
            [MISSING, number(2, -1), 0, number(1), number(2), number(10), number(11)])
    finally:
        database.close()


def test_what_still_scans(db, small):
    """A column outside the cube in WHERE, a literal past 2**53, a query of another kind, a
    smaller k' on a table with persons of several rows: no fast path; a column past the cap: not kept."""
    ask = db.config
    assert not db.unique_units["t"]
    assert db.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE v > 3", ask), 2) is None
    assert db.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE grp < 1e300", ask), 2) is None
    assert db.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE grp = 2", ask), 1) is None  # k' 1 drops rows
    assert db.fast_bounds(parse("SELECT BOUNDS(v) FROM t WHERE grp = 2", ask), 2) is not None
    assert not small.covers(parse("SELECT COUNT(*) FROM t", ask))
    cube = small.cube
    per_column = cube.size * small.bins["v"].size * 8 + small.bins["v"].nbytes
    assert list(BoundsCube.build(db._con, cube, max_bytes=per_column).counts) == ["v"]
    assert list(BoundsCube.build(db._con, cube, max_bytes=per_column - 1).counts) == ["w"]  # (fewer bins present)


def _answers(folder: Path, fast: bool) -> list:
    """Seeded answers of a fresh service; ``fast``: every scan forbidden, else every fast path off."""
    sqls = ("SELECT BOUNDS(v) FROM t", "SELECT BOUNDS(w) AS x FROM t WHERE region = 'N' OR grp >= 2",
            "SELECT BOUNDS(v) FROM t WHERE NOT (region IN ('S', 'X')) AND w BETWEEN -2 AND 9")
    requests = [(who, body) for who in ("pure", "approx", "zcdp")
                for body in [*({"sql": sql} for sql in sqls), {"sql": "SELECT BOUNDS(v) FROM t", "max_rows_per_unit": 2}]]
    return seeded_answers(_write(folder, seed=True), requests, fast)


def test_answers_from_the_cube_equal_the_scans(tmp_path):
    """The same seeded answers (bounds, noise scales, thresholds, mechanisms, charges; bit for bit)
    with every scan forbidden as with every fast path off: the path changed, not the answer."""
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast), [b for s, b in fast if s != 200]
    assert fast == scanned
    assert all(math.isfinite(x) for _, body in fast for x in body["rows"][0])
