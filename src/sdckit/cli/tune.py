"""``sdckit tune``: the least-perturbing parameter value whose release is plausibly deniable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from sdckit.cli.app import app
from sdckit.cli.common import console, progress_bar, write_json
from sdckit.core.defaults import N_RANDOM


@app.command()
def tune(
    recipe: Annotated[Path, typer.Argument(help="A protection recipe (TOML); its data, schema and methods are used.")],
    step: Annotated[Optional[int], typer.Option("--step", help="Which [[method]] to tune, counting from 1 (default: the only one).")] = None,
    param: Annotated[Optional[str], typer.Option("--param", help="The numeric parameter to tune (default: the method's usual one, e.g. alpha, p, k).")] = None,
    low: Annotated[Optional[float], typer.Option("--low", help="Lower end of the search range.")] = None,
    high: Annotated[Optional[float], typer.Option("--high", help="Upper end of the search range.")] = None,
    criterion: Annotated[str, typer.Option("--criterion", help="p_value (reach --target) or excess_hellinger (stay below --target).")] = "p_value",
    target: Annotated[float, typer.Option("--target", help="The p-value to reach, or the excess Hellinger to stay below.")] = 0.05,
    steps: Annotated[int, typer.Option("--steps", help="Bisection steps.")] = 8,
    n_random: Annotated[int, typer.Option("--random", help="Random records of each verification.")] = N_RANDOM,
    seed: Annotated[Optional[int], typer.Option("--seed", help="The fixed seed (default: the recipe's, else 0).")] = None,
    html_out: Annotated[Optional[Path], typer.Option("--html", help="Write the tuning curve as a self-contained HTML page here.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the result and the curve as JSON here.")] = None,
) -> None:
    """Find, by bisection under a fixed seed, the least-perturbing value that is plausibly deniable."""
    from sdckit.core.errors import ParameterError
    from sdckit.io import read
    from sdckit.recipe import load_recipe
    from sdckit.tune import tune as run_tune
    from sdckit.tune import tune_report

    parsed = load_recipe(recipe)
    if step is not None and not 1 <= step <= len(parsed.methods):
        raise ParameterError(f"--step must be between 1 and {len(parsed.methods)} (the recipe's methods); got {step}.")
    frame = read(parsed.input_path, **parsed.input_options)
    fixed_seed = seed if seed is not None else (parsed.seed if parsed.seed is not None else 0)
    with progress_bar("tuning", steps + 2) as advance:
        result = run_tune(frame, list(parsed.methods), step=None if step is None else step - 1, param=param, low=low,
                          high=high, criterion=criterion, target=target, steps=steps, schema=parsed.schema or None,
                          n_random=n_random, seed=fixed_seed, progress=advance)
    table = Table(title=f"Tuning {result.method}: {result.param} ({result.criterion}, target {result.target:g})")
    for name in (result.param, "Hellinger H", "null baseline", "p-value", "utility loss", "passes"):
        table.add_column(name, justify="right")
    for p in result.curve:
        table.add_row(f"{p[result.param]:g}", f"{p['hellinger']:.3f}", f"{p['hellinger_null']:.3f}",
                      f"{p['p_value']:.3f}", f"{p['utility_loss']:.4f}", "yes" if p["passes"] else "no")
    console.print(table)
    if result.value is None:
        console.print(f"No value of {result.param} in [{result.low:g}, {result.high:g}] passes; widen the range.")
    else:
        console.print(f"Least-perturbing plausibly deniable value: {result.param} = {result.value:g}")
    if html_out is not None:
        from sdckit.report.render import write_report

        write_report(tune_report(result), html_out, (parsed.input_path, parsed.source))
        console.print(f"report: {html_out}")
    if json_out is not None:
        write_json(json_out, result.to_dict())
