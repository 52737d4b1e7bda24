"""Restricted mode on a table with several rows per person (sdckit.query.restricted): sets must
keep each person's rows together, size control and the audit count persons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from query_helpers import add_analyst
from sdckit.query.service import Service

CONFIG = """[service]
state = "state.db"
cache = false
[restricted]
min_query_set = 3
[[table]]
name = "visits"
path = "visits.csv"
privacy_unit = "pid"
dimensions = ["region", "age", "visit"]
[table.bounds]
income = [0, 5000]
age = [0, 150]
[table.domains]
region = ["N", "S", "E", "W"]
visit = [1, 2, 3]
"""


def _data(folder) -> pd.DataFrame:
    """20 persons with 1-3 rows (visits 1..r); region and age are the same on all rows of a person,
    income differs per row. Person 0 (age 130, region N, 3 rows) is the only one aged over 120."""
    rng = np.random.default_rng(8)
    rows = []
    for pid in range(20):
        region, age = "NSEW"[pid % 4], int(rng.integers(18, 90))  # five persons per region
        if pid == 0:
            region, age = "N", 130
        for visit in range(1, int(rng.integers(1, 4)) + 1 if pid else 4):
            rows.append({"pid": f"p{pid:02d}", "region": region, "age": age, "visit": visit,
                         "income": int(rng.integers(0, 5000))})
    frame = pd.DataFrame(rows).sample(frac=1, random_state=1)  # rows of a person not adjacent
    frame.to_csv(folder / "visits.csv", index=False)
    return frame


@pytest.fixture()
def setup(tmp_path):
    frame = _data(tmp_path)
    (tmp_path / "service.toml").write_text(CONFIG, encoding="utf-8")
    key = add_analyst(tmp_path / "service.toml", "rita", "restricted")
    service = Service(tmp_path / "service.toml")
    yield service, key, frame
    service.close()


def _ask(service, key, sql):
    return service.query(key, {"sql": sql})


def test_person_closed_sets_are_answered_exactly(setup):
    service, key, frame = setup
    status, body = _ask(service, key, "SELECT COUNT(*), SUM(income) FROM visits WHERE region IN ('N', 'S')")
    part = frame[frame.region.isin(["N", "S"])]
    assert status == 200 and body["rows"] == [[len(part), int(part.income.sum())]]  # rows, not persons
    status, body = _ask(service, key, "SELECT region, COUNT(*), SUM(income) FROM visits GROUP BY region")
    expected = frame.groupby("region").agg(n=("income", "size"), s=("income", "sum"))  # 5 persons per region
    assert status == 200 and body["rows"] == [[r, int(expected.n[r]), int(expected.s[r])] for r in "NSEW"]
    # the same groups without person 0 (the only one over 120) would reveal person 0's total
    status, body = _ask(service, key, "SELECT region, COUNT(*) FROM visits WHERE age < 121 GROUP BY region")
    assert status == 403 and "auditor" in body["error"]


def test_a_set_that_splits_a_person_is_refused_naming_the_privacy_unit(setup):
    service, key, frame = setup
    for sql in ("SELECT COUNT(*) FROM visits WHERE visit = 1",
                "SELECT visit, SUM(income) FROM visits GROUP BY visit"):
        status, body = _ask(service, key, sql)
        assert status == 403 and "some but not all rows of a person" in body["error"] and "'pid'" in body["error"]
    assert service.state.answered("visits") == []  # nothing was recorded as answered


def test_size_control_counts_persons_not_rows(setup):
    service, key, frame = setup
    persons = frame.groupby("pid").agg(age=("age", "first"), rows=("visit", "size"))
    # the two oldest persons: fewer than k = 3 persons, however many rows they have
    two = persons.sort_values("age").index[-2:]
    low = int(persons.loc[two, "age"].min())
    assert persons.loc[two, "rows"].sum() >= 3  # >= k rows, yet refused
    status, body = _ask(service, key, f"SELECT COUNT(*) FROM visits WHERE age >= {low}")
    assert status == 403 and "fewer than 3 persons" in body["error"]
    three_low = int(persons.sort_values("age")["age"].iloc[-3])
    status, body = _ask(service, key, f"SELECT COUNT(*) FROM visits WHERE age >= {three_low}")
    assert status == 200 and body["rows"] == [[int(persons[persons.age >= three_low]["rows"].sum())]]


def test_differencing_on_one_person_with_several_rows_is_refused(setup):
    service, key, frame = setup
    status, _ = _ask(service, key, "SELECT SUM(income) FROM visits WHERE region IN ('N', 'E')")
    assert status == 200
    status, body = _ask(service, key, "SELECT SUM(income) FROM visits WHERE region IN ('N', 'E') AND age < 121")
    assert status == 403 and "auditor" in body["error"]  # the difference is person 0's total income
    status, body = _ask(service, key, "SELECT COUNT(*) FROM visits WHERE region IN ('N', 'E')")
    assert status == 200
    status, body = _ask(service, key, "SELECT COUNT(*) FROM visits WHERE region IN ('N', 'E') AND NOT (age >= 121)")
    assert status == 403 and "auditor" in body["error"]  # would reveal person 0's number of visits


def test_the_audit_over_persons_survives_a_restart(setup, tmp_path):
    service, key, _ = setup
    assert _ask(service, key, "SELECT SUM(income) FROM visits WHERE region IN ('N', 'W')")[0] == 200
    service.close()
    again = Service(tmp_path / "service.toml")
    try:
        status, body = _ask(again, key, "SELECT SUM(income) FROM visits WHERE region IN ('N', 'W') AND age <= 120")
        assert status == 403 and "auditor" in body["error"]
    finally:
        again.close()
        service.close = lambda: None  # already closed
