"""``sdckit app``: the workbench, a local web application over the library (issue 31)."""

from __future__ import annotations

from typing import Annotated

import typer

from sdckit.cli.app import app


@app.command("app")
def workbench(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (default: a free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address only; do not open a browser.")] = False,
) -> None:
    """Open the workbench in the browser: open a file, mark the columns' roles, see the risk,
    protect step by step and write the release with its recipe, on this machine only
    (127.0.0.1, a new secret address at each start)."""
    import webbrowser

    from sdckit.app.server import Workbench

    bench = Workbench(port)
    typer.echo(f"sdckit workbench: {bench.url}", nl=True)
    typer.echo("Open that address (it holds this start's secret token); stop with Ctrl-C.")
    if not no_browser:
        webbrowser.open(bench.url)
    bench.run()
