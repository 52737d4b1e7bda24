"""The query service's table mode (issue 30 section 3): POST /v1/table over the real server on
127.0.0.1 (a free port), every cell perturbed by the cell key method.

Checked: the published counts equal :func:`sdckit.tabular.cell_key_counts` on the same records,
keys and p-table (an independent path: it groups the records itself, with pandas); the same cell
is the same number in every table it appears in; a differencing attack gets noise, not the
person; where-filter codes must be declared; no response holds a cell's n, cell key or
perturbation; min_count suppression; the drawn record keys (0600, reused after a restart, refused
on changed data); bad requests (400), keys (401) and tables (403); every request in the audit log.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import httpx
import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED, Server, add_analyst
from sdckit.core.errors import DataError, ParameterError
from sdckit.query.config import load_config
from sdckit.query.service import Service
from sdckit.query.tables import CellKeyCube, keys_path
from sdckit.tabular import cell_key_counts, ptable, write_ptable
from sdckit.tabular.cellkey import Lookup

N = 3000
AGES = ["0-14", "15-64", "65-84", "85+"]
D, V, JS = 3, 2.0, 1
DOMAIN_SIZES = {"region": 4, "sex": 2, "age": 4, "hh": 5}


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(20261128)
    return pd.DataFrame({
        "region": rng.choice(list("NSEW"), N),
        "sex": rng.choice(["F", "M"], N),
        "age": rng.choice(AGES, N, p=[0.2, 0.6, 0.17, 0.03]),
        "hh": rng.integers(1, 5, N),  # numeric domain [1..5]: 5 never occurs
        "rkey": rng.integers(0, 10**8, N) / 1e8,
    })


TABLE = """[[table]]
name = "{name}"
path = "census.csv"
mode = "tables"
[table.domains]
region = ["N", "S", "E", "W"]
sex = ["F", "M"]
age = ["0-14", "15-64", "65-84", "85+"]
hh = [1, 2, 3, 4, 5]
[table.ckm]
{extra}
"""
PARAMETERS = "D = 3\nV = 2.0\njs = 1\n"


def _config(folder, extra_tables: str = "") -> "os.PathLike":
    text = "\n".join([
        "[service]", 'state = "state.db"', f'seed = "{SEED}"',
        TABLE.format(name="census", extra=PARAMETERS + 'record_key = "rkey"'),
        TABLE.format(name="drawn", extra=PARAMETERS + "min_count = 5"),
        "[[table]]", 'name = "sqltable"', 'path = "census.csv"', "[table.domains]", 'region = ["N", "S", "E", "W"]',
        extra_tables])
    path = folder / "service.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    frame = _frame()
    frame.to_csv(folder / "census.csv", index=False)
    config = _config(folder)
    keys = {"ana": add_analyst(config, "ana", "restricted"),
            "dee": add_analyst(config, "dee", "dp", "1"),
            "bob": add_analyst(config, "bob", "restricted", tables="sqltable")}
    server = Server(config)
    yield {"url": server.url, "keys": keys, "frame": frame, "folder": folder, "config": config, "server": server}
    server.stop()


@pytest.fixture(scope="module")
def pt():
    return ptable(D, V, js=JS)


def _ask(service, body, key="ana", raw=None):
    headers = {"Authorization": f"Bearer {service['keys'][key]}"} if key else {}
    if raw is not None:
        return httpx.post(service["url"] + "/v1/table", content=raw, headers=headers, timeout=30)
    return httpx.post(service["url"] + "/v1/table", json=body, headers=headers, timeout=30)


def _cells(response) -> dict[tuple[str, ...], int | None]:
    assert response.status_code == 200, response.text
    payload = response.json()
    return {tuple(str(c) for c in row[:-1]): row[-1] for row in payload["rows"]}


def _oracle(frame, dims, pt, key="rkey", where=None) -> dict[tuple[str, ...], int]:
    for dim, codes in (where or {}).items():
        frame = frame[frame[dim].isin(codes)]
    ref = cell_key_counts(frame, dims, key, pt)
    return {tuple(str(c) for c in row[:len(dims)]): int(row[-1])
            for row in ref[[*dims, "n_pert"]].itertuples(index=False)}


def _audit_rows(service) -> list[tuple]:
    con = sqlite3.connect(service["folder"] / "state.db")
    try:
        return con.execute("SELECT analyst, sql, decision, status FROM audit ORDER BY id").fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------ the numbers
@pytest.mark.parametrize("dims, where", [
    (["region"], None),
    (["region", "sex"], None),
    (["sex", "age", "region"], None),
    (["hh", "age"], None),
    (["region", "age"], {"age": ["85+", "0-14"]}),
    (["sex"], {"region": ["N"], "hh": [2, 3]}),
])
def test_counts_equal_cell_key_counts(service, pt, dims, where):
    """Every published cell (margins included) is cell_key_counts' n_pert on the same records,
    keys and p-table; codes absent from the data are empty cells (0)."""
    body = {"table": "census", "dimensions": dims, "measure": "count"}
    if where:
        body["where"] = where
    served = _cells(_ask(service, body))
    ref = _oracle(service["frame"], dims, pt, where=where)
    sizes = [1 + len((where or {}).get(d, DOMAIN_SIZES[d])) if where and d in where else 1 + DOMAIN_SIZES[d]
             for d in dims]
    assert len(served) == int(np.prod(sizes))
    assert set(ref) <= set(served)
    for cell, value in served.items():
        assert value == ref.get(cell, 0), cell
    assert served[("Total",) * len(dims)] == ref[("Total",) * len(dims)]


def test_drawn_keys_give_cell_key_counts_and_are_kept_private(service, pt):
    """The drawn keys: a 0600 file beside the state database; the answers are cell_key_counts'
    with those keys (min_count 5: counts 1..4 published as null)."""
    path = keys_path(service["folder"] / "state.db", "drawn")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with np.load(path) as stored:
        keys = stored["keys"]
    frame = service["frame"].assign(rkey=keys)
    response = _ask(service, {"table": "drawn", "dimensions": ["region", "sex", "age"]})
    served = _cells(response)
    ref = _oracle(frame, ["region", "sex", "age"], pt)
    suppressed = 0
    for cell, value in served.items():
        if 1 <= ref.get(cell, 0) < 5:
            assert value is None, cell
            suppressed += 1
        else:
            assert value == ref.get(cell, 0), cell
    assert suppressed >= 1 and response.json()["suppressed"] == suppressed
    assert response.json()["min_count"] == 5
    # the keys differ from the data's column: another table, other noise
    assert not np.array_equal(keys, service["frame"]["rkey"].to_numpy())


def test_same_cell_is_the_same_in_every_table(service):
    """(region = N) as the margin of region x sex, of sex x region, of region x age x hh, alone,
    and under a where filter keeping every age: one number. The grand total likewise."""
    n_values, totals = set(), set()
    for dims, where in [(["region"], None), (["region", "sex"], None), (["sex", "region"], None),
                        (["region", "age", "hh"], None), (["region"], {"age": AGES}),
                        (["region", "sex"], {"hh": [1, 2, 3, 4, 5]})]:
        body = {"table": "census", "dimensions": dims, **({"where": where} if where else {})}
        payload = _ask(service, body).json()
        for row in payload["rows"]:
            codes = dict(zip(payload["columns"], row))
            others = [codes[d] for d in dims if d != "region"]
            if all(c == "Total" for c in others):
                (n_values if codes["region"] == "N" else totals if codes["region"] == "Total" else set()).add(row[-1])
    assert len(n_values) == 1 and len(totals) == 1
    # and a cell inside a table equals the same cell reached by a where filter
    full = _cells(_ask(service, {"table": "census", "dimensions": ["region", "sex"]}))
    filtered = _cells(_ask(service, {"table": "census", "dimensions": ["sex"], "where": {"region": ["S"]}}))
    assert filtered[("F",)] == full[("S", "F")] and filtered[("Total",)] == full[("S", "Total")]


def test_differencing_two_tables_gives_noise_not_the_person(pt):
    """A person alone in (region N, sex F): the F cell of sex over every region minus the F cell
    of sex over S, E, W would be exactly 1 without perturbation. Over 400 independent key draws,
    the difference of the published cells has mean 1 (unbiased; 4.5 standard errors), variance
    2 var(v) of the p-table's last row (the two cells' keys differ by one uniform record key, so
    their perturbations are independent; within 25%), and equals 1 in fewer than 35% of draws
    (P(pA = pB) = sum p_v^2 ~ 0.21 here): the difference does not reveal the person."""
    rng = np.random.default_rng(5)
    n = 600
    region = rng.integers(1, 4, n)      # S, E, W
    sex = rng.integers(0, 2, n)
    region[0], sex[0] = 0, 0            # the one person in (N, F)
    domains = {"region": ("N", "S", "E", "W"), "sex": ("F", "M")}
    lookup = Lookup(pt, 8)
    diffs = []
    for draw in range(400):
        keys = np.random.default_rng([draw, 99]).integers(0, 10**8, n) / 1e8
        cube = CellKeyCube.build(domains, {"region": region, "sex": sex}, keys, lookup)
        a = dict((r[0], r[1]) for r in cube.answer(["sex"])["rows"])
        b = dict((r[0], r[1]) for r in cube.answer(["sex"], {"region": ["S", "E", "W"]})["rows"])
        true_a, true_b = int((sex == 0).sum()), int(((sex == 0) & (region > 0)).sum())
        assert true_a - true_b == 1
        diffs.append(a["F"] - b["F"])
    diffs = np.array(diffs)
    last = pt[pt["i"] == pt["i"].max()]
    var_v = float((last["p"] * last["v"] ** 2).sum())
    assert abs(diffs.mean() - 1) < 4.5 * np.sqrt(2 * var_v / len(diffs))
    assert abs(diffs.var() / (2 * var_v) - 1) < 0.25
    assert (diffs == 1).mean() < 0.35
    assert len(set(diffs.tolist())) >= 5


def test_no_cell_reveals_n_cell_key_or_pert(service):
    """The answer carries codes and the perturbed count only: no field n / cell_key / pert, and no
    record key in the body."""
    response = _ask(service, {"table": "census", "dimensions": ["region", "sex", "age"]})
    text = response.text
    payload = response.json()
    assert set(payload) == {"table", "measure", "dimensions", "where", "columns", "rows", "suppressed",
                            "min_count", "method"}
    assert payload["columns"] == ["region", "sex", "age", "count"]
    for word in ('"n"', "cell_key", '"pert"', "n_pert", "rkey", '"key"', "ckey"):
        assert word not in text
    assert all(len(row) == 4 for row in payload["rows"])
    for k in service["frame"]["rkey"].to_numpy()[:20]:
        assert repr(float(k)) not in text


# ------------------------------------------------------------------ bad requests
@pytest.mark.parametrize("body, status, words", [
    ({"table": "census", "dimensions": ["region"], "where": {"region": ["X"]}}, 400, ["'X'", "'region'"]),
    ({"table": "census", "dimensions": ["region"], "where": {"region": ["Total"]}}, 400, ["'Total'"]),
    ({"table": "census", "dimensions": ["region"], "where": {"hh": [True]}}, 400, ["True", "'hh'"]),
    ({"table": "census", "dimensions": ["region"], "where": {"hh": [6]}}, 400, ["6", "'hh'"]),
    ({"table": "census", "dimensions": ["region"], "where": {"income": [1]}}, 400, ["'income'"]),
    ({"table": "census", "dimensions": ["region"], "where": {"region": []}}, 400, ["non-empty list"]),
    ({"table": "census", "dimensions": ["region"], "where": {"region": "N"}}, 400, ["non-empty list"]),
    ({"table": "census", "dimensions": ["region"], "where": ["region"]}, 400, ["'where' must be an object"]),
    ({"table": "census", "dimensions": ["regio"]}, 400, ["'regio'", "not a dimension"]),
    ({"table": "census", "dimensions": ["rkey"]}, 400, ["'rkey'"]),
    ({"table": "census", "dimensions": ["region", "region"]}, 400, ["twice"]),
    ({"table": "census", "dimensions": "region"}, 400, ["must be a list"]),
    ({"table": "census"}, 400, ["needs 'dimensions'"]),
    ({"table": "census", "dimensions": ["region"], "measure": "sum:hh"}, 400, ["'hh'", "a dimension"]),
    ({"table": "census", "dimensions": ["region"], "measure": "mean"}, 400, ["'measure'"]),
    ({"table": "census", "dimensions": ["region"], "epsilon": 1}, 400, ["Unknown field 'epsilon'"]),
    ({"dimensions": ["region"]}, 400, ["needs 'table'"]),
    ({"table": "nope", "dimensions": ["region"]}, 400, ["'nope'", "not served as tables"]),
    ({"table": "sqltable", "dimensions": ["region"]}, 400, ["'sqltable'", "not served as tables"]),
    ([1, 2], 400, ["JSON object"]),
])
def test_bad_requests_are_400_naming_the_culprit(service, body, status, words):
    before = len(_audit_rows(service))
    response = _ask(service, body)
    assert response.status_code == status, response.text
    message = response.json()["error"]
    for word in words:
        assert word in message
    rows = _audit_rows(service)
    assert len(rows) == before + 1 and rows[-1][0] == "ana" and rows[-1][3] == status


def test_not_json_no_key_other_table_and_sql_on_a_tables_table(service):
    assert _ask(service, None, raw=b"{not json").status_code == 400
    r = _ask(service, {"table": "census", "dimensions": ["region"]}, key=None)
    assert r.status_code == 401 and "Authorization: Bearer" in r.json()["error"]
    r = _ask(service, {"table": "census", "dimensions": ["region"]}, key="bob")
    assert r.status_code == 403 and "may not query table 'census'" in r.json()["error"]
    # the records of a table served as tables are never answered by SQL (exact or dp)
    for key, body in (("ana", {"sql": "SELECT COUNT(*) FROM census"}),
                      ("dee", {"sql": "SELECT COUNT(*) FROM drawn", "epsilon": 0.5})):
        r = httpx.post(service["url"] + "/v1/query", json=body, headers={"Authorization": f"Bearer {service['keys'][key]}"})
        assert r.status_code == 403 and "served as tables only" in r.json()["error"]
    r = httpx.post(service["url"] + "/v1/query", json={"sql": "SELECT COUNT(*) FROM sqltable"},
                   headers={"Authorization": f"Bearer {service['keys']['bob']}"})
    assert r.status_code in (200, 403) and "served as tables" not in r.text
    assert httpx.get(service["url"] + "/v1/budget",
                     headers={"Authorization": f"Bearer {service['keys']['dee']}"}).json()["epsilon_spent"] == 0


def test_every_table_request_is_logged_without_charge(service):
    before = len(_audit_rows(service))
    body = {"table": "census", "dimensions": ["sex"], "where": {"age": ["85+"]}}
    assert _ask(service, body).status_code == 200
    rows = _audit_rows(service)
    assert len(rows) == before + 1
    analyst, logged, decision, status = rows[-1]
    assert (analyst, decision, status) == ("ana", "answered (table)", 200)
    assert json.loads(logged) == body
    log_text = "\n".join(str(r) for r in rows)
    assert "rkeys" not in log_text and "cell_key" not in log_text


# ------------------------------------------------------------------ keys file, configuration
def test_keys_are_reused_after_restart_and_refused_on_changed_data(tmp_path):
    frame = _frame()
    frame.to_csv(tmp_path / "census.csv", index=False)
    config = _config(tmp_path)
    first = Service(config)
    key = first.state.add_analyst("ana", "restricted")
    body = {"table": "drawn", "dimensions": ["region", "age"]}
    answer = first.table(key, body)
    first.close()
    stored = keys_path(tmp_path / "state.db", "drawn").read_bytes()
    second = Service(config)
    assert second.table(key, body) == answer
    second.close()
    assert keys_path(tmp_path / "state.db", "drawn").read_bytes() == stored
    frame.iloc[:-1].to_csv(tmp_path / "census.csv", index=False)  # one record fewer
    with pytest.raises(ParameterError, match="drawn for other data"):
        Service(config)


def test_ptable_file_gives_the_same_answers_and_bad_keys_refuse_to_start(tmp_path, pt):
    frame = _frame()
    frame.to_csv(tmp_path / "census.csv", index=False)
    write_ptable(pt, tmp_path / "pt.csv")
    extra = TABLE.format(name="fromfile", extra='ptable = "pt.csv"\nrecord_key = "rkey"')
    service = Service(_config(tmp_path, extra))
    try:
        key = service.state.add_analyst("ana", "restricted")
        for dims in (["region", "sex"], ["age"]):
            a = service.table(key, {"table": "census", "dimensions": dims})[1]["rows"]
            b = service.table(key, {"table": "fromfile", "dimensions": dims})[1]["rows"]
            assert a == b
    finally:
        service.close()
    frame.loc[3, "rkey"] = 1.5  # a record key outside [0, 1]
    frame.to_csv(tmp_path / "census.csv", index=False)
    with pytest.raises(DataError, match="'census'.*record keys must be numbers in"):
        Service(_config(tmp_path))
    frame.loc[3, "rkey"] = 0.5
    frame.loc[4, "region"] = "X"  # a record outside the declared domain
    frame.to_csv(tmp_path / "census.csv", index=False)
    with pytest.raises(DataError, match="'census'.*'region'.*outside its declared domain"):
        Service(_config(tmp_path))


@pytest.mark.parametrize("edit, message", [
    (("mode = \"tables\"", "mode = \"cubes\""), "'mode'"),
    (("mode = \"tables\"\n", ""), "only for a table with mode"),
    (("[table.ckm]\nD = 3\nV = 2.0\njs = 1\nrecord_key = \"rkey\"\n", ""), "needs [table.ckm]"),
    (("D = 3", "D = 3\nptable = \"pt.csv\""), "either 'ptable'"),
    (("D = 3", "D = 0"), "'D'"),
    (("V = 2.0", "V = -1"), "'V'"),
    (("js = 1", "js = 1\npstay = 1.5"), "'pstay'"),
    (('record_key = "rkey"', 'record_key = "region"'), "'record_key'"),
    (('record_key = "rkey"', 'record_key = "rkey"\nmin_count = 0'), "'min_count'"),
    (('record_key = "rkey"', 'record_key = "rkey"\nsalt = 1'), "unknown key 'salt'"),
    (('sex = ["F", "M"]', 'sex = ["F", "M", "Total"]'), "'Total'"),
])
def test_configuration_errors_name_the_key(tmp_path, edit, message):
    path = _config(tmp_path)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ParameterError) as info:
        load_config(path)
    assert message in str(info.value) and "census" in str(info.value)


def test_client_table_gives_the_answer_as_a_frame(service):
    from sdckit.query import Client, QueryError

    with Client(service["url"], service["keys"]["ana"]) as client:
        frame = client.table("census", ["region", "sex"], where={"age": ["85+"]})
        with pytest.raises(QueryError) as info:
            client.table("census", ["nope"])
    raw = _ask(service, {"table": "census", "dimensions": ["region", "sex"], "where": {"age": ["85+"]}}).json()
    assert list(frame.columns) == ["region", "sex", "count"] and frame.values.tolist() == raw["rows"]
    assert frame.attrs["where"] == {"age": ["85+"]} and frame.attrs["suppressed"] == 0
    assert info.value.status == 400 and "'nope'" in str(info.value)
