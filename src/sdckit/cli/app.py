"""The typer application object; command modules attach their commands to it."""

from __future__ import annotations

from typing import Annotated

import typer

from sdckit import __version__

app = typer.Typer(
    name="sdckit",
    help="Statistical disclosure control: protect microdata and verify the protection.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain: "[[method]]" and "[report]" print as written
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sdckit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """sdckit — statistical disclosure control."""
