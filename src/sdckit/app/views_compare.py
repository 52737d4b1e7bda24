"""The Compare screen's routes: candidates kept, compared and a step tuned (issue 31, screen 4b;
the calls are in :mod:`sdckit.app.compare`)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from sdckit.app import compare as comparing
from sdckit.app.pages import busy_line, guarded_post, page, start_job, with_data
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
    @with_data
    def compare_screen(request: Request) -> Response:
        if not request.state.session.confirmed:
            return page(request, "risk.html", figures=None,
                        note="Confirm the roles first: candidates are steps on the columns by their roles.")
        return compare_page(request)

    @app.post("/compare/keep")
    @guarded_post(roles=True)
    async def compare_keep(request: Request, form: dict[str, str]) -> Response:
        try:
            comparing.keep_candidate(request.state.session, form.get("label", ""))
        except SdcError as exc:
            return compare_page(request, 400, " ".join(str(exc).split()), form)
        return RedirectResponse("/compare", status_code=303)

    @app.post("/compare/drop")
    @guarded_post(roles=True)
    async def compare_drop(request: Request, form: dict[str, str]) -> Response:
        comparing.drop_candidate(request.state.session, form.get("label", ""))
        return RedirectResponse("/compare", status_code=303)

    def compare_job(request: Request, form: dict[str, str], label: str, done_url: str, check: Any,
                    work: Any) -> Response:
        """The common path of the Compare screen's jobs (their POST guarded): one-line refusals, the job."""
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
    @guarded_post(roles=True)
    async def compare_run(request: Request, form: dict[str, str]) -> Response:
        return compare_job(request, form, "the comparison", "/compare",
                           lambda session, _: comparing.check_comparable(session),
                           lambda session, _, j: set_compared(session, comparing.run_comparison(session, j)))

    @app.post("/compare/tune")
    @guarded_post(roles=True)
    async def compare_tune(request: Request, form: dict[str, str]) -> Response:
        def check(session: Session, given: dict[str, str]) -> tuple[int, float]:
            return comparing.tuning_request(session, given.get("step", ""), given.get("target", ""))

        return compare_job(request, form, "the tuning", "/compare", check,
                           lambda session, wanted, j: set_compared(session, comparing.run_tuning(session, *wanted, j)))

    @app.post("/compare/apply")
    @guarded_post(roles=True)
    async def compare_apply(request: Request, form: dict[str, str]) -> Response:
        return compare_job(request, form, "applying the tuned value", "/protect",
                           lambda session, _: comparing.tuned(session),
                           lambda session, shown, j: comparing.apply_tuned(session, shown, j))
