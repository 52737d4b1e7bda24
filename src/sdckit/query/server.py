"""The HTTP face of the query service: a FastAPI app run by uvicorn (DESIGN.md section 7).

Endpoints (JSON in and out; every refusal is ``{"error": "..."}``):

* ``POST /v1/query`` with ``{"sql": "SELECT ...", "epsilon": 0.1}`` (``epsilon`` in dp mode only);
* ``GET /v1/budget``: ``{"definition", "epsilon_total", "epsilon_spent", "epsilon_remaining"}`` (or the
  rho or delta fields of the analyst's budget definition);
* ``GET /v1/public/<name>``: a public table whole (the lookup tables dp queries may join,
  :mod:`sdckit.query.joins`);
* ``POST /v1/table`` with ``{"table": ..., "dimensions": [...], "where": {...}}``: a table served
  as tables, its counts perturbed by the cell key method (:mod:`sdckit.query.tables`).

Requests carry ``Authorization: Bearer <key>``. Run it with ``sdckit serve service.toml`` or
``python -m sdckit.query.server service.toml --port 8000``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from sdckit.query.service import NotJSON, Service

#: Largest request body accepted (bytes).
MAX_BODY = 64 * 1024


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def create_app(config_path: str | Path | None = None, service: Service | None = None) -> FastAPI:
    """The FastAPI app over a :class:`~sdckit.query.service.Service` (built from ``config_path``
    unless one is given); the data is loaded now, before the first request."""
    service = service if service is not None else Service(config_path)
    app = FastAPI(title="sdckit query service", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = {404: "No such endpoint: use POST /v1/query, POST /v1/table or GET /v1/budget.",
                   405: "Method not allowed: use POST /v1/query, POST /v1/table or GET /v1/budget."}.get(exc.status_code, str(exc.detail))
        return JSONResponse({"error": message}, status_code=exc.status_code)

    async def _answer(request: Request, endpoint: Any) -> JSONResponse:
        raw = await request.body()
        body: Any
        if len(raw) > MAX_BODY:
            return JSONResponse({"error": f"The request body is larger than {MAX_BODY} bytes."}, status_code=400)
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            body = NotJSON()
        status, payload = await run_in_threadpool(service.db.cpu.run, endpoint, _bearer(request), body)
        return JSONResponse(payload, status_code=status)

    @app.post("/v1/query")
    async def query(request: Request) -> JSONResponse:
        return await _answer(request, service.query)

    @app.post("/v1/table")
    async def table(request: Request) -> JSONResponse:
        return await _answer(request, service.table)

    @app.get("/v1/public/{name}")
    async def public(name: str, request: Request) -> JSONResponse:
        status, payload = await run_in_threadpool(service.db.cpu.run, service.public, _bearer(request), name)
        return JSONResponse(payload, status_code=status)

    @app.get("/v1/budget")
    async def budget(request: Request) -> JSONResponse:
        status, payload = await run_in_threadpool(service.db.cpu.run, service.budget, _bearer(request))
        return JSONResponse(payload, status_code=status)

    return app


def serve(config_path: str | Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Load the data and serve until interrupted (uvicorn, one process)."""
    import uvicorn

    app = create_app(config_path)
    if app.state.service.config.seed is not None:
        print("sdckit query service: WARNING: [service] seed is set: the noise is reproducible by anyone "
              "who has the seed. For tests only; remove it in production.", file=sys.stderr, flush=True)
    print(f"sdckit query service: http://{host}:{port} (POST /v1/query, POST /v1/table, GET /v1/budget)", file=sys.stderr, flush=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:  # at shutdown (SIGTERM, Ctrl-C): a DuckDB file of [service] memory_limit is removed with it
            app.state.service.close()

    app.router.lifespan_context = lifespan
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sdckit.query.server")
    parser.add_argument("config")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    serve(args.config, args.host, args.port)


if __name__ == "__main__":
    main()
