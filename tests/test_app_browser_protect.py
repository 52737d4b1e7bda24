"""The workbench (``sdckit app``, issue 31) in a real browser: Protect's steps with undo, Release reproduced by `sdckit protect`, and long work as jobs.

How they run: tests/test_app_browser.py's docstring; the shared fixtures: tests/app_browser_support.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

from sdckit.app import jobs
from sdckit.app.protect import add_step
from sdckit.app.release import release_plan, write_release
from sdckit.app.session import Session, check_roles, open_path
from sdckit.cli.app import app
from sdckit.core.schema import Schema
from sdckit.io import read
from sdckit.masking import LocalSuppression
from sdckit.pipeline import protect
from sdckit.risk import distance_linkage

from app_browser_support import survey, SURVEY_ROLES, bench, browser, page, unlabelled, shot, open_by_path, session_client, finished, apply_step, slow_job, session_in_server  # noqa: F401 (fixtures: bench, browser, page)


# --------------------------------------------------------------------------- steps, undo, release
def test_new_endpoints_refuse_without_session_origin_or_csrf(bench, tmp_path):
    path = tmp_path / "s.csv"
    survey(20).to_csv(path, index=False)
    endpoints = {"/protect/undo": {}, "/release": {"folder": str(tmp_path / "out"), "format": "csv"},
                 "/open/recipe": {"recipe": str(tmp_path / "r.toml")},
                 "/tables": {"dimension": "sex", "min_frequency": "3", "protection": "suppression-optimal"},
                 "/risk/suda": {}, "/risk/measure": {}}
    for url, data in endpoints.items():  # no session at all
        assert httpx.post(f"{bench.base}{url}", data=data).status_code == 403
    client, csrf = session_client(bench)
    try:
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        for url, data in endpoints.items():
            assert client.post(url, data=data, follow_redirects=False).status_code == 403  # no CSRF token
            foreign = client.post(url, data={**data, "csrf": csrf}, headers={"Origin": "http://evil.example"},
                                  follow_redirects=False)
            assert foreign.status_code == 403
            wrong_host = client.post(url, data={**data, "csrf": csrf}, headers={"Host": "evil.example"},
                                     follow_redirects=False)
            assert wrong_host.status_code == 403
        assert not (tmp_path / "out").exists()  # nothing of the refused posts happened
        assert 'id="pattern"' not in client.get("/tables").text
        before = client.post("/risk/suda", data={"csrf": csrf}, follow_redirects=False)
        assert before.headers["location"] == "/roles"  # SUDA2 needs the confirmed roles
    finally:
        client.close()


def test_protect_shows_the_distance_linkage_of_the_release_as_the_library(bench, tmp_path):
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    client, csrf = session_client(bench)
    roles = SURVEY_ROLES
    try:
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(roles)}},
                    follow_redirects=False)
        answer = client.post("/protect", data={"csrf": csrf, "method": "microaggregation", "p-k": "3"},
                             follow_redirects=False)
        assert finished(client, answer.headers["location"])["state"] == "done"
        html = client.get("/protect").text
        release = session_in_server(bench, client).steps[-1].release.data
        # income is the one numeric column of the quasi-identifiers and confidential ones; 60
        # records, fewer than the sample's size: every released record is linked, exactly
        expected = distance_linkage(read(path), release, ["income"])
        shown = float(re.search(r'id="after-linkage">([0-9.,]+)<', html).group(1).replace(",", ""))
        assert shown == round(expected.correct, 1) and 0 < expected.correct < 60  # k = 3 blurs, not all
        assert re.search(r'id="after-linkage-rate">([0-9.]+)%<', html).group(1) == f"{100 * expected.rate:.1f}"
        assert "of 60 (" in html and "on all 60 released records" in html and "standardized column income" in html
        assert 'id="before-linkage">—<' in html  # the original's own linkage is trivial: not shown
    finally:
        client.close()


def test_steps_with_undo_then_release_reproduced_by_sdckit_protect(page, bench, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the manifests' creation time, fixed
    frame = survey()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / "survey.parquet"
    frame.to_parquet(path, index=False)
    open_by_path(page, bench, path)
    page.click("nav >> text=Roles")
    page.select_option("select[data-column=hhid]", "")
    page.click("#confirm-roles")
    page.wait_for_url("**/risk")
    page.click("nav >> text=Protect")
    assert page.locator("#no-steps").count() == 1
    apply_step(page, "local_suppression", k="3")
    after_first = page.inner_text("#after-global-risk")
    apply_step(page, "microaggregation", k="4")
    assert page.locator("#steps li").count() == 2
    assert page.inner_text("#before-global-risk") == after_first  # applied on the previous step's result
    shot(page, "8-protect-steps")
    page.click("#undo")  # undo microaggregation: back to one step
    page.wait_for_url("**/protect")
    assert page.locator("#steps li").count() == 1
    assert page.inner_text("#steps li") == "local_suppression(k=3, missing=strict)"
    apply_step(page, "additive_noise", alpha="0.1")
    assert page.locator("#steps li").count() == 2
    assert unlabelled(page) == []
    shown = {m: page.inner_text(f"#after-{m}") for m in ("il1", "correlation", "pmse")}
    verdict = page.inner_text("#after-verdict")
    note = page.inner_text("#verdict-note")
    assert "all 60 records" in note and "on the column income" in note

    page.click("nav >> text=Release")
    page.wait_for_url("**/release")
    assert unlabelled(page) == []
    page.fill("#folder", str(data_dir))  # the input's folder: refused, one line
    page.click("#release")
    assert "holds the input file" in page.locator("#error").inner_text()
    out = tmp_path / "release"
    page.fill("#folder", str(out))
    page.select_option("#format", "parquet")
    page.click("#release")
    page.locator("#written").wait_for()
    shot(page, "9-release")
    files = {k: Path(page.inner_text(f"#out-{k}")) for k in ("data", "manifest", "report", "recipe", "seed")}
    assert all(p.parent == out and p.is_file() for p in files.values())
    seed = files["seed"].read_text().strip()
    assert len(seed) >= 32 and (files["seed"].stat().st_mode & 0o777) == 0o600
    assert seed not in page.content() and seed not in files["manifest"].read_text()
    assert seed not in files["recipe"].read_text() and seed not in files["report"].read_text()

    # the figures shown are those of the library on the release the steps make with that seed
    from sdckit.masking import AdditiveNoise
    from sdckit.utility import utility_loss
    keys = ["sex", "age_group", "region"]
    schema = Schema.infer(frame, identifier=["person_id"], quasi=keys, confidential=["income"])
    release = protect(frame, [LocalSuppression(k=3), AdditiveNoise(alpha=0.1)], schema=schema, seed=seed)
    pd.testing.assert_frame_equal(read(files["data"]), release.data.reset_index(drop=True), check_dtype=False)
    numeric = [c for c in release.data.columns if pd.api.types.is_numeric_dtype(release.data[c])]
    for m in shown:
        assert shown[m] == f"{utility_loss(frame[numeric], release.data[numeric], None, m):.6f}"
    assert verdict in ("deniable", "flagged", "borderline")

    # `sdckit protect` on the saved recipe writes the same files, byte for byte
    again = tmp_path / "again"
    result = CliRunner().invoke(app, ["protect", str(files["recipe"]), "--out", str(again)])
    assert result.exit_code == 0, result.output
    for kind in ("data", "manifest", "report"):
        assert (again / files[kind].name).read_bytes() == files[kind].read_bytes(), kind

    # the recipe continues the session: its input, roles, seed and steps
    page.goto(page.url.rsplit("/", 1)[0] + "/open")
    page.fill("#recipe", str(files["recipe"]))
    page.click("#recipe-form button[type=submit]")
    page.wait_for_url("**/protect")
    assert page.locator("#steps li").count() == 2
    assert {m: page.inner_text(f"#after-{m}") for m in shown} == shown  # the same seed, the same release


def test_release_of_an_upload_needs_the_file_and_refuses_other_data(page, bench, tmp_path):
    path = tmp_path / "survey.csv"
    survey(30).to_csv(path, index=False)
    page.goto(bench.url)
    page.set_input_files("#upload-file", str(path))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url("**/data")
    page.click("nav >> text=Release")
    assert page.locator("#release-note").count() == 1  # no step yet
    page.click("nav >> text=Roles")
    page.click("#confirm-roles")
    page.wait_for_url("**/risk")
    page.click("nav >> text=Protect")
    apply_step(page, "local_suppression", k="2")
    page.click("nav >> text=Release")
    assert page.input_value("#input") == ""  # uploaded: no path on the machine
    page.fill("#folder", str(tmp_path / "out"))
    page.click("#release")
    message = page.locator("#error").inner_text()
    assert "uploaded" in message and "\n" not in message
    other = tmp_path / "other.csv"
    survey(30).assign(income=1.0).to_csv(other, index=False)
    page.fill("#input", str(other))
    page.click("#release")
    assert "does not hold the data set" in page.locator("#error").inner_text()
    page.fill("#folder", "relative/folder")
    page.fill("#input", str(path))
    page.click("#release")
    assert "not a full path" in page.locator("#error").inner_text()
    assert not (tmp_path / "out").exists()
    page.fill("#folder", str(tmp_path / "out"))
    page.click("#release")
    page.locator("#written").wait_for()
    assert (tmp_path / "out" / "survey_protected.csv").is_file()


# --------------------------------------------------------------------------- long work: jobs


def test_job_endpoints_refuse_without_session_host_or_csrf_and_hide_other_sessions_jobs(bench):
    client, csrf = session_client(bench)
    other, _ = session_client(bench)
    try:
        job = jobs.start(jobs.Job("counting", "/open"), slow_job)
        session_in_server(bench, client).jobs[job.id] = job
        assert httpx.get(f"{bench.base}/jobs/{job.id}/progress").status_code == 403  # no session
        assert client.get(f"/jobs/{job.id}/progress", headers={"Host": "evil.example"}).status_code == 403
        assert client.post(f"/jobs/{job.id}/cancel", follow_redirects=False).status_code == 403  # no CSRF
        assert client.post(f"/jobs/{job.id}/cancel", data={"csrf": csrf}, headers={"Origin": "http://evil.example"},
                           follow_redirects=False).status_code == 403
        assert other.get(f"/jobs/{job.id}/progress").status_code == 404  # another session's job
        progress = client.get(f"/jobs/{job.id}/progress").json()
        assert progress["state"] == "running" and progress["done_url"] is None
        assert client.post(f"/jobs/{job.id}/cancel", data={"csrf": csrf}).status_code == 200
        job.join(10)
        assert client.get(f"/jobs/{job.id}/progress").json()["state"] == "cancelled"
    finally:
        client.close()
        other.close()


def test_a_job_shows_progress_and_is_cancelled_in_the_browser(page, bench):
    page.goto(bench.url)
    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == f"sdckit_app_{bench.port}")
    job = jobs.start(jobs.Job("counting", "/open"), slow_job)
    bench.app.state.sessions.get(cookie).jobs[job.id] = job
    page.goto(page.url.rsplit("/", 1)[0] + f"/jobs/{job.id}")
    page.locator("#job-state", has_text="counting").wait_for()  # polled by the page's script
    first = float(page.get_attribute("#job-progress", "value") or 0)
    page.wait_for_timeout(400)
    assert unlabelled(page) == []
    shot(page, "10-job")
    page.click("#cancel")
    page.locator("#job-state", has_text="cancelled").wait_for()
    assert "was cancelled" in page.locator("#error").inner_text()
    assert job.state == "cancelled" and job.done > first * 3000


def test_a_cancelled_step_or_release_changes_nothing(tmp_path):
    path = tmp_path / "s.csv"
    survey(30).to_csv(path, index=False)
    session = Session("s", "c")
    session.open(open_path(path))
    session.confirm(check_roles(session.data.frame, {"person_id": "identifier", "sex": "quasi", "region": "quasi"}))
    add_step(session, LocalSuppression(k=2))
    cancelled = jobs.Job("x", "/")
    cancelled.cancel()
    with pytest.raises(jobs.Cancelled):
        add_step(session, LocalSuppression(k=3), cancelled)
    assert len(session.steps) == 1
    out = tmp_path / "out"
    with pytest.raises(jobs.Cancelled):
        write_release(session, release_plan(session, str(out), "csv"), cancelled)
    assert list(out.iterdir()) == [] and session.released is None
