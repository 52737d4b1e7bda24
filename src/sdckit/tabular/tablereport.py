"""What a protected table is released with, besides its cells: the published view (wide form)
and the HTML report, for cell suppression, rounding and controlled tabular adjustment, of one
table or of linked tables (a section per table and the joint audit). DESIGN.md sections 6.s, 6.r
and 6.l say what each shows; no page shows a suppressed value.

The report renders through the microdata report's Jinja2 templates (issue 29 item 7): the shared
``layout.html`` (head, styles, header, navigation, sections) extended by ``table.html``, with a
template per section (``facts.html``, ``table_grid.html``, ``table_audit.html``), through the one
environment of :mod:`sdckit.core.templates` (the tabular family sits below the report layer and
does not import it). This module computes what each section shows; the templates escape it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.result import plain
from sdckit.core.templates import render
from sdckit.core.version import __version__
from sdckit.tabular.linked import LinkedTables
from sdckit.tabular.rounding import RoundingResult
from sdckit.tabular.suppress import SuppressionResult
from sdckit.tabular.table import Table


# ---------------------------------------------------------------------- views of one table
def _text(vals: np.ndarray) -> list[str]:
    vals = np.asarray(vals, float)
    integral = bool(np.all(np.isclose(vals, np.round(vals))))
    return [str(int(round(v))) if integral else f"{v:.2f}" for v in vals]


def wide_view(table: Table, shown: Any) -> pd.DataFrame:
    """``shown`` (one text per cell of ``table``) in wide form: rows = all dimensions but the last,
    columns = the last one's codes (hierarchy order)."""
    dims = list(table.dimensions)
    last = dims[-1]
    frame = table.cells[dims].copy()
    frame["shown"] = list(shown)
    order = table.hierarchies[-1].codes
    if len(dims) == 1:
        return pd.DataFrame([frame["shown"].to_list()], columns=list(frame[last]))
    wide = frame.pivot(index=dims[:-1], columns=last, values="shown")
    rows = pd.MultiIndex.from_frame(frame[dims[:-1]].drop_duplicates()) if len(dims) > 2 \
        else pd.Index(table.hierarchies[0].codes, name=dims[0])
    wide = wide.reindex(index=rows, columns=list(order))
    wide.columns.name = None
    return wide.reset_index()


def published_view(result: Any) -> pd.DataFrame:
    """The published table in wide form: suppressed cells as ``x`` (suppression), rounded or
    adjusted values (rounding, adjustment). For linked tables, the first table's."""
    if getattr(result, "tables", None) and isinstance(result, SuppressionResult):
        result = result.tables[0]
    table, cells = result.table, result.cells
    if isinstance(result, SuppressionResult):
        shown = np.where(cells["status"].to_numpy() == "safe", _text(cells["value"]), "x")
    elif isinstance(result, RoundingResult):
        shown = _text(cells["rounded"])
    else:
        shown = _text(cells["adjusted"])
    return wide_view(table, shown)


def cell_file(result: SuppressionResult) -> pd.DataFrame:
    """The protector's cell file: codes, value, freq, status, protection levels and the audit's
    interval of each suppressed cell (internal: it holds every value)."""
    out = result.cells.copy()
    a = result.audit.cells
    for c in ("upper", "lower", "lo", "hi"):
        out[c] = a[c].to_numpy()
    return out


# ---------------------------------------------------------------------- per table
@dataclass(frozen=True)
class Part:
    """One table's share of a protection: its name, table, cells frame (with the method's
    columns), the published view, and the class of each cell in the report."""

    name: str
    table: Table
    cells: pd.DataFrame
    published: pd.DataFrame
    classes: np.ndarray
    facts: list


def table_parts(result: Any, table: Table) -> list[Part]:
    """Each table's :class:`Part` of ``result`` (one, or one per linked table)."""
    if isinstance(table, LinkedTables):
        pairs = [(n, t, m) for n, t, m in zip(table.names, table.tables, table.members)]
    else:
        pairs = [(None, table, np.arange(len(table.cells)))]
    out = []
    for name, t, m in pairs:
        if isinstance(result, SuppressionResult):
            r = result.tables[list(table.names).index(name)] if name is not None else result
            cells = cell_file(r)
            st = cells["status"].to_numpy()
            shown = np.where(st == "safe", _text(cells["value"]), "x")
            classes = st
            facts = [("cells", f"{len(cells):,}"), ("primary cells", f"{r.primaries:,}"),
                     ("secondary cells", f"{r.secondaries:,}"),
                     ("suppressed value share", f"{r.suppressed_value_share:.3%}")]
        else:
            joint = result.cells.iloc[m].reset_index(drop=True)
            cells = pd.concat([t.cells[list(t.dimensions)].reset_index(drop=True),
                               joint.drop(columns=list(table.dimensions))], axis=1)
            if isinstance(result, RoundingResult):
                if result.audit is not None:
                    sens = np.zeros(len(result.cells), bool)
                    a = result.audit.cells
                    idx = table.locate(list(a[list(table.dimensions)].itertuples(index=False, name=None)))
                    sens[idx] = True
                    lo = np.full(len(result.cells), np.nan)
                    hi = lo.copy()
                    lo[idx], hi[idx] = a["lo"].to_numpy(), a["hi"].to_numpy()
                    cells["sensitive"] = sens[m]
                    cells["lo"], cells["hi"] = lo[m], hi[m]
                ch = np.abs(cells["change"].to_numpy(float))
                moved = ch > 1e-9 * result.base
                classes = np.where(cells["sensitive"].to_numpy(bool) if "sensitive" in cells else False,
                                   "sensitive", np.where(moved, "moved", "safe"))
                shown = _text(cells["rounded"])
                facts = [("cells", f"{len(cells):,}"), ("cells moved", f"{int(moved.sum()):,}"),
                         ("largest absolute change", f"{ch.max(initial=0.0):g}"),
                         ("mean absolute change", f"{ch.mean() if len(ch) else 0.0:.3g}")]
            else:
                leaf = [h.is_leaf_array() for h in t.hierarchies]
                pos = t.code_index()
                margin = np.zeros(len(cells), bool)
                for k, lf in enumerate(leaf):
                    margin |= ~lf[pos[:, k]]
                cells["margin"] = margin
                ch = np.abs(cells["change"].to_numpy(float))
                v = np.abs(cells["value"].to_numpy(float))
                classes = cells["status"].to_numpy()
                shown = _text(cells["adjusted"])
                facts = [("cells", f"{len(cells):,}"), ("sensitive cells", f"{int((classes == 'primary').sum()):,}"),
                         ("cells adjusted", f"{int((ch > 0).sum()):,}"),
                         ("total absolute adjustment", f"{ch.sum():g}"),
                         ("relative adjustment (of the total |value|)", f"{ch.sum() / v.sum() if v.sum() else 0.0:.3%}"),
                         ("margins changed", f"{int((ch[margin] > 0).sum()):,} of {int(margin.sum()):,}")]
        out.append(Part(name or "", t, cells, wide_view(t, shown), np.asarray(classes), facts))
    return out


def file_slug(name: str) -> str:
    """A table's name as a file-name part and an anchor: ``"by size"`` -> ``"by-size"``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "table"


# The names tabular.recipe imports (until it takes the public ones).


# ---------------------------------------------------------------------- report
#: What each protection is called in the report's subtitle.
PROTECTION_NAMES = {"suppression": "cell suppression", "rounding": "rounding",
                    "adjustment": "controlled tabular adjustment"}


def _section(template: str, title: str, anchor: str, context: dict | None = None,
             note: str | None = None) -> dict[str, Any]:
    """A section as ``layout.html`` shows it (the fields of :class:`sdckit.report.section.Section`)."""
    return {"template": template, "title": title, "anchor": anchor, "context": context or {}, "note": note,
            "from_original": False}


def _rule_text(rule: Any) -> str:
    d = rule.to_dict()
    name = d.pop("rule", type(rule).__name__)
    return name + " " + ", ".join(f"{k}={v}" for k, v in d.items() if k != "cells") + (
        f" ({len(d['cells'])} cells)" if "cells" in d else "")


def _grid(part: Part) -> tuple[list[str], list[tuple[list[str], list[tuple[str, str]]]]]:
    """The published table's header and rows: per row, the codes of the leading dimensions and,
    per cell, ``(class, text)`` (the class is what happened to the cell: ``safe``, ``primary``...)."""
    t, wide = part.table, part.published
    dims = list(t.dimensions)
    keys = list(zip(*(t.cells[d].astype(str) for d in dims)))
    cls = dict(zip(keys, part.classes))
    lead_columns = [c for c in wide.columns if c in dims[:-1]]
    cell_columns = [c for c in wide.columns if c not in dims[:-1]]
    rows = []
    for _, row in wide.iterrows():
        lead = tuple(str(row[d]) for d in dims[:-1])
        rows.append(([str(row[c]) for c in lead_columns],
                     [(str(cls.get(lead + (str(c),), "safe")), str(row[c])) for c in cell_columns]))
    return [str(c) for c in lead_columns + cell_columns], rows


def _method_facts(result: Any, protection: str) -> list:
    if protection == "suppression":
        a = result.audit
        verdict = "every primary cell meets its protection levels" if a.safe else f"{a.unprotected} primary cells unprotected"
        opt = ("proved optimal" if result.optimal else
               f"stopped by the time limit, gap {result.gap:.2%}" if result.gap is not None else "heuristic")
        return [("protection", "cell suppression"), ("cells", f"{len(result.cells):,}"),
                ("primary cells", f"{result.primaries:,}"), ("secondary cells", f"{result.secondaries:,}"),
                ("suppressed value share", f"{result.suppressed_value_share:.3%}"),
                ("method", f"{result.method} ({opt}), cost = {result.cost}"),
                (f"audit (LP, {a.lp_solved} LPs)", verdict), ("time", f"{result.seconds:.2f} s")]
    if protection == "rounding":
        rows = [("protection", f"{result.method} rounding to base {result.base:g}"),
                ("cells", f"{len(result.cells):,}"), ("cells moved", f"{result.cells_moved:,}"),
                ("largest absolute change", f"{result.max_abs_change:g}"),
                ("mean absolute change", f"{result.mean_abs_change:.3g}"),
                ("total absolute change", f"{result.total_abs_change:g}"),
                ("additive", "yes" if result.additive else f"no: {result.equations_violated} equations broken "
                                                           "(random rounding is unbiased, not additive)")]
        if result.method == "controlled":
            rows.append(("closest rounding", "proved" if result.optimal else
                         f"within gap {result.gap:.2%}" if result.gap is not None else "not proved"))
        if result.audit is not None:
            a = result.audit
            rows.append((f"audit (LP, {a.lp_solved} LPs)",
                         f"{a.sensitive} sensitive cells, "
                         + ("every interval covers its protection levels" if a.safe else
                            f"{a.unprotected} intervals too narrow: rounding alone does not protect them")))
        rows.append(("time", f"{result.seconds:.2f} s"))
        return rows
    opt = "proved closest" if result.optimal else ("heuristic (fast)" if np.isnan(result.gap) else f"gap {result.gap:.2%}")
    v = np.abs(result.cells["value"].to_numpy(float))
    return [("protection", f"controlled tabular adjustment ({result.method}, {opt}), cost = {result.cost}"),
            ("cells", f"{len(result.cells):,}"), ("sensitive cells", f"{result.sensitive:,}"),
            ("cells adjusted", f"{result.cells_adjusted:,}"),
            ("total absolute adjustment", f"{result.total_abs_adjustment:g}"),
            ("relative adjustment (of the total |value|)", f"{result.total_abs_adjustment / v.sum() if v.sum() else 0.0:.3%}"),
            ("mean relative adjustment (per cell)", f"{result.mean_relative_adjustment:.3%}"),
            ("largest relative adjustment", f"{result.max_relative_adjustment:.3%}"),
            ("margins changed", f"{result.margins_changed:,}"),
            ("largest margin adjustment", f"{result.max_margin_adjustment:g}"),
            ("grand total change", f"{result.grand_total_change:g}"), ("time", f"{result.seconds:.2f} s")]


def _audit_section(result: Any, table: Table, protection: str) -> dict[str, Any] | None:
    """The audit's section: the joint audit of linked tables (suppression), the sensitive cells'
    intervals (rounding), their shifts against their levels (adjustment, internal)."""
    if protection == "suppression":
        if not isinstance(table, LinkedTables):
            return None
        a = result.audit
        rows = [("tables", ", ".join(table.names)), ("cells in all", f"{len(table.cells):,}"),
                ("shared cells", f"{int((table.owners().sum(axis=1) > 1).sum()):,}"),
                ("equations (each distinct one once)", f"{table.equations().shape[0]:,}"),
                (f"joint audit (LP, {a.lp_solved} LPs)",
                 "safe: every primary cell meets its protection levels against an intruder who reads every table"
                 if a.safe else f"UNSAFE: {a.unprotected} primary cells")]
        return _section("table_audit.html", "Joint audit", "audit", {"rows": rows})
    if protection == "rounding":
        title = "Sensitive cells: what an intruder can deduce from the rounded table"
        a = result.audit
        if a is None:
            return _section("table_audit.html", "Sensitive cells", "audit",
                            note="No rules were given: no interval was computed.")
        idx = table.locate(list(a.cells[list(table.dimensions)].itertuples(index=False, name=None)))
        cells = [(table.cell_name(int(i)), _text([r["rounded"]])[0], f"{r['lo']:g}", f"{r['hi']:g}",
                  "yes" if r["protected"] else "NO") for i, (_, r) in zip(idx, a.cells.iterrows())]
        return _section("table_audit.html", title, "audit", {"rows": [], "cells": cells})
    c = result.cells
    s = result.sensitivity
    cells = []
    for i in np.flatnonzero(s.primary):
        shift = abs(float(c["change"].iloc[i]))
        d = c["direction"].iloc[i]
        level = float(s.upper[i] if d == "up" else s.lower[i])
        ratio = shift / level if level > 0 else np.inf
        cells.append((table.cell_name(int(i)), str(d), f"{shift:g}", f"{level:g}", f"{ratio:.2f}"))
    return _section("table_audit.html", "Sensitive cells: shifts and protection levels", "audit",
                    {"rows": [], "cells": cells})


def report_html(result: Any, title: str, protection: str | None = None, parts: list[Part] | None = None,
                rules: Any = None, parameters: dict | None = None) -> str:
    """A self-contained HTML page: the method, its parameters (``parameters``, e.g. a recipe
    section's keys) and ``rules``, its figures, each table as published (cells coloured by what
    happened to them; suppressed values are not shown), and the audit: the joint one for linked
    tables, the sensitive cells' intervals for rounding, their shifts against their levels for
    adjustment. Rendered through the report's templates (``table.html`` on ``layout.html``);
    the result's figures are in the page as JSON (``<script id="summary">``)."""
    protection = protection or ("suppression" if isinstance(result, SuppressionResult) else
                                "rounding" if isinstance(result, RoundingResult) else "adjustment")
    table = result.table
    given = []
    if rules:
        given.append(("rules", "; ".join(_rule_text(r) for r in rules)))
    if parameters:
        given.append(("parameters", ", ".join(f"{k} = {v}" for k, v in parameters.items())))
    parts = parts if parts is not None else table_parts(result, table)
    sections = [_section("facts.html", "Protection", "protection", {"rows": given + _method_facts(result, protection)})]
    for p in parts:
        head, grid = _grid(p)
        sections.append(_section("table_grid.html", p.name or "Published table",
                                 f"table-{file_slug(p.name)}" if p.name else "table",
                                 {"rows": p.facts if p.name else [], "head": head, "grid": grid}))
    audit = _audit_section(result, table, protection)
    if audit is not None:
        sections.append(audit)
    name = PROTECTION_NAMES[protection]
    subtitle = (f"{name} of {len(parts)} linked tables" if isinstance(table, LinkedTables) else
                f"{name} of a table of {len(table.cells):,} cells")
    page = {"title": title, "subtitle": subtitle, "sections": sections}
    return render("table.html", report=page, protection=protection, version=__version__,
                  summary=plain(result.to_dict()))
