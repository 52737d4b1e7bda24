"""The workbench's web server: a FastAPI application under uvicorn, bound to 127.0.0.1 only.

Security (DESIGN.md section 11). A local application must not be drivable by another user of the
machine nor by a web page the user visits:

* the server listens on 127.0.0.1 only, and refuses a request whose ``Host`` header is not
  ``127.0.0.1:PORT`` or ``localhost:PORT`` (DNS rebinding);
* each start draws a random token (OS entropy) that only the address ``sdckit app`` prints
  carries; the first visit with it opens a session held on the server, whose id is a cookie
  (HttpOnly, SameSite=Strict, named after the port); without token or session: 403;
* a state-changing request (POST) with an ``Origin`` other than the app's own is refused, and
  must carry the session's CSRF token (form field ``csrf`` or header ``X-CSRF-Token``);
* every page is sent with a Content-Security-Policy allowing the app's own assets only (no
  inline script, no frame), ``no-store`` caching and no referrer to another site; the access log is off, so the
  token is never logged.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response

from sdckit.app.session import Session, SessionStore
from sdckit.core.errors import ParameterError

HOST = "127.0.0.1"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make form posts send Origin: null
    "Cache-Control": "no-store",
}
#: Static assets by name and media type; nothing else under /static is served.
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".svg": "image/svg+xml"}


@dataclass(frozen=True)
class Guard:
    """What the security checks compare with: the port's host names and origins, the token."""

    port: int
    token: str

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.hosts)

    @property
    def cookie(self) -> str:
        return f"sdckit_app_{self.port}"

    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())


def forbidden(message: str) -> Response:
    return PlainTextResponse(f"Forbidden: {message}", status_code=403, headers=SECURITY_HEADERS)


def create_app(port: int, token: str) -> FastAPI:
    """The workbench application for a server on ``127.0.0.1:port`` whose start token is ``token``."""
    from sdckit.app import views
    from sdckit.app.protect import methods

    # The method packages (scikit-learn for the synthesizers, ...) load in the background, so that
    # the Protect screen opens at once.
    threading.Thread(target=methods, name="sdckit-app-warm-up", daemon=True).start()
    guard = Guard(port, token)
    store = SessionStore()
    app = FastAPI(title="sdckit workbench", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sessions = store  # for the embedding program (and the tests); never served

    @app.middleware("http")
    async def secure(request: Request, call_next: Any) -> Response:
        if request.headers.get("host", "") not in guard.hosts:
            return forbidden("unknown Host header; open the address that `sdckit app` printed.")
        origin = request.headers.get("origin")
        if request.method not in ("GET", "HEAD") and origin is not None and origin not in guard.origins:
            return forbidden("a request from another site is refused.")
        if request.url.path.startswith("/static/"):
            response = await call_next(request)
        else:
            session = store.get(request.cookies.get(guard.cookie))
            token = request.query_params.get("token")
            if token is not None:
                if not guard.token_ok(token):
                    return forbidden("wrong token; open the address that `sdckit app` printed.")
                if request.method != "GET":
                    return forbidden("the token opens a session with GET only.")
                session = session or store.create()
                response = RedirectResponse(request.url.path, status_code=303)
                response.set_cookie(guard.cookie, session.id, httponly=True, samesite="strict", path="/")
                response.headers.update(SECURITY_HEADERS)
                return response
            if session is None:
                return forbidden("no session; open the address (with its token) that `sdckit app` printed.")
            request.state.session = session
            response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        files = resources.files("sdckit.app") / "static"
        if "/" in name or name.startswith(".") or suffix not in STATIC_TYPES or not (files / name).is_file():
            return PlainTextResponse("Not found", status_code=404)
        return Response((files / name).read_bytes(), media_type=STATIC_TYPES[suffix])

    views.register(app)
    return app


def session_of(request: Request) -> Session:
    """The session the security middleware attached to ``request``."""
    return request.state.session


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port the system picks)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ParameterError(f"The 'port' parameter of sdckit app must be an integer in [0, 65535]. Got {port!r} instead.")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise ParameterError(f"Port {port} on {HOST} is in use; choose another with --port, or leave "
                             "--port out for a free one.") from None
    sock.listen(64)
    return sock


class Workbench:
    """A workbench server ready to run: its socket, token, address and uvicorn server.

    ``run()`` serves until interrupted (the command); ``start()``/``stop()`` run it in a thread
    (tests and embedding).
    """

    def __init__(self, port: int = 0) -> None:
        self.socket = bind(port)
        self.port: int = self.socket.getsockname()[1]
        token = secrets.token_urlsafe(32)
        self.url = f"http://{HOST}:{self.port}/?token={token}"
        self.base = f"http://{HOST}:{self.port}"
        self.app = create_app(self.port, token)
        config = uvicorn.Config(self.app, log_level="warning", access_log=False,
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        self.server.run(sockets=[self.socket])

    def start(self) -> Workbench:
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]},
                                        name="sdckit-app", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.socket.close()
