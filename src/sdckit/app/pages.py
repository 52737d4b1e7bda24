"""What every screen of the workbench shares: the page template around a screen, the posted form
and its CSRF check, the guards of a POST (no data set yet, roles not confirmed, a job running)
and starting a job (issue 31; the screens are in :mod:`sdckit.app.views`,
:mod:`sdckit.app.views_compare` and :mod:`sdckit.app.views_tables`)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from functools import lru_cache, wraps
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined

from sdckit import __version__
from sdckit.app import jobs
from sdckit.app.protect import step_text
from sdckit.app.session import Session

#: A POST handler of :func:`guarded_post`: ``handler(request, form)``.
PostHandler = Callable[[Request, dict[str, str]], Awaitable[Response]]
#: The screens in the order of the navigation bar: path, title.
SCREENS = (("/open", "Open"), ("/data", "Data"), ("/roles", "Roles"), ("/risk", "Risk"), ("/protect", "Protect"),
           ("/compare", "Compare"), ("/tables", "Tables"), ("/release", "Release"))


@lru_cache(maxsize=1)
def environment() -> Environment:
    """Templates of the package, autoescape always on, undefined names an error; the filter
    ``step_text`` writes a step's method as the steps lists show it (:func:`sdckit.app.protect.step_text`)."""
    env = Environment(loader=PackageLoader("sdckit.app", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["step_text"] = step_text
    return env


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    session: Session = request.state.session
    html = environment().get_template(template).render(
        screens=SCREENS, current=request.url.path, session=session, version=__version__,
        data=session.data, error=context.pop("error", None), **context)
    return HTMLResponse(html, status_code=status)


def csrf_ok(session: Session, value: str | None) -> bool:
    return value is not None and hmac.compare_digest(value.encode(), session.csrf.encode())


async def posted(request: Request) -> dict[str, list[str]] | None:
    """The posted form, every value of each field (a field may repeat: checkboxes), or None when
    its CSRF token is wrong."""
    body = (await request.body()).decode("utf-8", errors="replace")
    fields = parse_qs(body, keep_blank_values=True)
    return fields if csrf_ok(request.state.session, (fields.get("csrf") or [None])[-1]) else None


def last_values(fields: dict[str, list[str]]) -> dict[str, str]:
    """A form with the last value of each field."""
    return {k: v[-1] for k, v in fields.items()}


async def form_of(request: Request) -> dict[str, str] | None:
    """The posted form (last value of each field), or None when its CSRF token is wrong."""
    fields = await posted(request)
    return None if fields is None else last_values(fields)


def refused() -> Response:
    return Response("Forbidden: the form's CSRF token is missing or wrong; reload the page.",
                    status_code=403, media_type="text/plain")


def need_data(request: Request) -> Response | None:
    """A redirect to the Open screen when the session has no data set yet."""
    return None if request.state.session.data is not None else RedirectResponse("/open", status_code=303)


def guard(request: Request, form: Any, roles: bool = False) -> Response | None:
    """What a POST of a screen answers instead of its work: 403 when the form's CSRF token was
    wrong (``form`` None), the Open screen without a data set, the Roles screen when ``roles``
    are needed and not confirmed; None when the work may go on."""
    if form is None:
        return refused()
    if (redirect := need_data(request)) is not None:
        return redirect
    if roles and not request.state.session.confirmed:
        return RedirectResponse("/roles", status_code=303)
    return None


def with_data(screen: Callable[..., Response]) -> Callable[..., Response]:
    """A GET screen that needs a data set: the Open screen without one (:func:`need_data`), else
    ``screen(request, **query)``; FastAPI reads the screen's own parameters (its signature)."""

    @wraps(screen)
    def shown(request: Request, **query: Any) -> Response:
        if (redirect := need_data(request)) is not None:
            return redirect
        return screen(request, **query)

    return shown


def guarded_post(roles: bool = False) -> Callable[[PostHandler], Callable[[Request], Awaitable[Response]]]:
    """A POST handler ``handler(request, form)`` run on the posted form (:func:`form_of`) once
    :func:`guard` let it go on (403 without the form's CSRF token, the Open screen without a data
    set, the Roles screen when ``roles`` are needed and not confirmed). The route's own signature
    is ``(request)``: the form is not a parameter FastAPI reads."""

    def decorate(handler: PostHandler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            form = await form_of(request)
            if (stop := guard(request, form, roles)) is not None:
                return stop
            return await handler(request, form)

        endpoint.__name__, endpoint.__qualname__, endpoint.__doc__ = (handler.__name__, handler.__qualname__,
                                                                      handler.__doc__)
        return endpoint

    return decorate


def busy_line(session: Session) -> str | None:
    """The one line that refuses new work while a job of the session runs (one at a time)."""
    busy = session.busy
    return None if busy is None else wait_line(busy)


def wait_line(job: jobs.Job) -> str:
    """The one line that refuses new work while ``job`` runs."""
    return f"Wait for {job.label} to end, or cancel it."


def new_job(session: Session, label: str, done_url: str, work: Any) -> jobs.Job:
    """Run ``work(job)`` as a job of the session (its thread started), unless a job of the
    session runs already: then that job, and ``work`` is not started. The check and the start
    are one step under the session's lock, so two requests at once (a double click, two tabs)
    start one job, and the second gets the running one."""
    with session.lock:
        if (running := session.busy) is not None:
            return running
        job = jobs.Job(label, done_url)
        session.jobs[job.id] = jobs.start(job, work)
        return job


def start_job(session: Session, label: str, done_url: str, work: Any) -> Response:
    """Run ``work(job)`` as a job of the session and send the browser to its progress page."""
    return RedirectResponse(f"/jobs/{new_job(session, label, done_url, work).id}", status_code=303)
