"""What a protected table is released with, besides its cells: the published view (wide form)
and the HTML report, for cell suppression, rounding and controlled tabular adjustment, of one
table or of linked tables (a section per table and the joint audit). DESIGN.md sections 6.s, 6.r
and 6.l say what each shows; no page shows a suppressed value.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

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
class _Part:
    """One table's share of a protection: its name, table, cells frame (with the method's
    columns), the published view, and the class of each cell in the report."""

    name: str
    table: Table
    cells: pd.DataFrame
    published: pd.DataFrame
    classes: np.ndarray
    facts: list


def table_parts(result: Any, table: Table) -> list[_Part]:
    """Each table's share of a protection's ``result`` on ``table`` (one part, or one per linked
    table): what the recipe writes per table and the report shows per section."""
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
        out.append(_Part(name or "", t, cells, wide_view(t, shown), np.asarray(classes), facts))
    return out


def file_slug(name: str) -> str:
    """A table's name as a part of a file name (``"by size"`` -> ``"by-size"``)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "table"


# ---------------------------------------------------------------------- report
_CSS = """body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #f0f0f0; }
td.primary { background: #e74c3c; color: white; font-weight: bold; text-align: center; }
td.secondary { background: #f5b041; font-weight: bold; text-align: center; }
td.sensitive { background: #e74c3c; color: white; }
td.moved, td.adjusted { background: #fdebd0; }
.legend span { padding: 0.1em 0.6em; margin-right: 1em; }
.internal { border: 2px solid #c0392b; padding: 0.5em 1em; }"""

_LEGEND = {
    "suppression": '<span style="background:#e74c3c;color:white">x</span>primary (sensitive) '
                   '<span style="background:#f5b041">x</span>secondary (protects the primaries)',
    "rounding": '<span style="background:#e74c3c;color:white">&nbsp;</span>sensitive cell (rounded value) '
                '<span style="background:#fdebd0">&nbsp;</span>other cell that moved',
    "adjustment": '<span style="background:#e74c3c;color:white;font-weight:bold">&nbsp;</span>sensitive cell '
                  '(adjusted value) <span style="background:#fdebd0">&nbsp;</span>cell adjusted to keep the table additive',
}


def _rule_text(rule: Any) -> str:
    d = rule.to_dict()
    name = d.pop("rule", type(rule).__name__)
    return name + " " + ", ".join(f"{k}={v}" for k, v in d.items() if k != "cells") + (
        f" ({len(d['cells'])} cells)" if "cells" in d else "")


def _facts(rows: list) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows) + "</table>"


def _grid(part: _Part) -> str:
    t, wide = part.table, part.published
    dims = list(t.dimensions)
    keys = list(zip(*(t.cells[d].astype(str) for d in dims)))
    cls = dict(zip(keys, part.classes))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in wide.columns)
    body = []
    for _, row in wide.iterrows():
        lead = tuple(str(row[d]) for d in dims[:-1])
        tds = []
        for c in wide.columns:
            if c in dims[:-1]:
                tds.append(f"<th>{html.escape(str(row[c]))}</th>")
                continue
            k = cls.get(lead + (str(c),), "safe")
            tds.append(f'<td class="{html.escape(str(k))}">{html.escape(str(row[c]))}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


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


def _detail(result: Any, table: Table, protection: str) -> str:
    if protection == "suppression":
        if not isinstance(table, LinkedTables):
            return ""
        a = result.audit
        rows = [("tables", ", ".join(table.names)), ("cells in all", f"{len(table.cells):,}"),
                ("shared cells", f"{int((table.owners().sum(axis=1) > 1).sum()):,}"),
                ("equations (each distinct one once)", f"{table.equations().shape[0]:,}"),
                (f"joint audit (LP, {a.lp_solved} LPs)",
                 "safe: every primary cell meets its protection levels against an intruder who reads every table"
                 if a.safe else f"UNSAFE: {a.unprotected} primary cells")]
        return "<h2>Joint audit</h2>" + _facts(rows)
    if protection == "rounding":
        a = result.audit
        if a is None:
            return "<h2>Sensitive cells</h2><p>No rules were given: no interval was computed.</p>"
        idx = table.locate(list(a.cells[list(table.dimensions)].itertuples(index=False, name=None)))
        rows = []
        for i, (_, r) in zip(idx, a.cells.iterrows()):
            rows.append(f"<tr><th>{html.escape(table.cell_name(int(i)))}</th><td>{_text([r['rounded']])[0]}</td>"
                        f"<td>{r['lo']:g}</td><td>{r['hi']:g}</td><td>{'yes' if r['protected'] else 'NO'}</td></tr>")
        return ("<h2>Sensitive cells: what an intruder can deduce from the rounded table</h2>"
                "<p>The LP interval of each sensitive cell's true value given every rounded cell (each true "
                "value within the base of its rounded one), the equations and non-negativity; "
                "protected when it covers the cell's protection levels (levels and true values are not shown).</p>"
                "<table><thead><tr><th>cell</th><th>rounded</th><th>lowest</th><th>highest</th><th>protected</th>"
                f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    c = result.cells
    s = result.sensitivity
    P = np.flatnonzero(s.primary)
    rows = []
    for i in P:
        shift = abs(float(c["change"].iloc[i]))
        d = c["direction"].iloc[i]
        level = float(s.upper[i] if d == "up" else s.lower[i])
        ratio = shift / level if level > 0 else np.inf
        rows.append(f"<tr><th>{html.escape(table.cell_name(int(i)))}</th><td>{html.escape(str(d))}</td>"
                    f"<td>{shift:g}</td><td>{level:g}</td><td>{ratio:.2f}</td></tr>")
    return ("<h2>Sensitive cells: shifts and protection levels</h2>"
            '<p class="internal">Internal: with the published table, these shifts give the true values back; '
            "do not publish this page.</p><table><thead><tr><th>cell</th><th>direction</th><th>shift</th>"
            f"<th>level</th><th>shift / level</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def report_html(result: Any, title: str, protection: str | None = None, parts: list[_Part] | None = None,
                rules: Any = None, parameters: dict | None = None) -> str:
    """A self-contained HTML page: the method, its parameters (``parameters``, e.g. a recipe
    section's keys) and ``rules``, its figures, each table as published (cells coloured by what
    happened to them; suppressed values are not shown), and the audit: the joint one for linked
    tables, the sensitive cells' intervals for rounding, their shifts against their levels for
    adjustment."""
    protection = protection or ("suppression" if isinstance(result, SuppressionResult) else
                                "rounding" if isinstance(result, RoundingResult) else "adjustment")
    table = result.table
    given = []
    if rules:
        given.append(("rules", "; ".join(_rule_text(r) for r in rules)))
    if parameters:
        given.append(("parameters", ", ".join(f"{k} = {v}" for k, v in parameters.items())))
    parts = parts if parts is not None else table_parts(result, table)
    sections = []
    for p in parts:
        head = f"<h2>{html.escape(p.name)}</h2>" + _facts(p.facts) if p.name else ""
        sections.append(head + f'<p class="legend">{_LEGEND[protection]}</p>' + _grid(p))
    if protection == "suppression":
        note = "Suppressed cells show <b>x</b>; their values are not in this page."
    elif protection == "rounding":
        note = "Every cell shows its rounded (published) value."
    else:
        note = "Every cell shows its adjusted (published) value."
    d = result.to_dict()
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
{_CSS}
</style></head><body>
<h1>{html.escape(title)}</h1>
{_facts(given + _method_facts(result, protection))}
{''.join(sections)}
{_detail(result, table, protection)}
<p>{note} sdckit {html.escape(__version__)}.</p>
<script type="application/json" id="summary">{html.escape(json.dumps(d, default=str))}</script>
</body></html>
"""
