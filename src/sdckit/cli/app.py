"""The typer application object; command modules attach their commands to it.

Start-up (issue 28 item 4): a command's module, and the libraries it needs, are imported only when
that command runs or shows its own help. ``sdckit --help`` lists the commands from
:data:`COMMANDS` (module and one-line help of each; a test holds it to the modules' own) and
imports none of them.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

#: Each command (or command group) -> the module of ``sdckit.cli`` that defines it, and its
#: one-line help as that module states it.
COMMANDS: dict[str, tuple[str, str]] = {
    "analyst": ("analyst", "Analysts of the query service: add one (prints its API key once), replace or revoke "
                           "a key, list them, show a budget or an audit log."),
    "app": ("workbench", "Open the workbench in the browser: open a file, mark the columns' roles, see the risk, "
                         "protect step by step and write the release with its recipe; on this machine only "
                         "(127.0.0.1, a new secret address at each start) unless --host, where users log in with "
                         "a query-service API key (--state), over HTTPS with --certfile/--keyfile."),
    "assess": ("assess", "Verify a release as a maximum-knowledge intruder would (permutation paradigm)."),
    "check": ("check", "Check DATA against k-anonymity / l-diversity / t-closeness, class by class."),
    "compare": ("compare", "Compare methods (or parameter values) on the same data and seed: risk against "
                           "utility loss."),
    "demo": ("protect", "Protect the bundled CASC census file (1080 x 13), print a summary and write the HTML "
                        "report."),
    "dp-error": ("dp", "Predict the average relative error of (k,epsilon)-anonymity (seed 004 eq. 8) for each "
                       "EPSILON; spends no privacy."),
    "frequencies": ("frequencies", "Count DATA's key combinations with an engine (DuckDB GROUP BY by default); "
                                   "print records, classes, sample uniques and records in classes under k, "
                                   "counts only — never a record."),
    "protect": ("protect", "Protect a data set as a RECIPE says; write the release, <stem>.manifest.json and "
                           "<stem>.report.html."),
    "query": ("query", "Send SQL to the query service and print the answer with its budget and noise."),
    "risk": ("risk", "Individual, global and household re-identification risk, k-anonymity violations and SUDA2 "
                     "scores of DATA on the key variables."),
    "seed": ("seed", 'Print a strong secret seed for a recipe (seed = "<it>").'),
    "serve": ("serve", "Load the configured tables into DuckDB and answer POST /v1/query, POST /v1/table and GET "
                       "/v1/budget (dp or restricted per analyst; tables with mode = \"tables\" by the cell key "
                       "method; add analysts with `sdckit analyst add`)."),
    "table": ("table", "Tables: protect by cell suppression, rounding or adjustment (recipe), audit a "
                       "suppression pattern."),
    "tune": ("tune", "Find, by bisection under a fixed seed, the least-perturbing value that is plausibly "
                     "deniable."),
    "verify-record": ("assess", "Check, as a data subject, how well the release hides YOUR record."),
}


def load_command(name: str) -> Any:
    """The click command ``name``, its module imported (which attaches it to :data:`app`)."""
    importlib.import_module(f"sdckit.cli.{COMMANDS[name][0]}")
    return typer.main.get_group(app).commands[name]


class _Deferred(typer.core.TyperCommand):
    """A command listed by its name and one-line help, loaded when it is run or asked for help."""

    def __init__(self, name: str, short_help: str) -> None:
        super().__init__(name=name, short_help=short_help, help=short_help)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        return load_command(self.name).make_context(info_name, args, parent=parent, **extra)


class LazyGroup(TyperGroup):
    """The root group: commands come from :data:`COMMANDS`, each module imported on use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name in COMMANDS:
            return _Deferred(cmd_name, COMMANDS[cmd_name][1])
        return None


app = typer.Typer(
    cls=LazyGroup,
    name="sdckit",
    help="Statistical disclosure control: protect microdata and verify the protection.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain: "[[method]]" and "[report]" print as written
)


def _version(value: bool) -> None:
    if value:
        from sdckit.core.version import __version__

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
