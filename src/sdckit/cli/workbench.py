"""``sdckit app``: the workbench, a local web application over the library (issue 31)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app


@app.command("app")
def workbench(
    port: Annotated[int, typer.Option("--port", help="Port to listen on (default: a free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address only; do not open a browser.")] = False,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (default 127.0.0.1, this machine only); "
                                      "another one needs --state, and --certfile/--keyfile (TLS) or "
                                      "--allow-remote.")] = "127.0.0.1",
    state: Annotated[Optional[Path], typer.Option("--state", help="The query service's state database: log in "
                                                  "with an API key of its analysts (`sdckit analyst add`).")] = None,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Accept serving beyond this machine over plain "
                                               "HTTP, which sends API keys and data in clear.")] = False,
    analysts: Annotated[Optional[str], typer.Option("--analysts", help="With --state (required): the analysts "
                                                    "(comma-separated) who may log in; the workbench shows records, "
                                                    "not noisy answers.")] = None,
    behind_tls: Annotated[bool, typer.Option("--behind-tls", help="A TLS proxy serves the app: Secure cookie, "
                                             "https origins.")] = False,
    certfile: Annotated[Optional[Path], typer.Option("--certfile", help="Serve HTTPS: the server's certificate "
                                                     "(PEM; its private key too unless --keyfile).")] = None,
    keyfile: Annotated[Optional[Path], typer.Option("--keyfile", help="With --certfile: the certificate's private "
                                                    "key (PEM, unencrypted).")] = None,
) -> None:
    """Open the workbench in the browser: open a file, mark the columns' roles, see the risk,
    protect step by step and write the release with its recipe; on this machine only (127.0.0.1,
    a new secret address at each start) unless --host, where users log in with a query-service
    API key (--state), over HTTPS with --certfile/--keyfile."""
    import webbrowser

    from sdckit.app.server import Workbench

    bench = Workbench(port, host=host, state=state, allow_remote=allow_remote, tls=behind_tls,
                      analysts=None if analysts is None else analysts.split(","), certfile=certfile, keyfile=keyfile)
    typer.echo(f"sdckit workbench: {bench.url}", nl=True)
    if state is None:
        typer.echo("Open that address (it holds this start's secret token); stop with Ctrl-C.")
    else:
        typer.echo("Open that address and log in with an API key of the state database; stop with Ctrl-C.")
    if not no_browser:
        webbrowser.open(bench.url)
    bench.run()
