"""The workbench (``sdckit app``, issue 31) in a real browser: Playwright driving Debian's Chromium.

The server runs in-process on 127.0.0.1 and a free port. The browser opens the address with its
token, uploads a small file made here, confirms the suggested roles (changing one), and the risk
screen must show what :func:`sdckit.risk.summary.risk_summary` computes on the same file (its
SUDA2 figures too, computed on demand as a job, and the report's plots); a file larger than the
sample size says on the Data and Roles screens that it was sampled. Protect
applies steps with undo (risk, utility and verdict before/after); Release writes the data,
manifest, report and the recipe + seed file, which ``sdckit protect`` reproduces byte for byte;
long work runs as jobs whose progress the page polls and which it cancels. The
security checks (no token, a foreign Origin, a missing CSRF token, a foreign Host) run with httpx.
Chromium is Debian's ``chromium`` package, which ``.ci/run`` installs; without it the browser tests
skip and say why. Set ``SDCKIT_APP_SCREENSHOTS`` to a folder to keep a screenshot of each screen
(the README's, docs/images/workbench/, are these reduced to 64 colours with Pillow).
"""

from __future__ import annotations

import re
import time

import httpx
import pytest
from typer.testing import CliRunner

from sdckit.app import session as work
from sdckit.app.server import Workbench
from sdckit.app.session import open_path, record_sample, suggest_roles
from sdckit.cli.app import app
from sdckit.core.errors import ParameterError
from sdckit.core.random import new_seed
from sdckit.core.schema import Schema
from sdckit.io import read
from sdckit.masking import LocalSuppression
from sdckit.pipeline import protect
from sdckit.risk.summary import risk_summary

from app_browser_support import survey, SURVEY_ROLES, slow_risk, bench, browser, page, unlabelled, shot, open_by_path, session_client, finished, risk_html  # noqa: F401 (fixtures: slow_risk, bench, browser, page)


# --------------------------------------------------------------------------- security (no browser)


def test_without_the_token_or_from_another_host_every_request_is_refused(bench):
    assert httpx.get(f"{bench.base}/open").status_code == 403
    assert httpx.get(f"{bench.base}/").status_code == 403
    assert httpx.get(f"{bench.base}/?token=wrong").status_code == 403
    assert httpx.post(f"{bench.base}/open/path", data={"path": "x.csv"}).status_code == 403
    token = bench.url.split("token=")[1]
    evil_host = httpx.get(f"{bench.base}/?token={token}", headers={"Host": "evil.example:80"})
    assert evil_host.status_code == 403  # DNS rebinding: a page on another name cannot reach us
    ok = httpx.get(bench.url)
    assert ok.status_code == 303 and "httponly" in ok.headers["set-cookie"].lower()
    assert "samesite=strict" in ok.headers["set-cookie"].lower()


def test_a_post_from_another_origin_or_without_the_csrf_token_is_refused(bench, tmp_path):
    client, csrf = session_client(bench)
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    try:
        foreign = client.post("/open/path", data={"path": str(path), "csrf": csrf},
                              headers={"Origin": "http://evil.example"}, follow_redirects=False)
        assert foreign.status_code == 403
        assert client.post("/open/path", data={"path": str(path)}, follow_redirects=False).status_code == 403
        assert client.post("/open/upload", content=b"a,b\n1,2\n", headers={"X-File-Name": "x.csv"}).status_code == 403
        assert "No data set open" in client.get("/open").text  # nothing of the refused posts happened
        own = client.post("/open/path", data={"path": str(path), "csrf": csrf},
                          headers={"Origin": bench.base}, follow_redirects=False)
        assert own.status_code == 303 and own.headers["location"] == "/data"
        page = client.get("/data")
        assert "Content-Security-Policy" in page.headers and "s.csv" in page.text
    finally:
        client.close()


def test_new_roles_give_new_risk_figures(bench, tmp_path):
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    client, csrf = session_client(bench)
    roles = SURVEY_ROLES
    try:
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        for keys in (3, 2):  # the second time region is no key any more
            chosen = roles[:1 + keys] + [""] * (3 - keys) + roles[4:]
            client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(chosen)}})
            html = risk_html(client)
            expected = risk_summary(read(path), ["sex", "age_group", "region"][:keys], "weight", suda=False).to_dict()
            assert f'id="fig-global-risk">{expected["global_risk"]:.6f}<' in html
    finally:
        client.close()


@pytest.mark.parametrize("suffix", [".dta", ".sav", ".tsv", ".parquet"])
def test_the_open_screen_reads_through_sdckit_io(tmp_path, suffix):
    frame = survey(8)
    path = tmp_path / f"s{suffix}"
    if suffix == ".dta":
        frame.to_stata(path, write_index=False)
    elif suffix == ".sav":
        pyreadstat = pytest.importorskip("pyreadstat")
        pyreadstat.write_sav(frame, str(path))
    elif suffix == ".tsv":
        frame.to_csv(path, sep="\t", index=False)
    else:
        frame.to_parquet(path, index=False)
    loaded = open_path(path)
    assert loaded.name == path.name and loaded.frame.shape == frame.shape
    assert [c["name"] for c in loaded.overview] == list(frame.columns)
    assert loaded.frame.equals(read(path))


def test_a_file_larger_than_the_sample_says_so_on_the_data_and_roles_screens(bench, tmp_path, monkeypatch):
    path = tmp_path / "s.csv"
    survey(60).to_csv(path, index=False)
    client, csrf = session_client(bench)
    try:
        monkeypatch.setattr("sdckit.app.session.SAMPLE_RECORDS", 60, raising=False)  # as many as the records: exact
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        assert "over all 60 records" in client.get("/data").text and "sample of" not in client.get("/roles").text
        monkeypatch.setattr("sdckit.app.session.SAMPLE_RECORDS", 20, raising=False)
        client.post("/open/path", data={"path": str(path), "csrf": csrf})  # opened again: sampled
        html = client.get("/data").text
        assert "computed on a sample of 20 of 60 records" in html
        assert "missing values counted over all 60 records" in html
        distinct = [int(n) for n in re.findall(r'<td class="num">(\d+)</td></tr>', html)]
        assert len(distinct) == 7 and max(distinct) == 20  # person_id: 20 different values in 20 records
        roles = client.get("/roles").text
        assert "computed on a sample of 20 of 60 records" in roles
        person = re.search(r'data-column="person_id">(.*?)</select>', roles, re.S).group(1)
        assert 'value="identifier" selected' in person  # unique in the sample: suggested identifier
    finally:
        client.close()


def test_the_record_sample_is_drawn_without_replacement_in_file_order():
    frame = survey(60)
    assert record_sample(frame, 60) is frame  # small enough: every record
    sample = record_sample(frame, 25)
    assert len(sample) == 25 and sample.index.is_unique and sample.index.is_monotonic_increasing
    assert sample.equals(frame.loc[sample.index])


def test_suggestions_mark_a_unique_column_identifier_and_the_weight_and_household():
    s = suggest_roles(survey())
    assert s["person_id"][0] == "identifier"
    assert s["weight"][0] == "weight" and s["hhid"][0] == "household"
    assert {s[c][0] for c in ("sex", "age_group", "region")} == {"quasi"}
    assert s["income"][0] == "confidential"


# --------------------------------------------------------------------------- screens in the browser
def test_a_slow_risk_measure_is_a_job_and_blocks_no_other_request_of_the_session(bench, tmp_path, slow_risk):
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    client, csrf = session_client(bench)
    roles = SURVEY_ROLES
    try:
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(roles)}},
                    follow_redirects=False)
        started = time.monotonic()
        answer = client.get("/risk", follow_redirects=False)
        assert time.monotonic() - started < 0.9 and answer.status_code == 303
        job_url = answer.headers["location"]
        assert job_url.startswith("/jobs/")
        started = time.monotonic()
        data = client.get("/data")  # the same session, while the risk is measured
        assert data.status_code == 200 and time.monotonic() - started < 0.5
        assert client.get("/risk", follow_redirects=False).headers["location"] == job_url  # no second job
        assert client.get(f"{job_url}/progress").json()["state"] == "running"
        assert finished(client, job_url)["done_url"] == "/risk"
        expected = risk_summary(read(path), ["sex", "age_group", "region"], "weight", suda=False).to_dict()
        assert f'id="fig-global-risk">{expected["global_risk"]:.6f}<' in client.get("/risk").text
    finally:
        client.close()


def test_a_cancelled_risk_measure_shows_measure_the_risk(bench, tmp_path, slow_risk, monkeypatch):
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    client, csrf = session_client(bench)
    try:
        client.post("/open/path", data={"path": str(path), "csrf": csrf})
        client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(SURVEY_ROLES)}}, follow_redirects=False)
        job_url = client.get("/risk", follow_redirects=False).headers["location"]
        client.post(f"{job_url}/cancel", data={"csrf": csrf})
        assert finished(client, job_url)["state"] == "cancelled"  # at its report after the (slow) measure
        monkeypatch.setattr(work, "risk_figures", slow_risk)
        html = client.get("/risk").text  # not measured again until asked
        assert 'id="measure-risk"' in html and "cancelled" in html and 'id="fig-global-risk"' not in html
        assert client.post("/risk/measure", data={"csrf": csrf}).status_code == 200
        assert 'id="fig-global-risk"' in risk_html(client)
    finally:
        client.close()


def test_open_roles_risk_in_the_browser_match_the_library(page, bench, tmp_path):
    frame = survey()
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    page.goto(bench.url)
    assert page.url.endswith("/open") and "token" not in page.url
    assert unlabelled(page) == []
    page.keyboard.press("Tab")  # keyboard: the first stop is the skip link, then the screens
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/open"
    shot(page, "1-open")
    page.set_input_files("#upload-file", str(path))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url("**/data")
    assert page.inner_text("#dataset-name") == "survey.csv"
    rows = page.locator("#columns tbody tr")
    assert rows.count() == frame.shape[1]
    assert "numeric" in rows.nth(0).inner_text() and "nominal" in rows.nth(1).inner_text()
    assert "A sample: the first 10 of 60 records" in page.inner_text("#sample-note")
    assert page.locator("#sample tbody tr").count() == 10
    shot(page, "2-data")

    page.click("text=Next: roles")
    page.wait_for_url("**/roles")
    assert page.locator("select[data-column=person_id]").input_value() == "identifier"
    assert page.locator("select[data-column=weight]").input_value() == "weight"
    page.select_option("select[data-column=hhid]", "")  # the user changes a suggestion: no household
    shot(page, "3-roles")
    assert unlabelled(page) == []
    page.click("#confirm-roles")
    page.wait_for_url("**/risk")
    shot(page, "4-risk")

    expected = risk_summary(read(path), ["sex", "age_group", "region"], "weight", suda=False).to_dict()
    assert page.inner_text("#keys") == "sex, age_group, region"
    assert page.inner_text("#fig-records") == "60"
    assert page.inner_text("#fig-global-risk") == f"{expected['global_risk']:.6f}"
    assert page.inner_text("#fig-expected") == f"{expected['expected_reidentifications']:.2f}"
    assert page.inner_text("#fig-above") == f"{expected['above_threshold']:,}"
    for k in ("2", "3", "5"):
        assert page.inner_text(f"#fig-k{k}") == f"{expected['k_anonymity_violations'][k]:,}"
    assert page.locator("#fig-household-risk").count() == 0
    for plot in ("#plot-bands", "#plot-classes"):  # the report's figures, as data: URIs (the CSP)
        assert page.get_attribute(plot, "src").startswith("data:image/svg+xml;base64,")
        assert page.evaluate(f"document.querySelector('{plot}').naturalWidth") > 0  # the browser drew it
    assert page.locator("#fig-suda-msu").count() == 0  # SUDA2 only when asked for
    assert unlabelled(page) == []
    page.click("#run-suda")  # a job: its progress page, then back to the risk screen
    page.wait_for_selector("#fig-suda-msu")
    assert page.url.endswith("/risk")
    suda = risk_summary(read(path), ["sex", "age_group", "region"], "weight", suda=True,
                        suda_max_size=3).to_dict()["suda2"]
    assert suda["records_with_msu"] > 0
    assert page.inner_text("#fig-suda-msu") == f"{suda['records_with_msu']:,}"
    for size, count in suda["msu_by_size"].items():
        assert page.inner_text(f"#fig-suda-size-{size}") == f"{count:,}"
    assert page.inner_text("#fig-suda-mean") == f"{suda['mean_score']:.4f}"
    assert page.inner_text("#fig-suda-max") == f"{suda['max_score']:g}"
    assert [page.inner_text(f"#fig-dis-{i}") for i in range(len(suda["dis_score_bands"]))] == \
        [f"{v:,}" for v in suda["dis_score_bands"].values()]
    assert unlabelled(page) == []
    shot(page, "4-risk-plots", at="#plots-heading")
    body = page.inner_text("main")
    assert "1001" not in body and "north" not in body  # counts only, never a value


def test_a_slow_risk_measure_shows_its_progress_then_the_figures_in_the_browser(page, bench, tmp_path, slow_risk):
    path = tmp_path / "s.csv"
    survey().to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.click("nav >> text=Roles")
    page.click("#confirm-roles")
    page.wait_for_url("**/jobs/*")  # the measure's progress page ...
    assert page.inner_text("h1") == "Measuring the risk"
    page.wait_for_url("**/risk")  # ... which returns to the Risk screen when it is done
    expected = risk_summary(read(path), ["sex", "age_group", "region"], "weight", "hhid", suda=False).to_dict()
    assert page.inner_text("#fig-global-risk") == f"{expected['global_risk']:.6f}"


def test_a_bad_file_gives_one_line_and_keeps_the_open_data(page, bench, tmp_path):
    good = tmp_path / "good.csv.gz"
    survey(12).to_csv(good, index=False, compression="gzip")
    page.goto(bench.url)
    page.fill("#path", str(good))  # open by its path on the machine
    page.click("#path-form button[type=submit]")
    page.wait_for_url("**/data")
    assert page.inner_text("#dataset-name") == "good.csv.gz"
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"this is not parquet")
    page.goto(page.url.rsplit("/", 1)[0] + "/open")
    page.set_input_files("#upload-file", str(bad))
    page.click("#upload-form button[type=submit]")
    error = page.locator("#error")
    error.wait_for(state="visible")
    message = error.inner_text()
    assert "broken.parquet" in message and "\n" not in message
    assert "sdckit-app-" not in message  # named as the user knows it, not by the private folder
    shot(page, "5-open-error")
    assert page.inner_text("#dataset-name") == "good.csv.gz"  # nothing lost
    page.fill("#path", str(tmp_path / "nowhere.csv"))
    page.click("#path-form button[type=submit]")
    assert "No file at" in page.locator("#error").inner_text()
    assert page.inner_text("#dataset-name") == "good.csv.gz"


def test_two_weights_are_refused_on_the_page(page, bench, tmp_path):
    path = tmp_path / "s.csv"
    survey(20).assign(w2=1.0).to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.goto(page.url.rsplit("/", 1)[0] + "/roles")
    page.select_option("select[data-column=w2]", "weight")
    page.click("#confirm-roles")
    assert "mark one only" in page.locator("#error").inner_text()
    assert page.url.endswith("/roles")


def test_protect_checks_parameters_as_typed_and_shows_risk_before_and_after(page, bench, tmp_path):
    frame = survey()
    path = tmp_path / "survey.parquet"
    frame.to_parquet(path, index=False)
    open_by_path(page, bench, path)
    page.click("nav >> text=Roles")
    page.click("#confirm-roles")  # the suggestions as they are: hhid is the household id
    page.wait_for_url("**/risk")
    page.click("nav >> text=Protect")
    page.select_option("#method", "microaggregation")
    page.click("#method-form button[type=submit]")
    page.wait_for_url("**/protect?method=microaggregation")  # loaded: the script listens
    assert "an int >= 2" in page.inner_text("#rule-k")
    assert unlabelled(page) == []  # the rule's phrase from the method's constraints
    page.fill("#p-k", "1")
    error = page.locator("#err-k")
    error.filter(has_text="must be an int >= 2").wait_for()  # checked as typed, beside the field
    assert page.get_attribute("#p-k", "aria-invalid") == "true"
    page.fill("#p-k", "3")
    for _ in range(600):  # (wait_for_function would evaluate a string: the page's CSP forbids it)
        if page.get_attribute("#p-k", "aria-invalid") is None:
            break
        page.wait_for_timeout(25)
    assert page.get_attribute("#p-k", "aria-invalid") is None and page.inner_text("#err-k") == ""
    shot(page, "6-protect-params")

    page.select_option("#method", "local_suppression")
    page.click("#method-form button[type=submit]")
    page.wait_for_url("**/protect?method=local_suppression")
    page.fill("#p-k", "3")
    page.click("#apply")
    page.wait_for_selector("#before-after")
    shot(page, "7-protect-result", at="#result-heading")
    keys = ["sex", "age_group", "region"]
    original = read(path)
    schema = Schema.infer(original, identifier=["person_id"], quasi=keys, confidential=["income"])
    release = protect(original, [LocalSuppression(k=3)], schema=schema, seed=new_seed())  # deterministic
    before = risk_summary(original, keys, "weight", "hhid", suda=False).to_dict()
    after = risk_summary(release.data, keys, "weight", "hhid", suda=False).to_dict()
    assert after["k_anonymity_violations"]["3"] == 0 < before["k_anonymity_violations"]["3"]
    for side, d in (("before", before), ("after", after)):
        assert page.inner_text(f"#{side}-global-risk") == f"{d['global_risk']:.6f}"
        for k in ("2", "3", "5"):
            assert page.inner_text(f"#{side}-k{k}") == f"{d['k_anonymity_violations'][k]:,}"
    assert page.input_value("#p-k") == "3" and page.input_value("#p-missing") == "strict"  # as applied
    page.fill("#p-k", "0")  # a value the rules refuse, sent anyway: refused on the server, beside k
    page.click("#apply")
    page.locator("#err-k", has_text="an int >= 1").wait_for()


# --------------------------------------------------------------------------- the command
def test_sdckit_app_prints_its_address_and_serves_the_page(monkeypatch):
    """The command as a user runs it (in-process: ``run`` is replaced by a start in a thread)."""
    started = []

    def start_instead(self):
        started.append(self.start())

    monkeypatch.setattr(Workbench, "run", start_instead)
    result = CliRunner().invoke(app, ["app", "--no-browser"])
    assert result.exit_code == 0, result.output
    url = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=\S+", result.output).group(0)
    try:
        answer = httpx.get(url, follow_redirects=True, timeout=10)
        assert answer.status_code == 200 and "Open a data file" in answer.text
        assert httpx.get(url.split("?")[0] + "open").status_code == 403
    finally:
        started[0].stop()


def test_a_port_in_use_is_one_line(bench):
    result = CliRunner().invoke(app, ["app", "--no-browser", "--port", str(bench.port)])
    assert result.exit_code != 0 and isinstance(result.exception, ParameterError)
    assert f"Port {bench.port}" in str(result.exception) and "--port" in str(result.exception)
