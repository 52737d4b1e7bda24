"""Table recipes (TOML) and the files a protected table is released with.

A recipe::

    [table]
    input = "enterprises.csv"          # CSV/Parquet/... microdata, tau-ARGUS .asc (with rda=) or .tab cells
    dimensions = ["region", "size"]
    response = "turnover"              # omit for a frequency table
    weight = "w"                       # optional
    holding = "group"                  # optional
    # rda = "job.rda"                  # tau-ARGUS metadata: .asc/.tab input, hierarchies by default
    # missing_is_safe = true           # tau-ARGUS's option: cells with a missing code (the rda's,
    # missing_codes = { act = ["00"] } #   and these) are never primary by a rule

    [table.hierarchies]
    region = "region.hrc"              # tau-ARGUS .hrc, or a CSV with child,parent columns
    size = { parents = { "S1" = "S", "S2" = "S" } }
    nace = { lengths = [2, 1] }        # a code's parents are its prefixes

    [[rule]]
    type = "frequency"                 # frequency (n, share), dominance (n, k), p (p), pq (p, q), manual (cells, share)
    n = 3

    [protection]
    method = "suppression"             # or "rounding", "adjustment", "cell_key" (sdckit.tabular.recipe_ckm)

    [suppression]
    method = "optimal"                 # or "fast"
    cost = "value"                     # or "freq", "unity"
    time_limit = 60

    [rounding]                         # with method = "rounding"
    base = 5                           # required
    method = "controlled"              # or "random" (not additive; its secret seed = "hex", `sdckit seed`)
    mip_gap = 0.01                     # time_limit = ...

    [adjustment]                       # with method = "adjustment" (needs rules: the sensitive cells)
    method = "milp"                    # or "fast"
    cost = "unity"                     # or "inverse"; mip_gap, time_limit, integer

    [output]
    dir = "out"                        # cells.csv, published.csv, manifest.json, report.html
    cells = "cells.csv"                # or cells.parquet

    fail_unsafe = true                 # optional, before the sections: `sdckit table protect` exits 1
                                       # when a sensitive cell is left unprotected (as --fail-unsafe)

Linked tables: several ``[[table]]`` sections (each with its own ``name``, input, dimensions,
hierarchies) are protected together (:mod:`sdckit.tabular.linked`): one model over all their cells,
one cell file and one published view per table (``cells-<name>.csv``, ``published-<name>.csv``),
one manifest and one report with a section per table and the joint audit. The single ``[table]``
form is one table. Every section and key is checked; an unknown one is named.

Paths are relative to the recipe's folder.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sdckit.core.tomlfile import check_keys, read_toml
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.provenance import UNPUBLISHED, created_timestamp, fingerprint
from sdckit.core.result import plain
from sdckit.core.version import __version__
from sdckit.io import read, write, write_text_atomic
from sdckit.io import tauargus
from sdckit.tabular.build_duckdb import file_codes
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.recipe_ckm import run_cell_key_recipe
from sdckit.tabular.linked import link_tables
from sdckit.tabular.protection import Protection, protections, rule_from_dict
from sdckit.tabular.rules import Dominance, Rule
from sdckit.tabular.table import Table
from sdckit.tabular.tablereport import cell_file, file_slug, published_view, report_html, table_parts, wide_view

__all__ = ["TableRecipe", "TableSpec", "build_table", "build_tables", "cell_file", "load_table_recipe",
           "protect_tables", "published_view", "recipe_hierarchy", "report_html", "run_table_recipe", "wide_view"]

_TABLE_KEYS = ("name", "input", "dimensions", "response", "weight", "holding", "rda", "hierarchies",
               "missing_codes", "missing_is_safe")
_OUTPUT_KEYS = ("dir", "cells")


@dataclass(frozen=True)
class TableSpec:
    """One ``[table]`` / ``[[table]]`` section."""

    name: str
    input: Path
    dimensions: tuple[str, ...]
    hierarchies: dict[str, Any]
    response: str | None
    weight: str | None
    holding: str | None
    rda: Path | None
    base: Path = Path(".")
    missing_codes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    missing_is_safe: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "input": self.input.name, "dimensions": list(self.dimensions),
             "response": self.response, "weight": self.weight, "holding": self.holding}
        if self.missing_is_safe:
            d["missing_is_safe"] = True
        return d


@dataclass(frozen=True)
class TableRecipe:
    """A parsed table recipe (see the module docstring). ``input``, ``dimensions``, ... are the
    first table's; ``tables`` holds every one; ``protection`` is the protection value
    (:mod:`sdckit.tabular.protection`) its ``[protection]`` and method sections give."""

    path: Path
    tables: tuple[TableSpec, ...]
    rules: tuple[Rule, ...]
    protection: Protection
    out_dir: Path
    cells_name: str
    raw: dict = field(repr=False, default_factory=dict)
    fail_unsafe: bool = False

    @property
    def linked(self) -> bool:
        return len(self.tables) > 1

    # the first table's, as when a recipe had one [table]
    input = property(lambda self: self.tables[0].input)
    dimensions = property(lambda self: self.tables[0].dimensions)
    hierarchies = property(lambda self: self.tables[0].hierarchies)
    response = property(lambda self: self.tables[0].response)
    weight = property(lambda self: self.tables[0].weight)
    holding = property(lambda self: self.tables[0].holding)
    rda = property(lambda self: self.tables[0].rda)

    def parameters(self) -> dict[str, Any]:
        """The protection's parameters as the recipe's manifest and report give them: every one
        but the rules (the recipe's ``rules``) and the secrets, whose provenance is said instead
        (never the seed of a random rounding: its source and strength only)."""
        params = {k: v for k, v in self.protection.params().items() if k != "rules"}
        return {**params, **self.protection.provenance()}

    def to_dict(self) -> dict[str, Any]:
        name = self.protection.name
        d: dict[str, Any] = {"protection": name, "rules": [r.to_dict() for r in self.rules]}
        if len(self.tables) == 1:
            d.update({k: v for k, v in self.tables[0].to_dict().items() if k != "name"})
        else:
            d["tables"] = [t.to_dict() for t in self.tables]
        d[name] = self.parameters()
        if name == "suppression":  # where manifests had them before [suppression] got its own key
            d.update({k: d[name][k] for k in ("method", "cost", "time_limit")})
        return d


def _section(path: Path, raw: dict, name: str) -> dict:
    sec = raw.get(name, {})
    if not isinstance(sec, dict):
        raise ParameterError(f"Recipe {path}: [{name}] must be a table of keys.")
    return sec


def _table_spec(path: Path, t: Any, where: str, k: int) -> TableSpec:
    base = path.parent
    if not isinstance(t, dict):
        raise ParameterError(f"Recipe {path}: {where} must be a table of keys.")
    check_keys(t, _TABLE_KEYS, where, f"Recipe {path}")
    for key in ("input", "dimensions"):
        if key not in t:
            raise ParameterError(f"Recipe {path}: {where} needs '{key}'.")
    dims = t["dimensions"]
    if isinstance(dims, str):
        dims = [dims]
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError(f"Recipe {path}: {where} dimensions must be a list of column names.")
    hier = t.get("hierarchies", {})
    if not isinstance(hier, dict):
        raise ParameterError(f"Recipe {path}: {where} hierarchies must map dimensions to hierarchies.")
    unknown = [d for d in hier if d not in dims]
    if unknown:
        raise ParameterError(f"Recipe {path}: {where} hierarchies name '{unknown[0]}', which is not one of "
                             "its dimensions.")
    for key in ("name", "input", "response", "weight", "holding", "rda"):
        if key in t and not isinstance(t[key], str):
            raise ParameterError(f"Recipe {path}: {where} {key} must be a text. Got {t[key]!r} instead.")
    name = t.get("name") or " x ".join(dims)
    safe = t.get("missing_is_safe", False)
    if not isinstance(safe, bool):
        raise ParameterError(f"Recipe {path}: {where} missing_is_safe must be true or false. Got {safe!r} instead.")
    codes = t.get("missing_codes", {})
    if not isinstance(codes, dict) or not all(
            isinstance(c, list) and all(isinstance(x, str) for x in c) for c in codes.values()):
        raise ParameterError(f"Recipe {path}: {where} missing_codes must map dimensions to lists of codes, "
                             "e.g. missing_codes = { act = [\"00\"] }.")
    unknown = [d for d in codes if d not in dims]
    if unknown:
        raise ParameterError(f"Recipe {path}: {where} missing_codes name '{unknown[0]}', which is not one of "
                             "its dimensions.")
    return TableSpec(name, base / t["input"], tuple(dims), hier, t.get("response"), t.get("weight"),
                     t.get("holding"), (base / t["rda"]) if t.get("rda") else None, base,
                     {d: tuple(c) for d, c in codes.items()}, safe)


def load_table_recipe(path: str | Path, out_dir: str | Path | None = None) -> TableRecipe:
    """Parse a table recipe; every error names the section and key at fault."""
    raw, path = read_toml(path, "Table recipe")
    base = path.parent
    known = {"table", "rule", "output", *protections(), "protection", "fail_unsafe"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ParameterError(f"Recipe {path}: unknown section [{unknown[0]}]; use [table] (or several "
                             f"[[table]]), [[rule]], [protection], {', '.join(f'[{n}]' for n in protections())}, "
                             "[output].")
    fail_unsafe = raw.get("fail_unsafe", False)
    if not isinstance(fail_unsafe, bool):
        raise ParameterError(f"Recipe {path}: fail_unsafe must be true or false. Got {fail_unsafe!r} instead.")
    t = raw.get("table")
    if isinstance(t, dict):
        specs = [_table_spec(path, t, "[table]", 1)]
    elif isinstance(t, list) and t:
        specs = [_table_spec(path, x, f"[[table]] number {k}", k) for k, x in enumerate(t, start=1)]
    else:
        raise ParameterError(f"Recipe {path} needs a [table] section (or several [[table]]) with input and dimensions.")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ParameterError(f"Recipe {path}: two [[table]] sections are named {dup!r}; give each a distinct name.")
    rule_list = raw.get("rule", [])
    if not isinstance(rule_list, list):
        raise ParameterError(f"Recipe {path}: rules are [[rule]] sections (double brackets).")
    rules = tuple(rule_from_dict(r, f"[[rule]] number {i}", f"Recipe {path}") for i, r in enumerate(rule_list, start=1))
    sec = _section(path, raw, "protection")
    check_keys(sec, ("method",), "[protection]", f"Recipe {path}")
    registry = protections()
    name = sec.get("method", "suppression")
    if name not in registry:
        raise ParameterError(f"Recipe {path}: [protection] method must be one of "
                             f"{', '.join(repr(c) for c in registry)}. Got {name!r} instead.")
    for other in registry:
        if other != name and other in raw:
            raise ParameterError(f"Recipe {path}: [{other}] is given but [protection] method is "
                                 f"{name!r}; set method = {other!r} or remove [{other}].")
    cls = registry[name]
    if cls.needs_rules and not rules:
        raise ParameterError(f"Recipe {path}: {name} needs [[rule]] sections (they decide the sensitive cells).")
    protection = cls.from_section(_section(path, raw, name), rules if cls.takes_rules() else (), base,
                                  f"Recipe {path}")
    o = _section(path, raw, "output")
    check_keys(o, _OUTPUT_KEYS, "[output]", f"Recipe {path}")
    out = Path(out_dir) if out_dir is not None else base / o.get("dir", f"{path.stem}-out")
    return TableRecipe(path, tuple(specs), rules, protection, out, o.get("cells", "cells.csv"), raw, fail_unsafe)


def recipe_hierarchy(spec: Any, dim: str, base: Path, codes: list[str], rda: Any) -> Any:
    """The hierarchy of dimension ``dim`` as a table recipe gives it: ``spec`` a file name (a
    child,parent CSV or a tau-ARGUS ``.hrc``, relative to ``base``), ``{parents = ...}`` or
    ``{lengths = [...]}`` (over ``codes``); without one, the tau-ARGUS metadata ``rda``'s
    hierarchy of ``dim`` over ``codes``, else none (a flat dimension)."""
    if spec is None:
        if rda is not None:
            return tauargus.hierarchy(rda, dim, codes)
        return None
    if isinstance(spec, str):
        p = base / spec
        if p.suffix.lower() == ".csv":
            h = read(p).astype(str)
            if not {"child", "parent"} <= set(h.columns):
                raise DataError(f"Hierarchy file {p} needs columns child and parent.")
            h = h[h["parent"].str.strip().ne("") & h["parent"].ne("nan")]
            return dict(zip(h["child"].str.strip(), h["parent"].str.strip()))
        return DimensionHierarchy.from_hrc(p, name=dim)
    if isinstance(spec, dict) and "parents" in spec:
        return {str(k): str(v) for k, v in spec["parents"].items()}
    if isinstance(spec, dict) and "lengths" in spec:
        return DimensionHierarchy.from_lengths(codes, spec["lengths"], total=spec.get("total", "Total"), name=dim)
    raise ParameterError(f"The hierarchy of dimension {dim!r} must be a file name, {{parents = ...}} or "
                         "{lengths = [...]}.")


def build_table(recipe: TableRecipe | TableSpec, rules: tuple[Rule, ...] | None = None) -> tuple[Table, pd.DataFrame | None]:
    """The table of a recipe (its first table) or of one table section, and the frame it was
    built from (None for a CSV/TSV/Parquet file of records: DuckDB aggregates it unread)."""
    if isinstance(recipe, TableRecipe):
        return build_table(recipe.tables[0], recipe.rules)
    table, frame = _build_table(recipe, rules or ())
    # missing codes: the .rda's (tau-ARGUS declares up to two per variable) and the recipe's
    codes: dict[str, tuple[str, ...]] = {}
    if recipe.rda is not None:
        rda = tauargus.read_rda(recipe.rda)
        codes = {d: rda.variable(d).missing for d in recipe.dimensions
                 if d in {v.name for v in rda.variables} and rda.variable(d).missing}
    for d, c in recipe.missing_codes.items():
        codes[d] = tuple(dict.fromkeys(codes.get(d, ()) + c))
    if codes or recipe.missing_is_safe:
        table = table.with_missing(codes, recipe.missing_is_safe)
    return table, frame


def _build_table(spec: TableSpec, rules: tuple[Rule, ...]) -> tuple[Table, pd.DataFrame | None]:
    base = spec.base
    rda = tauargus.read_rda(spec.rda) if spec.rda is not None else None
    suffix = spec.input.suffix.lower()
    n_top = max([getattr(r, "n", 2) if isinstance(r, Dominance) else 2 for r in rules] + [2])
    if rda is None and suffix in (".csv", ".tsv", ".parquet"):  # records aggregated by DuckDB
        return _table_from_file(spec, n_top), None
    if suffix == ".tab":
        if rda is None:
            raise ParameterError(f"Table {spec.name!r}: a .tab input needs rda = the tau-ARGUS metadata.")
        frame = tauargus.read_tab(spec.input, rda)
    elif suffix == ".asc" and rda is not None:
        frame = tauargus.read_asc(spec.input, rda)
    else:
        frame = read(spec.input)
    for d in spec.dimensions:
        if d not in frame.columns:
            raise DataError(f"Dimension column {d!r} is not in {spec.input.name}.")
        frame[d] = frame[d].astype(str).str.strip()
    hier = {d: recipe_hierarchy(spec.hierarchies.get(d), d, base, sorted(frame[d].unique()), rda)
            for d in spec.dimensions}
    if suffix == ".tab":
        freq = next((v.name for v in rda.variables if v.role == "frequency"), None)
        tops = [v.name for v in rda.variables if v.role == "top"]
        table = Table.from_cells(frame, spec.dimensions, hier, value=spec.response or "value",
                                 freq=freq, top=tops[:2], rtol=1e-6)
        status, lower, upper = tauargus.tab_status(frame, rda)  # S/U/P and given levels decide those cells
        if any(s is not None for s in status):
            table = table.with_status(frame[list(spec.dimensions)].itertuples(index=False, name=None),
                                      status, lower, upper)
    else:
        table = Table.from_microdata(frame, spec.dimensions, hier, response=spec.response,
                                     weight=spec.weight, holding=spec.holding, top=n_top)
    return table, frame


def _table_from_file(spec: TableSpec, top: int) -> Table:
    """A CSV/TSV/Parquet file of records: :meth:`Table.from_file` (DuckDB, out of core), so a
    register of 1e7 records is never loaded; the codes are read only for hierarchies given by
    code lengths."""
    lengths = [d for d in spec.dimensions if isinstance(spec.hierarchies.get(d), dict)
               and "lengths" in spec.hierarchies[d]]
    codes = file_codes(spec.input, lengths) if lengths else {}
    hier = {d: recipe_hierarchy(spec.hierarchies.get(d), d, spec.base, codes.get(d, []), None) for d in spec.dimensions}
    return Table.from_file(spec.input, spec.dimensions, hier, response=spec.response, weight=spec.weight,
                           holding=spec.holding, top=top)


def build_tables(recipe: TableRecipe) -> Table:
    """The recipe's table, or its linked tables (several ``[[table]]``) as one
    :class:`~sdckit.tabular.linked.LinkedTables`."""
    tables = [build_table(spec, recipe.rules)[0] for spec in recipe.tables]
    if len(tables) == 1:
        return tables[0]
    return link_tables(tables, [s.name for s in recipe.tables])


# ---------------------------------------------------------------------- run
def protect_tables(recipe: TableRecipe, table: Table) -> Any:
    """Run the recipe's protection on ``table`` (a Table or LinkedTables)."""
    return recipe.protection.apply(table)


def run_table_recipe(path: str | Path | TableRecipe, out_dir: str | Path | None = None) -> tuple[Any, dict[str, Path]]:
    """Build the recipe's table(s), protect them (suppression, rounding or adjustment; linked
    tables together), and write the cell file(s), the published view(s), the manifest and the HTML
    report into the output folder. Returns the result and the paths. ``path`` may be a recipe
    already loaded (``out_dir`` is then its own)."""
    recipe = path if isinstance(path, TableRecipe) else load_table_recipe(path, out_dir)
    if recipe.protection.name == "cell_key":  # records, not a built table: its own run
        return run_cell_key_recipe(recipe, recipe_hierarchy)
    t0 = time.perf_counter()
    table = build_tables(recipe)
    result = protect_tables(recipe, table)
    out = recipe.out_dir
    out.mkdir(parents=True, exist_ok=True)
    parts = table_parts(result, table)
    paths: dict[str, Path] = {}
    cells_path = Path(recipe.cells_name)
    published_fp = {}
    for p in parts:
        suffix = f"-{file_slug(p.name)}" if recipe.linked else ""
        cname = f"cells{suffix}" if recipe.linked else cells_path.stem
        paths[f"cells{suffix}"] = out / f"{cname}{cells_path.suffix or '.csv'}"
        paths[f"published{suffix}"] = out / f"published{suffix}.csv"
        write(p.cells, paths[f"cells{suffix}"])
        write(p.published, paths[f"published{suffix}"])
        published_fp[p.name or "table"] = fingerprint(p.published.astype(str))
    paths["manifest"] = out / "manifest.json"
    paths["report"] = out / "report.html"
    manifest = {"sdckit": __version__, "created": created_timestamp(), "kind": "table",
                "protection": recipe.protection.name, "recipe": recipe.to_dict(), "input_fingerprint": UNPUBLISHED,
                "published_fingerprint": (next(iter(published_fp.values())) if not recipe.linked else published_fp),
                "table": table.to_dict(), "result": result.to_dict(),
                "seconds_total": round(time.perf_counter() - t0, 3)}
    write_text_atomic(paths["manifest"], json.dumps(plain(manifest), indent=2) + "\n")
    title = f"{recipe.path.stem}: {recipe.protection.released}{'s (linked)' if recipe.linked else ''}"
    params = {k: v for k, v in recipe.parameters().items() if v is not None}
    write_text_atomic(paths["report"], report_html(result, title, recipe.protection.name, parts,
                                                   rules=recipe.rules, parameters=params))
    return result, paths
