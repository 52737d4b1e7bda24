"""Cell suppression by decomposition along the hierarchies (tau-ARGUS's *Modular*, HiTaS).

A hierarchical table is cut into *sub-tables*: one per combination of a non-leaf code in each
dimension, holding that code and its children in every dimension (a small table without
hierarchy, whose equations are the whole table's equations between those cells). The sub-tables
are protected one at a time, from the top of the hierarchies down (by the sum of the codes'
depths), each by :func:`sdckit.tabular.suppress` with every cell already suppressed as a primary
cell: the secondary cells chosen in a higher sub-table are carried down as primaries of the
lower sub-tables that contain them, so that they cannot be recomputed there. A cell suppressed in
a sub-table that was already processed sends that sub-table back into the queue (the
backtracking of HiTaS), so the end state is a fixed point: every sub-table's pattern protects
all the suppressed cells it holds. Then the whole table is audited (the intervals of the primary
cells only, :func:`audit_primaries`); a primary still short has its level raised and its
sub-tables processed again.

References: de Wolf, P.-P. (2002), "HiTaS: a heuristic approach to cell suppression in
hierarchical tables", in *Inference Control in Statistical Databases*, LNCS 2316, 74-82;
Hundepool et al. (2012), *Statistical Disclosure Control*, Wiley, §4.4.3 (Modular);
tau-ARGUS 4.2 manual §4.2.3.

Memory: the largest model ever built is one sub-table's (a few hundred to a few thousand cells),
plus the audit's LP over the suppressed cells of the whole table.
"""

from __future__ import annotations

import heapq
import time
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Options, validated
from sdckit.tabular.audit import AuditResult, intervals, protected
from sdckit.tabular.cutloop import cpu_time
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.rules import Rule, Sensitivity, sensitivity
from sdckit.tabular.suppress import params
from sdckit.tabular.suppress.problem import SuppressionProblem, cell_costs
from sdckit.tabular.suppress.result import STATUSES, SuppressionResult
from sdckit.tabular.suppress.single import suppress_table
from sdckit.tabular.table import FREQ, NCONTRIB, VALUE, Table


class _Given(Rule):
    """Primary cells and levels decided outside the sub-table (on the whole table)."""

    name = "given"

    def __init__(self, primary: np.ndarray, level: np.ndarray) -> None:
        self.primary, self.level = primary, level

    def evaluate(self, table: Table) -> tuple[np.ndarray, np.ndarray]:
        return self.primary, self.level


class _Decomposition:
    """The sub-tables of a hierarchical table: keys, cells, and which sub-tables hold a cell."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.shape = table.shape
        self.kids: list[dict[int, np.ndarray]] = []
        self.depth: list[np.ndarray] = []
        self.parents: list[np.ndarray] = []
        for h in table.hierarchies:
            par = np.asarray(h.parents)
            self.parents.append(par)
            self.depth.append(h.depths())
            self.kids.append({int(p): np.flatnonzero(par == p) for p in np.unique(par[par >= 0])})

    def keys(self) -> list[tuple[int, ...]]:
        """Every sub-table, as a tuple of non-leaf code positions (one per dimension)."""
        grids = np.meshgrid(*[np.asarray(sorted(k), np.int64) for k in self.kids], indexing="ij")
        return [tuple(int(g) for g in row) for row in np.stack([g.ravel() for g in grids], axis=1)]

    def order(self, key: tuple[int, ...]) -> tuple:
        return (sum(int(self.depth[k][c]) for k, c in enumerate(key)), key)

    def codes(self, key: tuple[int, ...]) -> list[np.ndarray]:
        return [np.r_[c, self.kids[k][c]] for k, c in enumerate(key)]

    def cells(self, key: tuple[int, ...]) -> np.ndarray:
        """Flat positions (in ``table.cells``) of the sub-table's cells, in its C order."""
        grids = np.meshgrid(*self.codes(key), indexing="ij")
        return np.ravel_multi_index([g.ravel() for g in grids], self.shape)

    def holding(self, cell: int) -> list[tuple[int, ...]]:
        """The sub-tables that contain ``cell``: in each dimension its own code (when not a leaf)
        or its parent (when not the root)."""
        pos = np.unravel_index(int(cell), self.shape)
        options = []
        for k, c in enumerate(pos):
            o = []
            if int(c) in self.kids[k]:
                o.append(int(c))
            if self.parents[k][c] >= 0:
                o.append(int(self.parents[k][c]))
            options.append(o)
        out: list[tuple[int, ...]] = [()]
        for o in options:
            out = [t + (c,) for t in out for c in o]
        return out

    def subtable(self, key: tuple[int, ...], cells: np.ndarray) -> Table:
        """The sub-table as a :class:`Table` with flat hierarchies (the code, its children)."""
        t = self.table
        hier, cols = [], {}
        codes = self.codes(key)
        grids = np.meshgrid(*[np.arange(len(c)) for c in codes], indexing="ij")
        for k, (d, h) in enumerate(zip(t.dimensions, t.hierarchies)):
            names = [h.codes[i] for i in codes[k]]
            hier.append(DimensionHierarchy(tuple(names), (-1,) + (0,) * (len(names) - 1), d))
            cols[d] = np.asarray(names, dtype=object)[grids[k].ravel()]
        src = t.cells
        for c in (VALUE, FREQ, NCONTRIB):
            cols[c] = src[c].to_numpy()[cells]
        return Table(t.dimensions, tuple(hier), pd.DataFrame(cols), t.response, t.negative)


#: Cost factor of a cell already published by a processed sub-table (HiTaS keeps such cells
#: published; a large cost rather than a ban keeps every sub-table feasible).
FIXED_FACTOR = 100.0


def _protect(sub: Table, rule: Rule, method: str, cost: str, time_limit: float | None,
             fixed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(suppressed-cell mask, carried level per cell) of a sub-table protected by ``method``. With ``"fast"`` the flow
    heuristic of :mod:`sdckit.tabular.suppress` runs without the sub-table's own audit (the
    whole table is audited at the end), cells in ``fixed`` (published by a processed sub-table)
    costing ``FIXED_FACTOR`` times more; :func:`suppress` is the fallback."""
    if method == "fast":
        w = cell_costs(sub, cost)
        if fixed is not None:
            eps = 1e-3 * (float(w[w > 0].mean()) if (w > 0).any() else 1.0)
            w = np.where(fixed, (w + eps) * FIXED_FACTOR, w)
        prob = SuppressionProblem(sub, sensitivity(sub, rule), w)
        y = np.zeros(len(prob.cand))
        y[prob.prim] = 1.0
        y = prob.flow_protect(y)
        y = prob.drop_redundant(y, deadline=cpu_time() + 30.0)
        mask = np.zeros(len(sub.cells), bool)
        mask[prob.cand[y > 0.5]] = True
        # each cell's carried level: the largest level of the primaries whose flow uses it
        carried = np.zeros(len(sub.cells))
        for (p, up), sup in prob.certs.items():
            lv = prob.lpl[p] if up is False else prob.upl[p]
            cells = prob.cand[sup]
            carried[cells] = np.maximum(carried[cells], lv)
        return mask, carried
    res = suppress_table(sub, rule, method=method, cost=cost, time_limit=time_limit)
    mask = res.cells["status"].to_numpy() != "safe"
    lv = float(res.sensitivity.upper.max()) if len(mask) else 0.0
    return mask, np.where(mask, lv, 0.0)


def _whole_table_flows(table: Table, sens: Sensitivity, w: np.ndarray, supp: np.ndarray,
                       bad: np.ndarray, boost: float) -> np.ndarray:
    """Cells to suppress so that the primaries ``bad`` get protecting flows on the whole table
    (:meth:`SuppressionProblem.flow_protect`, levels x ``boost``), the cells in ``supp`` free."""
    prob = SuppressionProblem(table, sens, w)
    y = supp[prob.cand].astype(float)
    order = np.asarray([prob.pos[int(c)] for c in bad], dtype=np.int64)
    y = prob.flow_protect(y, order=order, boost=boost)
    out = np.zeros(len(supp), bool)
    out[prob.cand[y > 0.5]] = True
    return out


def audit_primaries(table: Table, suppressed: np.ndarray, sens: Sensitivity,
                    status: np.ndarray | None = None) -> AuditResult:
    """The audit of :func:`sdckit.tabular.audit_pattern` restricted to the primary cells: two
    LPs per primary (min and max of its value given the published cells and the equations, per
    connected component of the suppressed cells, HiGHS re-using the basis), the secondary cells'
    intervals left NaN. Whether the pattern is safe depends only on the primaries' intervals."""
    suppressed = np.asarray(suppressed, bool)
    lo, hi, nlp = intervals(table, suppressed, only=sens.primary, sens=sens)
    ok = protected(table, lo, hi, sens, suppressed)
    if status is None:
        status = np.where(sens.primary, "primary", np.where(suppressed, "secondary", "safe"))
    frame = table.cells[list(table.dimensions) + [VALUE]].copy()
    frame["status"] = status
    frame["lo"] = np.where(suppressed & sens.primary, lo, np.nan)
    frame["hi"] = np.where(suppressed & sens.primary, hi, np.nan)
    frame["upper"] = sens.upper
    frame["lower"] = sens.lower
    frame["protected"] = ok
    bad = int((~ok).sum())
    return AuditResult(frame, bad == 0, bad, int(suppressed.sum()), nlp)


@validated(cost=params.COST, method=Options(("fast", "optimal")), time_limit=params.TIME_LIMIT)
def suppress_modular(table: Table, rules: Any = None, primary: Any = None, cost: str = "value",
                     method: str = "fast", time_limit: float | None = None,
                     timings: dict | None = None, progress: Any = None) -> SuppressionResult:
    """Protect ``table`` by cell suppression, one sub-table at a time (HiTaS / tau-ARGUS Modular).

    Parameters
    ----------
    table : Table
    rules, primary, cost
        As in :func:`sdckit.tabular.suppress`; the primary cells and their protection levels
        are decided once on the whole table.
    method : {"fast", "optimal"}
        How each sub-table is protected (:func:`suppress`'s methods).
    time_limit : float, optional
        Seconds per sub-table for ``method="optimal"``.
    timings : dict, optional
        Filled with ``subtables``, ``solves``, ``protect`` and ``audit`` (seconds) and
        ``audit_rounds``.
    progress : callable, optional
        Called after each sub-table with (sub-tables solved, sub-tables queued, cells suppressed).

    Returns
    -------
    SuppressionResult
        ``method="modular"``, ``optimal=False``; its ``audit`` holds the intervals of the primary
        cells on the whole table (secondaries' NaN), and the result is returned only when every
        primary is protected.

    Raises
    ------
    DataError
        A primary cell that stays short of its levels after the sub-tables are processed again
        with raised levels (named by its codes).
    """
    start = time.perf_counter()
    if not isinstance(table, Table):
        raise ParameterError(f"The 'table' parameter of suppress_modular must be a Table. Got {type(table).__name__} instead.")
    w = cell_costs(table, cost)
    sens = sensitivity(table, rules, primary)
    v = table.cells[VALUE].to_numpy(float)
    dec = _Decomposition(table)
    supp = sens.primary.copy()
    seen = np.zeros(len(v), bool)  # cells of a processed sub-table
    need = np.where(sens.primary, sens.upper, 0.0)
    keys = dec.keys()
    processed: set[tuple[int, ...]] = set()
    heap = [dec.order(k) for k in keys]
    heapq.heapify(heap)
    queued = set(keys)
    solves = 0

    def requeue(cells: np.ndarray) -> None:
        for c in cells:
            for key in dec.holding(int(c)):
                if key in processed and key not in queued:
                    processed.discard(key)
                    queued.add(key)
                    heapq.heappush(heap, dec.order(key))

    def run_queue() -> None:
        nonlocal solves
        while heap:
            _, key = heapq.heappop(heap)
            queued.discard(key)
            cells = dec.cells(key)
            prim = supp[cells]
            processed.add(key)
            fixed = seen[cells] & ~prim
            seen[cells] = True
            if not prim.any():
                continue
            sub = dec.subtable(key, cells)
            got, carried = _protect(sub, _Given(prim, need[cells]), method, cost, time_limit, fixed=fixed)
            solves += 1
            if progress is not None:
                progress(solves, len(heap), int(supp.sum()))
            fresh = got & ~supp[cells]
            new = cells[fresh]
            if not len(new):
                continue
            supp[new] = True
            # a carried cell is protected in the other sub-tables by the largest level of the
            # primaries whose protecting flow runs through it (else of the sub-table's primaries)
            lv = carried[fresh]
            lv = np.where(lv > 0, lv, float(need[cells][prim].max()))
            need[new] = np.minimum(np.abs(v[new]), lv) if not table.negative else lv
            requeue(new)

    run_queue()
    t_protect = time.perf_counter() - start
    rounds = 0
    t_audit = 0.0
    for step in ("subtables", 1.0, 1.1, 1.5, None):
        rounds += 1
        t0 = time.perf_counter()
        status = np.where(sens.primary, "primary", np.where(supp, "secondary", "safe"))
        result_audit = audit_primaries(table, supp, sens, status)
        t_audit += time.perf_counter() - t0
        if result_audit.safe:
            break
        bad = np.flatnonzero(~result_audit.cells["protected"].to_numpy())
        if step is None:
            raise DataError(f"Primary cell {table.cell_name(int(bad[0]))} could not be protected by the "
                            "decomposition; use suppress(method='fast') on this table.")
        if step == "subtables":  # once: larger levels in the primaries' sub-tables
            need[bad] = need[bad] * 1.5
            requeue(bad)
            run_queue()
            continue
        # then the intruder's combination of sub-tables is answered on the whole table: the flow
        # heuristic for the short primaries only (flows on their neighbourhoods when the table
        # is large), with the pattern so far free
        supp |= _whole_table_flows(table, sens, w, supp, bad, float(step))
    sec = supp & ~sens.primary
    vabs = np.abs(v)
    share = float(vabs[supp].sum() / vabs.sum()) if vabs.sum() > 0 else 0.0
    cells_out = table.cells[list(table.dimensions) + [VALUE, FREQ]].copy()
    cells_out["status"] = pd.Categorical(status, categories=list(STATUSES)).astype(str)
    seconds = time.perf_counter() - start
    if timings is not None:
        timings.update({"subtables": len(keys), "solves": solves, "protect": t_protect,
                        "audit": t_audit, "audit_rounds": rounds})
    return SuppressionResult(table, sens, cells_out, "modular", cost, int(sens.primary.sum()), int(sec.sum()),
                             share, float(w[sec].sum()), False, None, None, seconds, solves, result_audit)
