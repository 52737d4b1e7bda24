"""``sdckit protect`` and ``sdckit demo``: run a recipe and write the release."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console, err_console, progress_bar, write_json

if TYPE_CHECKING:
    from sdckit.recipe import Recipe, RecipeResult
    from sdckit.report.verdict import Verdict


def _run(recipe_path: Path, out: Optional[Path], fmt: Optional[str], report: Optional[bool] = None,
         allow_weak_seed: bool = False, engine: Optional[str] = None, memory: Optional[str] = None,
         scheduler: Optional[str] = None, ledger: Optional[Path] = None) -> tuple[Recipe, RecipeResult]:
    from sdckit.recipe import load_recipe, run_recipe

    recipe = load_recipe(recipe_path, allow_weak_seed=allow_weak_seed)
    steps = len(recipe.methods)
    with progress_bar("protecting and assessing", steps + 4) as advance, _labelled_bars() as engine_progress:
        return recipe, run_recipe(recipe, output_dir=out, output_format=fmt, report=report,
                                  progress=lambda done, _total, *_: advance(done, steps + 4),
                                  report_progress=lambda done, _total, *_: advance(steps + done, steps + 4),
                                  engine=engine, memory=memory, scheduler=scheduler, engine_progress=engine_progress,
                                  ledger=ledger)


def release_verdict(result: RecipeResult) -> Verdict:
    """The report's verdict on the release; a release without a report is not assessed."""
    from sdckit.report.verdict import NOT_ASSESSED, Verdict

    if result.verdict is not None:
        return result.verdict
    why = result.release.manifest.get("report")  # a streamed release's manifest says why
    return Verdict(NOT_ASSESSED, f"{NOT_ASSESSED}: " + (f"the report was {why}" if isinstance(why, str)
                                                        else "no report was computed for this release"))


@contextmanager
def _labelled_bars() -> Iterator[Callable[[int, int, str], None]]:
    """Progress of a streamed run on stderr: one bar per label (a step's statistics pass, the
    records written); a total of -1 means unknown (a count is shown)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  TextColumn("{task.completed:,}"), TimeElapsedColumn(), console=err_console,
                  transient=True, disable=not err_console.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def update(done: int, total: int, label: str = "") -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=None if total < 0 else total)
            bar.update(tasks[label], completed=done, total=None if total < 0 else total)

        yield update


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
    console.print(f"Verdict: {release_verdict(result).text}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"  data:     {result.data_path}")
    console.print(f"  manifest: {result.manifest_path}")
    if result.report_path is not None:
        console.print(f"  report:   {result.report_path}  (open it in a browser)")
    elif isinstance(release.manifest.get("report"), str):
        console.print(f"  report:   {release.manifest['report']}")
    if "engine" in release.manifest:
        console.print(f"  engine:   {release.manifest['engine']['name']}")


@app.command()
def protect(
    recipe: Annotated[Path, typer.Argument(help="The recipe (TOML) that says what to protect and how.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory (overrides the recipe's).")] = None,
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Output format (csv, tsv, parquet, stata, spss, duckdb).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the manifest and output paths as JSON here.")] = None,
    report: Annotated[Optional[bool], typer.Option("--report/--no-report", help="Write <stem>.report.html beside the release (default: as the recipe's [report] says, on).")] = None,
    allow_weak_seed: Annotated[bool, typer.Option("--allow-weak-seed", help="Accept a recipe seed under 128 bits (the manifest says seed_strength: weak).")] = False,
    engine: Annotated[Optional[str], typer.Option("--engine", help="Where the work runs: memory, duckdb (streamed, out of core) or dask (default: the recipe's, else memory).")] = None,
    memory: Annotated[Optional[str], typer.Option("--memory", help="Memory budget, e.g. 2GB: a recipe of row-wise methods whose input would not fit is streamed.")] = None,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Dask scheduler address for --engine dask (default: a LocalCluster).")] = None,
    fail_unsafe: Annotated[Optional[bool], typer.Option("--fail-unsafe/--no-fail-unsafe", help="Exit with status 1 (after writing the outputs) unless the report shows the release plausibly deniable (default: the recipe's fail_unsafe, else off).")] = None,
    ledger: Annotated[Optional[Path], typer.Option("--ledger", help="The privacy ledger a DP recipe charges (default: the recipe's [budget] ledger, else $SDCKIT_LEDGER, else ~/.local/share/sdckit/ledger.json).")] = None,
) -> None:
    """Protect a data set as a RECIPE says; write the release, <stem>.manifest.json and <stem>.report.html."""
    parsed, result = _run(recipe, out, format, report, allow_weak_seed, engine, memory, scheduler, ledger)
    _report_written(result)
    verdict = release_verdict(result)
    if json_out is not None:
        write_json(json_out, {
            "data": str(result.data_path),
            "manifest_path": str(result.manifest_path),
            "report_path": None if result.report_path is None else str(result.report_path),
            "verdict": verdict.to_dict(),
            "manifest": result.release.manifest,
        })
    if not verdict.safe and (fail_unsafe if fail_unsafe is not None else parsed.extra.get("fail_unsafe", False)):
        err_console.print(f"sdckit: --fail-unsafe: the release is not shown safe by its report ({verdict.state}); "
                          "exit status 1. Its files were written.", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=1)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path("sdckit-demo"),
) -> None:
    """Protect the bundled CASC census file (1080 x 13), print a summary and write the HTML report."""
    import numpy as np

    from sdckit import datasets

    _, result = _run(datasets.path("demo.toml"), out, None)
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
