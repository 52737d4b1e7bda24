"""A contribution bound chosen per query (issue 32): ``"max_rows_per_unit": k'`` beside the SQL,
``1 <= k' <= k`` (the configured bound). The dp relation keeps each person's rank
(``__sdc_rank``); a query with ``k' < k`` counts the first ``k'`` rows of each person, its noise
scaled by ``k'``; the cube answers at ``k`` and, with the stored rank as a key, at ``k'``;
the stored answer is per ``k'``.

Hand-worked table: person 1 has 5 rows (v = 10, groups a, b, a, b, a), persons 2..41 one row each
(v = 2, group a); configured k = 3, bounds v in [0, 10].
"""

from __future__ import annotations

import json
from fractions import Fraction

import httpx
import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED, Server
from sdckit.core.errors import ParameterError
from sdckit.query import noisy
from sdckit.query.client import Client
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.service import Service
from sdckit.query.sql import parse

OTHERS = 40  # persons 2..41, one row each, v = 2, group a
K = 3


def _write(folder, frame: pd.DataFrame | None = None, name: str = "t", cache: bool = True) -> None:
    if frame is None:
        frame = pd.DataFrame({"pid": [1] * 5 + list(range(2, 2 + OTHERS)), "v": [10] * 5 + [2] * OTHERS,
                              "g": list("abab" "a") + ["a"] * OTHERS})
    frame.to_csv(folder / f"{name}.csv", index=False)
    (folder / "service.toml").write_text(
        f'[service]\nstate = "state.db"\ncache = {str(cache).lower()}\nseed = "{SEED}"\n'
        f'[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
        '[table.bounds]\nv = [0, 10]\n[table.domains]\ng = ["a", "b"]\n'
        '[[table]]\nname = "one"\npath = "t.csv"\n[table.bounds]\nv = [0, 10]\n'
        f'[[table]]\nname = "keyed"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
        'keys_from_data = ["g"]\n[table.bounds]\nv = [0, 10]\n')


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bound")
    _write(folder)
    service = Service(folder / "service.toml")
    yield service
    service.close()


def _key(svc: Service, name: str, **budget) -> str:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # huge test budgets
        return svc.state.add_analyst(name, budget.pop("mode", "dp"), budget.get("epsilon"), budget.get("delta", 0),
                                     None, budget.get("rho"))


def _ask(svc: Service, key: str, sql: str, rows=None, **loss):
    body = {"sql": sql, **loss}
    if rows is not None:
        body["max_rows_per_unit"] = rows
    return svc.query(key, body)


# ------------------------------------------------------------------ hand-worked answers
@pytest.mark.parametrize("rows, kept", [(1, 1), (2, 2), (3, 3), (None, 3)])
def test_count_and_sum_at_huge_epsilon_count_the_person_k_prime_times(svc, rows, kept):
    """COUNT(*) = 40 + min(5, k'), SUM(v) = 80 + 10 min(5, k'); by g: person 1's first k' rows are
    a, b, a (so a: 40 + ceil(k'/2), b: floor(k'/2)). epsilon 1000: the count's noise scale is
    k'/500 (P(noise != 0) < 1e-100), the sum's 10 k'/500 (95% radius < 0.2)."""
    key = _key(svc, f"huge{rows}", epsilon="1000000")
    for sql, expected in (("SELECT COUNT(*), SUM(v) FROM t", [[OTHERS + kept, 2.0 * OTHERS + 10 * kept]]),
                          ("SELECT g, COUNT(*) FROM t GROUP BY g",
                           [["a", OTHERS + (kept + 1) // 2], ["b", kept // 2]]),
                          ("SELECT COUNT(*) FROM t WHERE v > 5", [[kept]])):
        status, body = _ask(svc, key, sql, rows, epsilon=1000)
        assert status == 200, body
        assert body["max_rows_per_unit"] == kept
        assert f"at most {kept} row(s) per privacy unit" in body["mechanism"]
        for got_row, want_row in zip(body["rows"], expected, strict=True):
            for got, want in zip(got_row, want_row, strict=True):
                assert got == want if not isinstance(want, float) else abs(got - want) < 1.0


def test_the_fast_path_holds_the_configured_bound_only(svc):
    """The cube covers these queries at k; at k' < k the cube with the stored rank (Cube.ranked)
    counts person 1's first k' rows only (a, b, a: hand-worked), as the scan."""
    q = parse("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", svc.config)
    want = {1: ([41, 0], [90.0, 0.0]), 2: ([41, 1], [90.0, 10.0]), K: ([42, 1], [100.0, 10.0])}
    for rows in (None, 1, 2, K):
        counts, sums = svc.db.fast_cells(q, 2, rows)
        assert (counts.tolist(), sums["v"].tolist()) == want[rows or K]


def test_the_stated_noise_scale_is_proportional_to_k_prime(svc):
    """epsilon 1/2, split over COUNT and SUM (1/4 each): the count's geometric scale k'/(1/4)
    = 4 k' (exact on the 2**-20 grid), the sum's Laplace scale >= 10 k' / (1/4) = 40 k' (its dyadic
    grid rounds up by less than 0.1%); ratio to the configured k: k'/3."""
    key = _key(svc, "scale", epsilon="1000")
    scales = {}
    for rows in (1, 2, None):
        status, body = _ask(svc, key, "SELECT COUNT(*), SUM(v) FROM t WHERE v >= 0", rows, epsilon="1/2")
        assert status == 200, body
        scales[rows or K] = body["noise_scale"]
    for k in (1, 2, 3):
        count, total = scales[k]
        assert count == 4 * k
        assert 40 * k <= total <= 40 * k * 1.001
        assert count / scales[K][0] == pytest.approx(k / K) and total / scales[K][1] == pytest.approx(k / K, rel=2e-3)


def test_gaussian_answers_use_k_prime(svc):
    """rho-zCDP, rho 1/2 for one COUNT: variance k'^2 / (2 rho) = k'^2, so the stated standard
    deviation is k' (1 at k' = 1, 3 at k = 3); at rho 1000 the count is 40 + k' within 1."""
    key = _key(svc, "zcdp", rho="1000000")
    for rows, kept in ((1, 1), (None, 3)):
        status, body = _ask(svc, key, "SELECT COUNT(*) FROM t", rows, rho="1/2")
        assert status == 200, body
        assert body["max_rows_per_unit"] == kept
        assert body["noise_scale"][0] == {"sigma": pytest.approx(kept)}
        status, body = _ask(svc, key, "SELECT COUNT(*) FROM t WHERE v >= 0", rows, rho=1000)
        assert abs(body["rows"][0][0] - (OTHERS + kept)) <= 1


def test_keys_from_the_data_use_k_prime(svc):
    """(epsilon, delta) GROUP BY keys from the data: at k' = 1 person 1 counts once, in 'a' (her
    first row), so 'a' holds 41 rows and 'b' no person (never released); the threshold's k is k'."""
    key = _key(svc, "keys", epsilon="1000000", delta="1/1000")
    status, body = _ask(svc, key, "SELECT g, COUNT(*) FROM keyed GROUP BY g", 1, epsilon=1000, delta="1e-9")
    assert status == 200, body
    assert body["max_rows_per_unit"] == 1 and body["key_selection"]["k"] == 1
    assert [row[0] for row in body["rows"]] == ["a"] and abs(body["rows"][0][1] - (OTHERS + 1)) <= 1


# ------------------------------------------------------------------ the attack: neighbouring tables
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_person_with_many_rows_moves_the_noiseless_answer_by_at_most_k_prime(tmp_path, seed):
    """Table D and its neighbour D' without person 0 (9 rows, v = 10, random groups): for every
    k' the exact per-group COUNT vector moves by min(9, k') = k' in L1 and the clamped SUM vector
    by 10 k', the sensitivities the plan states (so the noise at k' covers it)."""
    rng = np.random.default_rng(seed)
    others = pd.DataFrame({"pid": rng.integers(1, 30, 60), "v": rng.integers(0, 15, 60), "g": rng.choice(["a", "b"], 60)})
    person = pd.DataFrame({"pid": [0] * 9, "v": [10] * 9, "g": rng.choice(["a", "b"], 9)})
    frame = pd.concat([person, others]).sample(frac=1.0, random_state=seed)  # her rows anywhere in the file
    answers = {}
    for name, data in (("with", frame), ("without", frame[frame.pid != 0])):
        folder = tmp_path / name
        folder.mkdir()
        _write(folder, data)
        db = Database(load_config(folder / "service.toml"))
        t = db.config.tables["t"]
        q = parse("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", db.config)
        for rows in (1, 2, 3):
            plan = noisy.plan(q, t, Fraction(1), rows)
            assert plan.sensitivities == {"count": float(rows), "v": 10.0 * rows}
            answers[name, rows] = noisy.exact_cells(plan, t, db.aggregate(aggregate_sql(q, t, "dp", rows=rows)))
        db.close()
    for rows in (1, 2, 3):
        (c1, s1), (c0, s0) = answers["with", rows], answers["without", rows]
        assert np.abs(c1 - c0).sum() == rows
        assert np.abs(s1["v"] - s0["v"]).sum() == pytest.approx(10 * rows)


# ------------------------------------------------------------------ the stored answers and the charges
def test_the_stored_answer_is_per_bound_and_each_bound_is_charged(svc):
    key = _key(svc, "cache", epsilon="10")
    sql = "SELECT COUNT(*) FROM t WHERE g = 'b'"
    first = _ask(svc, key, sql, 1, epsilon="1/4")[1]
    second = _ask(svc, key, sql, 2, epsilon="1/4")[1]
    assert (first["max_rows_per_unit"], second["max_rows_per_unit"]) == (1, 2)
    assert not first["cached"] and not second["cached"]
    assert first["noise_scale"] != second["noise_scale"]
    assert svc.state.analyst("cache").epsilon_spent == Fraction(1, 2)
    again = _ask(svc, key, sql, 1, epsilon="1/4")[1]
    assert again["cached"] and again["max_rows_per_unit"] == 1 and again["rows"] == first["rows"]
    # asking the configured bound is the query without the field: one stored answer
    configured = _ask(svc, key, sql, None, epsilon="1/4")[1]
    explicit = _ask(svc, key, sql, K, epsilon="1/4")[1]
    assert not configured["cached"] and explicit["cached"] and explicit["rows"] == configured["rows"]
    assert configured["max_rows_per_unit"] == K == explicit["max_rows_per_unit"]
    assert svc.state.analyst("cache").epsilon_spent == Fraction(3, 4)


# ------------------------------------------------------------------ refusals: 400, nothing charged
@pytest.mark.parametrize("i, bad", list(enumerate([0, K + 1, -1, "2", True, 1.5, 2.0, None, [1], {"k": 1}])))
def test_bad_bounds_are_a_400_with_nothing_charged(svc, i, bad):
    name = f"bad{i}"
    key = _key(svc, name, epsilon="1")
    status, body = svc.query(key, {"sql": "SELECT COUNT(*) FROM t", "epsilon": "1/2", "max_rows_per_unit": bad})
    assert status == 400, body
    assert "'max_rows_per_unit' must be an int from 1 to 3" in body["error"] and "\n" not in body["error"]
    assert svc.state.analyst(name).epsilon_spent == 0 and svc.state.ledger(name) == []


def test_a_table_of_one_row_per_person_takes_only_1(svc):
    key = _key(svc, "one", epsilon="2000")
    status, body = _ask(svc, key, "SELECT COUNT(*) FROM one", 1, epsilon=1000)
    assert status == 200 and body["max_rows_per_unit"] == 1 and body["rows"][0][0] == 5 + OTHERS
    status, body = _ask(svc, key, "SELECT COUNT(*) FROM one", 2, epsilon="1/2")
    assert status == 400 and "from 1 to 1" in body["error"]
    assert svc.state.analyst("one").epsilon_spent == Fraction(1000)


def test_restricted_and_table_requests_refuse_the_field(svc):
    key = _key(svc, "exact", mode="restricted")
    status, body = svc.query(key, {"sql": "SELECT COUNT(*) FROM t", "max_rows_per_unit": 1})
    assert status == 400 and "restricted" in body["error"] and "'max_rows_per_unit'" in body["error"]
    status, body = svc.table(key, {"table": "t", "dimensions": ["g"], "max_rows_per_unit": 1})
    assert status == 400 and "'max_rows_per_unit'" in body["error"]


# ------------------------------------------------------------------ over HTTP, raw and through the client
def test_http_and_the_client_builder_send_the_bound(tmp_path):
    _write(tmp_path)
    setup = Service(tmp_path / "service.toml")  # closed before the server takes the state's lock
    try:
        key = _key(setup, "web", epsilon="100000")
    finally:
        setup.close()
    server = Server(tmp_path / "service.toml")
    try:
        r = httpx.post(server.url + "/v1/query", json={"sql": "SELECT COUNT(*) FROM t", "epsilon": 1000,
                                                        "max_rows_per_unit": 1},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 200 and r.json()["rows"] == [[OTHERS + 1]] and r.json()["max_rows_per_unit"] == 1
        r = httpx.post(server.url + "/v1/query", json={"sql": "SELECT COUNT(*) FROM t", "epsilon": 1,
                                                        "max_rows_per_unit": "2"},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 400 and "max_rows_per_unit" in r.json()["error"]
        with Client(server.url, key) as c:
            frame = c.count("t", by="g", epsilon=1000, max_rows_per_unit=2)
            assert frame.attrs["max_rows_per_unit"] == 2 and frame["count"].tolist() == [OTHERS + 1, 1]
            frame = c.sum("t", "v", epsilon=1000, max_rows_per_unit=1)
            assert abs(frame["sum_v"][0] - (2 * OTHERS + 10)) < 1
            raw = c.query("SELECT COUNT(*) FROM t WHERE v > 5", epsilon=1000, max_rows_per_unit=3)
            assert raw["rows"] == [[3]] and raw["max_rows_per_unit"] == 3
            spent = c.budget()["epsilon_spent"]
            for bad in (0, True, 1.5, "2"):
                with pytest.raises(ParameterError, match="max_rows_per_unit"):
                    c.count("t", epsilon=1, max_rows_per_unit=bad)
            assert c.budget()["epsilon_spent"] == spent  # nothing sent
        key_file = tmp_path / "web.key"
        key_file.write_text(key)
        from typer.testing import CliRunner

        from sdckit.cli.app import app
        out = CliRunner().invoke(app, ["query", "SELECT COUNT(*) FROM t", "--url", server.url, "--key-file",
                                       str(key_file), "--epsilon", "1000", "--max-rows-per-unit", "1", "--json"])
        assert out.exit_code == 0, out.output
        answer = json.loads(out.output)
        assert answer["max_rows_per_unit"] == 1 and answer["rows"] == [[OTHERS + 1]]  # the person counted once
        out = CliRunner().invoke(app, ["query", "SELECT COUNT(*) FROM t", "--url", server.url, "--key-file",
                                       str(key_file), "--epsilon", "1", "--max-rows-per-unit", "0"])
        assert out.exit_code != 0 and "max_rows_per_unit" in str(out.exception) + out.output
    finally:
        server.stop()
