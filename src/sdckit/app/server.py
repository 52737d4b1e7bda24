"""The workbench's web server: a FastAPI application under uvicorn, bound to 127.0.0.1 by default.

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

Login mode (``--host`` beyond localhost, or ``--state`` given): no start token; a visitor pastes
an API key of the query service's state database on ``/login``, checked by the service's own
:meth:`sdckit.query.state.State.authenticate` (salted scrypt hashes, constant-time compare), one
check at a time; a right key opens a session cookie as above (``Secure`` over TLS: the server's own, ``--certfile``, or a proxy's), a
wrong one is 403 and opens nothing. The key is never logged nor kept.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import secrets
import socket
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from sdckit.app.session import Session, SessionStore
from sdckit.core.errors import ParameterError
from sdckit.query.state import State

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


#: The largest login form accepted (bytes): an API key is about 90 characters.
MAX_LOGIN = 4096


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_names(host: str, port: int) -> frozenset[str]:
    """The ``Host`` headers a request to a server bound on ``host:port`` may carry: loopback's
    names, ``host`` itself, and for a wildcard address (``0.0.0.0``, ``::``) the machine's name,
    full name and addresses."""
    names = {"127.0.0.1", "localhost", host}
    if host in ("0.0.0.0", "::"):
        machine = socket.gethostname()
        names |= {machine, socket.getfqdn()}
        try:
            names |= {info[4][0] for info in socket.getaddrinfo(machine, None)}
        except OSError:
            pass
    return frozenset(f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names)


@dataclass(frozen=True)
class Guard:
    """What the security checks compare with: the server's host names and origins, the token,
    and in login mode the key store."""

    port: int
    token: str
    host: str = HOST
    state: State | None = None  # login mode: the query service's key store
    tls: bool = False  # served over TLS (its own or a proxy's): Secure cookie, https origins
    analysts: frozenset[str] | None = None  # login mode: the analysts who may log in (None: all)

    @cached_property
    def hosts(self) -> frozenset[str]:
        return host_names(self.host, self.port)

    @cached_property
    def origins(self) -> frozenset[str]:
        return frozenset(f"{'https' if self.tls else 'http'}://{h}" for h in self.hosts)

    @property
    def cookie(self) -> str:
        return f"sdckit_app_{self.port}"

    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())


def forbidden(message: str) -> Response:
    return PlainTextResponse(f"Forbidden: {message}", status_code=403, headers=SECURITY_HEADERS)


def set_session_cookie(response: Response, guard: Guard, session: Session) -> None:
    response.set_cookie(guard.cookie, session.id, httponly=True, samesite="strict", path="/", secure=guard.tls)


def login_page(message: str | None = None, status: int = 200) -> Response:
    from sdckit.app.pages import environment

    html = environment().get_template("login.html").render(error=message)
    return Response(html, status_code=status, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)


def create_app(port: int, token: str, host: str = HOST, state: State | None = None, tls: bool = False,
               analysts: frozenset[str] | None = None) -> FastAPI:
    """The workbench application for a server on ``host:port`` whose start token is ``token``;
    with ``state`` (a query-service state database), in login mode: an API key of its store opens
    a session, the token none."""
    from sdckit.app import pages, views
    from sdckit.app.protect import methods

    # The method packages (scikit-learn for the synthesizers, ...) load in the background, so that
    # the Protect screen opens at once.
    threading.Thread(target=methods, name="sdckit-app-warm-up", daemon=True).start()
    guard = Guard(port, token, host, state, tls, analysts)
    store = SessionStore()
    login_lock = threading.Lock()  # one key check at a time (scrypt, about 50 ms): a rate limit
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
        elif guard.state is not None and request.url.path == "/login":
            if request.method == "POST":
                return await log_in(request)
            return login_page()
        else:
            session = store.get(request.cookies.get(guard.cookie))
            token = request.query_params.get("token")
            if guard.state is not None and session is None:
                if request.method in ("GET", "HEAD"):
                    return RedirectResponse("/login", status_code=303, headers=SECURITY_HEADERS)
                return forbidden("no session; log in with your API key at /login.")
            if token is not None and guard.state is not None:
                return forbidden("this workbench opens a session by login with an API key, not a token.")
            if token is not None:
                if not guard.token_ok(token):
                    return forbidden("wrong token; open the address that `sdckit app` printed.")
                if request.method != "GET":
                    return forbidden("the token opens a session with GET only.")
                session = session or store.create()
                response = RedirectResponse(request.url.path, status_code=303)
                set_session_cookie(response, guard, session)
                response.headers.update(SECURITY_HEADERS)
                return response
            if session is None:
                return forbidden("no session; open the address (with its token) that `sdckit app` printed.")
            request.state.session = session
            response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    async def log_in(request: Request) -> Response:
        """POST /login: the form's ``key`` checked by the query service's own authentication;
        a session only for a right key. The key is neither logged nor kept."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN:
                return login_page("The login form is too large; paste the API key only.", 403)
        key = (parse_qs(body.decode("utf-8", "replace")).get("key") or [""])[-1].strip()
        assert guard.state is not None
        analyst = await run_in_threadpool(check_key, guard.state, key)
        if analyst is None:
            return login_page("Wrong API key, or one whose analyst may not use this workbench: paste a key "
                              "`sdckit analyst add` printed for you.", 403)
        session = store.create(analyst.name)
        response = RedirectResponse("/open", status_code=303, headers=SECURITY_HEADERS)
        set_session_cookie(response, guard, session)
        return response

    def check_key(state: State, key: str) -> Any:
        """The analyst of ``key`` or None, by the service's own check, one at a time; the audit
        log of the state database records the login or its refusal (never the key)."""
        with login_lock:
            analyst = state.authenticate(key)
        if analyst is None:
            state.log(None, None, "refused: workbench login", 403)
        elif guard.analysts is not None and analyst.name not in guard.analysts:
            state.log(analyst.name, None, "refused: workbench login (not among --analysts)", 403)
            return None
        else:
            state.log(analyst.name, None, "workbench login", 200)
        return analyst

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        files = resources.files("sdckit.app") / "static"
        if "/" in name or name.startswith(".") or suffix not in STATIC_TYPES or not (files / name).is_file():
            return PlainTextResponse("Not found", status_code=404)
        return Response((files / name).read_bytes(), media_type=STATIC_TYPES[suffix])

    @app.post("/logout")
    async def log_out(request: Request) -> Response:
        """End the session (its CSRF token required); the cookie is cleared."""
        if await pages.form_of(request) is None:
            return pages.refused()
        store.end(session_of(request))
        response = RedirectResponse("/login" if guard.state is not None else "/", status_code=303)
        response.delete_cookie(guard.cookie, path="/", httponly=True, samesite="strict", secure=guard.tls)
        return response

    views.register(app)
    return app


def session_of(request: Request) -> Session:
    """The session the security middleware attached to ``request``."""
    return request.state.session


def bind(port: int = 0, host: str = HOST) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port the system picks)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ParameterError(f"The 'port' parameter of sdckit app must be an integer in [0, 65535]. Got {port!r} instead.")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise ParameterError(f"Port {port} on {host} is in use; choose another with --port, or leave "
                                 "--port out for a free one.") from None
        raise ParameterError(f"Cannot listen on {host!r} (--host): {error.strerror}; give an address of "
                             "this machine, e.g. 127.0.0.1 or 0.0.0.0.") from None
    sock.listen(64)
    return sock


def check_serving(host: str, state: str | Path | None, allow_remote: bool, encrypted: bool = False) -> None:
    """Refuse, with one line, serving beyond localhost without a key store, or over plain HTTP
    (which sends the API key and the pages in clear) without ``allow_remote`` — ``encrypted``:
    the server speaks TLS itself (``--certfile``) — and a key store that does not exist."""
    if not isinstance(host, str) or not host:
        raise ParameterError(f"The '--host' option of sdckit app must be an address. Got {host!r} instead.")
    if not is_loopback(host):
        if state is None:
            raise ParameterError(f"--host {host} serves beyond this machine: give --state STATE.db, the query "
                                 "service's state database whose API keys log in (`sdckit analyst add`).")
        if not allow_remote and not encrypted:
            raise ParameterError(f"--host {host} serves beyond this machine over plain HTTP (API keys and data in "
                                 "clear): serve TLS with --certfile CERT.pem --keyfile KEY.pem, or add --allow-remote "
                                 "to accept plain HTTP (e.g. behind a TLS proxy).")
    if state is not None and not Path(state).is_file():
        raise ParameterError(f"No state database at {str(state)!r} (--state); create it with the query service "
                             "(`sdckit analyst add SERVICE.toml NAME --mode ...`).")


def check_certificate(certfile: str | Path | None, keyfile: str | Path | None) -> tuple[str, str | None] | None:
    """The PEM files of the server's own TLS (``--certfile``, ``--keyfile``; the key may be in the
    certificate's file), checked by loading them as the server will: None without a certificate;
    one line for a key without a certificate, a missing or unreadable file, or files that are not a
    certificate and its unencrypted private key."""
    if certfile is None:
        if keyfile is not None:
            raise ParameterError("--keyfile is the private key of --certfile: give --certfile CERT.pem too.")
        return None
    files: list[str] = []
    for option, given, what in (("--certfile", certfile, "certificate"), ("--keyfile", keyfile, "private key")):
        if given is None:
            continue
        path = Path(given).expanduser()
        if not path.is_file():
            raise ParameterError(f"No file at {str(path)!r} ({option}); give the PEM file of the server's {what}.")
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as error:
            raise ParameterError(f"Cannot read {str(path)!r} ({option}): {error.strerror}; run sdckit app as a "
                                 f"user who may read the {what}.") from None
        files.append(str(path))
    if b"-----BEGIN CERTIFICATE-----" not in Path(files[0]).read_bytes():
        raise ParameterError(f"--certfile {files[0]!r} holds no PEM certificate (-----BEGIN CERTIFICATE-----); "
                             "give the server's certificate.")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:  # no password: an encrypted key fails here rather than prompting when the server starts
        context.load_cert_chain(files[0], files[1] if len(files) > 1 else None, password=lambda: b"")
    except (ssl.SSLError, ValueError):
        where = f"--keyfile {files[1]!r}" if len(files) > 1 else f"--certfile {files[0]!r} (no --keyfile)"
        raise ParameterError(f"{where} holds no unencrypted PEM private key of the certificate in --certfile; give "
                             "the key that belongs to it (decrypted, readable by this user only).") from None
    return files[0], files[1] if len(files) > 1 else None


class Workbench:
    """A workbench server ready to run: its socket, token, address and uvicorn server.

    ``run()`` serves until interrupted (the command); ``start()``/``stop()`` run it in a thread
    (tests and embedding). ``tls``: a TLS proxy serves the app (``--behind-tls``); ``certfile``
    (and ``keyfile``): the server speaks TLS itself (uvicorn's ``ssl_certfile``, ``ssl_keyfile``).
    """

    def __init__(self, port: int = 0, host: str = HOST, state: str | Path | None = None,
                 allow_remote: bool = False, tls: bool = False, analysts: Sequence[str] | None = None,
                 certfile: str | Path | None = None, keyfile: str | Path | None = None) -> None:
        served = check_certificate(certfile, keyfile)
        check_serving(host, state, allow_remote, encrypted=served is not None)
        tls = tls or served is not None
        keys = None if state is None else State(state)
        allowed = None
        if analysts is not None:
            if keys is None:
                raise ParameterError("--analysts names who may log in: give --state STATE.db too.")
            allowed = frozenset(str(a).strip() for a in analysts if str(a).strip())
            for name in sorted(allowed):
                keys.analyst(name)  # one line when the store has no such analyst
        if keys is not None and not allowed:
            # A query-service analyst gets noisy or audited answers; the workbench shows records
            # and writes files. Logging in is granted by name, never to every key of the store.
            raise ParameterError("--state needs --analysts NAME[,NAME...]: the workbench shows the records, so "
                                 "name the analysts of the store who may log in.")
        self.socket = bind(port, host)
        self.port: int = self.socket.getsockname()[1]
        token = secrets.token_urlsafe(32)
        shown = f"[{host}]" if ":" in host else host
        self.base = f"{'https' if tls else 'http'}://{shown}:{self.port}"
        self.url = f"{self.base}/login" if keys is not None else f"{self.base}/?token={token}"
        self.app = create_app(self.port, token, host, keys, tls, allowed)
        certificate, key = served or (None, None)
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                ssl_certfile=certificate, ssl_keyfile=key)
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
