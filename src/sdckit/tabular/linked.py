"""Linked tables: several tables from one source, protected together (issue 14).

Tables that share cells — e.g. region x size and region x activity from one survey share the
region margin — cannot be protected one at a time: a pattern safe in each table alone can be
undone by differencing across them. Their union (:mod:`sdckit.tabular.linked_tables`) is one
table to every method: suppression (:mod:`sdckit.tabular.suppress.linked`), the audit of patterns
released table by table (:func:`audit_linked`) and controlled tabular adjustment
(:func:`adjust_linked`). This module gathers what an agency uses on linked tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.tabular.audit import AuditResult, audit_pattern
from sdckit.tabular.linked_tables import LinkedTables, link_tables
from sdckit.tabular.rules import Sensitivity, sensitivity
from sdckit.tabular.suppress.linked import LinkedSuppressionResult, suppress_linked
from sdckit.tabular.table import VALUE, Table

__all__ = ["LinkedSuppressionResult", "LinkedTables", "adjust_linked", "audit_linked", "link_tables", "margins",
           "suppress_linked"]


# ---------------------------------------------------------------------- audit of several releases
def audit_linked(tables: Sequence[Table] | LinkedTables, statuses: Sequence[Any], rules: Any = None,
                 upper: Sequence[Any] | None = None, lower: Sequence[Any] | None = None,
                 names: Sequence[str] | None = None) -> AuditResult:
    """Audit patterns released table by table against an intruder who reads every release.

    Parameters
    ----------
    tables : list of Table (or a LinkedTables)
    statuses : list, one per table
        Over that table's cells: ``safe``/``primary``/``secondary`` texts, or booleans (True =
        suppressed). A shared cell is known as soon as one release publishes it.
    rules : optional
        Sensitivity rules deciding further primary cells and the levels (else cells marked
        ``primary`` in any table, level 10% of |value|).
    upper, lower : list of arrays, optional
        Per table, the protection levels of its cells (as a cell file's ``upper``/``lower``
        columns); a shared cell takes the largest.
    names : list of str, optional

    Returns
    -------
    AuditResult
        Over the union of the cells (the union's dimensions, plus a ``tables`` column naming the
        tables that hold each cell), with the intervals from the union of the equations.
    """
    linked = tables if isinstance(tables, LinkedTables) else link_tables(tables, names)
    if len(statuses) != len(linked.tables):
        raise ParameterError(f"The 'statuses' parameter of audit_linked needs {len(linked.tables)} entries "
                             f"(one per table). Got {len(statuses)} instead.")
    n = len(linked.cells)
    published = np.zeros(n, bool)
    marked = np.zeros(n, bool)
    for k, (st, m) in enumerate(zip(statuses, linked.members)):
        st = np.asarray(st)
        if len(st) != len(m):
            raise ParameterError(f"The status of {linked.names[k]} has {len(st)} entries; the table has "
                                 f"{len(m)} cells.")
        if st.dtype == bool:
            sup, prim = st, np.zeros(len(st), bool)
        else:
            st = st.astype(str)
            bad = sorted({str(x) for x in st} - {"safe", "primary", "secondary"})
            if bad:
                raise ParameterError(f"The status of {linked.names[k]} has {bad[0]!r}; it takes safe, primary "
                                     "or secondary.")
            sup, prim = st != "safe", st == "primary"
        published[m[~sup]] = True
        marked[m[prim]] = True
    suppressed = ~published
    sens = sensitivity(linked, rules, primary=marked & ~linked.empty)
    if upper is not None or lower is not None:
        up, lo = np.zeros(n), np.zeros(n)
        for given, into in ((upper, up), (lower, lo)):
            if given is None:
                continue
            for k, (lv, m) in enumerate(zip(given, linked.members)):
                np.maximum.at(into, m, np.nan_to_num(np.asarray(lv, float)))
        v = np.abs(linked.cells[VALUE].to_numpy(float))
        floor = 1e-6 * max(float(v.max()) if n else 1.0, 1.0)
        up_l = np.where(sens.primary, np.maximum(up if upper is not None else sens.upper, floor), 0.0)
        lo_l = np.where(sens.primary, lo if lower is not None else sens.lower, 0.0)
        sens = Sensitivity(sens.primary, up_l, lo_l, sens.reason)
    status = np.where(sens.primary, "primary", np.where(suppressed, "secondary", "safe"))
    a = audit_pattern(linked, suppressed, sens, status)
    owners = linked.owners()
    cells = a.cells.copy()
    cells["tables"] = [", ".join(nm for nm, o in zip(linked.names, row) if o) for row in owners]
    return replace(a, cells=cells)


# ---------------------------------------------------------------------- adjustment
def margins(linked: LinkedTables) -> np.ndarray:
    """True for the union's cells that are a subtotal or total in every table holding them (a
    cell interior to one table is not a margin, even if it has a total code on the dimensions
    that table lacks)."""
    out = np.ones(len(linked.cells), bool)
    for t, m in zip(linked.tables, linked.members):
        pos = t.code_index()
        margin = np.zeros(len(m), bool)
        for k, h in enumerate(t.hierarchies):
            margin |= ~h.is_leaf_array()[pos[:, k]]
        out[m[~margin]] = False
    return out


def adjust_linked(tables: Sequence[Table] | LinkedTables, rules: Any = None, **options: Any):
    """Controlled tabular adjustment of linked tables as one table
    (:func:`~sdckit.tabular.cta.adjust_table` on their union, ``options`` passed on): a shared
    cell gets one adjusted value, and every table stays additive. The ``margin`` column and the
    margin figures count the cells that are a margin in every table holding them."""
    from sdckit.tabular.cta import adjust_table

    linked = tables if isinstance(tables, LinkedTables) else link_tables(tables)
    r = adjust_table(linked, rules, **options)
    margin = margins(linked)
    cells = r.cells.copy()
    cells["margin"] = margin
    ch = np.abs(cells["change"].to_numpy(float))
    return replace(r, cells=cells, margins_changed=int((ch[margin] > 0).sum()),
                   margin_abs_adjustment=float(ch[margin].sum()),
                   max_margin_adjustment=float(ch[margin].max(initial=0.0)))
