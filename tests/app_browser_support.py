"""What the workbench's browser tests share: the server, Chromium, the test data and the steps
a user takes (see tests/test_app_browser.py for how the tests run)."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from sdckit.app import session as work
from sdckit.app.server import Workbench
from sdckit.app.session import Session, check_roles


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return None


def survey(n: int = 60) -> pd.DataFrame:
    """A small survey: a unique id, three key variables, income, a weight and households."""
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "person_id": np.arange(1001, 1001 + n),
        "sex": rng.choice(["F", "M"], n),
        "age_group": rng.choice(["<30", "30-49", "50-69", "70+"], n),
        "region": rng.choice(["north", "south", "east", "west", "centre"], n),
        "income": np.round(rng.lognormal(10, 0.5, n), 2),
        "weight": np.round(rng.uniform(5, 50, n), 3),
        "hhid": np.repeat(np.arange(n // 2), 2),
    })


#: The roles of survey()'s columns: person_id, sex, age_group, region, income, weight, hhid.
SURVEY_ROLES = ["identifier", "quasi", "quasi", "quasi", "confidential", "weight", ""]


@pytest.fixture()
def slow_risk(monkeypatch):
    """The Risk screen's measure slowed by 1 s (the job's page, the other requests meanwhile);
    yields the real measure, to put back."""
    measure = work.risk_figures

    def slow(frame, roles):
        time.sleep(1)
        return measure(frame, roles)

    monkeypatch.setattr(work, "risk_figures", slow)
    return measure


@pytest.fixture(scope="module")
def bench():
    server = Workbench(0).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    if executable is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the 'playwright' package (test extra) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, bench):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    yield pg
    context.close()


def unlabelled(pg) -> list[str]:
    """Visible form controls of the page without a label (accessibility basics)."""
    return pg.locator("input:not([type=hidden]), select, textarea").evaluate_all(
        "els => els.filter(e => !e.labels || e.labels.length === 0).map(e => e.id || e.name)")


def shot(pg, name: str, at: str | None = None) -> None:
    """Keep a screenshot of the viewport (1200 x 900: what the user sees first, small enough for
    the README's docs/images/workbench/), scrolled to the element ``at`` when given."""
    folder = os.environ.get("SDCKIT_APP_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        if at is not None:
            pg.locator(at).evaluate("e => e.scrollIntoView({block: 'start'})")
            pg.evaluate("document.activeElement && document.activeElement.blur()")
        pg.screenshot(path=str(Path(folder) / f"{name}.png"))


def open_by_path(page, bench, path) -> None:
    """Open the workbench with its token and the file at ``path`` by its path (the Data screen)."""
    page.goto(bench.url)
    page.fill("#path", str(path))
    page.click("#path-form button[type=submit]")
    page.wait_for_url("**/data")


def session_client(bench) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=bench.base, follow_redirects=True, timeout=10)
    html = client.get(bench.url).text  # the token's visit opens a session (its cookie)
    return client, re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)


def finished(client: httpx.Client, job_url: str, within: float = 20) -> dict:
    """The progress of the job at ``job_url`` (``/jobs/<id>``) once it is no longer running."""
    end = time.monotonic() + within
    while (progress := client.get(f"{job_url}/progress").json())["state"] == "running" and time.monotonic() < end:
        time.sleep(0.05)
    return progress


def risk_html(client: httpx.Client) -> str:
    """The Risk screen, once its measure (a job when it does not end at once) is done."""
    answer = client.get("/risk")
    if answer.url.path.startswith("/jobs/"):
        assert finished(client, answer.url.path)["state"] == "done"
        answer = client.get("/risk")
    assert answer.url.path == "/risk"
    return answer.text


def apply_step(page, method: str, **params: str) -> None:
    page.select_option("#method", method)
    page.click("#method-form button[type=submit]")
    page.wait_for_url(f"**/protect?method={method}")
    for name, value in params.items():
        page.fill(f"#p-{name}", value)
    count = page.locator("#steps li").count()
    page.click("#apply")
    page.wait_for_url(f"**/protect?method={method}")
    page.locator(f"#steps li >> nth={count}").wait_for()


def slow_job(job) -> None:
    """A job that reports progress until it is cancelled (at most 30 s)."""
    for i in range(3000):
        job.update(i, 3000, "counting")
        time.sleep(0.01)


def session_in_server(bench, client: httpx.Client):
    cookie = client.cookies.get(f"sdckit_app_{bench.port}")
    return bench.app.state.sessions.get(cookie)


def confirmed_session(frame: pd.DataFrame) -> Session:
    from sdckit.app.session import Loaded

    session = Session("s", "c")
    session.open(Loaded("survey.csv", frame))
    session.confirm(check_roles(frame, {"person_id": "identifier", "sex": "quasi", "age_group": "quasi",
                                        "region": "quasi", "income": "confidential"}))
    return session
