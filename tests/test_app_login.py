"""The workbench's login mode (issue 31): ``sdckit app --host ... --state STATE.db``.

Beyond localhost the workbench opens a session only for an API key of the query service's key
store, checked by the service's own :meth:`State.authenticate` (salted scrypt hashes compared
with :func:`hmac.compare_digest`, one check at a time). The servers here run in login mode on
loopback (``state=`` in the constructor; 127.0.0.2 is loopback too, so the configured host's
``Host`` header is checked without serving beyond the machine), over httpx.
"""

from __future__ import annotations

import logging
import socket

import httpx
import pytest
from typer.testing import CliRunner

from sdckit.app.server import Workbench, host_names
from sdckit.cli.app import app
from sdckit.core.errors import ParameterError
from sdckit.query.state import State


@pytest.fixture(scope="module")
def keystore(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "state.db"
    key = State(path).add_analyst("ann", "restricted")
    return path, key


@pytest.fixture(scope="module")
def bench(keystore):
    server = Workbench(0, host="127.0.0.2", state=keystore[0], analysts=["ann"]).start()
    yield server
    server.stop()


def test_without_a_session_pages_lead_to_the_login_and_the_token_opens_nothing(bench):
    assert bench.url == f"http://127.0.0.2:{bench.port}/login" and "token" not in bench.url
    first = httpx.get(f"{bench.base}/open")
    assert first.status_code == 303 and first.headers["location"] == "/login"
    login = httpx.get(f"{bench.base}/login")
    assert login.status_code == 200 and 'name="key"' in login.text and "Content-Security-Policy" in login.headers
    assert httpx.post(f"{bench.base}/open/path", data={"path": "x.csv"}).status_code == 403
    assert httpx.get(f"{bench.base}/?token=anything").status_code == 303  # no session: to the login
    assert len(bench.app.state.sessions) == 0


def test_a_wrong_key_is_403_and_creates_no_session_a_right_key_logs_in(bench, keystore, caplog):
    caplog.set_level(logging.DEBUG)
    key = keystore[1]
    wrong = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    before = len(bench.app.state.sessions)
    for bad in (wrong, "", "nokey", "x" * 300):
        refused = httpx.post(f"{bench.base}/login", data={"key": bad})
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert "Wrong API key" in refused.text
    assert len(bench.app.state.sessions) == before
    foreign = httpx.post(f"{bench.base}/login", data={"key": key}, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and len(bench.app.state.sessions) == before
    with httpx.Client(base_url=bench.base, timeout=10) as client:
        ok = client.post("/login", data={"key": key})
        assert ok.status_code == 303 and ok.headers["location"] == "/open"
        cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "secure" not in cookie
        assert len(bench.app.state.sessions) == before + 1
        page = client.get("/open")
        assert page.status_code == 200 and "Open a data file" in page.text
    # the key is in no log record, nor in the state database's audit log (the login is)
    assert key not in caplog.text and wrong not in caplog.text
    audit = State(keystore[0]).audit_log()
    assert {"workbench login", "refused: workbench login"} <= {row["decision"] for row in audit}
    assert key not in repr(audit) and wrong not in repr(audit)


def test_the_key_is_checked_by_the_query_services_authentication(bench, keystore, monkeypatch):
    seen = []
    check = State.authenticate

    def spy(self, key):
        seen.append(key)
        return check(self, key)

    monkeypatch.setattr(State, "authenticate", spy)
    assert httpx.post(f"{bench.base}/login", data={"key": "abc.def"}).status_code == 403
    assert seen == ["abc.def"]


def test_the_host_header_must_be_the_configured_host_or_loopback(bench, keystore):
    key = keystore[1]
    for host in (f"127.0.0.2:{bench.port}", f"localhost:{bench.port}"):
        assert httpx.get(f"{bench.base}/login", headers={"Host": host}).status_code == 200
    for host in ("evil.example", f"evil.example:{bench.port}", "127.0.0.2:1"):
        assert httpx.post(f"{bench.base}/login", data={"key": key}, headers={"Host": host}).status_code == 403
    names = host_names("0.0.0.0", 8000)  # a wildcard: the machine's own names
    assert f"{socket.gethostname()}:8000" in names and "192.0.2.7:80" in host_names("192.0.2.7", 80)


def test_behind_tls_the_cookie_is_secure(keystore):
    server = Workbench(0, state=keystore[0], tls=True, analysts=["ann"]).start()
    try:
        plain = server.base.replace("https://", "http://")
        ok = httpx.post(f"{plain}/login", data={"key": keystore[1]})
        assert ok.status_code == 303 and "secure" in ok.headers["set-cookie"].lower()
    finally:
        server.stop()


@pytest.mark.parametrize("extra, needle", [
    (["--host", "0.0.0.0"], "--state"),
    (["--host", "0.0.0.0", "--state", "STATE", "--analysts", "ann"], "--allow-remote"),
    (["--state", "STATE"], "--analysts"),
    (["--state", "STATE", "--analysts", " "], "--analysts"),
    (["--host", "127.0.0.1", "--state", "MISSING"], "No state database"),
])
def test_serving_beyond_localhost_needs_a_key_store_and_allow_remote(keystore, tmp_path, extra, needle):
    extra = [str(keystore[0]) if a == "STATE" else str(tmp_path / "no.db") if a == "MISSING" else a for a in extra]
    result = CliRunner().invoke(app, ["app", "--no-browser", *extra])
    assert result.exit_code != 0 and isinstance(result.exception, ParameterError), result.output
    assert needle in str(result.exception) and "\n" not in str(result.exception)
    assert not (tmp_path / "no.db").exists()


def test_sdckit_app_with_state_prints_the_login_address(keystore, monkeypatch):
    started = []
    monkeypatch.setattr(Workbench, "run", lambda self: started.append(self.start()))
    result = CliRunner().invoke(app, ["app", "--no-browser", "--state", str(keystore[0]), "--analysts", "ann"])
    assert result.exit_code == 0, result.output
    try:
        url = started[0].url
        assert url.endswith("/login") and url in result.output and "token" not in result.output
        assert "API key" in httpx.get(url).text
    finally:
        started[0].stop()


def test_log_out_ends_the_session(bench, keystore):
    with httpx.Client(base_url=bench.base, timeout=10) as client:
        assert client.post("/login", data={"key": keystore[1]}).status_code == 303
        page = client.get("/open").text
        assert "Logged in as <strong>ann</strong>" in page
        csrf = page.split('name="csrf-token" content="')[1].split('"')[0]
        before = len(bench.app.state.sessions)
        assert client.post("/logout", data={}).status_code == 403  # without the CSRF token
        out = client.post("/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert len(bench.app.state.sessions) == before - 1
        assert client.get("/open").status_code == 303  # to the login again


def test_only_the_analysts_named_may_log_in(keystore):
    bob = State(keystore[0]).add_analyst("bob", "restricted")
    server = Workbench(0, state=keystore[0], analysts=["bob"]).start()
    try:
        refused = httpx.post(f"{server.base}/login", data={"key": keystore[1]})  # ann's right key
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert len(server.app.state.sessions) == 0
        assert httpx.post(f"{server.base}/login", data={"key": bob}).status_code == 303
    finally:
        server.stop()
    with pytest.raises(ParameterError, match="'carol'"):
        Workbench(0, state=keystore[0], analysts=["carol"])
    with pytest.raises(ParameterError, match="--state"):
        Workbench(0, analysts=["bob"])
