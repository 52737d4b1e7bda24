"""Restricted mode against the attacks of issue 27 (DESIGN.md section 7).

* The refusal oracle: `age < 30 OR (age = 37 AND income > x)` was refused exactly when the only
  37-year-old earned more than x, so a binary search on x read her income. Conditions may now name
  public dimensions only: the query is a 400 whatever x and whatever the data.
* The union of small atoms: SUM over `age < 30 OR age IN (37, 38)` minus SUM over `age < 30` is the
  total of two persons; the auditor now refuses any derivable total over fewer than k persons, not
  only the total of one elementary set.
* A property test: random strategies over unions of cells of two public dimensions at small n; the
  auditor's decisions equal a brute-force oracle (exact rational rank over the records), and what
  the answered queries determine holds no total over fewer than k records.
* Simulatability with respect to confidential values of the exact audit: the same queries on two
  data sets that differ only in incomes get the same decisions (status and message) when the
  interval audit is off (``p_percent = 0``); with it on, SUM decisions depend on the values by
  design (tests/test_query_interval.py, DESIGN.md section 7).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from query_helpers import Server, add_analyst, post, small_totals_learnt
from sdckit.core.errors import ParameterError
from sdckit.query.audit.auditor import Auditor
from sdckit.query.config import load_config
from sdckit.query.service import Service

HIDDEN = 41_234  # the only 37-year-old's income
CONFIG = """[service]
state = "state.db"
cache = false
[restricted]
min_query_set = 5
[[table]]
name = "people"
path = "people.csv"
dimensions = ["age", "region"]
[table.bounds]
income = [0, 200000]
age = [0, 120]
[table.domains]
region = ["N", "S", "E", "W"]
"""


def _people(folder, hidden: int = HIDDEN, seed: int = 5, config: str = CONFIG) -> pd.DataFrame:
    """40 persons: ten aged 20-29, the only 37-year-old (region N, income ``hidden``), the only
    38-year-old (region E), 28 aged 40-67 (7 in region S). Incomes are uniform from ``seed``."""
    rng = np.random.default_rng(seed)
    ages = [*range(20, 30), 37, 38, *range(40, 68)]
    regions = [*("NSEW"[i % 4] for i in range(10)), "N", "E", *("NSEW"[i % 4] for i in range(28))]
    frame = pd.DataFrame({"age": ages, "region": regions, "income": rng.integers(0, 200_001, len(ages))})
    frame.loc[frame.age == 37, "income"] = hidden
    frame.to_csv(folder / "people.csv", index=False)
    (folder / "service.toml").write_text(config, encoding="utf-8")
    return frame


def _oracle_attack(url: str, key: str, table: str) -> tuple[list[tuple[int, str]], int]:
    """The binary search of issue 27: 'refused' read as 'income > x'. Returns the responses and
    the income the attack concludes."""
    assert post(url, key, f"SELECT COUNT(*) FROM {table} WHERE age < 30").status_code == 200
    low, high, seen = 0, 200_000, []
    for _ in range(18):
        x = (low + high) // 2
        r = post(url, key, f"SELECT COUNT(*) FROM {table} WHERE age < 30 OR (age = 37 AND income > {x})")
        seen.append((r.status_code, r.json().get("error", "").replace(table, "T")))
        if r.status_code == 200:
            high = x  # answered: the set was the tracker alone, income <= x
        else:
            low = x + 1
    return seen, low


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One real server with two tables that differ only in the 37-year-old's income: ``people``
    (HIDDEN) and ``twin`` (150,000)."""
    folder = tmp_path_factory.mktemp("attacks")
    twin = folder / "twin"
    twin.mkdir()
    frame = _people(folder)
    _people(twin, 150_000)
    (twin / "people.csv").rename(folder / "twin.csv")
    second = CONFIG[CONFIG.index("[[table]]"):].replace('name = "people"', 'name = "twin"').replace("people.csv", "twin.csv")
    (folder / "service.toml").write_text(CONFIG + second, encoding="utf-8")
    running = Server(folder / "service.toml")
    yield running, folder / "service.toml", frame
    running.stop()


def test_the_refusal_oracle_learns_nothing_over_http(server):
    running, config, _ = server
    key = add_analyst(config, "eve", "restricted")
    seen_a, guess_a = _oracle_attack(running.url, key, "people")
    seen_b, guess_b = _oracle_attack(running.url, key, "twin")
    assert seen_a == seen_b  # the same responses whatever her income
    assert len(set(seen_a)) == 1  # ... and whatever x
    status, error = seen_a[0]
    assert status == 400 and "'income' is confidential" in error and "(age, region)" in error
    assert guess_a == guess_b and (guess_a != HIDDEN or guess_b != 150_000)


def test_the_union_of_two_small_sets_is_refused_over_http(server):
    running, config, frame = server
    key = add_analyst(config, "mallory", "restricted")
    first = post(running.url, key, "SELECT SUM(income) FROM people WHERE age < 30")
    second = post(running.url, key, "SELECT SUM(income) FROM people WHERE (region = 'S' AND age >= 30) OR age = 37")
    third = post(running.url, key, "SELECT SUM(income) FROM people WHERE age < 30 OR age IN (37, 38)")
    assert first.status_code == 200 and first.json()["rows"] == [[int(frame.income[frame.age < 30].sum())]]
    assert second.status_code == 200
    # answered, third - first would be the incomes of the 37- and 38-year-olds together: one of
    # them would learn the other's exact income
    assert third.status_code == 403 and "fewer than 5" in third.json()["error"]


# ------------------------------------------------------------------ the rule on names (400)
@pytest.fixture()
def service(tmp_path):
    _people(tmp_path)
    key = add_analyst(tmp_path / "service.toml", "rita", "restricted")
    dp_key = add_analyst(tmp_path / "service.toml", "dana", "dp", "10")
    s = Service(tmp_path / "service.toml")
    yield s, key, dp_key
    s.close()


@pytest.mark.parametrize("sql,words", [
    ("SELECT COUNT(*) FROM people WHERE income > 1000", ["a condition", "'income' is confidential", "(age, region)"]),
    ("SELECT SUM(income) FROM people WHERE NOT (income BETWEEN 0 AND 10)", ["'income' is confidential"]),
    ("SELECT SUM(age) FROM people WHERE age < 30", ["SUM(age)", "public dimension"]),
    ("SELECT region, AVG(age) FROM people GROUP BY region", ["AVG(age)", "public dimension"]),
])
def test_names_outside_the_rule_are_a_400_decided_from_the_text(service, sql, words):
    s, key, dp_key = service
    status, body = s.query(key, {"sql": sql})
    assert status == 400 and all(w in body["error"] for w in words), body
    assert "\n" not in body["error"]
    assert s.state.answered("people") == []
    # dp mode is not restricted by the dimensions
    assert s.query(dp_key, {"sql": sql, "epsilon": 0.1})[0] == 200


def test_dimensions_default_to_the_columns_with_a_domain_and_are_checked(tmp_path):
    _people(tmp_path)
    path = tmp_path / "service.toml"
    path.write_text(CONFIG.replace('dimensions = ["age", "region"]\n', ""), encoding="utf-8")
    table = load_config(path).tables["people"]
    assert table.public_dimensions == ("region",) and table.to_dict()["dimensions"] == ["region"]
    for bad, words in (('dimensions = ["wage"]', "'wage', which is not declared"),
                       ('dimensions = "age"', "must be a list of column names"),
                       ('dimensions = ["age", "age"]', "names a column twice")):
        path.write_text(CONFIG.replace('dimensions = ["age", "region"]', bad), encoding="utf-8")
        with pytest.raises(ParameterError, match="table 'people' 'dimensions'.*" + words):
            load_config(path)


def test_a_history_outside_the_rule_stops_restricted_answers(tmp_path):
    """A query answered under an older configuration that the rule now refuses cannot be
    replayed as the audit assumes: restricted answers on the table stop (fail closed)."""
    _people(tmp_path)
    key = add_analyst(tmp_path / "service.toml", "rita", "restricted")
    s = Service(tmp_path / "service.toml")
    try:
        s.state.record_answered("rita", "people", "SELECT COUNT(*) FROM people WHERE income > 5", s.db.fingerprints["people"])
        status, body = s.query(key, {"sql": "SELECT COUNT(*) FROM people WHERE age < 30"})
        assert status == 403 and "no longer accepts" in body["error"]
    finally:
        s.close()


# ------------------------------------------------------------------ simulatability (service)
def _random_sql(rng: np.random.Generator) -> str:
    def atom() -> str:
        u = rng.random()
        if u < 0.08:
            return f"income > {int(rng.integers(0, 200_000))}"  # a 400, on any data
        if u < 0.4:
            return f"age {rng.choice(['<', '<=', '>', '>=', '=', '<>'])} {int(rng.integers(18, 70))}"
        if u < 0.6:
            return f"age IN ({', '.join(str(int(a)) for a in rng.integers(18, 70, 3))})"
        if u < 0.75:
            low = int(rng.integers(18, 60))
            return f"age BETWEEN {low} AND {low + int(rng.integers(0, 20))}"
        return f"region IN ({', '.join(repr(str(r)) for r in rng.choice(list('NSEW'), 2, replace=False))})"

    where = atom()
    for _ in range(int(rng.integers(0, 3))):
        where = f"({where}) {rng.choice(['AND', 'OR'])} {'NOT ' if rng.random() < 0.2 else ''}({atom()})"
    what = rng.choice(["COUNT(*)", "SUM(income)", "AVG(income)", "COUNT(*), SUM(income)"])
    if rng.random() < 0.2:
        return f"SELECT region, {what} FROM people WHERE {where} GROUP BY region"
    return f"SELECT {what} FROM people WHERE {where}"


def test_decisions_do_not_depend_on_confidential_values(tmp_path):
    """Two data sets with the same ages and regions and other incomes: 60 random queries (a few
    naming income) get the same status and the same message on both, with the interval audit
    off (its refusals depend on the values: tests/test_query_interval.py)."""
    rng = np.random.default_rng(27)
    queries = [_random_sql(rng) for _ in range(60)]
    outcomes = []
    for seed in (1, 2):
        folder = tmp_path / str(seed)
        folder.mkdir()
        frame = _people(folder, hidden=int(seed * 70_000), seed=seed,
                        config=CONFIG.replace("min_query_set = 5", "min_query_set = 5\np_percent = 0"))
        key = add_analyst(folder / "service.toml", "rita", "restricted")
        s = Service(folder / "service.toml")
        try:
            outcomes.append([(lambda r: (r[0], r[1].get("error")))(s.query(key, {"sql": q})) for q in queries])
        finally:
            s.close()
        outcomes[-1].append(int(frame.income.sum()))
    a, b = outcomes
    assert a[-1] != b[-1]  # the incomes differ
    assert a[:-1] == b[:-1]
    assert {s for s, _ in a[:-1]} == {200, 400, 403}  # the sequence exercised every outcome


# ------------------------------------------------------------------ property test (auditor)
_cells = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=6, max_size=8)
_step = st.tuples(st.sampled_from(["count", "sum"]), st.sets(st.tuples(st.integers(0, 2), st.integers(0, 1))),
                  st.sampled_from([None, 0, 1]))


@settings(max_examples=60, deadline=None)
@given(cells=_cells, k=st.integers(2, 3), steps=st.lists(_step, min_size=1, max_size=8))
# cells (0, 1) and (1, 1) hold one record each: the second answer minus the first is their difference
@example(cells=[(0, 0), (0, 0), (0, 1), (1, 0), (1, 0), (1, 1)], k=3,
         steps=[("count", {(0, 1), (0, 0)}, None), ("count", {(1, 1), (0, 0)}, None)])
# the union attack of issue 27 on cells: SUM(A), SUM(B + {x}), SUM(A + {x, y}) gives x + y
@example(cells=[(0, 0), (0, 0), (0, 0), (1, 0), (1, 0), (1, 0), (2, 0), (2, 1), (1, 1), (1, 1), (1, 1)], k=3,
         steps=[("sum", {(0, 0)}, None), ("sum", {(1, 0), (2, 0)}, None), ("sum", {(0, 0), (2, 0), (2, 1)}, None)])
def test_random_strategies_over_cells_never_determine_a_small_total(cells, k, steps):
    """Records in cells of two public dimensions (a in 0..2, b in 0..1); each query is COUNT or SUM
    over a union of cells, or over its groups by one dimension. The decisions are the brute-force
    oracle's; afterwards no non-zero combination of the answered sets (and the total) is
    supported on fewer than k records."""
    n = len(cells)
    a = np.array([c[0] for c in cells])
    b = np.array([c[1] for c in cells])
    auditor = Auditor(n, k)
    answered: dict[str, list[np.ndarray]] = {"count": [], "sum": []}
    ones = [np.ones(n, dtype=bool)]
    for kind, union, group in steps:
        where = np.array([c in union for c in cells], dtype=bool)
        if group is None:
            batch = [where]
        else:
            dimension = (a, b)[group]
            batch = [where & (dimension == v) for v in range((3, 2)[group])]
        size_ok = all(k <= int(m.sum()) <= n - k for m in batch)
        expected = size_ok and not small_totals_learnt(k, ones + answered[kind], ones + answered[kind] + batch)
        column = "income" if kind == "sum" else None
        assert auditor.check(batch, kind, column).allowed == expected
        if expected:
            auditor.record(batch, kind, column)
            answered[kind].extend(batch)
    for kind in ("count", "sum"):
        assert not small_totals_learnt(k, [], ones + answered[kind])


def test_a_search_past_its_work_limit_refuses(monkeypatch):
    """Beyond the search's work limit the auditor refuses (it cannot rule a disclosure out)."""
    import sdckit.query.audit.support as support

    n = 12
    first = np.zeros(n, dtype=bool)
    first[:6] = True
    second = first.copy()
    second[[5, 6]] = [False, True]  # first - second = e_5 - e_6: a difference of two records
    a = Auditor(n, 3)
    a.record([first], "sum", "x")
    monkeypatch.setattr(support, "WORK_LIMIT", 0)
    decision = a.check([second], "sum", "x")
    assert not decision.allowed and "cannot rule out" in decision.reason
