"""Review of issue 32's row store and CPU slots (attacks, not the authors' cases).

* The row store (sdckit.query.rowstore) against a brute-force oracle of the rules of
  sdckit.query.groupbounds written out in plain Python (not the SQL, not the kernel): random
  tables (hypothesis) with persons of more rows than ``max_rows_per_unit``, rows of a person
  scattered over the file, a WHERE that is unknown (NULL) on some rows, groups that are NULL or
  outside the declared domain, many groups (>= 8: the comparisons, not the radix patterns),
  ``k'`` below a person's rows and ``g``, ``r`` above ``k'``.
* A cube of more than 2**16 rows (the ``int32`` cube-row path of the store; the service's
  cubes stop at 50,000 rows, so it is built here directly) against the truncating SQL.
* :class:`~sdckit.query.cpuslots.CpuSlots`: no slot leaked or over-released through exceptions,
  nesting and repeated give-backs; and the service's request threads (each in ``cpu.run``, as
  server.py runs them) through first-use builds, row-store passes, scans and the state's group
  commit of charges, finishing within a timeout (no deadlock) with the slot free afterwards.
* Integer GROUP BY values beyond 2**53 (the scan's path): each its own cell, as SQL groups them.
"""

from __future__ import annotations

import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.cpuslots import CpuSlots
from sdckit.query.cube import Cube
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.generate import aggregate_sql
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.rowstore import RowStore
from sdckit.query.service import Service
from sdckit.query.sql import parse

K = 5
GRPS = list(range(1, 11))  # ten groups in the domain: more than 8 with the WHERE true everywhere
CONFIG = f"""[service]
state = "state.db"
cache = false
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = {K}
[table.bounds]
income = [0, 100]
age = [0, 90]
[table.domains]
grp = {GRPS}
"""


def _write(folder: Path, frame: pd.DataFrame, config: str = CONFIG) -> Path:
    frame.to_csv(folder / "t.csv", index=False)
    (folder / "service.toml").write_text(config, encoding="utf-8")
    return folder / "service.toml"


def _oracle(frame: pd.DataFrame, low: int | None, g: int, r: int, k: int) -> tuple[list[int], list[float]]:
    """The rules written out: per person, her rows in file order; the first K (the configured
    bound) form the dp relation, of which rank <= k' and WHERE true (``age > low``: unknown where
    age is missing, so not kept) count; then her first r rows per group (a missing grp is a group,
    each value outside the domain its own) in her first g groups by their first such row."""
    counts, sums = [0] * len(GRPS), [0.0] * len(GRPS)
    ranks: dict[int, int] = {}
    order: dict[int, list] = {}
    used: dict[tuple[int, object], int] = {}
    for pid, age, grp, income in zip(frame["pid"], frame["age"], frame["grp"], frame["income"], strict=True):
        pid = int(pid)
        ranks[pid] = ranks.get(pid, 0) + 1
        if ranks[pid] > min(K, k):
            continue
        if low is not None and (pd.isna(age) or not int(age) > low):
            continue
        group = None if pd.isna(grp) else int(grp)
        mine = order.setdefault(pid, [])
        if group not in mine:
            if len(mine) >= g:
                continue
            mine.append(group)
        if used.get((pid, group), 0) >= r:
            continue
        used[pid, group] = used.get((pid, group), 0) + 1
        if group in GRPS:
            counts[GRPS.index(group)] += 1
            sums[GRPS.index(group)] += float(min(max(int(income), 0), 100))
    return counts, sums


def _store_cells(db: Database, sql: str, rows: int | None, bounds: GroupBounds):
    query = parse(sql, db.config)
    table = dp_table(query, db.config.tables[query.table])
    plan = noisy.plan(query, table, Fraction(1), rows, bounds)
    found = db.fast_cells(query, len(plan.cells), rows, bounds)
    assert found is not None, sql  # the row store answers it
    return np.asarray(found[0]).tolist(), np.asarray(found[1]["income"]).astype(float).tolist()


@st.composite
def _frames(draw) -> pd.DataFrame:
    n = draw(st.integers(10, 90))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "pid": rng.integers(0, draw(st.integers(2, 15)), n),  # persons' rows scattered over the file
        "age": pd.array(rng.integers(0, 90, n), dtype="Int64"),
        "grp": pd.array(rng.integers(0, 13, n), dtype="Int64"),  # 0, 11, 12 outside the domain
        "income": rng.integers(-20, 140, n),
    })
    frame.loc[rng.random(n) < 0.15, "age"] = pd.NA  # the WHERE unknown there
    frame.loc[rng.random(n) < 0.1, "grp"] = pd.NA
    return frame


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(frame=_frames(), cases=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 80)), st.integers(1, 7),
                                                 st.integers(1, 7), st.one_of(st.none(), st.integers(1, K))),
                                       min_size=4, max_size=8))
def test_the_row_store_keeps_what_the_written_out_rules_keep(tmp_path_factory, frame, cases):
    db = Database(load_config(_write(tmp_path_factory.mktemp("oracle"), frame)))
    try:
        assert db.row_stores.get("t") is not None or db.unique_units["t"]
        if db.unique_units["t"]:
            return
        for low, g, r, rows in cases:
            k = K if rows is None else rows
            g, r = min(g, K), min(r, K)  # (the service's fields stop at the configured bound; k' may be below)
            where = "" if low is None else f" WHERE age > {low}"
            sql = f"SELECT grp, COUNT(*), SUM(income) FROM t{where} GROUP BY grp"
            assert _store_cells(db, sql, rows, GroupBounds(g, r, k)) == _oracle(frame, low, g, r, k), (low, g, r, rows)
    finally:
        db.close()


def test_a_cube_of_more_than_2_16_rows_int32_cube_rows(tmp_path):
    """70,000 key combinations (a, b): the store's cube rows are int32; its cells equal the SQL's."""
    rng = np.random.default_rng(3)
    combos = np.arange(70_000)
    a, b = combos // 280, combos % 280
    extra = rng.integers(0, 70_000, 20_000)  # more rows on some combinations
    a, b = np.concatenate([a, a[extra]]), np.concatenate([b, b[extra]])
    n = a.size
    frame = pd.DataFrame({"pid": rng.integers(0, n // 3, n), "a": a, "b": b, "grp": rng.integers(1, 11, n),
                          "income": rng.integers(0, 100, n), "age": rng.integers(0, 90, n)})
    config = CONFIG.replace("[table.domains]", "a = [0, 249]\nb = [0, 279]\n[table.domains]", 1)
    db = Database(load_config(_write(tmp_path, frame, config)))
    try:
        t = db.config.tables["t"]
        cube = Cube.build(db.cursor(), t, max_cells=200_000, grids=db.grids["t"])
        assert cube is not None and cube.size > 2**16 and "a" in cube.keys and "b" in cube.keys
        store = RowStore.build(db.cursor(), cube)
        assert store is not None and store.parent.dtype == np.int32
        for sql in ("SELECT grp, COUNT(*), SUM(income) FROM t WHERE a > 100 GROUP BY grp",
                    "SELECT grp, COUNT(*), SUM(income) FROM t WHERE b < 7 OR a = 3 GROUP BY grp"):
            query = parse(sql, db.config)
            table = dp_table(query, t)
            for bounds in (GroupBounds(1, 1, K), GroupBounds(2, 1, K), GroupBounds(3, 2, 4)):
                plan = noisy.plan(query, table, Fraction(1), None if bounds.per_unit == K else 4, bounds)
                assert store.covers(query)
                got = store.cells(query, len(plan.cells), bounds)
                want = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(
                    query, table, "dp", rows=None if bounds.per_unit == K else 4, groups=bounds)))
                assert got[0].tolist() == np.asarray(want[0]).tolist(), (sql, bounds)
                assert got[1]["income"].tolist() == np.asarray(want[1]["income"], dtype=float).tolist()
    finally:
        db.close()


# ------------------------------------------------------------------ CPU slots
def _free(slots: CpuSlots) -> int:
    """The slots free now (taken and given back at once)."""
    got = 0
    while slots._free.acquire(blocking=False):
        got += 1
    for _ in range(got):
        slots._free.release()
    return got


def test_slots_are_never_leaked_nor_over_released():
    slots = CpuSlots(2)

    def work(i: int) -> None:
        with slots.held():
            if i % 3 == 0:
                slots.give_back()
                slots.give_back()  # twice: a no-op the second time
            with slots.held():  # nested, with or without the slot: never waits, never releases
                slots.give_back()
            if i % 2:
                raise ValueError(i)

    def thread(i: int) -> None:
        for j in range(50):
            try:
                slots.run(work, i + j)
            except ValueError:
                pass
            slots.give_back()  # outside a block: nothing held, nothing released

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert _free(slots) == 2


def test_a_holder_waiting_for_a_lock_whose_holder_gave_its_slot_back_finishes():
    """The first-use pattern (derivedcube, data._private_join_cube): B gives its slot back, then
    builds under a lock; A, holding the one slot, waits for that lock; B never takes a slot again."""
    slots, lock, built = CpuSlots(1), threading.Lock(), threading.Event()
    started = threading.Event()

    def builder() -> None:
        with slots.held():
            slots.give_back()
            with lock:
                started.set()
                built.wait(0.2)
                with slots.held():  # re-entered inside its block: no wait for the slot A holds
                    pass

    def asker() -> None:
        started.wait(5)
        with slots.held():
            with lock:
                built.set()

    threads = [threading.Thread(target=builder), threading.Thread(target=asker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert _free(slots) == 1


REQUESTS = [
    {"sql": "SELECT grp, COUNT(*), SUM(income) FROM t WHERE age > 30 GROUP BY grp", "epsilon": "1/100",
     "max_groups_per_unit": 1, "max_rows_per_group": 1},  # the row store's pass (slot given back)
    {"sql": "SELECT grp, COUNT(*) FROM t GROUP BY grp", "epsilon": 0.01},  # the cube, slot held throughout
    {"sql": "SELECT grp, AVG(income * 2) FROM t GROUP BY grp", "epsilon": "0.01"},  # a derived value: first-use build
    {"sql": "SELECT grp, MEDIAN(income) FROM t GROUP BY grp", "epsilon": 0.01},
    {"sql": "SELECT grp, COUNT(*) FROM t WHERE frac > 0.5 GROUP BY grp", "epsilon": 0.01,
     "max_groups_per_unit": 2},  # a scan (frac is no cube column)
]


def test_concurrent_requests_through_the_slot_finish_and_free_it(tmp_path):
    """Eight threads, each request in ``cpu.run`` as server.py runs it: the row store, the cube,
    first-use builds, scans and the group commit of charges (threads waiting on the state's
    condition, some holding the slot) all finish within the timeout; the slot is free afterwards,
    the budget spent exactly the sum of the answered requests' epsilons."""
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame({"pid": rng.integers(0, 120, n), "age": rng.integers(0, 90, n),
                          "grp": rng.integers(1, 11, n), "income": rng.integers(0, 100, n), "frac": rng.random(n)})
    service = Service(_write(tmp_path, frame, CONFIG.replace("age = [0, 90]", "age = [0, 90]\nfrac = [0, 1]")))
    try:
        key = service.state.add_analyst("a", "dp", epsilon=1)
        cpu = service.db.cpu
        statuses: list[int] = []
        errors: list[BaseException] = []

        def client(i: int) -> None:
            try:
                for j in range(6):
                    status, payload = cpu.run(service.query, key, REQUESTS[(i + j) % len(REQUESTS)])
                    assert status == 200, payload
                    statuses.append(status)
                    assert not cpu.holding()  # given back at the end of its request
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "deadlock: request threads still waiting"
        assert not errors, errors
        assert len(statuses) == 48 and _free(cpu) == 1
        assert service.state.analyst("a").epsilon_spent == Fraction(48, 100)
    finally:
        service.close()


# ------------------------------------------------------------------ integer groups beyond 2**53
def test_integer_groups_beyond_2_53_are_cells_of_their_own(tmp_path):
    """An integer domain of values beyond 2**53 (not a cube column: the cube takes |v| < 2**53, so
    the scan answers): 2**53 and 2**53 + 1 are two SQL groups and two declared cells. Their result
    rows were matched to cells as doubles (both 2**53): the two rows fell in one cell, one
    overwriting the other in the result's order, so one person could switch a cell from one group's
    count to the other's (far beyond the sensitivity), and the other cell read 0."""
    big = 2**53
    frame = pd.DataFrame({"pid": [1, 1, 1, 2, 2, 3, 4], "grp": [big, big + 1, big + 1, big + 1, big, big, big + 1],
                          "income": [10, 20, 30, 40, 50, 1, 2]})
    config = CONFIG.replace(f"grp = {GRPS}", f"grp = [{big}, {big + 1}]").replace("age = [0, 90]\n", "")
    db = Database(load_config(_write(tmp_path, frame, config)))
    try:
        query = parse("SELECT grp, COUNT(*), SUM(income) FROM t GROUP BY grp", db.config)
        table = dp_table(query, db.config.tables["t"])
        for bounds, want in ((None, ([3, 4], [61.0, 92.0])),  # every row
                             (GroupBounds(1, 2, K), ([2, 2], [11.0, 42.0]))):  # her first group only
            plan = noisy.plan(query, table, Fraction(1), None, bounds)
            assert db.fast_cells(query, len(plan.cells), None, bounds) is None  # scanned
            counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp", groups=bounds)))
            assert (np.asarray(counts).tolist(), np.asarray(sums["income"]).tolist()) == want, bounds
    finally:
        db.close()


def test_two_result_rows_in_one_cell_fail_loudly(tmp_path):
    """exact_cells sets each cell from its one result row: were two rows ever to map to one cell
    (as 2**53 and 2**53 + 1 did), the answer fails (a 500, logged) instead of silently keeping one."""
    db = Database(load_config(_write(tmp_path, pd.DataFrame({"pid": [1, 2], "grp": [1, 2], "income": [1, 2]}),
                                     CONFIG.replace("age = [0, 90]\n", ""))))
    try:
        query = parse("SELECT grp, COUNT(*) FROM t GROUP BY grp", db.config)
        table = dp_table(query, db.config.tables["t"])
        plan = noisy.plan(query, table, Fraction(1))
        result = {"n": np.array([1, 1]), "g0": np.array([1, 1])}  # two rows, both of the group 1
        with pytest.raises(RuntimeError, match="one answer cell"):
            noisy.exact_cells(plan, table, result)
        result["g0"] = np.array([1, 2])
        assert noisy.exact_cells(plan, table, result)[0][:2].tolist() == [1, 1]
    finally:
        db.close()
