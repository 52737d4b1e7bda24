"""``sdckit serve service.toml``: run the protected query service (FastAPI under uvicorn)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdckit.cli.app import app


@app.command()
def serve(
    service: Annotated[Path, typer.Argument(help="The service configuration (service.toml).")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
) -> None:
    """Load the configured tables into DuckDB and answer POST /v1/query, POST /v1/table and GET
    /v1/budget (dp or restricted per analyst; tables with mode = "tables" by the cell key method;
    add analysts with `sdckit analyst add`)."""
    from sdckit.query.server import serve as run

    run(service, host, port)
