"""``sdckit analyst add|rekey|revoke|list|budget|log``: the query service's analysts, in its state database."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console
from sdckit.core.errors import ParameterError

if TYPE_CHECKING:
    from sdckit.query.state import State

analyst_app = typer.Typer(help="Analysts of the query service: add one (prints its API key once), "
                               "replace or revoke a key, list them, show a budget or an audit log.",
                          no_args_is_help=True)
app.add_typer(analyst_app, name="analyst")

Service = Annotated[Path, typer.Argument(help="The service configuration (service.toml).")]


def _state(service: Path) -> tuple[State, list[str]]:
    from sdckit.query.config import load_config
    from sdckit.query.state import State

    config = load_config(service)
    return State(config.state), list(config.tables)


@analyst_app.command("add")
def add(
    service: Service,
    name: Annotated[str, typer.Argument(help="The analyst's name.")],
    mode: Annotated[str, typer.Option("--mode", help="dp (noisy answers under a budget) or restricted (exact answers, audited).")],
    epsilon: Annotated[Optional[str], typer.Option("--epsilon", help="Total epsilon budget (dp mode), e.g. 1.0 or 1/3.")] = None,
    delta: Annotated[Optional[str], typer.Option("--delta", help="Total delta (dp mode): with --epsilon, an (epsilon, delta)-DP budget (Gaussian noise, basic composition).")] = None,
    rho: Annotated[Optional[str], typer.Option("--rho", help="Total rho (dp mode, alone): a rho-zCDP budget (Gaussian noise).")] = None,
    tables: Annotated[Optional[str], typer.Option("--tables", help="Tables the analyst may query, comma-separated (default: all).")] = None,
) -> None:
    """Create an analyst and print its new API key, alone on stdout, once: only a salted scrypt
    hash of it is stored. A dp budget has one definition, fixed now: --epsilon (pure epsilon-DP),
    --epsilon and --delta ((epsilon, delta)-DP) or --rho (rho-zCDP)."""
    state, known = _state(service)
    chosen = None
    if tables is not None:
        chosen = [t.strip() for t in tables.split(",") if t.strip()]
        for t in chosen:
            if t not in known:
                raise ParameterError(f"The '--tables' option names {t!r}, which the service does not serve "
                                     f"({', '.join(known)}).")
    key = state.add_analyst(name, mode, epsilon, delta if delta is not None else 0, chosen, rho)
    typer.echo(key)


@analyst_app.command("rekey")
def rekey(service: Service, name: Annotated[str, typer.Argument(help="The analyst's name.")]) -> None:
    """Replace the analyst's API key: print the new one, alone on stdout, once; the old key fails
    from now on. Budget, spent epsilon and history are kept (a revoked analyst is re-enabled)."""
    state, _ = _state(service)
    typer.echo(state.rekey(name))


@analyst_app.command("revoke")
def revoke(service: Service, name: Annotated[str, typer.Argument(help="The analyst's name.")]) -> None:
    """Revoke the analyst's API key (its requests get 401). The analyst, its budget and history
    stay, so re-adding the name cannot reset them; `analyst rekey` re-enables it."""
    state, _ = _state(service)
    state.revoke(name)
    typer.echo(f"{name}: key revoked")


@analyst_app.command("list")
def list_(service: Service) -> None:
    """Every analyst with mode, tables and budget."""
    state, _ = _state(service)
    table = Table(title="analysts")
    for column in ("name", "mode", "key", "tables", "budget", "spent", "remaining"):
        table.add_column(column)
    for a in state.analysts():
        b = a.budget()
        exact = b.get("exact", {})
        table.add_row(a.name, a.mode, "revoked" if state.revoked(a.name) else "active",
                      ", ".join(a.tables) if a.tables else "all",
                      *(_amounts(exact, part) for part in ("total", "spent", "remaining")))
    console.print(table)


def _amounts(exact: dict[str, str], part: str) -> str:
    """``"1"`` (pure epsilon), ``"eps 1, delta 1e-6"`` or ``"rho 1"``: one part of a budget."""
    names = [k[:-6] for k in exact if k.endswith("_total")]
    if names == ["epsilon"]:
        return exact["epsilon_" + part]
    return ", ".join(f"{'eps' if n == 'epsilon' else n} {exact[n + '_' + part]}" for n in names) or "-"


@analyst_app.command("budget")
def budget(service: Service, name: Annotated[str, typer.Argument(help="The analyst's name.")],
           json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The analyst's epsilon total, spent and remaining (exact)."""
    state, _ = _state(service)
    b = state.analyst(name).budget()
    if json_out:
        typer.echo(json.dumps(b))
        return
    if b["mode"] != "dp":
        typer.echo(f"{name}: restricted mode (exact answers), no epsilon budget")
        return
    e = b["exact"]
    names = [k[:-6] for k in e if k.endswith("_total")]
    typer.echo(f"{name}: {b['definition_text']}; " + "; ".join(
        f"{n} total {e[n + '_total']}, spent {e[n + '_spent']}, remaining {e[n + '_remaining']}" for n in names))


@analyst_app.command("log")
def log(service: Service, name: Annotated[str, typer.Argument(help="The analyst's name.")],
        limit: Annotated[Optional[int], typer.Option("--limit", help="Only the last N requests.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False) -> None:
    """The analyst's requests: time, SQL, decision, budget charged."""
    from sdckit.dp.accountant import exact_text

    state, _ = _state(service)
    state.analyst(name)
    rows = state.audit_log(name, limit)
    if json_out:
        for r in rows:
            typer.echo(json.dumps(r))
        return
    table = Table(title=f"audit log of {name}")
    for column in ("time (UTC)", "decision", "status", "epsilon", "sql"):
        table.add_column(column)
    for r in rows:
        when = datetime.fromtimestamp(r["time"], tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(when, r["decision"], str(r["status"]), exact_text(Fraction(r["epsilon"])), r["sql"] or "")
    console.print(table)
