"""``sdckit table``: protect a table (or linked tables) by cell suppression, rounding or controlled
tabular adjustment (a TOML recipe) and audit a suppression pattern."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import console, err_console, figures_table, write_json
from sdckit.core.errors import ParameterError

if TYPE_CHECKING:
    from sdckit.tabular import Table

table_app = typer.Typer(help="Tables: protect by cell suppression, rounding or adjustment (recipe), audit a suppression pattern.",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(table_app, name="table")


@table_app.command("protect")
def protect(
    recipe: Annotated[Path, typer.Argument(help="The table recipe (TOML: [table] or several [[table]], [[rule]], [protection], "
                                                "[suppression] / [rounding] / [adjustment] / [cell_key], [output]).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output folder (default: the recipe's [output] dir).")] = None,
    fail_unsafe: Annotated[Optional[bool], typer.Option("--fail-unsafe/--no-fail-unsafe", help="Exit with status 1 (after writing the outputs) when a sensitive cell is left unprotected (default: the recipe's fail_unsafe, else off).")] = None,
) -> None:
    """Build the recipe's table (or its linked tables, protected together) and protect it by the
    method its [protection] section names: cell suppression (primary cells by the rules,
    secondary cells, LP audit), controlled or random rounding (with the sensitive cells'
    intervals when rules are given) or controlled tabular adjustment. Writes the cell file(s), the
    published view(s), the manifest and an HTML report, then prints the verdict: whether every
    sensitive cell is protected."""
    from sdckit.tabular.recipe import load_table_recipe, run_table_recipe

    loaded = load_table_recipe(recipe, out)  # checked before any work: a bad key stops the run
    if fail_unsafe is None:
        fail_unsafe = loaded.fail_unsafe
    result, paths = run_table_recipe(loaded)
    protection = loaded.protection  # the recipe's protection value says what its result shows
    console.print(figures_table(f"{recipe.name}: {protection.headline(result)}", protection.summary(result)))
    safe, verdict = protection.verdict(result)
    console.print(f"Verdict: {verdict}", markup=False, highlight=False, soft_wrap=True)
    for name, p in paths.items():
        console.print(f"{name}: {p}")
    if not safe and fail_unsafe:
        err_console.print("sdckit: --fail-unsafe: a sensitive cell is left unprotected; exit status 1. "
                          "The files above were written.", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=1)


@table_app.command("audit")
def audit_cmd(
    cells: Annotated[list[Path], typer.Argument(help="A cell file with the dimension codes, value and status (e.g. from 'table protect'); "
                                                     "several: linked tables, one file per [[table]] of --recipe, in its order.")],
    recipe: Annotated[Optional[Path], typer.Option("--recipe", "-r", help="The recipe: dimensions, hierarchies and rules (levels).")] = None,
    dimensions: Annotated[Optional[str], typer.Option("--dimensions", "-d", help="Dimension columns, comma-separated (without --recipe).")] = None,
    hierarchy: Annotated[Optional[list[str]], typer.Option("--hierarchy", help="DIM=FILE (.hrc or child,parent CSV); repeatable.")] = None,
    status: Annotated[str, typer.Option("--status", help="The status column (safe / primary / secondary).")] = "status",
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the audit summary as JSON here.")] = None,
) -> None:
    """The interval an intruder can deduce by LP for every suppressed cell, and whether every
    primary cell meets its protection levels (from the file's upper/lower columns, else from the
    recipe's rules). Several cell files (with --recipe naming as many [[table]] sections): the
    releases of linked tables audited together, a shared cell being known when any file publishes
    it. Exit status 1 when a primary cell is unprotected."""
    import numpy as np

    from sdckit.io import read
    from sdckit.tabular import Table, audit_pattern, sensitivity
    from sdckit.tabular.recipe import build_table, load_table_recipe, recipe_hierarchy

    if len(cells) > 1:
        return _audit_linked(cells, recipe, status, json_out)
    cells = cells[0]
    frame = read(cells)
    tab = None
    if recipe is not None:
        r = load_table_recipe(recipe)
        dims = list(r.dimensions)
        tab = build_table(r)[0]
        rules = list(r.rules)
    else:
        if not dimensions:
            raise ParameterError("Give --dimensions (or --recipe).")
        dims = [d.strip() for d in dimensions.split(",") if d.strip()]
        hier = {}
        for item in hierarchy or []:
            if "=" not in item:
                raise ParameterError(f"--hierarchy takes DIM=FILE. Got {item!r} instead.")
            d, f = item.split("=", 1)
            hier[d.strip()] = recipe_hierarchy(f.strip(), d.strip(), Path("."), [], None)
        rules = []
    for col in (status, "value", *dims):
        if col not in frame.columns:
            raise ParameterError(f"The cell file {cells.name} has no {col!r} column.")
    for d in dims:
        frame[d] = frame[d].astype(str).str.strip()
    if tab is None:
        freq = "freq" if "freq" in frame.columns else None
        tab = Table.from_cells(frame, dims, hier, value="value", freq=freq, rtol=1e-6)
    stat, up, lo = _file_status(frame, cells.name, tab, status)
    sens = sensitivity(tab, rules, primary=stat == "primary")
    if up is not None:  # the file's levels; a level of 0 raised to the floor sensitivity uses
        floor = 1e-6 * max(1.0, float(np.abs(tab.cells["value"]).max()))
        sens = type(sens)(sens.primary, np.where(sens.primary, np.maximum(up, floor), 0.0),
                          np.where(sens.primary, lo, 0.0), sens.reason)
    a = audit_pattern(tab, stat != "safe", sens, np.where(sens.primary, "primary", stat))
    _print_audit(f"{cells.name}: audit", [], a, int(sens.primary.sum()), tab, json_out)


def _file_status(frame, name: str, tab: Table, status: str) -> tuple:
    """(status per cell of ``tab``, upper, lower or None) from the cell file ``frame`` (read from
    ``name``); cells the file does not list are safe."""
    import numpy as np

    dims = list(tab.dimensions)
    for col in [status, "value", *dims]:
        if col not in frame.columns:
            raise ParameterError(f"The cell file {name} has no {col!r} column.")
    for d in dims:
        frame[d] = frame[d].astype(str).str.strip()
    idx = frame.set_index(dims)
    keys = list(zip(*(tab.cells[d] for d in dims)))
    key = (lambda k: k) if len(dims) > 1 else (lambda k: k[0])
    st = idx[status].astype(str)
    stat = np.asarray([st.get(key(k), "safe") for k in keys], dtype=object)
    bad = sorted(set(stat) - {"safe", "primary", "secondary"})
    if bad:
        raise ParameterError(f"The status column of {name} has {bad[0]!r}; it takes safe, primary or secondary.")
    if {"upper", "lower"} <= set(frame.columns):
        up = np.array([idx["upper"].get(key(k), 0.0) for k in keys], float)
        lo = np.array([idx["lower"].get(key(k), 0.0) for k in keys], float)
        return stat, np.maximum(np.nan_to_num(up), 0), np.maximum(np.nan_to_num(lo), 0)
    return stat, None, None


def _print_audit(title: str, rows: list[tuple[str, str]], a, primaries: int, tab: Table,
                 json_out: Optional[Path], suppressed_label: str = "suppressed cells") -> None:
    """The audit's figures, up to ten unprotected cells by name, the JSON summary; exit 1 if unsafe."""
    t = figures_table(title)
    for label, value in rows:
        t.add_row(label, value)
    t.add_row(suppressed_label, f"{a.suppressed:,}")
    t.add_row("primary cells", f"{primaries:,}")
    t.add_row("unprotected primary cells", f"{a.unprotected:,}")
    t.add_row("verdict", "safe" if a.safe else "UNSAFE")
    console.print(t)
    if not a.safe:
        for _, row in a.cells[~a.cells["protected"]].head(10).iterrows():
            i = int(tab.locate([tuple(row[d] for d in tab.dimensions)])[0])
            console.print(f"unprotected: {tab.cell_name(i)}")
    if json_out is not None:
        write_json(json_out, a.to_dict())
    if not a.safe:
        raise typer.Exit(code=1)


def _audit_linked(cells: list[Path], recipe: Optional[Path], status: str, json_out: Optional[Path]) -> None:
    from sdckit.io import read
    from sdckit.tabular import audit_linked
    from sdckit.tabular.recipe import build_tables, load_table_recipe
    if recipe is None:
        raise ParameterError("Several cell files are audited as linked tables: give --recipe with one [[table]] per file.")
    r = load_table_recipe(recipe)
    if len(r.tables) != len(cells):
        raise ParameterError(f"{len(cells)} cell files were given; the recipe has {len(r.tables)} [[table]] sections "
                             "(one file per section, in its order).")
    linked = build_tables(r)
    got = [_file_status(read(p), p.name, t, status) for p, t in zip(cells, linked.tables)]
    levels = all(g[1] is not None for g in got)
    a = audit_linked(linked, [g[0] for g in got], list(r.rules),
                     upper=[g[1] for g in got] if levels else None, lower=[g[2] for g in got] if levels else None)
    _print_audit(f"{len(cells)} linked tables: joint audit", [(f"  {n}", p.name) for n, p in zip(linked.names, cells)],
                 a, int((a.cells["status"] == "primary").sum()), linked, json_out,
                 suppressed_label="suppressed cells (in no file published)")
