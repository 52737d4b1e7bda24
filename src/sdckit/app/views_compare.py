"""The Compare screen's routes: candidates kept, compared and a step tuned (issue 31, screen 4b;
the calls are in :mod:`sdckit.app.compare`)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from sdckit.app import compare as comparing
from sdckit.app.pages import busy_line, form_of, guard, need_data, page, start_job
from sdckit.app.session import Session
from sdckit.core.errors import DataError, SdcError


def register(app: FastAPI) -> None:
    """Attach the Compare screen's routes to ``app``."""

    # ------------------------------------------------------------------ 4b. compare and tune
    def compare_page(request: Request, status: int = 200, error: str | None = None,
                     form: dict[str, str] | None = None) -> Response:
        session: Session = request.state.session
        return page(request, "compare.html", status, error=error, form=form or {},
                    candidates=session.candidates, steps=session.steps, shown=session.compared,
                    tunable=comparing.tunable_steps(session), sample_limit=comparing.COMPARE_RECORDS)

    @app.get("/compare")
    def compare_screen(request: Request) -> Response:
        if (redirect := need_data(request)) is not None:
            return redirect
        if not request.state.session.confirmed:
            return page(request, "risk.html", figures=None,
                        note="Confirm the roles first: candidates are steps on the columns by their roles.")
        return compare_page(request)

    @app.post("/compare/keep")
    async def compare_keep(request: Request) -> Response:
        form = await form_of(request)
        if (stop := guard(request, form, roles=True)) is not None:
            return stop
        try:
            comparing.keep_candidate(request.state.session, form.get("label", ""))
        except SdcError as exc:
            return compare_page(request, 400, " ".join(str(exc).split()), form)
        return RedirectResponse("/compare", status_code=303)

    @app.post("/compare/drop")
    async def compare_drop(request: Request) -> Response:
        form = await form_of(request)
        if (stop := guard(request, form, roles=True)) is not None:
            return stop
        comparing.drop_candidate(request.state.session, form.get("label", ""))
        return RedirectResponse("/compare", status_code=303)

    async def compare_job(request: Request, label: str, done_url: str, check: Any, work: Any) -> Response:
        """The common path of the Compare screen's jobs: guard, one-line refusals, the job."""
        form = await form_of(request)
        if (stop := guard(request, form, roles=True)) is not None:
            return stop
        session: Session = request.state.session
        try:
            if (busy := busy_line(session)) is not None:
                raise DataError(busy)
            checked = check(session, form)
        except SdcError as exc:
            return compare_page(request, 400, " ".join(str(exc).split()), form)
        return start_job(session, label, done_url, lambda j: work(session, checked, j))

    def set_compared(session: Session, shown: Any) -> None:
        session.compared = shown

    @app.post("/compare/run")
    async def compare_run(request: Request) -> Response:
        return await compare_job(request, "the comparison", "/compare", lambda session, _: comparing.check_comparable(session),
                                 lambda session, _, j: set_compared(session, comparing.run_comparison(session, j)))

    @app.post("/compare/tune")
    async def compare_tune(request: Request) -> Response:
        def check(session: Session, form: dict[str, str]) -> tuple[int, float]:
            return comparing.tuning_request(session, form.get("step", ""), form.get("target", ""))

        return await compare_job(request, "the tuning", "/compare", check,
                                 lambda session, wanted, j: set_compared(session, comparing.run_tuning(session, *wanted, j)))

    @app.post("/compare/apply")
    async def compare_apply(request: Request) -> Response:
        return await compare_job(request, "applying the tuned value", "/protect", lambda session, _: comparing.tuned(session),
                                 lambda session, shown, j: comparing.apply_tuned(session, shown, j))
