"""``sdckit risk``: the re-identification risk of a file, as statistical offices measure it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import print_result


def _names(text: Optional[str]) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


@app.command()
def risk(
    data: Annotated[Path, typer.Argument(help="The data set (CSV, Parquet, ...).")],
    keys: Annotated[str, typer.Option("--keys", "-k", help="Key variables (categorical quasi-identifiers), comma-separated.")],
    weight: Annotated[Optional[str], typer.Option("--weight", "-w", help="Sampling-weight column.")] = None,
    household: Annotated[Optional[str], typer.Option("--household", help="Household-id column (household risk).")] = None,
    strata: Annotated[Optional[str], typer.Option("--strata", help="Strata columns, comma-separated: every count within each stratum.")] = None,
    missing: Annotated[str, typer.Option("--missing", help="A missing key value is a 'wildcard' (matches any value) or a 'category'.")] = "wildcard",
    threshold: Annotated[float, typer.Option("--threshold", help="Individual risk above which a record counts as at high risk.")] = 0.1,
    suda: Annotated[bool, typer.Option("--suda/--no-suda", help="Run SUDA2 (minimal sample uniques).")] = True,
    suda_max_size: Annotated[Optional[int], typer.Option("--suda-max-size", help="Largest MSU size SUDA2 looks for (default: all keys).")] = None,
    sensitive: Annotated[Optional[str], typer.Option("--sensitive", help="Sensitive columns, comma-separated: l-diversity within each key's class.")] = None,
    sampling_fraction: Annotated[Optional[float], typer.Option("--sampling-fraction", help="Share of the population the file holds (population models; default: from --weight).")] = None,
    population_size: Annotated[Optional[float], typer.Option("--population-size", help="Size of the population the file was drawn from (population models).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write every figure as JSON here.")] = None,
) -> None:
    """Individual, global and household re-identification risk, k-anonymity violations and
    SUDA2 scores of DATA on the key variables. Prints counts and shares only, never a record."""
    from sdckit.io import read
    from sdckit.risk.summary import risk_summary

    frame = read(data)
    s = risk_summary(frame, _names(keys), weight, household, missing=missing, strata=_names(strata),
                     threshold=threshold, suda=suda, suda_max_size=suda_max_size, sensitive=_names(sensitive),
                     sampling_fraction=sampling_fraction, population_size=population_size)
    print_result(s, f"{data.name}: re-identification risk on {', '.join(s.global_.keys)}", json_out)
