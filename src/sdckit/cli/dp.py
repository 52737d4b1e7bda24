"""``sdckit dp-error``: the error (k,epsilon)-anonymity will cause, predicted before any noise."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console, write_json
from sdckit.core.errors import ParameterError


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _epsilons(text: str) -> list[float]:
    try:
        return [float(part) for part in _names(text)]
    except ValueError:
        raise ParameterError(f"--epsilon must be comma-separated numbers, e.g. 0.1,1,10. Got {text!r} instead.") from None


def _hierarchies(items: list[str]) -> dict[str, str] | None:
    out = {}
    for item in items:
        column, sep, path = item.partition("=")
        if not sep or not column or not path:
            raise ParameterError(f"--hierarchy must look like COLUMN=PATH.csv. Got {item!r} instead.")
        out[column.strip()] = path.strip()
    return out or None


@app.command("dp-error", short_help="Predict the average relative error of (k,epsilon)-anonymity (seed 004 eq. 8) for each EPSILON; spends no privacy.")
def dp_error(
    data: Annotated[Path, typer.Argument(help="The data set (CSV, Parquet, ...).")],
    k_quasi: Annotated[str, typer.Option("--k-quasi", help="Quasi-identifiers made k-anonymous, comma-separated.")],
    epsilon_quasi: Annotated[str, typer.Option("--epsilon-quasi", help="Numeric quasi-identifiers that get noise, comma-separated.")],
    k: Annotated[int, typer.Option("--k", help="k of k-anonymity.")],
    epsilon: Annotated[str, typer.Option("--epsilon", help="One or more epsilons, comma-separated (e.g. 0.1,1,10).")],
    algorithm: Annotated[str, typer.Option("--algorithm", help="fulldomain or mondrian.")] = "mondrian",
    hierarchy: Annotated[Optional[list[str]], typer.Option("--hierarchy", help="COLUMN=PATH of a hierarchy CSV (ARX layout); repeat.")] = None,
    max_suppression: Annotated[float, typer.Option("--max-suppression", help="Share of records fulldomain may suppress.")] = 0.0,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the predictions as JSON here.")] = None,
) -> None:
    """Predict the average relative error of (k,epsilon)-anonymity (seed 004 eq. 8) for each
    EPSILON, running only the k-anonymity step: no noise is drawn, no privacy is spent."""
    from sdckit.dp.kepsilon import KEpsilonAnonymity
    from sdckit.io import read

    epsilons = _epsilons(epsilon)
    if not epsilons:
        raise ParameterError("--epsilon needs at least one value.")
    method = KEpsilonAnonymity(
        k=k, epsilon=epsilons[0], k_quasi=_names(k_quasi), epsilon_quasi=_names(epsilon_quasi),
        algorithm=algorithm, hierarchies=_hierarchies(hierarchy or []), max_suppression=max_suppression,
    )
    table = method.predict_error(read(data), epsilons=epsilons)
    console.print(f"Expected average relative error (seed 004 eq. 8), {algorithm}, k={k}: "
                  f"{int(table['records'][0])} records in {int(table['classes'][0])} classes.")
    view = Table()
    view.add_column("epsilon")
    for name in method.epsilon_quasi:
        view.add_column(name)
    for row in table.to_dict("records"):
        view.add_row(f"{row['epsilon']:g}", *(f"{row[name]:.2%}" for name in method.epsilon_quasi))
    console.print(view)
    if json_out is not None:
        write_json(json_out, {"method": method.to_manifest(), "predictions": table.to_dict("records")})
