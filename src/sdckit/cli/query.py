"""``sdckit query --url URL --key-file F "SELECT ..."``: ask the query service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console
from sdckit.core.errors import ParameterError


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="One SELECT of COUNT(*), SUM(col), AVG(col) FROM a table [WHERE ...] [GROUP BY ...].")],
    url: Annotated[str, typer.Option("--url", help="The service, e.g. http://127.0.0.1:8000.")],
    key_file: Annotated[Path, typer.Option("--key-file", help="File holding the API key (`sdckit analyst add` printed it).")],
    epsilon: Annotated[Optional[str], typer.Option("--epsilon", help="Budget this query spends (dp mode).")] = None,
    delta: Annotated[Optional[str], typer.Option("--delta", help="Delta this query spends (an (epsilon, delta)-DP analyst).")] = None,
    rho: Annotated[Optional[str], typer.Option("--rho", help="Rho this query spends (a rho-zCDP analyst).")] = None,
    max_rows_per_unit: Annotated[Optional[int], typer.Option("--max-rows-per-unit", help="Count at most this many rows "
                                                             "per person in this query (dp mode; 1 to the table's "
                                                             "bound, its default): less noise.")] = None,
    max_groups_per_unit: Annotated[Optional[int], typer.Option("--max-groups-per-unit", help="GROUP BY: count each "
                                                               "person's rows in at most this many groups.")] = None,
    max_rows_per_group: Annotated[Optional[int], typer.Option("--max-rows-per-group", help="GROUP BY: count at most "
                                                              "this many rows per person and group.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the service's JSON answer.")] = False,
) -> None:
    """Send SQL to the query service and print the answer with its budget and noise."""
    from sdckit.query.client import Client

    try:
        key = key_file.read_text(encoding="utf-8").strip()
    except OSError:
        raise ParameterError(f"The '--key-file' {key_file} cannot be read.") from None
    with Client(url, key) as client:  # exact forms such as "0.1" or "1/3" are read by the service
        payload = client.query(sql, epsilon, delta, rho, max_rows_per_unit=max_rows_per_unit,
                               max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group)
    if json_out:
        typer.echo(json.dumps(payload))
        return
    table = Table()
    for column in payload["columns"]:
        table.add_column(str(column), justify="right")
    for row in payload["rows"]:
        table.add_row(*["" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row])
    console.print(table)
    console.print(f"mechanism: {payload.get('mechanism', '')}")
    if payload.get("rho_remaining") is not None:
        console.print(f"rho spent {payload['exact']['rho_spent']}, remaining {payload['exact']['rho_remaining']} (rho-zCDP)"
                      + (" (cached answer)" if payload.get("cached") else ""))
    elif payload.get("epsilon_remaining") is not None:
        console.print(f"epsilon spent {payload['epsilon_spent']:g}, remaining {payload['epsilon_remaining']:g}"
                      + (" (cached answer)" if payload.get("cached") else ""))
