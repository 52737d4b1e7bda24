"""Compare recipes: the TOML file of ``sdckit compare RECIPE.toml``.

A compare recipe reads data like a protection recipe (``[input]``, ``[schema]``, ``seed``)
and lists candidates instead of one chain of methods::

    seed = "<32 hex digits>"          # optional, secret (`sdckit seed`); see sdckit.recipe
    seeds = 3                         # optional: repetitions with derived seeds (default 1)
    [input]
    path = "census.csv"
    [schema]
    quasi = ["AGE"]
    confidential = ["INCOME"]
    [compare]                         # optional settings
    columns = ["AGE", "INCOME"]       # verified and measured (default: all shared columns)
    null = "copula"                   # or "independent"
    n_random = 20000                  # random records per batch of the verification
    n_null = 50                       # null samples for its baseline and p-value
    alpha = 0.05                      # "plausibly deniable" when the mean p-value exceeds it
    utility = "il1"                   # or "correlation", "pmse"
    [output]
    dir = "compare-out"               # compare.json, compare.csv, compare.html
    [[candidate]]                     # one chain of methods, applied in order
    label = "noise 1%"
    [[candidate.method]]
    name = "additive_noise"
    alpha = 0.01
    [[candidate]]
    label = "swap 15%"
    [[candidate.method]]
    name = "rank_swapping"
    p = 15
    [[sweep]]                         # one candidate per value of one parameter
    method = "microaggregation"
    param = "k"
    values = [3, 5, 10]
    params = { method = "mdav" }      # optional fixed parameters
    label = "MDAV"                    # optional; labels become "MDAV k=3", ...

Every candidate runs on the same data with the same seed. Everything is checked before the
data are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdckit.compare.core import Candidate, Comparison, check_settings, compare
from sdckit.core.errors import SdcError
from sdckit.io import read
from sdckit.methods import get_method
from sdckit.core.tomlfile import check_keys, file_error
from sdckit.recipe import parse_data_source, read_toml
from sdckit.report.settings import DEFAULTS as REPORT_DEFAULTS

_TOP_KEYS = {"seed", "seed_file", "allow_weak_seed", "seeds", "input", "schema", "compare", "output", "candidate", "sweep"}
_SWEEP_KEYS = {"method", "param", "values", "params", "label"}
#: The report's verification settings and defaults, plus the utility measure.
DEFAULTS = {**{k: v for k, v in REPORT_DEFAULTS.items() if k != "interval_p"}, "utility": "il1"}
_COMPARE_KEYS = {"columns", *DEFAULTS}


@dataclass(frozen=True)
class CompareRecipe:
    """A parsed, checked compare recipe (absolute paths)."""

    source: Path
    input_path: Path
    input_options: dict[str, Any]
    schema: dict[str, Any]
    candidates: tuple[Candidate, ...]
    settings: dict[str, Any]
    output_dir: Path
    seed: int | str | None
    seeds: int


def _method(source: Path, where: str, name: Any, params: Mapping[str, Any]):
    try:
        return get_method(str(name), dict(params))
    except SdcError as exc:
        raise file_error(source, f"{where}: {exc}") from None


def load_compare_recipe(path: str | Path) -> CompareRecipe:
    """Read and check a compare recipe (see the module docstring)."""
    return parse_compare_recipe(*read_toml(path, "Compare recipe"))


def parse_compare_recipe(data: Mapping[str, Any], source: Path) -> CompareRecipe:
    """Check a compare recipe already parsed from TOML."""
    base = source.resolve().parent
    check_keys(data, _TOP_KEYS, "the compare recipe", source)
    seed, input_path, input_options, schema = parse_data_source(data, source)
    settings = data.get("compare", {})
    if not isinstance(settings, Mapping):
        raise file_error(source, "[compare] must be a table.")
    check_keys(settings, _COMPARE_KEYS, "[compare]", source)
    settings = {**DEFAULTS, **settings}
    seeds = data.get("seeds", 1)
    try:
        check_settings(seeds=seeds, **{k: v for k, v in settings.items() if k != "columns"})
    except SdcError as exc:
        raise file_error(source, str(exc)) from None
    columns = settings.get("columns")
    if columns is not None and (not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns)):
        raise file_error(source, f"[compare] 'columns' must be a non-empty list of column names; got {columns!r}.")

    candidates: list[Candidate] = []
    for i, entry in enumerate(data.get("candidate", []), start=1):
        if not isinstance(entry, Mapping):
            raise file_error(source, f"[[candidate]] number {i} must be a table.")
        check_keys(entry, {"label", "method"}, f"[[candidate]] number {i}", source)
        methods = entry.get("method", [])
        if isinstance(methods, Mapping):
            methods = [methods]
        if not methods:
            raise file_error(source, f"[[candidate]] number {i} applies no method; add [[candidate.method]] tables.")
        built = []
        for j, m in enumerate(methods, start=1):
            if not isinstance(m, Mapping) or "name" not in m:
                raise file_error(source, f"[[candidate.method]] number {j} of candidate {i} needs a 'name'.")
            built.append(_method(source, f"candidate {i}, method {j}", m["name"], {k: v for k, v in m.items() if k != "name"}))
        label = entry.get("label") or " + ".join(m.name for m in built)
        candidates.append(Candidate(str(label), tuple(built)))
    for i, sweep in enumerate(data.get("sweep", []), start=1):
        if not isinstance(sweep, Mapping):
            raise file_error(source, f"[[sweep]] number {i} must be a table.")
        check_keys(sweep, _SWEEP_KEYS, f"[[sweep]] number {i}", source)
        missing = [k for k in ("method", "param", "values") if k not in sweep]
        if missing:
            raise file_error(source, f"[[sweep]] number {i} needs {', '.join(map(repr, missing))}.")
        values = sweep["values"]
        if not isinstance(values, list) or not values:
            raise file_error(source, f"[[sweep]] number {i}: 'values' must be a non-empty list; got {values!r}.")
        fixed = sweep.get("params", {})
        if not isinstance(fixed, Mapping):
            raise file_error(source, f"[[sweep]] number {i}: 'params' must be a table.")
        prefix = sweep.get("label") or sweep["method"]
        for value in values:
            method = _method(source, f"sweep {i}, {sweep['param']}={value!r}", sweep["method"],
                             {**fixed, str(sweep["param"]): value})
            candidates.append(Candidate(f"{prefix} {sweep['param']}={value}", (method,)))
    if not candidates:
        raise file_error(source, "the compare recipe lists no candidate; add [[candidate]] or [[sweep]] tables.")
    labels = [c.label for c in candidates]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup is not None:
        raise file_error(source, f"two candidates are labelled {dup!r}; give each a distinct label.")
    out = data.get("output", {})
    if not isinstance(out, Mapping):
        raise file_error(source, "[output] must be a table.")
    check_keys(out, {"dir"}, "[output]", source)
    return CompareRecipe(
        source=source.resolve(), input_path=input_path, input_options=input_options, schema=schema,
        candidates=tuple(candidates), settings=dict(settings),
        output_dir=(base / str(out.get("dir", "sdckit-compare"))).resolve(), seed=seed, seeds=seeds,
    )


def run_compare_recipe(recipe: CompareRecipe, progress=None) -> Comparison:
    """Read the recipe's data and compare its candidates."""
    frame = read(recipe.input_path, **recipe.input_options)
    settings = dict(recipe.settings)
    columns = settings.pop("columns", None)
    return compare(frame, recipe.candidates, seeds=recipe.seeds, schema=recipe.schema or None, columns=columns,
                   seed=recipe.seed, progress=progress, **settings)
