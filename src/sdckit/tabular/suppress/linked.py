"""Linked tables protected together by secondary cell suppression (issue 14): one model over the
union of their cells and equations (:class:`~sdckit.tabular.linked_tables.LinkedTables`), on which
both methods of :func:`~sdckit.tabular.suppress.suppress` run unchanged (de Wolf & Giessing 2009,
*Data & Knowledge Engineering* 68(11); Hundepool et al. 2012, *Statistical Disclosure Control*,
§4.4.5), and a cheaper table-by-table pattern kept when the joint audit passes it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import validated
from sdckit.tabular.audit import AuditResult, audit_pattern
from sdckit.tabular.linked_tables import LinkedTables, link_tables
from sdckit.tabular.rules import Sensitivity
from sdckit.tabular.suppress import params
from sdckit.tabular.suppress.problem import cell_costs
from sdckit.tabular.suppress.result import SuppressionResult
from sdckit.tabular.suppress.single import suppress_table
from sdckit.tabular.table import FREQ, VALUE, Table


@dataclass(frozen=True)
class LinkedSuppressionResult(SuppressionResult):
    """Linked tables protected together. Besides :class:`SuppressionResult`'s fields over the union
    of the cells (``cells`` has the union's dimensions, ``value``, ``freq``, ``status`` and
    ``tables``, the names of the tables holding each cell; ``audit`` is the joint audit, over the
    union of the equations):

    tables : tuple of SuppressionResult
        One per table: its own ``cells`` with their status, counts and value share within the
        table, and the joint audit's rows for its cells (intervals an intruder derives from all
        the releases together). ``optimal``/``gap`` refer to the joint model.
    """

    tables: tuple[SuppressionResult, ...] = field(default=(), repr=False, metadata={"dict": False})

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["linked"] = True
        d["tables"] = [{"name": nm, **{k: r.to_dict()[k] for k in ("cells", "primaries", "secondaries",
                                                                    "suppressed_value_share")}}
                       for nm, r in zip(self.table.names, self.tables)]
        return d


@validated(method=params.METHOD, cost=params.COST, time_limit=params.TIME_LIMIT)
def suppress_linked(tables: Sequence[Table] | LinkedTables, rules: Any = None, primary: Any = None,
                    method: str = "optimal", cost: str = "value", time_limit: float | None = None,
                    names: Sequence[str] | None = None) -> LinkedSuppressionResult:
    """Primary and secondary suppression of linked tables in one model over all their cells
    (what ``suppress([table1, table2, ...])`` does).

    ``rules`` apply to every table (a shared cell is one cell: primary in all the tables holding
    it); ``primary`` is a boolean mask over the union's cells or a list of cell keys (dicts
    ``{dimension: code}``, a dimension left out being its total). Both methods of
    :func:`~sdckit.tabular.suppress.suppress` run unchanged on the union; the joint audit (every
    table's equations at once) must pass before the result is returned.
    """
    start = time.perf_counter()
    linked = tables if isinstance(tables, LinkedTables) else link_tables(tables, names)
    joint = suppress_table(linked, rules, primary=primary, method=method, cost=cost, time_limit=time_limit)
    if len(linked.tables) > 1 and not joint.optimal:
        joint = _table_by_table(linked, joint, rules, cost, start, time_limit)
    owners = linked.owners()
    cells = joint.cells.copy()
    cells["tables"] = [", ".join(n for n, o in zip(linked.names, row) if o) for row in owners]
    status = joint.cells["status"].to_numpy()
    w_all = cell_costs(linked, cost)
    per = []
    a = joint.audit
    for t, m in zip(linked.tables, linked.members):
        st = status[m]
        c = t.cells[list(t.dimensions) + [VALUE, FREQ]].copy()
        c["status"] = st
        sens = Sensitivity(joint.sensitivity.primary[m], joint.sensitivity.upper[m],
                           joint.sensitivity.lower[m], joint.sensitivity.reason[m])
        af = a.cells.iloc[m].reset_index(drop=True)
        af = pd.concat([t.cells[list(t.dimensions)].reset_index(drop=True),
                        af.drop(columns=list(linked.dimensions))], axis=1)
        ok = af["protected"].to_numpy(bool)
        sup = st != "safe"
        sub_audit = AuditResult(af, bool(ok.all()), int((~ok).sum()), int(sup.sum()), a.lp_solved)
        v = np.abs(t.cells[VALUE].to_numpy(float))
        sec = st == "secondary"
        per.append(replace(joint, table=t, sensitivity=sens, cells=c, primaries=int((st == "primary").sum()),
                           secondaries=int(sec.sum()),
                           suppressed_value_share=float(v[sup].sum() / v.sum()) if v.sum() > 0 else 0.0,
                           secondary_cost=float(w_all[m][sec].sum()), audit=sub_audit))
    fields = {f: getattr(joint, f) for f in SuppressionResult.__dataclass_fields__}
    fields["cells"] = cells
    return LinkedSuppressionResult(**fields, tables=tuple(per))


def _table_by_table(linked: LinkedTables, joint: SuppressionResult, rules: Any, cost: str,
                    start: float, time_limit: float | None = None) -> SuppressionResult:
    """The joint heuristic's pattern, or a cheaper one built table by table when the joint audit
    passes it.

    Each table is protected alone (the flow heuristic, its primaries as in the joint problem);
    the releases are combined as an intruder reads them (a shared cell is known when any table
    publishes it) and, failing that, with a shared cell suppressed when any table suppresses it.
    The first combination the joint audit passes competes on cost with the joint pattern (the
    greedy flows of the joint model can be the costlier: every primary of every table is a free
    cell for the others' flows, which then pull in cells of other tables). ``optimal`` stays
    False; the gap is recomputed against the joint model's lower bound. With a ``time_limit``,
    each table alone gets its share of it.
    """
    tl = None if time_limit is None else max(float(time_limit) / len(linked.tables), 1.0)
    sens = joint.sensitivity
    w = cell_costs(linked, cost)
    n = len(linked.cells)
    try:
        try:
            alone = [suppress_table(t, rules, primary=sens.primary[m], method="fast", cost=cost, time_limit=tl)
                     for t, m in zip(linked.tables, linked.members)]
        except ParameterError:  # rules naming cells of the union (Manual): the primaries alone
            alone = [suppress_table(t, None, primary=sens.primary[m], method="fast", cost=cost, time_limit=tl)
                     for t, m in zip(linked.tables, linked.members)]
    except (DataError, ParameterError):  # a table alone cannot be protected: keep the joint pattern
        return joint
    best = joint
    any_pub, any_sup = np.zeros(n, bool), np.zeros(n, bool)
    for r, m in zip(alone, linked.members):
        sup = r.cells["status"].to_numpy() != "safe"
        any_pub[m[~sup]] = True
        any_sup[m[sup]] = True
    for mask in (~any_pub, any_sup):
        mask = mask | sens.primary
        sec = mask & ~sens.primary
        if float(w[sec].sum()) >= best.secondary_cost - 1e-9 * max(1.0, best.secondary_cost):
            continue
        status = np.where(sens.primary, "primary", np.where(mask, "secondary", "safe"))
        a = audit_pattern(linked, mask, sens, status)
        if not a.safe:
            continue
        v = np.abs(linked.cells[VALUE].to_numpy(float))
        total = float(w[sec].sum())
        full = total + float(w[sens.primary].sum())
        lower = joint.lower_bound
        gap = (max(0.0, (full - lower) / full) if full > 0 else 0.0) if lower is not None else None
        cells = joint.cells.copy()
        cells["status"] = status
        best = replace(joint, cells=cells, secondaries=int(sec.sum()),
                       suppressed_value_share=float(v[mask].sum() / v.sum()) if v.sum() > 0 else 0.0,
                       secondary_cost=total, optimal=False, gap=gap, seconds=time.perf_counter() - start,
                       audit=a)
        break
    return best if best is not joint else replace(joint, seconds=time.perf_counter() - start)


