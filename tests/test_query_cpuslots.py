"""The request threads' turns at the CPU (sdckit.query.cpuslots): at most ``slots`` threads do
Python work at once, a scan gives its turn back, and the service's answers are unchanged."""

from __future__ import annotations

import threading
import time

import pytest

from query_helpers import make_data, write_config
from sdckit.query.cpuslots import CpuSlots
from sdckit.query.data import Database
from sdckit.query.config import load_config


def _most_inside(slots: CpuSlots, threads: int, work: float = 0.02) -> int:
    """The most threads seen inside ``slots.held()`` at once when ``threads`` enter together."""
    inside, most, lock = [0], [0], threading.Lock()
    start = threading.Barrier(threads)

    def worker() -> None:
        start.wait()
        with slots.held():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(work)
            with lock:
                inside[0] -= 1

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(10)
    return most[0]


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_no_more_threads_than_slots_do_python_work_at_once(slots):
    assert _most_inside(CpuSlots(slots), 8) == slots


def test_default_is_one_slot_and_at_least_one():
    assert CpuSlots().slots == 1 and CpuSlots(0).slots == 1 and CpuSlots(3).slots == 3
    assert _most_inside(CpuSlots(), 4) == 1


def test_a_thread_inside_never_waits_when_it_enters_again():
    slots = CpuSlots(1)
    with slots.held():
        with slots.held():  # a second acquire of the one slot would wait forever
            assert slots.holding()
        assert slots.holding()
        slots.give_back()
        with slots.held():  # nor after giving it back (it may hold a lock the slot's holder waits for)
            assert not slots.holding()
    assert not slots.holding()
    assert _most_inside(slots, 3) == 1  # one slot, given back once


def test_a_scan_gives_its_slot_back_for_the_rest_of_its_request():
    slots = CpuSlots(1)
    scanning, other_done = threading.Event(), threading.Event()

    def scanner() -> None:
        with slots.held():
            slots.give_back()
            assert not slots.holding()
            scanning.set()
            assert other_done.wait(5), "another thread could not work while this one scanned"

    def other() -> None:
        scanning.wait(5)
        with slots.held():
            other_done.set()

    threads = [threading.Thread(target=scanner), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert other_done.is_set()
    assert _most_inside(slots, 3) == 1


def test_a_scan_under_a_lock_the_others_wait_for_does_not_deadlock():
    """A first-use build: thread A holds a lock and scans; B holds the one slot and waits for
    the lock. A must finish without taking a slot again."""
    slots, build = CpuSlots(1), threading.Lock()
    a_scanning, done = threading.Event(), []

    def first() -> None:
        with slots.held():
            with build:
                slots.give_back()
                a_scanning.set()
                time.sleep(0.05)  # B takes the slot and waits for the lock meanwhile
                done.append("a")

    def second() -> None:
        a_scanning.wait(5)
        with slots.held():
            with build:
                done.append("b")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert done == ["a", "b"]


def test_giving_back_without_a_slot_changes_nothing():
    slots = CpuSlots(1)
    slots.give_back()
    slots.give_back()
    assert not slots.holding()
    assert _most_inside(slots, 3) == 1  # the slot count is intact


def test_the_databases_statements_run_without_the_threads_slot(tmp_path):
    make_data(tmp_path, 200)
    db = Database(load_config(write_config(tmp_path)))
    try:
        seen, real = [], db.cursor

        class Cursor:
            def execute(self, sql, params):
                seen.append(db.cpu.holding())
                return real().execute(sql, params)

        db.cursor = lambda: Cursor()

        class Generated:
            sql, params = "SELECT 42 AS x", ()

        with db.cpu.held():
            db.execute("SELECT 1")
            assert not db.cpu.holding()
        with db.cpu.held():
            assert db.aggregate(Generated())["x"].tolist() == [42]
        assert seen == [False, False]
        assert _most_inside(db.cpu, 4) == min(4, db.cpu.slots)
    finally:
        db.close()


def test_a_query_whose_structure_is_not_built_yet_gives_its_slot_back(tmp_path):
    from sdckit.query.sql import parse

    make_data(tmp_path, 200)
    db = Database(load_config(write_config(tmp_path)))
    try:
        query = parse("SELECT SUM(income / 1000) FROM census WHERE age > 30", db.config)
        with db.cpu.held():
            assert db.fast_cells(query, 1) is not None
            assert not db.cpu.holding()  # it built the structure: a scan
        with db.cpu.held():
            assert db.fast_cells(query, 1) is not None
            assert db.cpu.holding()  # built: answered holding its slot
    finally:
        db.close()


def test_a_long_per_group_pass_gives_the_slot_back(tmp_path, monkeypatch):
    """The row store's compiled pass runs without Python's lock: a long one (from LONG_PASS_ROWS
    stored rows) gives its thread's slot back; a short one keeps it."""
    from sdckit.query import data as data_module

    import pandas as pd

    from sdckit.query.groupbounds import GroupBounds
    from sdckit.query.sql import parse

    pd.DataFrame({"pid": [1, 1, 2, 2, 3], "c": list("ababa"), "v": [1, 2, 3, 4, 5]}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "service.toml").write_text('[service]\nstate = "s.db"\n[[table]]\nname = "t"\npath = "t.csv"\n'
                                          'privacy_unit = "pid"\nmax_rows_per_unit = 2\n[table.bounds]\nv = [0, 10]\n'
                                          '[table.domains]\nc = ["a", "b"]\n')
    db = Database(load_config(tmp_path / "service.toml"))
    try:
        query = parse("SELECT c, COUNT(*) FROM t GROUP BY c", db.config)
        with db.cpu.held():
            counts, _ = db.fast_cells(query, 2, None, GroupBounds(1, 1, 2))
            assert db.cpu.holding()  # a short pass keeps the slot
        assert counts.tolist() == [3, 0]  # each person's first row: a, a, a
        monkeypatch.setattr(data_module, "LONG_PASS_ROWS", 2)
        with db.cpu.held():
            assert db.fast_cells(query, 2, None, GroupBounds(1, 1, 2))[0].tolist() == [3, 0]
            assert not db.cpu.holding()
    finally:
        db.close()
