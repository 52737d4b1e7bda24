"""The workbench's screens: Open, Data, Roles, Risk, Protect, Compare, Tables and Release (issue 31).

Each screen is a server-rendered page (Jinja2, autoescape on) over the calls in
:mod:`sdckit.app.session`. Forms post ``application/x-www-form-urlencoded`` bodies, parsed here
(no multipart parser needed); an upload is sent by ``static/app.js`` as the raw file body. A bad
input is shown as one line on the page, and the session keeps what it had.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from sdckit.app import jobs, views_compare, views_tables
from sdckit.app import protect as protecting
from sdckit.app import release as releasing
from sdckit.app import session as work
from sdckit.app.pages import (busy_line, csrf_ok, form_of, guarded_post, new_job, page, refused, start_job, wait_line,
                              with_data)
from sdckit.app.session import Session
from sdckit.core.errors import DataError, SdcError

#: The largest upload accepted (bytes); a bigger file is opened by its path on the machine.
MAX_UPLOAD = 2 * 1024**3
#: The label of the Risk screen's job (the first measure of the confirmed roles' risk).
RISK_JOB = "measuring the risk"
#: The label of the job that applies a recipe's steps again (the Open screen's "continue").
RECIPE_JOB = "applying the recipe's steps"
#: How long (seconds) a request waits for a job that usually ends at once (the risk of a small
#: file) before it sends the browser to the job's progress page instead.
QUICK_JOB = 0.3


def register(app: FastAPI) -> None:
    """Attach the screens' routes to ``app`` (Compare and Tables from their own modules)."""
    views_compare.register(app)
    views_tables.register(app)

    @app.get("/")
    def home(request: Request) -> Response:
        return RedirectResponse("/data" if request.state.session.data is not None else "/open", status_code=303)

    # ------------------------------------------------------------------ 1. open
    @app.get("/open")
    def open_screen(request: Request) -> Response:
        return page(request, "open.html")

    @app.post("/open/path")
    async def open_path(request: Request) -> Response:
        form = await form_of(request)
        if form is None:
            return refused()
        path, rda = form.get("path", "").strip(), form.get("rda", "").strip()
        if not path:
            return page(request, "open.html", 400, error="Give the path of a data file on this machine.", rda=rda)
        try:
            loaded = await run_in_threadpool(work.open_path, path, None, rda)
        except SdcError as exc:
            return page(request, "open.html", 400, error=str(exc), path=path, rda=rda)
        request.state.session.open(loaded)
        return RedirectResponse("/data", status_code=303)

    @app.post("/open/upload")
    async def open_upload(request: Request) -> Response:
        session: Session = request.state.session
        if not csrf_ok(session, request.headers.get("x-csrf-token")):
            return refused()
        try:
            name = work.safe_upload_name(unquote(request.headers.get("x-file-name", "")))
            with work.upload_folder() as folder:
                target = Path(folder) / name
                size = 0
                with target.open("wb") as out:
                    async for chunk in request.stream():
                        size += len(chunk)
                        if size > MAX_UPLOAD:
                            raise DataError(f"{name!r} is larger than {MAX_UPLOAD // 1024**3} GiB; "
                                                 "open it by its path on this machine instead.")
                        out.write(chunk)
                loaded = await run_in_threadpool(work.open_upload, target, name)
        except SdcError as exc:
            return JSONResponse({"error": " ".join(str(exc).split())}, status_code=400)
        session.open(loaded)
        return JSONResponse({"redirect": "/data"})

    # ------------------------------------------------------------------ data overview
    @app.get("/data")
    @with_data
    def data_screen(request: Request) -> Response:
        loaded = request.state.session.data
        frame = loaded.frame
        return page(request, "data.html", columns=loaded.overview, rows=work.preview(frame),
                    shown=min(len(frame), work.PREVIEW_ROWS), records=len(frame), sampled=len(loaded.sample))

    # ------------------------------------------------------------------ 2. roles
    def roles_page(request: Request, status: int = 200, error: str | None = None,
                   chosen: dict[str, str] | None = None) -> Response:
        session: Session = request.state.session
        suggestions = session.data.suggestions
        if chosen is None:
            chosen = dict(session.roles) if session.confirmed else {n: r for n, (r, _) in suggestions.items()}
        return page(request, "roles.html", status, error=error, columns=session.data.overview,
                    roles=work.ROLES, chosen=chosen, suggestions=suggestions, sampled=len(session.data.sample),
                    records=len(session.data.frame))

    @app.get("/roles")
    @with_data
    def roles_screen(request: Request) -> Response:
        return roles_page(request)

    @app.post("/roles")
    @guarded_post()
    async def roles_save(request: Request, form: dict[str, str]) -> Response:
        session: Session = request.state.session
        columns = [str(c) for c in session.data.frame.columns]
        chosen = {name: form.get(f"role-{i}", "") for i, name in enumerate(columns)}
        try:
            clean = work.check_roles(session.data.frame, chosen)
        except SdcError as exc:
            return roles_page(request, 400, str(exc), chosen)
        session.confirm(clean)
        return RedirectResponse("/risk", status_code=303)

    # ------------------------------------------------------------------ 3. risk
    def risk_page(request: Request, status: int = 200, error: str | None = None) -> Response:
        session: Session = request.state.session
        return page(request, "risk.html", status, error=error, figures=session.risk, plots=session.risk_plots,
                    suda=session.suda, note=None)

    def measure_risk(request: Request) -> Response:
        """Start the risk measure of the confirmed roles as a job: the Risk screen when it ended within
        :data:`QUICK_JOB` seconds (its one line when refused), its progress page otherwise."""
        session: Session = request.state.session
        frame, roles = session.data.frame, dict(session.roles)

        def work_on(job: jobs.Job) -> None:
            job.update(0, 2, "measuring the risk")
            figures = work.risk_figures(frame, roles)
            job.update(1, 2, "drawing the plots")
            plots = work.risk_plots(frame, roles, figures)
            if session.data is not None and session.data.frame is frame and session.roles == roles:
                session.risk, session.risk_plots = figures, plots  # not when the data or roles changed

        job = new_job(session, RISK_JOB, "/risk", work_on)  # or the one running (two requests at once)
        if job.label != RISK_JOB:
            return risk_page(request, 409, wait_line(job))
        session.risk_job = job
        job.join(QUICK_JOB)  # a small file's figures come at once, without the progress page
        if job.state == "done":
            return risk_page(request)
        if job.state == "failed":
            return risk_page(request, 400, job.error)
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)

    @app.get("/risk")
    @with_data
    def risk_screen(request: Request) -> Response:
        session: Session = request.state.session
        if not session.confirmed:
            return page(request, "risk.html", figures=None,
                        note="Confirm the roles first: the risk is measured on the quasi-identifiers.")
        if session.risk is not None and session.risk_plots is not None:
            return risk_page(request)
        job = session.risk_job
        if job is not None and job.state == "running":
            return RedirectResponse(f"/jobs/{job.id}", status_code=303)
        if job is not None and job.state in ("failed", "cancelled"):  # measured again when asked
            return risk_page(request, 400 if job.state == "failed" else 200, job.error)
        if (busy := busy_line(session)) is not None:
            return risk_page(request, 200, busy)
        return measure_risk(request)

    @app.post("/risk/measure")
    @guarded_post(roles=True)
    async def risk_measure(request: Request, form: dict[str, str]) -> Response:
        session: Session = request.state.session
        if (busy := busy_line(session)) is not None:
            return risk_page(request, 409, busy)
        return await run_in_threadpool(measure_risk, request)

    @app.post("/risk/suda")
    @guarded_post(roles=True)
    async def risk_suda(request: Request, form: dict[str, str]) -> Response:
        session: Session = request.state.session
        if (busy := busy_line(session)) is not None:
            return risk_page(request, 409, busy)
        frame, roles = session.data.frame, dict(session.roles)

        def work_on(job: jobs.Job) -> None:
            figures = work.suda_figures(frame, roles, job)
            if session.data is not None and session.data.frame is frame and session.roles == roles:
                session.suda = figures  # not when the data or the roles changed meanwhile

        return start_job(session, "the SUDA2 search", "/risk", work_on)

    # ------------------------------------------------------------------ 4. protect
    def protect_page(request: Request, name: str | None, status: int = 200, error: str | None = None,
                     texts: dict[str, str] | None = None, field_error: tuple[str, str] | None = None) -> Response:
        catalogue = protecting.methods()
        chosen = name if name in catalogue else None
        session: Session = request.state.session
        step = session.step
        if texts is None and step is not None and step.method.name == chosen:  # the values applied
            texts = {k: protecting.shown_value(v) for k, v in step.method.params(plain=False).items()}
        return page(request, "protect.html", status, error=error, methods=list(catalogue), chosen=chosen,
                    parameters=protecting.parameters(chosen) if chosen else [], texts=texts or {},
                    field_error=field_error, step=step, steps=session.steps,
                    sample_limit=protecting.PERMUTATION_RECORDS)

    def typed(form: dict[str, str]) -> dict[str, str]:
        return {k.removeprefix("p-"): v for k, v in form.items() if k.startswith("p-")}

    def method_or_error(request: Request, form: dict[str, str]) -> tuple[Any, str | None, str | None]:
        """(method, None, None), or (None, parameter or None, message) when it is refused; files
        are read from the data set's folder only (:func:`sdckit.app.protect.within_folder`)."""
        name = form.get("method", "")
        try:
            return protecting.build_method(name, typed(form), protecting.data_folder(request.state.session)), None, None
        except SdcError as exc:
            names = [p.name for p in protecting.parameters(name)] if name in protecting.methods() else []
            message = " ".join(str(exc).split())
            return None, protecting.parameter_named(message, names), message

    @app.get("/protect")
    @with_data
    def protect_screen(request: Request, method: str | None = None) -> Response:
        if not request.state.session.confirmed:
            return page(request, "risk.html", figures=None,
                        note="Confirm the roles first: the methods work on the columns by their roles.")
        return protect_page(request, method)

    @app.post("/protect/check")
    async def protect_check(request: Request) -> Response:
        form = await form_of(request)
        if form is None:
            return refused()
        _, name, message = method_or_error(request, form)
        return JSONResponse({"ok": message is None, "parameter": name, "error": message})

    @app.post("/protect")
    @guarded_post(roles=True)
    async def protect_apply(request: Request, form: dict[str, str]) -> Response:
        session: Session = request.state.session
        method, name, message = method_or_error(request, form)
        if method is None:
            return protect_page(request, form.get("method"), 400, None if name else message, typed(form),
                                (name, message) if name else None)
        if (busy := busy_line(session)) is not None:
            return protect_page(request, form.get("method"), 409, busy, typed(form))
        return start_job(session, f"applying {method.name}", f"/protect?method={method.name}",
                         lambda j: protecting.add_step(session, method, j))

    @app.post("/protect/undo")
    async def protect_undo(request: Request) -> Response:
        form = await form_of(request)
        if form is None:
            return refused()
        if request.state.session.data is not None:
            protecting.undo_step(request.state.session)
        return RedirectResponse("/protect", status_code=303)

    # ------------------------------------------------------------------ 6. release
    def release_page(request: Request, status: int = 200, error: str | None = None,
                     form: dict[str, str] | None = None) -> Response:
        session: Session = request.state.session
        source = session.data.source if session.data is not None else None
        form = form or {}
        return page(request, "release.html", status, error=error, formats=releasing.WRITABLE,
                    folder=form.get("folder", ""), fmt=form.get("format", "csv"),
                    input_path=form.get("input", "" if source is None else str(source)),
                    uploaded=source is None, released=session.released, steps=session.steps)

    @app.get("/release")
    @with_data
    def release_screen(request: Request) -> Response:
        return release_page(request)

    @app.post("/release")
    @guarded_post()
    async def release_write(request: Request, form: dict[str, str]) -> Response:
        session: Session = request.state.session
        try:
            if (busy := busy_line(session)) is not None:
                raise DataError(busy)
            plan = await run_in_threadpool(releasing.release_plan, session, form.get("folder", ""),
                                           form.get("format", ""), form.get("input"))
        except SdcError as exc:
            return release_page(request, 400, " ".join(str(exc).split()), form)
        return start_job(session, "the release", "/release", lambda j: releasing.write_release(session, plan, j))

    # ------------------------------------------------------------------ long work: jobs
    def job_of(request: Request, job_id: str) -> jobs.Job | None:
        return request.state.session.jobs.get(job_id)  # another session's job is not found

    @app.get("/jobs/{job_id}")
    def job_screen(request: Request, job_id: str) -> Response:
        job = job_of(request, job_id)
        if job is None:
            return Response("Not found: no such job in this session.", status_code=404, media_type="text/plain")
        if job.state == "done":
            return RedirectResponse(job.done_url, status_code=303)
        return page(request, "job.html", error=job.error, job=job)

    @app.get("/jobs/{job_id}/progress")
    def job_progress(request: Request, job_id: str) -> Response:
        job = job_of(request, job_id)
        if job is None:
            return JSONResponse({"error": "no such job in this session"}, status_code=404)
        return JSONResponse(job.to_dict())

    @app.post("/jobs/{job_id}/cancel")
    async def job_cancel(request: Request, job_id: str) -> Response:
        form = await form_of(request)
        if form is None:
            return refused()
        job = job_of(request, job_id)
        if job is None:
            return Response("Not found: no such job in this session.", status_code=404, media_type="text/plain")
        job.cancel()
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)

    @app.post("/open/recipe")
    async def open_recipe(request: Request) -> Response:
        """Continue from a recipe: read and checked in the request (one line on the Open screen),
        its steps applied again as a job (:data:`RECIPE_JOB`); the Protect screen when the job
        ended within :data:`QUICK_JOB` seconds, its progress page otherwise."""
        form = await form_of(request)
        if form is None:
            return refused()
        session: Session = request.state.session
        recipe = form.get("recipe", "")

        def refusal(status: int, line: str) -> Response:
            return page(request, "open.html", status, error=" ".join(line.split()), recipe=recipe)

        if (busy := busy_line(session)) is not None:
            return refusal(409, busy)
        try:
            plan = await run_in_threadpool(releasing.recipe_plan, recipe)
        except SdcError as exc:
            return refusal(400, str(exc))
        job = new_job(session, RECIPE_JOB, "/protect", lambda j: releasing.continue_recipe(session, plan, j))
        if job.label != RECIPE_JOB:
            return refusal(409, wait_line(job))
        await run_in_threadpool(job.join, QUICK_JOB)  # a recipe of quick steps: the Protect screen at once
        if job.state == "done":
            return RedirectResponse("/protect", status_code=303)
        if job.state == "failed":
            return refusal(400, job.error or "")
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)
