"""``sdckit frequencies``: a file's frequency table by an engine, its risk counts, and the optimal
full-domain generalization searched on it (issue 17; DESIGN.md section 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import console, err_console, figures_table, write_json
from sdckit.core.errors import ParameterError


def _hierarchies(specs: list[str]) -> dict:
    from sdckit.core.hierarchy import Hierarchy

    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ParameterError(f"--hierarchy takes COLUMN=FILE (e.g. age=age.csv); got {spec!r}.")
        out[name.strip()] = Hierarchy.from_csv(path.strip())
    return out


@app.command()
def frequencies(
    data: Annotated[Path, typer.Argument(help="The data set (Parquet or CSV), read by the engine, never whole.")],
    keys: Annotated[Optional[str], typer.Option("--keys", "-k", help="Key columns, comma-separated (default: the hierarchies' columns).")] = None,
    weight: Annotated[Optional[str], typer.Option("--weight", "-w", help="Sampling-weight column (Fk: summed weights).")] = None,
    k: Annotated[int, typer.Option("--k", help="Class size below which records count as at risk (and the k of --hierarchy's search).")] = 5,
    hierarchy: Annotated[Optional[list[str]], typer.Option("--hierarchy", help="COLUMN=FILE, repeated: search the optimal full-domain generalization on the table.")] = None,
    max_suppression: Annotated[float, typer.Option("--max-suppression", help="MaxSup of the search, a share of the records.")] = 0.0,
    engine: Annotated[str, typer.Option("--engine", help="duckdb (out of core), dask or memory.")] = "duckdb",
    memory: Annotated[Optional[str], typer.Option("--memory", help="DuckDB's memory budget, e.g. 2GB (it spills past it).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the table (keys, fk, Fk) here (CSV or Parquet).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the figures as JSON here.")] = None,
) -> None:
    """Count DATA's key combinations with an engine (DuckDB GROUP BY by default); print records,
    classes, sample uniques and records in classes under k, counts only — never a record."""
    from sdckit.engine import parse_memory
    from sdckit.engine.aggregate import frequency_table, records_at_risk
    from sdckit.io import write

    hierarchies = _hierarchies(hierarchy or [])
    names = [t.strip() for t in keys.split(",") if t.strip()] if keys else list(hierarchies)
    if not names:
        raise ParameterError("Name the key columns with --keys (or give --hierarchy COLUMN=FILE).")
    budget = None if memory is None else parse_memory(memory)
    with err_console.status(f"counting {', '.join(names)} ({engine})"):
        table = frequency_table(data, names, weight=weight, engine=engine, memory=budget)
    figures: dict = {"keys": names, "engine": engine, "k": k, **records_at_risk(table, k)}
    if hierarchies:
        from sdckit.pipeline import search_file

        if set(hierarchies) != set(names):
            raise ParameterError("--keys and the --hierarchy columns must be the same columns.")
        with err_console.status("searching the generalization lattice"):
            result = search_file(data, hierarchies, k, max_suppression=max_suppression, engine=engine, memory=budget)
        figures["search"] = {"node": dict(zip(hierarchies, result.node, strict=True)), "metrics": result.metrics,
                             "evaluated": result.evaluated, "lattice_size": result.lattice_size}
    shown = figures_table(f"{data.name}: classes of {', '.join(names)} ({engine})")
    shown.add_row("records", f"{figures['records']:,}")
    shown.add_row("classes (distinct combinations)", f"{figures['classes']:,}")
    shown.add_row("sample uniques (fk = 1)", f"{figures['sample_uniques']:,}")
    shown.add_row(f"records in classes under k={k}", f"{figures['records_below_k']:,}")
    if "search" in figures:
        shown.add_row(f"optimal full-domain node (k={k})",
                      ", ".join(f"{q}={lv}" for q, lv in figures["search"]["node"].items()))
    console.print(shown)
    if out is not None:
        write(table, out, inputs=(data,))
        console.print(f"  table: {out}")
    if json_out is not None:
        write_json(json_out, figures)
