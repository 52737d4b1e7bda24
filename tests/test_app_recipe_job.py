"""Continuing a session from a recipe on the workbench's Open screen (issue 31, speed): the
recipe is read and checked in the request (a refusal is one line on the Open screen), and its
steps, each measured as on the Protect screen (seconds on 1e5 records), are applied again as a
job, so that the request answers at once with the job's progress page; a cancelled job leaves
the session as it was."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from sdckit.app import jobs
from sdckit.app import release as releasing
from sdckit.app.protect import add_step
from sdckit.app.release import continue_recipe, recipe_plan, recipe_text, write_secret
from sdckit.app.server import Workbench
from sdckit.app.session import Session, check_roles, open_path
from sdckit.io import read
from sdckit.masking import LocalSuppression

ROLES = {"person_id": "identifier", "sex": "quasi", "region": "quasi", "income": "confidential"}


@pytest.fixture(scope="module")
def bench():
    server = Workbench(0).start()
    yield server
    server.stop()


def records(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"person_id": np.arange(1, n + 1), "sex": rng.choice(["F", "M"], n),
                         "region": rng.choice(["north", "south", "east"], n),
                         "income": np.round(rng.lognormal(10, 0.5, n), 2)})


@pytest.fixture()
def client(bench):
    """A session of the workbench over HTTP (the token's visit) and its CSRF token, redirects
    not followed."""
    http = httpx.Client(base_url=bench.base, follow_redirects=False, timeout=30)
    html = http.get(bench.url, follow_redirects=True).text
    yield http, re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
    http.close()


def saved_recipe(folder: Path) -> tuple[Path, int | str]:
    """The recipe the Release screen writes for one step, LocalSuppression(k=2), on 30 records,
    and the seed of the session that wrote it."""
    path = folder / "survey.csv"
    records(30, 1).to_csv(path, index=False)
    session = Session("r", "c")
    session.open(open_path(path))
    session.confirm(check_roles(session.data.frame, ROLES))
    add_step(session, LocalSuppression(k=2))
    recipe = folder / "survey.recipe.toml"  # as the release writes it (the release itself not run: quick)
    write_secret(folder / "survey.seed", f"{session.seed}\n")
    recipe.write_text(recipe_text(path, session.roles, [LocalSuppression(k=2)], "survey.seed", "csv", "survey_out", {}),
                      encoding="utf-8")
    return recipe, session.seed


def test_a_recipe_is_continued_as_a_job_and_the_request_answers_before_its_steps(bench, client, tmp_path,
                                                                                  monkeypatch):
    recipe, written = saved_recipe(tmp_path)
    other = tmp_path / "other.csv"
    records(12, 2).to_csv(other, index=False)
    gate = threading.Event()
    real = releasing.add_step

    def held(session, method, job=None):  # a slow step: it waits until the test lets it go
        if not gate.wait(10):
            raise RuntimeError("the step was held for 10 s")
        return real(session, method, job)

    monkeypatch.setattr(releasing, "add_step", held)
    client, csrf = client
    session = bench.app.state.sessions.get(client.cookies[f"sdckit_app_{bench.port}"])
    assert client.post("/open/path", data={"path": str(other), "csrf": csrf}).status_code == 303
    opened, seed = session.data, session.seed
    start = time.perf_counter()
    answer = client.post("/open/recipe", data={"recipe": str(recipe), "csrf": csrf})
    answered = time.perf_counter() - start
    assert answer.status_code == 303 and answer.headers["location"].startswith("/jobs/"), answer.text[:300]
    assert answered < 5  # the held step takes 10 s: the answer did not wait for it
    # while the steps run, the session is as it was, and a second recipe waits for the job
    assert session.data is opened and session.steps == [] and session.seed == seed
    again = client.post("/open/recipe", data={"recipe": str(recipe), "csrf": csrf})
    assert again.status_code == 409 and "Wait for applying the recipe" in again.text
    gate.set()
    progress = answer.headers["location"] + "/progress"
    deadline = time.monotonic() + 20
    while (state := client.get(progress).json())["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert state["state"] == "done" and state["done_url"] == "/protect", state
    # the recipe's input, roles, seed and step, as the release wrote them
    pd.testing.assert_frame_equal(session.data.frame, read(tmp_path / "survey.csv"))
    assert session.confirmed and session.roles == ROLES
    assert [s.method for s in session.steps] == [LocalSuppression(k=2)]
    assert str(session.seed) == str(written) != str(seed)


def test_a_bad_recipe_is_one_line_on_the_open_screen(bench, client, tmp_path):
    client, csrf = client
    answer = client.post("/open/recipe", data={"recipe": str(tmp_path / "none.toml"), "csrf": csrf})
    assert answer.status_code == 400 and 'id="recipe-form"' in answer.text
    assert bench.app.state.sessions.get(client.cookies[f"sdckit_app_{bench.port}"]).data is None


def test_a_cancelled_recipe_leaves_the_session_as_it_was(tmp_path):
    recipe, _ = saved_recipe(tmp_path)
    other = tmp_path / "other.csv"
    records(12, 2).to_csv(other, index=False)
    session = Session("s", "c")
    session.open(open_path(other))
    opened, seed = session.data, session.seed
    cancelled = jobs.Job("continuing", "/protect")
    cancelled.cancel()
    with pytest.raises(jobs.Cancelled):
        continue_recipe(session, recipe_plan(str(recipe)), cancelled)
    assert session.data is opened and not session.confirmed and session.steps == [] and session.seed == seed
