"""The workbench starts one job at a time per session, even when two requests ask at once
(issue 31): two concurrent POSTs of ``/risk/measure`` — a double click, two tabs — start one risk
job, and the second request gets the running job. Two threads over HTTP against the real server
(127.0.0.1, a free port)."""

from __future__ import annotations

import re
import threading
import time

import httpx
import numpy as np
import pandas as pd
import pytest

from sdckit.app import jobs
from sdckit.app import session as work
from sdckit.app.server import Workbench
from sdckit.app.views import RISK_JOB


@pytest.fixture(scope="module")
def bench():
    server = Workbench(0).start()
    yield server
    server.stop()


def people(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n), "region": rng.choice(["north", "south", "east"], n),
                         "income": np.round(rng.lognormal(10, 0.5, n), 2)})


def test_two_concurrent_risk_starts_start_one_job(bench, tmp_path, monkeypatch):
    path = tmp_path / "people.csv"
    people().to_csv(path, index=False)
    measure, start = work.risk_figures, jobs.start

    def slow_measure(frame, roles):  # the job still runs when the second request comes
        time.sleep(1.0)
        return measure(frame, roles)

    def slow_start(job, work_on):  # a wide window between the busy check and the job's registration
        time.sleep(0.3)
        return start(job, work_on)

    monkeypatch.setattr(work, "risk_figures", slow_measure)
    monkeypatch.setattr(jobs, "start", slow_start)
    client = httpx.Client(base_url=bench.base, timeout=30)
    try:
        csrf = re.search(r'name="csrf-token" content="([^"]+)"',
                         client.get(bench.url, follow_redirects=True).text).group(1)
        assert client.post("/open/path", data={"path": str(path), "csrf": csrf}).status_code == 303
        roles = {"role-0": "quasi", "role-1": "quasi", "role-2": "confidential"}
        assert client.post("/roles", data={"csrf": csrf, **roles}).status_code == 303  # not followed: no job yet
        session = bench.app.state.sessions.get(client.cookies.get(f"sdckit_app_{bench.port}"))
        assert session.jobs == {}
        answers: list[httpx.Response] = []
        gate = threading.Barrier(2)

        def post() -> None:
            gate.wait()
            answers.append(client.post("/risk/measure", data={"csrf": csrf}))

        threads = [threading.Thread(target=post) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        started = [j for j in session.jobs.values() if j.label == RISK_JOB]
        assert len(started) == 1, [j.id for j in started]
        job = started[0]
        assert sorted(a.status_code for a in answers) == [303, 303]
        assert {a.headers["location"] for a in answers} == {f"/jobs/{job.id}"}  # both: the running job
        job.join(10)
        assert job.state == "done" and session.risk is not None
        assert len(session.jobs) == 1
    finally:
        client.close()
