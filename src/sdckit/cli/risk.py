"""``sdckit risk``: the re-identification risk of a file, as statistical offices measure it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import console, figures_table, write_json


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
    d = s.to_dict()
    table = figures_table(f"{data.name}: re-identification risk on {', '.join(d['keys'])}")
    table.add_row("records", f"{d['records']:,}")
    table.add_row("weight", str(weight or "none (every record weighs 1)"))
    table.add_row("global risk (mean individual risk)", f"{d['global_risk']:.6f}")
    table.add_row("expected re-identifications", f"{d['expected_reidentifications']:.2f}")
    table.add_row(f"records with individual risk > {threshold:g}", f"{d['above_threshold']:,}")
    if household:
        table.add_row("household risk (mean)", f"{d['household_risk']:.6f}")
        table.add_row("expected re-identifications (households)", f"{d['household_expected_reidentifications']:.2f}")
    table.add_row("sample uniques (fk = 1)", f"{d['sample_uniques']:,}")
    for k, v in d["k_anonymity_violations"].items():
        table.add_row(f"records violating {k}-anonymity (fk < {k})", f"{v:,}")
    if d["suda2"]:
        table.add_row("records with a minimal sample unique (SUDA2)", f"{d['suda2']['records_with_msu']:,}")
        table.add_row("largest SUDA score", f"{d['suda2']['max_score']:g}")
    pop = d["population"]
    if pop:
        uniq = pop["population_uniqueness"]
        table.add_row("population (estimated)", f"{pop['population']:,.0f}")
        table.add_row(f"population uniqueness ({uniq['dankar_model']}, Dankar's rule)", f"{uniq['dankar']:.6f}")
        for attacker in ("prosecutor", "journalist"):
            table.add_row(f"{attacker} risk: average / highest", f"{pop[attacker]['average']:.6f} / {pop[attacker]['highest']:.6f}")
        table.add_row("marketer risk", f"{pop['marketer']:.6f}")
    for column, div in (d["l_diversity"] or {}).items():
        table.add_row(f"records whose class has one value of {column}", f"{div['records_with_one_value']:,}")
        table.add_row(f"smallest distinct / entropy l of {column}", f"{div['min_distinct_l']:g} / {div['min_entropy_l']:.3f}")
    console.print(table)
    if json_out is not None:
        write_json(json_out, d)
