"""The row store (sdckit.query.rowstore, issue 32): per-group bounds answered from each person's
rows in memory, without a scan. The same true answers as the truncating SQL on random data,
predicates, GROUP BY columns, bins and bounds ``g, r, k'`` (hypothesis; the SQL itself is checked
against a brute-force oracle of the rules in test_query_truncation_oracle.py); hand-worked groups
of missing values and of values outside the domains; persons of every row count (the blocks of
2 to 4 rows, the folded persons, the rest) against the SQL, and the kernel against the rules
written out; what it declines (scanned as before) and its memory bound; the service's answers
bit-identical with and without it under a fixed seed.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query_helpers import SEED, seeded_answers
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.generate import aggregate_sql
from sdckit.query.groupbounds import GroupBounds
from sdckit.query import rowkernel
from sdckit.query.rowstore import BLOCK, RowStore
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Output, Query, parse

K = 6
REGIONS = ["N", "S", "E", "W"]
CONFIG = f"""[service]
state = "state.db"
cache = false
{{seed}}
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
[table.bounds]
income = [0, 1000]
age = [0, 90]
frac = [0, 1]
half = [0, 15]
[table.domains]
region = {REGIONS}
grp = [1, 2, 3]
"""


def _frame(n: int = 120, seed: int = 5) -> pd.DataFrame:
    """Few persons with many rows each (beyond k = 6 too), missing ages, regions and groups,
    regions X and Y and groups 0, 4, 5 outside the domains, incomes above the bound; ``half`` a
    multiple of 1/2 (summed exactly, not a cube column: stored per row), ``frac`` any double."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "pid": rng.integers(0, 12, n),
        "age": pd.array(rng.integers(-3, 100, n), dtype="Int64"),
        "income": rng.integers(0, 1500, n),
        "region": pd.array(rng.choice(REGIONS + ["X", "Y"], n), dtype="string"),
        "grp": pd.array(rng.integers(0, 6, n), dtype="Int64"),
        "frac": rng.random(n),
        "half": rng.integers(0, 40, n) / 2,
    })
    for column in ("age", "region", "grp"):
        frame.loc[rng.random(n) < 0.1, column] = pd.NA
    keys = ["age", "income", "region", "grp"]
    frame.loc[1, keys] = frame.loc[0, keys]  # one cube row with two values of half: half stored per row
    frame.loc[1, "half"] = (frame.loc[0, "half"] + 3) % 20
    return frame


def _database(folder: Path, frame: pd.DataFrame | None = None, seed: bool = False) -> Path:
    (_frame() if frame is None else frame).to_csv(folder / "t.csv", index=False)
    path = folder / "service.toml"
    path.write_text(CONFIG.format(seed=f'seed = "{SEED}"' if seed else ""), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(load_config(_database(tmp_path_factory.mktemp("rowstore"))))
    yield database
    database.close()


def _both(db: Database, query: Query, rows: int | None, bounds: GroupBounds):
    """(row store, truncating SQL): true counts and clamped sums per cell."""
    table = dp_table(query, db.config.tables[query.table])
    plan = noisy.plan(query, table, Fraction(1), rows, bounds)
    stored = db.fast_cells(query, len(plan.cells), rows, bounds)
    assert stored is not None, query
    scanned = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp", rows=rows, groups=bounds)))
    return stored, scanned


def _same(a, b) -> None:
    assert a[0].dtype == np.int64 and np.array_equal(a[0], np.asarray(b[0]))
    assert list(a[1]) == list(b[1])
    for column in a[1]:
        assert a[1][column].dtype == np.float64
        assert np.array_equal(a[1][column], np.asarray(b[1][column], dtype=float))  # exact, not approximately


# ------------------------------------------------------------------ random predicates and bounds
_numbers = st.one_of(st.integers(-5, 105), st.floats(-5, 105, allow_nan=False).map(lambda x: round(x, 1)))
_texts = st.sampled_from(REGIONS + ["X", "Y", "Z", ""])
_ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _leaf(column: str, values) -> st.SearchStrategy:
    return st.one_of(
        st.builds(Compare, st.just(column), _ops, values),
        st.builds(InList, st.just(column), st.lists(values, min_size=1, max_size=4).map(tuple), st.booleans()),
        st.builds(Between, st.just(column), values, values, st.booleans()))


_leaves = st.one_of(_leaf("age", _numbers), _leaf("grp", st.integers(-1, 6)), _leaf("region", _texts),
                    _leaf("income", st.integers(-10, 1600)))
_predicates = st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(Not, inner)), max_leaves=5)
_outputs = st.lists(st.sampled_from([Output("count", None, "c"), Output("sum", "income", "s"),
                                     Output("avg", "age", "a"), Output("sum", "half", "h")]),
                    min_size=1, max_size=4, unique=True)
_groups = st.sampled_from([("region",), ("grp",), ("region", "grp"), ("grp", "region")])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.one_of(st.none(), _predicates), outputs=_outputs, group_by=_groups,
       g=st.integers(1, K), r=st.integers(1, K), rows=st.one_of(st.none(), st.integers(1, K)))
def test_the_row_store_gives_the_sqls_true_answer(db, where, outputs, group_by, g, r, rows):
    query = Query("t", tuple(Output("group", c, c) for c in group_by) + tuple(outputs), where, group_by)
    _same(*_both(db, query, rows, GroupBounds(g, r, K if rows is None else rows)))


def _counted_frame(persons: int = 180, seed: int = 9) -> pd.DataFrame:
    """Persons of every row count from 1 to K + 2 (beyond k = 6 too: the dp relation keeps 6), in
    the blocks of 2 to BLOCK rows, the folded one-row persons and the rest; their rows in random
    file order; the columns of :func:`_frame`."""
    rng = np.random.default_rng(seed)
    counts = rng.permutation(np.resize(np.arange(1, K + 3), persons))
    pids = np.repeat(np.arange(persons), counts)
    frame = _frame(int(counts.sum()), seed).assign(pid=rng.permutation(pids))
    frame.loc[frame["pid"] == 7, ["age", "income", "region", "grp"]] = [40, 500, "N", 1]  # one cube row
    return frame


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    database = Database(load_config(_database(tmp_path_factory.mktemp("counted"), _counted_frame())))
    yield database
    database.close()


_counted_sqls = st.sampled_from([
    "SELECT region, COUNT(*), SUM(income), SUM(half) FROM t GROUP BY region",  # fewer groups than 8
    "SELECT grp, region, COUNT(*), AVG(age) FROM t GROUP BY grp, region",  # more
    "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*), SUM(half) FROM t GROUP BY band"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=_counted_sqls, where=st.one_of(st.none(), _predicates), g=st.integers(1, K), r=st.integers(1, K),
       rows=st.one_of(st.none(), st.integers(1, K)))
def test_persons_of_every_row_count_get_the_sqls_true_answer(counted, sql, where, g, r, rows):
    """The blocks by row count (persons of 2 to BLOCK rows), the folded persons (one row, and n <=
    min(g, r, k')) and the rest: the SQL's cells, with k' below and above the persons' rows."""
    store = counted.row_stores["t"]
    assert store.rows > store.parent.size > store.starts[-1] > store.starts[1] > store.starts[0] == 0
    query = dataclasses.replace(parse(sql, counted.config), where=where)
    _same(*_both(counted, query, rows, GroupBounds(g, r, K if rows is None else rows)))


@pytest.mark.parametrize("sql", [
    "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*), SUM(income) FROM t WHERE region <> 'S' GROUP BY band",
    "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, region, COUNT(*) FROM t WHERE age > 20 OR grp = 2 "
    "GROUP BY b, region",
    "SELECT CASE WHEN age < 30 THEN 'young' WHEN age BETWEEN 30 AND 60 THEN 'mid' END AS a, AVG(income) FROM t "
    "GROUP BY a",
    "SELECT grp, CASE WHEN region = 'N' THEN 'n' ELSE 'other' END AS nn, COUNT(*) FROM t GROUP BY grp, nn"])
def test_bins_are_grouped_as_the_sql_groups_them(db, sql):
    query = parse(sql, db.config)
    for g, r, rows in ((1, 1, None), (2, 1, None), (1, 2, 3), (3, 2, None), (K, K, 4)):
        _same(*_both(db, query, rows, GroupBounds(g, r, K if rows is None else rows)))


# ------------------------------------------------------------------ hand-worked groups
HAND = pd.DataFrame({
    "pid": [1, 1, 1, 2, 2, 3, 3, 3],
    "age": [40] * 8,
    "income": [100, 200, 300, 10, 20, 1, 2, 3],
    "region": pd.array(["Y", "X", "N", "N", "N", pd.NA, pd.NA, "S"], dtype="string"),
    "grp": pd.array([4, 5, 1, 1, 1, 1, pd.NA, 2], dtype="Int64"),
    "frac": [0.5] * 8,
    "half": [0.5] * 8,
})


def test_missing_values_and_values_outside_the_domains_form_groups_as_in_sql(tmp_path):
    """At g = 2, r = 1. By region (a text domain: the code groups, -1 for X and Y alike): person 1
    has groups {Y, X} and N: she keeps Y and N; person 2 keeps one N; person 3 has the missing group
    (her first two rows) and S: she keeps one missing and S. N 2 (incomes 300 + 10), S 1 (3).
    By grp (integers: each value its own group): person 1's first two groups are 4 and 5, her grp 1
    row is dropped; person 2 keeps one 1; person 3 keeps 1 and the missing one, not 2: 1 has 2, 2 none."""
    db = Database(load_config(_database(tmp_path, HAND)))
    try:
        for sql, counts, sums in (("SELECT region, COUNT(*), SUM(income) FROM t GROUP BY region", [2, 1, 0, 0],
                                   [310, 3, 0, 0]),
                                  ("SELECT grp, COUNT(*), SUM(income) FROM t GROUP BY grp", [2, 0, 0], [11, 0, 0])):
            stored, scanned = _both(db, parse(sql, db.config), None, GroupBounds(2, 1, K))
            _same(stored, scanned)
            assert stored[0].tolist() == counts and stored[1]["income"].tolist() == sums, sql
    finally:
        db.close()


# ------------------------------------------------------------------ what it declines; its memory
@pytest.mark.parametrize("sql", [
    "SELECT region, COUNT(*) FROM t WHERE frac > 0.5 GROUP BY region",  # a column not in the cube
    "SELECT region, SUM(frac) FROM t GROUP BY region",  # a sum not exact in any order
    "SELECT region, MEDIAN(income) FROM t GROUP BY region"])
def test_what_the_row_store_does_not_cover_is_scanned(db, sql):
    query = parse(sql, db.config)
    assert not db.row_stores["t"].covers(query)
    assert db.fast_cells(query, 4, None, GroupBounds(1, 1, K)) is None


def test_the_memory_bound(db, tmp_path):
    """Per row of a person of 2 or more rows its cube row (2 bytes below 2**16 cube rows) and 8
    bytes per summed column not constant on a cube row (else 8 per cube row); 2 more (its rank)
    per row of a person of more than BLOCK rows; per row count up to BLOCK and cube row the folded
    count and sums (8 bytes each); the persons of one row stored only there. Beyond ``max_bytes``
    no store (the scan). Here income and age are cube columns (one value per cube row), ``half``
    is not (stored per row)."""
    store = db.row_stores["t"]
    sizes = db.execute('SELECT COUNT(*) FROM "sdc_dp_t" GROUP BY pid').fetchnumpy()["count_star()"]
    n, size = int(sizes.sum()), db.cubes["t"].size
    stored, rest = int(sizes[sizes > 1].sum()), int(sizes[sizes > BLOCK].sum())
    assert store.row_summed == ("half",) and store.cube_summed == ("income", "age")
    assert store.nbytes == stored * (2 + 8) + rest * 2 + BLOCK * 8 + BLOCK * size * 8 * 2 + size * 8 * 2
    assert store.to_dict() == {"table": "t", "rows": n, "stored_rows": stored, "row_summed": ["half"],
                               "cube_summed": ["income", "age"], "bytes": store.nbytes}
    assert RowStore.build(db._con, db.cubes["t"], max_bytes=store.nbytes - 1) is None
    assert RowStore.build(db._con, db.cubes["t"], max_bytes=store.nbytes).nbytes == store.nbytes


# ------------------------------------------------------------------ the kernel's layout against the rules
def _kept_by_the_rules(rows: list[int], code: np.ndarray, g: int, r: int, k: int) -> list[bool]:
    """The rules of groupbounds.py on one person's cube rows (file order), written out: rank
    <= k' and WHERE true (code > 0) first; then her first r rows per group in her first g groups."""
    out, order, used = [], [], {}
    for rank, p in enumerate(rows, start=1):
        group = int(code[p])
        keep = rank <= k and group > 0
        if keep and group not in order:
            keep = len(order) < g
            if keep:
                order.append(group)
        if keep:
            keep = used.get(group, 0) < r
            used[group] = used.get(group, 0) + keep
        out.append(keep)
    return out


@pytest.mark.parametrize("groups", [range(4), range(8), range(21), (0, 9, 15, 30), (9, 15, 30)])
def test_the_kernel_keeps_what_the_rules_keep_for_persons_of_every_row_count(groups, monkeypatch):
    """Persons of 1 to 7 rows (the blocks of 2 to BLOCK rows, the folded one-row persons, the rest
    with ranks), every g, r, k' from 1 to 7 (k' below and above a person's rows; folded blocks
    where n <= min(g, r, k')): counts and sums per cell equal the written-out rules'. Codes (group + 1,
    0: WHERE not true) below 8: the radix patterns; more groups: the comparisons; few but large
    codes: renumbered, the radix patterns."""
    rng = np.random.default_rng(len(groups))
    used = set()  # the block kernels run: (row count, radix)
    for key, kernel in list(rowkernel.BLOCK_KERNELS.items()):
        monkeypatch.setitem(rowkernel.BLOCK_KERNELS, key, lambda *a, key=key, kernel=kernel: (used.add(key), kernel(*a)))
    size, n_cells, most = 40, 5, 7
    persons = [list(rng.integers(0, size, n)) for n in rng.permutation(np.repeat(np.arange(1, most + 1), 12))]
    persons += [[3, 3], [3, 3, 3, 3], [5, 6, 5, 6]]  # her rows in one cube row, and alternating
    half = [list(rng.integers(0, 40, len(p)) / 2) for p in persons]  # a summed column held per row
    code = rng.choice(groups, size).astype(np.int32)
    cell = rng.integers(-1, n_cells, size).astype(np.int64)
    cube_values = rng.integers(0, 100, (1, size)).astype(np.float64)
    blocks = [[i for i, p in enumerate(persons) if len(p) == n] for n in range(2, BLOCK + 1)]
    blocks.append([i for i, p in enumerate(persons) if len(p) > BLOCK])
    order = [i for block in blocks for i in block]
    parent = np.array([c for i in order for c in persons[i]], dtype=np.uint16)
    values = np.array([[v for i in order for v in half[i]]])
    starts = np.cumsum([0] + [sum(len(persons[i]) for i in block) for block in blocks[:-1]])
    rank = np.array([j + 1 for i in blocks[-1] for j in range(len(persons[i]))], dtype=np.int16)
    fold_counts = np.zeros((BLOCK, size), dtype=np.int64)
    fold_sums = np.zeros((BLOCK, 1, size))
    for p, v in zip(persons, half, strict=True):
        if len(p) <= BLOCK:
            np.add.at(fold_counts[len(p) - 1], p, 1)
            np.add.at(fold_sums[len(p) - 1, 0], p, v)
    for g in range(1, most + 1):
        for r in range(1, most + 1):
            for k in range(1, most + 1):
                counts, sums = np.zeros(n_cells, dtype=np.int64), np.zeros((2, n_cells))
                for p, v in zip(persons, half, strict=True):
                    for c, value, keep in zip(p, v, _kept_by_the_rules(p, code, g, r, k), strict=True):
                        if keep and cell[c] >= 0:
                            counts[cell[c]] += 1
                            sums[:, cell[c]] += (value, cube_values[0, c])
                got = rowkernel.kept_cells(parent, starts, rank, fold_counts, fold_sums, code, cell, k, g, r, values,
                                           np.array([0]), cube_values, np.array([0]), n_cells)
                assert got[0].tolist() == counts.tolist(), (g, r, k)
                assert got[1][0].tolist() == sums[0].tolist() and got[2][0].tolist() == sums[1].tolist(), (g, r, k)
    assert used == {(n, len(groups) <= 8) for n in range(2, BLOCK + 1)}


# ------------------------------------------------------------------ the service
SQLS = ["SELECT region, COUNT(*), SUM(income), SUM(half) FROM t WHERE age > 30 GROUP BY region",
        "SELECT grp, region, AVG(income) FROM t WHERE NOT (region = 'E') GROUP BY grp, region"]


def _answers(folder: Path, fast: bool) -> list:
    folder.mkdir()
    requests = [(who, {"sql": sql, "max_groups_per_unit": g, "max_rows_per_group": r,
                       **({"max_rows_per_unit": 4} if g == 1 else {})})
                for sql in SQLS for who in ("pure", "zcdp", "approx") for g, r in ((1, 1), (2, 3))]
    return seeded_answers(_database(folder, seed=True), requests, fast)


def test_answers_are_bit_identical_with_and_without_the_row_store_and_need_no_scan(tmp_path):
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast), fast
    assert fast == scanned
