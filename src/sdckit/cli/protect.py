"""``sdckit protect`` and ``sdckit demo``: run a recipe and write the release."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer
from rich.table import Table

from sdckit import datasets
from sdckit.cli.app import app
from sdckit.cli.common import console, err_console, progress_bar, write_json
from sdckit.recipe import RecipeResult, load_recipe, run_recipe


def _run(recipe_path: Path, out: Optional[Path], fmt: Optional[str], report: Optional[bool] = None,
         allow_weak_seed: bool = False) -> RecipeResult:
    recipe = load_recipe(recipe_path, allow_weak_seed=allow_weak_seed)
    steps = len(recipe.methods)
    with progress_bar("protecting and assessing", steps + 4) as advance:
        return run_recipe(recipe, output_dir=out, output_format=fmt, report=report,
                          progress=lambda done, _total, *_: advance(done, steps + 4),
                          report_progress=lambda done, _total, *_: advance(steps + done, steps + 4))


def _report_written(result: RecipeResult) -> None:
    release = result.release
    shown: set[str] = set()
    for step in release.manifest["methods"]:  # every method's warnings, once each, on stderr
        for text in step.get("warnings", []):
            if text not in shown:
                shown.add(text)
                err_console.print(f"sdckit: warning: {step['name']}: {text}", markup=False, highlight=False)
    console.print(
        f"Protected {release.manifest['input']['records']} records with "
        f"{', '.join(m['name'] for m in release.manifest['methods'])}."
    )
    console.print(f"  data:     {result.data_path}")
    console.print(f"  manifest: {result.manifest_path}")
    if result.report_path is not None:
        console.print(f"  report:   {result.report_path}  (open it in a browser)")


@app.command()
def protect(
    recipe: Annotated[Path, typer.Argument(help="The recipe (TOML) that says what to protect and how.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory (overrides the recipe's).")] = None,
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Output format (csv, tsv, parquet, stata, spss, duckdb).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the manifest and output paths as JSON here.")] = None,
    report: Annotated[Optional[bool], typer.Option("--report/--no-report", help="Write <stem>.report.html beside the release (default: as the recipe's [report] says, on).")] = None,
    allow_weak_seed: Annotated[bool, typer.Option("--allow-weak-seed", help="Accept a recipe seed under 128 bits (the manifest says seed_strength: weak).")] = False,
) -> None:
    """Protect a data set as a RECIPE says; write the release, <stem>.manifest.json and <stem>.report.html."""
    result = _run(recipe, out, format, report, allow_weak_seed)
    _report_written(result)
    if json_out is not None:
        write_json(json_out, {
            "data": str(result.data_path),
            "manifest_path": str(result.manifest_path),
            "report_path": None if result.report_path is None else str(result.report_path),
            "manifest": result.release.manifest,
        })


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path("sdckit-demo"),
) -> None:
    """Protect the bundled CASC census file (1080 x 13), print a summary and write the HTML report."""
    result = _run(datasets.path("demo.toml"), out, None)
    original = datasets.load_casc()
    released = result.release.data
    table = Table(title="CASC census file: original vs released (additive noise)")
    for name in ("column", "mean (orig)", "mean (rel)", "sd (orig)", "sd (rel)", "corr(orig, rel)"):
        table.add_column(name, justify="right" if name != "column" else "left")
    for col in released.columns:
        x = original[col].to_numpy(float)
        y = released[col].to_numpy(float)
        table.add_row(
            col, f"{x.mean():,.1f}", f"{y.mean():,.1f}", f"{x.std(ddof=1):,.1f}",
            f"{y.std(ddof=1):,.1f}", f"{np.corrcoef(x, y)[0, 1]:.3f}",
        )
    console.print(table)
    _report_written(result)
