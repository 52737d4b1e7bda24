"""Benchmark of the workbench's screens on large files (issue 31). Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_app.py [--repeats 3] [--rows 100000 1000000] [--suda]
        [--part inprocess|http|both] [--http-rows 100000] [--http-risk-rows 1000000]

Part ``inprocess``: in-process calls of the functions the screens make
(:mod:`sdckit.app.session`), not the browser:

* open: :func:`~sdckit.app.session.open_path` of a CSV file (``sdckit.io.read``);
* overview: the Data and Roles screens' figures on a fresh data set — the column overview,
  the role suggestions (both on :data:`~sdckit.app.session.SAMPLE_RECORDS` sampled records
  beyond that size, as the pages say) and the preview;
* risk: the Risk screen — the roles checked, :func:`~sdckit.app.session.risk_figures` (the
  risk summary with a weight and households) and :func:`~sdckit.app.session.risk_plots` (the
  report's two figures);
* suda (``--suda``): the SUDA2 job of the Risk screen, :func:`~sdckit.app.session.suda_figures`.

Data: synthetic survey records (a unique id, a unique text code, sex, age 0-99, 200 regions, 7
education levels, 5 marital states as the five keys: many sample uniques; income; a weight;
households of two). Each size prints the median of the repeats and the first call (which pays
for the imports, matplotlib's among them). Goals: every screen under 1 s on 1e5 records, the
risk screen under 5 s on 1e6.

Part ``http``: the real workbench server (:class:`sdckit.app.server.Workbench` on 127.0.0.1, a
free port) driven over HTTP by one session (its token's visit, its CSRF token), as the browser
does. On ``--http-rows`` records: the POSTs that open the file (upload, path), the Data and Roles
screens' first visits after it, the POST that confirms the roles and the Risk screen's first
visit (which starts the measure); the GET of every screen (Open, Data, Roles, Risk, Protect,
Compare, Tables, Release) once the data is open, the roles confirmed and a step applied (the
page as the browser gets it, redirects not followed); and the POSTs that start work: measure
the risk, apply a protection step, keep a candidate, compare two candidates, build and protect
a table, release, continue from the release's recipe. Each line gives the time until the server answers (a screen, or a redirect to
the job's progress page: the page is interactive then, the work goes on as a job with
progress) and, for a job, the time until the job is done (its progress polled every 20 ms); the
job's progress page is timed too. On ``--http-risk-rows`` records: open, confirm the roles, the
Risk screen's first visit and measure (answer and job), then the screens' answers for
information (no goal at that size). Goal per line: answer under 1 s at 1e5 records, the risk
screen under 5 s at 1e6 (job completion is reported, not held to a goal). The load average is
printed before and after: the figures of a busy machine are slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd

ROLES = {"person_id": "identifier", "code": "identifier", "sex": "quasi", "age": "quasi", "region": "quasi",
         "education": "quasi", "marital": "quasi", "income": "confidential", "weight": "weight",
         "hhid": "household"}


def synthetic(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "person_id": np.arange(1, rows + 1),
        "code": [f"P{i:08d}" for i in range(rows)],
        "sex": rng.choice(["F", "M"], rows),
        "age": rng.integers(0, 100, rows),
        "region": rng.choice([f"region {i:03d}" for i in range(200)], rows),
        "education": rng.choice(list("ABCDEFG"), rows),
        "marital": rng.choice(["single", "married", "divorced", "widowed", "other"], rows),
        "income": np.round(rng.lognormal(10, 0.5, rows), 2),
        "weight": np.round(rng.uniform(5, 50, rows), 3),
        "hhid": np.arange(rows) // 2,
    })


def timed(fn, repeats: int) -> tuple[float, float]:
    """(median, first) wall time in seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times[0]


def in_process(args: argparse.Namespace) -> None:
    """The in-process figures: open, the Data/Roles overview, the risk figures (and SUDA2)."""
    from sdckit.app import session as work

    print(f"sample beyond {work.SAMPLE_RECORDS:,} records; median of {args.repeats} (first call)")
    for rows in args.rows:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"survey{rows}.csv"
            synthetic(rows).to_csv(path, index=False)
            size_mb = path.stat().st_size / 1024**2
            loaded = work.open_path(path)
            frame = loaded.frame

            def overview() -> None:
                fresh = work.Loaded(loaded.name, frame, loaded.source)  # nothing cached
                fresh.overview, fresh.suggestions, work.preview(frame)

            def risk() -> None:
                roles = work.check_roles(frame, ROLES)
                figures = work.risk_figures(frame, roles)
                work.risk_plots(frame, roles, figures)

            cases = [("open", lambda: work.open_path(path)), ("overview", overview), ("risk", risk)]
            if args.suda:
                cases.append(("suda", lambda: work.suda_figures(frame, ROLES)))
            for name, fn in cases:
                median, first = timed(fn, args.repeats)
                extra = f"  records with an MSU: {fn()['records_with_msu']:,}" if name == "suda" else ""
                print(f"{rows:>9,} records ({size_mb:5.0f} MB CSV)  {name:9s}: {median:7.3f} s  ({first:.3f} s){extra}")


# --------------------------------------------------------------------------- over HTTP
class Client:
    """One session of the workbench over HTTP: the token's visit opens it, its CSRF token is read
    from the page (as tests/test_app_browser.py's ``session_client``)."""

    def __init__(self, bench: object) -> None:
        import re

        import httpx

        self.http = httpx.Client(base_url=bench.base, follow_redirects=False, timeout=600)
        html = self.http.get(bench.url, follow_redirects=True).text
        self.csrf = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
        self.job_pages: list[float] = []  # seconds of each GET of a job's progress page

    def upload(self, path: Path) -> float:
        """Seconds of ``POST /open/upload`` of the file at ``path`` (the raw body, as app.js sends it)."""
        start = time.perf_counter()
        answer = self.http.post("/open/upload", content=path.read_bytes(),
                                headers={"X-CSRF-Token": self.csrf, "X-File-Name": path.name})
        answer.read()
        if answer.status_code != 200:
            raise RuntimeError(f"POST /open/upload: {answer.status_code} {answer.text[:300]}")
        return time.perf_counter() - start

    def get(self, url: str) -> tuple[float, object]:
        start = time.perf_counter()
        answer = self.http.get(url)
        answer.read()
        return time.perf_counter() - start, answer

    def post(self, url: str, data: dict | list) -> tuple[float, float | None, object]:
        """(seconds to the answer, seconds to the end of the job it started or None, answer):
        a redirect to ``/jobs/<id>`` is a job, polled until it is no longer running."""
        fields = [*(data.items() if isinstance(data, dict) else data), ("csrf", self.csrf)]
        start = time.perf_counter()
        answer = self.http.post(url, content=urlencode(fields),
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        answer.read()
        answered = time.perf_counter() - start
        where = answer.headers.get("location", "")
        if answer.status_code >= 400:
            raise RuntimeError(f"POST {url}: {answer.status_code} {answer.text[:300]}")
        if not where.startswith("/jobs/"):
            return answered, None, answer
        self.job_pages.append(self.get(where)[0])  # the progress page the browser is sent to
        while True:
            state = self.http.get(f"{where}/progress").json()
            if state["state"] != "running":
                break
            time.sleep(0.02)
        done = time.perf_counter() - start
        if state["state"] != "done":
            raise RuntimeError(f"POST {url}: the job {state['state']}: {state['error']}")
        return answered, done, answer


def http_figures(args: argparse.Namespace) -> None:
    """The HTTP figures: each screen's answer (and job) timed against the real server."""
    from sdckit.app import session as work
    from sdckit.app.server import Workbench

    repeats = args.repeats
    print(f"\nover HTTP (sdckit.app.server.Workbench on 127.0.0.1), median of {repeats} "
          f"(max); load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    print(f"{'records':>9} {'screen / request':37s} {'answer':>8} {'(max)':>8} {'job done':>9} {'goal':>6}  verdict")

    def line(rows: int, name: str, answers: list[float], jobs: list[float | None], goal: float | None) -> None:
        """One figure: median and max of the answers, median of the jobs' ends, the goal (None: no
        goal stated, shown for information)."""
        answer = statistics.median(answers)
        done = [j for j in jobs if j is not None]
        job = f"{statistics.median(done):8.3f}s" if done else f"{'-':>9}"
        verdict = "info" if goal is None else "OK" if answer <= goal else "OVER"
        wanted = f"{'-':>5} " if goal is None else f"{goal:5.0f}s"
        print(f"{rows:>9,} {name:37s} {answer:7.3f}s {max(answers):7.3f}s {job} {wanted}  {verdict}", flush=True)

    def repeat(fn, times: int = repeats) -> tuple[list[float], list[float | None]]:
        answers, jobs = [], []
        for _ in range(times):
            answered, done = fn()
            answers.append(answered)
            jobs.append(done)
        return answers, jobs

    bench = Workbench(0).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for rows, goal, full in ((args.http_rows, 1.0, True), (args.http_risk_rows, 5.0, False)):
                if not rows:
                    continue
                path = Path(folder) / f"survey{rows}.csv"
                synthetic(rows).to_csv(path, index=False)
                client = Client(bench)
                columns = list(synthetic(2).columns)
                roles_form = {f"role-{i}": ROLES.get(c, "") for i, c in enumerate(columns)}

                def open_file() -> tuple[float, None]:
                    answered, _, answer = client.post("/open/path", {"path": str(path)})
                    assert answer.headers.get("location") == "/data", answer.text[:300]
                    return answered, None

                def confirm() -> tuple[float, None]:
                    answered, _, answer = client.post("/roles", roles_form)
                    assert answer.headers.get("location") == "/risk", answer.text[:300]
                    return answered, None

                def measure() -> tuple[float, float | None]:
                    answered, done, _ = client.post("/risk/measure", {})
                    return answered, done if done is not None else answered

                def screen(url: str) -> tuple[float, None]:
                    seconds, answer = client.get(url)
                    assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
                    return seconds, None

                def first_visits() -> tuple[float, None]:
                    """The file opened again, then the Data and Roles screens' first visits (the
                    overview and the suggestions computed then)."""
                    open_file()
                    data = screen("/data")[0]
                    firsts.append(screen("/roles")[0])
                    return data, None

                def risk_first() -> tuple[float, float | None]:
                    """Roles confirmed, then the Risk screen's first visit: it starts the measure and
                    answers with the figures or the job's progress page."""
                    confirm()
                    answered, answer = client.get("/risk")
                    where = answer.headers.get("location", "")
                    if not where.startswith("/jobs/"):
                        return answered, answered
                    start = time.perf_counter() - answered
                    while client.http.get(f"{where}/progress").json()["state"] == "running":
                        time.sleep(0.02)
                    return answered, time.perf_counter() - start

                firsts: list[float] = []
                line(rows, "POST /open/upload (the CSV's bytes)", *repeat(lambda: (client.upload(path), None)), goal)
                line(rows, "POST /open/path (open the CSV)", *repeat(open_file), goal)
                line(rows, "GET /data (first visit after open)", *repeat(first_visits), goal)
                line(rows, "GET /roles (first visit after open)", firsts, [None], goal)
                line(rows, "POST /roles (confirm)", *repeat(confirm), goal)
                line(rows, "GET /risk (first visit: starts job)", *repeat(risk_first), goal)
                line(rows, "POST /risk/measure", *repeat(measure), goal)
                if not full:  # the other screens' answers at this size, for information
                    line(rows, "GET /risk (the figures)", *repeat(lambda: screen("/risk")), goal)
                    for url in ("/data", "/roles", "/protect", "/compare", "/tables", "/release"):
                        screen(url)
                        line(rows, f"GET {url}", *repeat(lambda url=url: screen(url)), None)
                    continue
                # a step applied (then undone) each repeat; one kept applied for the screens
                step = {"method": "additive_noise", "p-alpha": "0.1"}

                def apply_step() -> tuple[float, float | None]:
                    client.post("/protect/undo", {})
                    answered, done, _ = client.post("/protect", step)
                    return answered, done

                line(rows, "POST /protect (additive_noise)", *repeat(apply_step), goal)
                for url in ("/open", "/data", "/roles", "/risk", "/protect", "/compare", "/tables", "/release"):
                    screen(url)  # a first visit (the template compiled)
                    line(rows, f"GET {url}", *repeat(lambda url=url: screen(url)), goal)
                # two candidates kept, then compared
                labels = iter(range(10**6))

                def keep() -> tuple[float, None]:
                    answered, _, answer = client.post("/compare/keep", {"label": f"noise {next(labels)}"})
                    assert answer.headers.get("location") == "/compare", answer.text[:300]
                    return answered, None

                line(rows, "POST /compare/keep", *repeat(keep), goal)
                line(rows, "POST /compare/run", *repeat(lambda: client.post("/compare/run", {})[:2]), goal)
                table = [("dimension", "sex"), ("dimension", "education"), ("response", ""), ("weight", ""),
                         ("min_frequency", "3"), ("protection", "suppression-optimal"), ("base", "3")]
                line(rows, "POST /tables (sex x education)", *repeat(lambda: client.post("/tables", table)[:2]), goal)
                out = iter(range(10**6))
                line(rows, "POST /release (csv)", *repeat(lambda: client.post(
                    "/release", {"folder": str(Path(folder) / f"release{next(out)}"), "format": "csv"})[:2]), goal)
                recipe = next((Path(folder) / "release0").glob("*.recipe.toml"))

                def continue_recipe() -> tuple[float, float]:
                    """The Open screen's "continue from a recipe": the release's recipe, its step
                    applied again (the job's end: the steps shown on the Protect screen)."""
                    answered, done, _ = client.post("/open/recipe", {"recipe": str(recipe)})
                    return answered, answered if done is None else done

                line(rows, "POST /open/recipe (continue, 1 step)", *repeat(continue_recipe), goal)
                line(rows, "GET /jobs/<id> (a job's progress page)", client.job_pages, [None], goal)
    finally:
        bench.stop()
    print(f"load after: {os.getloadavg()[0]:.1f}; sample beyond {work.SAMPLE_RECORDS:,} records")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--suda", action="store_true", help="also time the SUDA2 job")
    parser.add_argument("--part", choices=("inprocess", "http", "both"), default="both")
    parser.add_argument("--http-rows", type=int, default=100_000, help="records of the HTTP screens (0: none)")
    parser.add_argument("--http-risk-rows", type=int, default=1_000_000,
                        help="records of the HTTP risk screen (0: none)")
    args = parser.parse_args()
    if args.part in ("inprocess", "both"):
        in_process(args)
    if args.part in ("http", "both"):
        http_figures(args)


if __name__ == "__main__":
    main()
