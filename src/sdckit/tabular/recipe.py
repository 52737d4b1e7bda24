"""Table recipes (TOML) and the files a protected table is released with.

A recipe::

    [table]
    input = "enterprises.csv"          # CSV/Parquet/... microdata, tau-ARGUS .asc (with rda=) or .tab cells
    dimensions = ["region", "size"]
    response = "turnover"              # omit for a frequency table
    weight = "w"                       # optional
    holding = "group"                  # optional
    # rda = "job.rda"                  # tau-ARGUS metadata: .asc/.tab input, hierarchies by default

    [table.hierarchies]
    region = "region.hrc"              # tau-ARGUS .hrc, or a CSV with child,parent columns
    size = { parents = { "S1" = "S", "S2" = "S" } }
    nace = { lengths = [2, 1] }        # a code's parents are its prefixes

    [[rule]]
    type = "frequency"                 # frequency (n, share), dominance (n, k), p (p), pq (p, q), manual (cells, share)
    n = 3

    [suppression]
    method = "optimal"                 # or "fast"
    cost = "value"                     # or "freq", "unity"
    time_limit = 60

    [output]
    dir = "out"                        # cells.csv, published.csv, manifest.json, report.html
    cells = "cells.csv"                # or cells.parquet

Paths are relative to the recipe's folder.
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.tomlfile import read_toml
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.provenance import UNPUBLISHED, created_timestamp, fingerprint
from sdckit.core.version import __version__
from sdckit.io import read, write, write_text_atomic
from sdckit.io import tauargus
from sdckit.tabular.hierarchy import Hierarchy
from sdckit.tabular.rules import PQ, Dominance, Manual, MinFrequency, PPercent, Rule
from sdckit.tabular.suppress import SuppressionResult, suppress
from sdckit.tabular.table import Table

_RULES = {"frequency": (MinFrequency, {"n", "share"}), "dominance": (Dominance, {"n", "k"}),
          "p": (PPercent, {"p"}), "pq": (PQ, {"p", "q"}), "manual": (Manual, {"cells", "share"})}


@dataclass(frozen=True)
class TableRecipe:
    """A parsed table recipe (see the module docstring)."""

    path: Path
    input: Path
    dimensions: tuple[str, ...]
    hierarchies: dict[str, Any]
    response: str | None
    weight: str | None
    holding: str | None
    rda: Path | None
    rules: tuple[Rule, ...]
    method: str
    cost: str
    time_limit: float | None
    out_dir: Path
    cells_name: str
    raw: dict = field(repr=False, default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input.name, "dimensions": list(self.dimensions), "response": self.response,
                "weight": self.weight, "holding": self.holding, "rules": [r.to_dict() for r in self.rules],
                "method": self.method, "cost": self.cost, "time_limit": self.time_limit}


def load_table_recipe(path: str | Path, out_dir: str | Path | None = None) -> TableRecipe:
    """Parse a table recipe; every error names the section and key at fault."""
    raw, path = read_toml(path, "Table recipe")
    base = path.parent
    unknown = set(raw) - {"table", "rule", "suppression", "output"}
    if unknown:
        raise ParameterError(f"Recipe {path}: unknown section [{sorted(unknown)[0]}]; use [table], [[rule]], "
                             "[suppression], [output].")
    t = raw.get("table")
    if not isinstance(t, dict):
        raise ParameterError(f"Recipe {path} needs a [table] section with input and dimensions.")
    for key in ("input", "dimensions"):
        if key not in t:
            raise ParameterError(f"Recipe {path}: [table] needs '{key}'.")
    dims = t["dimensions"]
    if isinstance(dims, str):
        dims = [dims]
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError(f"Recipe {path}: [table] dimensions must be a list of column names.")
    hier = t.get("hierarchies", {})
    if not isinstance(hier, dict):
        raise ParameterError(f"Recipe {path}: [table.hierarchies] must map dimensions to hierarchies.")
    rules = []
    for i, r in enumerate(raw.get("rule", []), start=1):
        kind = str(r.get("type", "")).lower()
        if kind not in _RULES:
            raise ParameterError(f"Recipe {path}: [[rule]] number {i} has type {r.get('type')!r}; use one of "
                                 f"{', '.join(_RULES)}.")
        cls, allowed = _RULES[kind]
        extra = set(r) - allowed - {"type"}
        if extra:
            raise ParameterError(f"Recipe {path}: [[rule]] number {i} ({kind}) has unknown key '{sorted(extra)[0]}'; "
                                 f"it takes {', '.join(sorted(allowed))}.")
        args = {k: v for k, v in r.items() if k != "type"}
        if kind == "manual":
            args["cells"] = tuple(tuple(str(x) for x in c) for c in args.get("cells", []))
        rules.append(cls(**args))
    s = raw.get("suppression", {})
    o = raw.get("output", {})
    out = Path(out_dir) if out_dir is not None else base / o.get("dir", f"{path.stem}-out")
    tl = s.get("time_limit")
    return TableRecipe(path, base / t["input"], tuple(dims), hier, t.get("response"), t.get("weight"),
                       t.get("holding"), (base / t["rda"]) if t.get("rda") else None, tuple(rules),
                       s.get("method", "optimal"), s.get("cost", "value"),
                       float(tl) if tl is not None else None, out, o.get("cells", "cells.csv"), raw)


def _hierarchy(spec: Any, dim: str, base: Path, codes: list[str], rda: Any) -> Any:
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
        return Hierarchy.from_hrc(p, name=dim)
    if isinstance(spec, dict) and "parents" in spec:
        return {str(k): str(v) for k, v in spec["parents"].items()}
    if isinstance(spec, dict) and "lengths" in spec:
        return Hierarchy.from_lengths(codes, spec["lengths"], total=spec.get("total", "Total"), name=dim)
    raise ParameterError(f"The hierarchy of dimension {dim!r} must be a file name, {{parents = ...}} or "
                         "{lengths = [...]}.")


def build_table(recipe: TableRecipe) -> tuple[Table, pd.DataFrame]:
    """The recipe's table and the frame it was built from."""
    base = recipe.path.parent
    rda = tauargus.read_rda(recipe.rda) if recipe.rda is not None else None
    suffix = recipe.input.suffix.lower()
    if suffix == ".tab":
        if rda is None:
            raise ParameterError(f"Recipe {recipe.path}: a .tab input needs rda = the tau-ARGUS metadata.")
        frame = tauargus.read_tab(recipe.input, rda)
    elif suffix == ".asc" and rda is not None:
        frame = tauargus.read_asc(recipe.input, rda)
    else:
        frame = read(recipe.input)
    for d in recipe.dimensions:
        if d not in frame.columns:
            raise DataError(f"Dimension column {d!r} is not in {recipe.input.name}.")
        frame[d] = frame[d].astype(str).str.strip()
    hier = {d: _hierarchy(recipe.hierarchies.get(d), d, base, sorted(frame[d].unique()), rda)
            for d in recipe.dimensions}
    if suffix == ".tab":
        freq = next((v.name for v in rda.variables if v.role == "frequency"), None)
        tops = [v.name for v in rda.variables if v.role == "top"]
        table = Table.from_cells(frame, recipe.dimensions, hier, value=recipe.response or "value",
                                 freq=freq, top=tops[:2], rtol=1e-6)
    else:
        n_top = max([getattr(r, "n", 2) if isinstance(r, Dominance) else 2 for r in recipe.rules] + [2])
        table = Table.from_microdata(frame, recipe.dimensions, hier, response=recipe.response,
                                     weight=recipe.weight, holding=recipe.holding, top=n_top)
    return table, frame


def published_view(result: SuppressionResult) -> pd.DataFrame:
    """The table in wide form: rows = all dimensions but the last, columns = the last one's codes
    (hierarchy order); suppressed cells are shown as ``x``."""
    t = result.table
    cells = result.cells
    vals = cells["value"].to_numpy(float)
    integral = bool(np.all(np.isclose(vals, np.round(vals))))
    text = [str(int(round(v))) if integral else f"{v:.2f}" for v in vals]
    shown = np.where(cells["status"].to_numpy() == "safe", text, "x")
    last = t.dimensions[-1]
    frame = cells[list(t.dimensions)].copy()
    frame["shown"] = shown
    order = t.hierarchies[-1].codes
    if len(t.dimensions) == 1:
        return pd.DataFrame([frame["shown"].to_list()], columns=list(frame[last]))
    wide = frame.pivot(index=list(t.dimensions[:-1]), columns=last, values="shown")
    rows = pd.MultiIndex.from_frame(frame[list(t.dimensions[:-1])].drop_duplicates()) if len(t.dimensions) > 2 \
        else pd.Index(t.hierarchies[0].codes, name=t.dimensions[0])
    wide = wide.reindex(index=rows, columns=list(order))
    wide.columns.name = None
    return wide.reset_index()


def cell_file(result: SuppressionResult) -> pd.DataFrame:
    """The protector's cell file: codes, value, freq, status, protection levels and the audit's
    interval of each suppressed cell (internal: it holds every value)."""
    out = result.cells.copy()
    a = result.audit.cells
    for c in ("upper", "lower", "lo", "hi"):
        out[c] = a[c].to_numpy()
    return out


def report_html(result: SuppressionResult, title: str) -> str:
    """A self-contained HTML page: the published table with primary and secondary cells coloured
    (their values are not shown), counts, suppressed value share, audit verdict and time."""
    t = result.table
    wide = published_view(result)
    st = result.cells.set_index(list(t.dimensions))["status"]
    ndim = len(t.dimensions)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in wide.columns)
    body = []
    for _, row in wide.iterrows():
        tds = []
        keys = tuple(str(row[d]) for d in t.dimensions[:-1])
        for c in wide.columns:
            v = row[c]
            if c in t.dimensions[:-1]:
                tds.append(f"<th>{html.escape(str(v))}</th>")
                continue
            status = st.get(keys + (str(c),), "safe") if ndim > 1 else st.get(str(c), "safe")
            tds.append(f'<td class="{status}">{html.escape(str(v))}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    d = result.to_dict()
    a = result.audit
    verdict = "every primary cell meets its protection levels" if a.safe else f"{a.unprotected} primary cells unprotected"
    opt = ("proved optimal" if result.optimal else
           f"stopped by the time limit, gap {result.gap:.2%}" if result.gap is not None else "heuristic")
    facts = [("cells", f"{len(result.cells):,}"), ("primary cells", f"{result.primaries:,}"),
             ("secondary cells", f"{result.secondaries:,}"),
             ("suppressed value share", f"{result.suppressed_value_share:.3%}"),
             ("method", f"{result.method} ({opt}), cost = {result.cost}"),
             ("audit (LP, {0} LPs)".format(a.lp_solved), verdict), ("time", f"{result.seconds:.2f} s")]
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }}
th {{ background: #f0f0f0; }}
td.primary {{ background: #e74c3c; color: white; font-weight: bold; text-align: center; }}
td.secondary {{ background: #f5b041; font-weight: bold; text-align: center; }}
.legend span {{ padding: 0.1em 0.6em; margin-right: 1em; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<table>{rows}</table>
<p class="legend"><span style="background:#e74c3c;color:white">x</span>primary (sensitive)
<span style="background:#f5b041">x</span>secondary (protects the primaries)</p>
<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>
<p>Suppressed cells show <b>x</b>; their values are not in this page. sdckit {html.escape(__version__)}.</p>
<script type="application/json" id="summary">{html.escape(json.dumps(d, default=str))}</script>
</body></html>
"""


def run_table_recipe(path: str | Path, out_dir: str | Path | None = None) -> tuple[SuppressionResult, dict[str, Path]]:
    """Build the recipe's table, protect it, and write the cell file, the published view, the
    manifest and the HTML report into the output folder. Returns the result and the paths."""
    recipe = load_table_recipe(path, out_dir)
    t0 = time.perf_counter()
    table, frame = build_table(recipe)
    result = suppress(table, list(recipe.rules), method=recipe.method, cost=recipe.cost,
                      time_limit=recipe.time_limit)
    out = recipe.out_dir
    out.mkdir(parents=True, exist_ok=True)
    paths = {"cells": out / recipe.cells_name, "published": out / "published.csv",
             "manifest": out / "manifest.json", "report": out / "report.html"}
    write(cell_file(result), paths["cells"])
    view = published_view(result)
    write(view, paths["published"])
    manifest = {"sdckit": __version__, "created": created_timestamp(), "kind": "table",
                "recipe": recipe.to_dict(), "input_fingerprint": UNPUBLISHED,
                "published_fingerprint": fingerprint(view.astype(str)), "table": table.to_dict(),
                "result": result.to_dict(), "seconds_total": round(time.perf_counter() - t0, 3)}
    write_text_atomic(paths["manifest"], json.dumps(manifest, indent=2, default=str) + "\n")
    write_text_atomic(paths["report"], report_html(result, f"{recipe.path.stem}: protected table"))
    return result, paths
