"""``sdckit compare``: methods or parameter values side by side, risk against utility loss."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console, progress_bar, write_json
from sdckit.core.errors import ParameterError

EXAMPLES = ("methods",)


def comparison_table(comparison) -> Table:
    table = Table(title=f"Risk and utility ({comparison.records} records, {comparison.seeds} seed(s), "
                        f"{comparison.settings['null']} null)")
    for name in comparison.summary_columns:
        table.add_column(name, justify="left" if name == "candidate" else "right", no_wrap=name == "candidate")
    for row in comparison.summary():
        table.add_row(*row)
    return table


@app.command()
def compare(
    recipe: Annotated[Optional[Path], typer.Argument(help="A compare recipe (TOML) listing the candidates.")] = None,
    example: Annotated[Optional[str], typer.Option("--example", help="Run a built-in comparison instead: 'methods' (seed 001).")] = None,
    n: Annotated[int, typer.Option("--n", help="Records of the simulated data (--example).")] = 1000,
    seeds: Annotated[int, typer.Option("--seeds", help="Repetitions with new data and seeds (--example).")] = 5,
    n_random: Annotated[Optional[int], typer.Option("--random", help="Random records of the verification (default: 100000 for --example, the recipe's otherwise).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the example (a recipe has its own).")] = 2015,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory for compare.csv/.svg/.html/.json (overrides the recipe's).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the results as JSON here.")] = None,
) -> None:
    """Compare methods (or parameter values) on the same data and seed: risk against utility loss."""
    from sdckit.compare.report import write_comparison

    if (recipe is None) == (example is None):
        raise ParameterError("Give either a compare RECIPE or --example methods (not both, not neither).")
    if example is not None:
        from sdckit.compare import example_methods

        if example not in EXAMPLES:
            raise ParameterError(f"Unknown example {example!r}; the examples are: {', '.join(EXAMPLES)}.")
        with progress_bar("comparing", seeds * 4) as advance:
            result = example_methods(n, seeds, seed=seed, progress=advance,
                                     **({} if n_random is None else {"n_random": n_random}))
        inputs: tuple[Path, ...] = ()
    else:
        from sdckit.compare.recipe import load_compare_recipe, run_compare_recipe

        parsed = load_compare_recipe(recipe)
        if n_random is not None:
            parsed = parsed.__class__(**{**parsed.__dict__, "settings": {**parsed.settings, "n_random": n_random}})
        with progress_bar("comparing", parsed.seeds * len(parsed.candidates)) as advance:
            result = run_compare_recipe(parsed, progress=advance)
        out = out if out is not None else parsed.output_dir
        inputs = (parsed.input_path, parsed.source)
    console.print(comparison_table(result))
    if out is not None:
        paths = write_comparison(result, out, inputs)
        console.print(f"table: {paths['csv']}\nplot:  {paths['svg']}\nreport: {paths['html']}")
    if json_out is not None:
        write_json(json_out, result.to_dict())
