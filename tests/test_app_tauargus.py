"""The workbench's Open screen on tau-ARGUS microdata (issue 31): an ``.asc`` laid out by its
``.rda`` (beside it, or given by path), over httpx against a real server on 127.0.0.1; the
release's recipe names the ``.rda`` and ``sdckit protect`` reproduces the release from it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

from sdckit.app.protect import add_step
from sdckit.app.release import open_recipe, release_session
from sdckit.app.server import Workbench
from sdckit.app.session import Session, check_roles, open_path
from sdckit.cli.app import app
from sdckit.io import read
from sdckit.masking import LocalSuppression

DATA = Path(__file__).parent / "data" / "tauargus"
ASC = DATA / "microdata" / "tau_testW_head.asc"  # its metadata is Tau_TestW.rda: not "beside" by name
RDA = DATA / "microdata" / "Tau_TestW.rda"


@pytest.fixture(scope="module")
def bench():
    server = Workbench(0).start()
    yield server
    server.stop()


def client_of(bench) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=bench.base, timeout=30)
    html = client.get(bench.url, follow_redirects=True).text
    return client, re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)


def rda_layout(path: Path) -> list[tuple[str, int, int, bool]]:
    """Name, start, length, numeric of each variable, read by hand from the .rda's lines
    ``NAME START LENGTH [MISSING ...]`` and their keywords (numeric: ``<NUMERIC>``, ``<WEIGHT>``,
    ``<DECIMALS>``, or not ``<RECODEABLE>``/``<CATEGORICAL>``)."""
    layout: list[list] = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith((" ", "\t")):
            name, start, length = line.split()[:3]
            layout.append([name, int(start), int(length), True])
        elif "<RECODEABLE>" in line or "<CATEGORICAL>" in line or "<REQUEST>" in line:
            layout[-1][3] = False
    return [tuple(v) for v in layout]


def test_an_asc_with_its_rda_opens_with_the_rda_columns_and_types(bench):
    layout = rda_layout(RDA)
    client, csrf = client_of(bench)
    try:
        answer = client.post("/open/path", data={"path": str(ASC), "rda": str(RDA), "csrf": csrf})
        assert answer.status_code == 303 and answer.headers["location"] == "/data"
        page = client.get("/data").text
        cookie = client.cookies.get(f"sdckit_app_{bench.port}")
    finally:
        client.close()
    assert "Tau_TestW.rda" in page and 'id="layout-note"' in page
    shown = re.findall(r'<tr><th scope="row">([^<]+)</th><td>[^<]*</td><td class="muted">([^<]+)</td>', page)
    assert [name for name, _ in shown] == [name for name, *_ in layout]
    for (name, dtype), (_, _, _, numeric) in zip(shown, layout):
        assert (dtype in ("int64", "float64")) == numeric, name
    # the first record's fields, cut by hand at the .rda's positions
    frame = bench.app.state.sessions.get(cookie).data.frame
    first = ASC.read_text().splitlines()[0]
    for name, start, length, numeric in layout:
        text = first[start - 1:start - 1 + length].strip()
        value = frame[name].iloc[0]
        assert (float(text or 0) == value) if numeric else text == value, name
    assert len(frame) == sum(1 for line in ASC.read_text().splitlines() if line.strip())


def test_an_asc_gz_opens_with_the_rda_beside_it_and_without_one_says_so(bench, tmp_path):
    client, csrf = client_of(bench)
    alone = tmp_path / "alone.asc"
    shutil.copy(ASC, alone)
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n")
    try:
        ok = client.post("/open/path", data={"path": str(DATA / "enterprise" / "example_enterprise.asc.gz"), "csrf": csrf})
        assert ok.status_code == 303
        assert "example_enterprise.rda" in client.get("/data").text
        for form, needle in (({"path": str(alone)}, "give the path of its tau-ARGUS metadata (.rda) too"),
                             ({"path": str(alone), "rda": str(tmp_path / "no.rda")}, "No .rda file at"),
                             ({"path": str(csv), "rda": str(RDA)}, "is not one")):
            refused = client.post("/open/path", data={**form, "csrf": csrf})
            assert refused.status_code == 400 and needle in refused.text, needle
            assert "example_enterprise.asc.gz" in refused.text  # the data set open stays open
            assert str(form.get("rda", "")) in refused.text  # the form keeps what was typed
    finally:
        client.close()


def test_the_release_recipe_names_the_rda_and_sdckit_protect_reproduces_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    data = tmp_path / "data"
    data.mkdir()
    asc = data / "head.asc"
    shutil.copy(ASC, asc)  # the .rda stays elsewhere: only the recipe says where
    session = Session(id="s", csrf="c")
    session.open(open_path(asc, rda=RDA))
    session.confirm(check_roles(session.data.frame, {"Size": "quasi", "Region": "quasi", "Var1": "confidential"}))
    add_step(session, LocalSuppression(k=3))
    files = release_session(session, str(tmp_path / "out"), "csv")
    recipe = Path(files["recipe"]).read_text()
    assert f'rda = "{RDA.resolve()}"' in recipe
    again = tmp_path / "again"
    result = CliRunner().invoke(app, ["protect", files["recipe"], "--out", str(again)])
    assert result.exit_code == 0, result.output
    assert (again / Path(files["data"]).name).read_bytes() == Path(files["data"]).read_bytes()
    released = read(files["data"])
    assert released.shape == session.data.frame.shape
    later = Session(id="t", csrf="d")  # the recipe continues the session, its .rda found again
    open_recipe(later, files["recipe"])
    pd.testing.assert_frame_equal(later.data.frame, session.data.frame)
    assert later.data.options == {"rda": RDA.resolve()} and len(later.steps) == 1
