"""The workbench's Tables screen with the cell key method (issue 31): the perturbed counts shown
are :func:`sdckit.tabular.cell_key_counts` of the same records, with the record keys
:func:`sdckit.tabular.record_keys` draws from the session seed's stream, and the same p-table;
the figures are :func:`~sdckit.tabular.cell_key_measures`'. Over httpx against a real server."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import urlencode

import httpx
import numpy as np
import pandas as pd
import pytest

from sdckit.app.server import Workbench
from sdckit.app.tables import CELL_KEY_STREAM, protect_table, table_request
from sdckit.core.errors import SdcError
from sdckit.core.random import parse_seed
from sdckit.tabular import cell_key_counts, cell_key_measures, ptable, record_keys


def shops(n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"region": rng.choice(["north", "south", "east"], n), "kind": rng.choice(["bakery", "cafe"], n),
                         "staff": rng.integers(1, 9, n)})


@pytest.fixture(scope="module")
def bench():
    server = Workbench(0).start()
    yield server
    server.stop()


def table_of(client: httpx.Client, csrf: str, dims: list[str], **fields: str) -> str:
    form = {"csrf": csrf, "protection": "cell-key", "ckm_d": "3", "ckm_v": "2", "ckm_js": "1",
            "min_frequency": "3", **fields}
    body = urlencode([*form.items(), *(("dimension", d) for d in dims)])  # a repeated field
    answer = client.post("/tables", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 303, answer.text
    job = answer.headers["location"]
    for _ in range(200):
        if client.get(f"{job}/progress").json()["state"] == "done":
            break
        time.sleep(0.05)
    return client.get("/tables").text


def shown_pattern(page: str) -> dict[tuple[str, str], int]:
    """The cross table on the page: (row code, column code) -> the published count."""
    table = re.search(r'<table id="pattern".*?</table>', page, re.S).group(0)
    columns = re.findall(r'<th scope="col" class="num">([^<]+)</th>', table)
    out = {}
    for code, cells in re.findall(r'<tr><th scope="row">([^<]+)</th>(.*?)</tr>', table, re.S):
        values = re.findall(r'data-status="[a-z]+">([^<]*)</td>', cells)
        out.update({(html.unescape(code), html.unescape(c)): int(v.replace(",", "")) for c, v in zip(columns, values)})
    return out


def test_the_cell_key_counts_shown_are_the_librarys_on_the_sessions_keys(bench, tmp_path):
    frame = shops()
    path = tmp_path / "shops.csv"
    frame.to_csv(path, index=False)
    client = httpx.Client(base_url=bench.base, timeout=30)
    try:
        start = client.get(bench.url, follow_redirects=True).text
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', start).group(1)
        assert client.post("/open/path", data={"path": str(path), "csrf": csrf}).status_code == 303
        page = table_of(client, csrf, ["region", "kind"])
        one_way = table_of(client, csrf, ["region"])
        refused = client.post("/tables", data={"csrf": csrf, "protection": "cell-key", "ckm_d": "3", "ckm_v": "2",
                                               "ckm_js": "1", "response": "staff", "dimension": "region"})
        session = bench.app.state.sessions.get(client.cookies.get(f"sdckit_app_{bench.port}"))
    finally:
        client.close()
    assert refused.status_code == 400 and "Give fp, the flex function" in refused.text  # sums need the flex point
    # the oracle: the library on the same records, keys from the session seed's stream, same p-table
    keyed = frame.assign(rkey=record_keys(len(frame), np.random.SeedSequence([parse_seed(session.seed), CELL_KEY_STREAM])))
    pt = ptable(3, 2, js=1)
    cells = cell_key_counts(keyed, ["region", "kind"], "rkey", pt)
    expected = {(str(r), str(k)): int(n) for r, k, n in zip(cells["region"], cells["kind"], cells["n_pert"])}
    assert shown_pattern(page) == expected
    assert (cells["pert"] != 0).any()  # the check is not vacuous: some counts moved
    figures = dict(re.findall(r'<tr><th scope="row">([^<]+)</th><td class="num">([^<]+)</td></tr>',
                              re.search(r'<table id="table-figures".*?</table>', page, re.S).group(0)))
    for label, text in cell_key_measures(cells, pt).summary():
        assert figures[html.unescape(label)] == text, label
    assert 'id="ckm-disclosure"' in page and str(session.seed) not in page
    # one key per record: the one-way table's cells are the cross table's margins, perturbed alike
    rows = re.findall(r'<tr><td>([^<]+)</td><td class="num[^"]*"[^>]*>([^<]+)</td></tr>', one_way)
    assert len(rows) == 4  # Total and the three regions
    for code, text in rows:
        assert expected[(code, "Total")] == int(text)


@pytest.mark.parametrize("form, message", [
    ({"ckm_d": "", "ckm_v": "2", "ckm_js": "1"}, "p-table's D"),
    ({"ckm_d": "3", "ckm_v": "-1", "ckm_js": "1"}, "'V' parameter"),
    ({"ckm_d": "three", "ckm_v": "2", "ckm_js": "1"}, "whole number"),
])
def test_cell_key_requests_are_checked_in_one_line(form, message):
    with pytest.raises(SdcError, match=message) as caught:
        table_request(shops(), {}, {"protection": "cell-key", **form}, ["region"])
    assert "\n" not in str(caught.value)


def test_the_keys_are_a_stream_of_the_seed_not_its_first_draws():
    frame = shops(20)
    request = table_request(frame, {}, {"protection": "cell-key", "ckm_d": "3", "ckm_v": "2", "ckm_js": "1"}, ["region"])
    seed = "0x" + "ab" * 16
    first = protect_table(frame, request, seed=seed).result.cells["cell_key"]
    assert first.equals(protect_table(frame, request, seed=seed).result.cells["cell_key"])  # same seed, same keys
    plain = cell_key_counts(frame.assign(rkey=record_keys(len(frame), seed)), ["region"], "rkey", ptable(3, 2, js=1))
    assert not first.equals(plain["cell_key"])  # not the release's generator
    with pytest.raises(SdcError, match="seed"):
        protect_table(frame, request)
