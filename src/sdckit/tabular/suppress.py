"""Secondary cell suppression: the cheapest set of further cells to suppress so that no primary
cell can be estimated, from the published cells and the table's equations, within its
protection levels.

``method="optimal"``: the exact model of Fischetti & Salazar (2001), "Solving the cell
suppression problem on tabular data with linear constraints", *Management Science* 47(7),
1008-1027: binary y_i (cell i suppressed), minimise sum w_i y_i, and for every primary cell p and
each direction the attacker LP  max/min z_p  s.t.  A z = 0,  -LB_i y_i <= z_i <= UB_i y_i  must
reach the upper/lower protection level. Its dual gives the "capacity" cuts
sum_i (UB_i d_i^- + LB_i d_i^+) y_i >= level (section 3), strengthened by capping each
coefficient at the level; they are added lazily (Benders-style) to a master MILP solved by HiGHS
(scipy.optimize.milp) until no attacker LP is violated. The model starts with the same cuts of
each single equation through a primary cell.

``method="fast"``: for each primary cell and direction, the cheapest deviation flow
(min sum w_i |z_i| with z_p at its level, the same bounds, cells already suppressed free; the
network-flow heuristic of Kelly, Golden & Assad 1992 and Castro 2007 generalised to any table by
LP), suppressing the cells it moves; then redundant secondaries are dropped while the pattern
stays safe, and the result is audited.

Deviation bounds: LB_i = x_i when values are non-negative (else the table's total absolute
value), UB_i = the table's total absolute value. Both methods return only after :func:`audit`
has shown every primary cell protected against an intruder without upper bounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular.audit import AuditResult, audit_pattern, intervals, protected
from sdckit.tabular.lp import LP
from sdckit.tabular.rules import Sensitivity, sensitivity
from sdckit.tabular.table import Table

STATUSES = ("safe", "primary", "secondary")


@dataclass(frozen=True)
class SuppressionResult:
    """A protected table.

    Attributes
    ----------
    cells : DataFrame
        The dimension codes, ``value``, ``freq`` and ``status`` (``safe``/``primary``/``secondary``).
    optimal : bool
        True when the MILP proved the pattern optimal (``method="optimal"`` only).
    gap : float or None
        Relative gap (cost - lower bound) / cost when a time limit stopped the MILP; 0 when optimal.
    """

    table: Table = field(repr=False)
    sensitivity: Sensitivity = field(repr=False)
    cells: pd.DataFrame = field(repr=False)
    method: str
    cost: str
    primaries: int
    secondaries: int
    suppressed_value_share: float
    secondary_cost: float
    optimal: bool
    gap: float | None
    lower_bound: float | None
    seconds: float
    rounds: int
    audit: AuditResult = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "cost": self.cost, "cells": len(self.cells),
                "primaries": self.primaries, "secondaries": self.secondaries,
                "suppressed_value_share": self.suppressed_value_share,
                "secondary_cost": self.secondary_cost, "optimal": self.optimal, "gap": self.gap,
                "lower_bound": self.lower_bound, "seconds": round(self.seconds, 3),
                "rounds": self.rounds, "audit": self.audit.to_dict()}


def cell_costs(table: Table, cost: str) -> np.ndarray:
    """Weight of suppressing each cell: its |value|, its frequency, or 1."""
    if cost == "value":
        return np.abs(table.cells["value"].to_numpy(float))
    if cost == "freq":
        return table.cells["freq"].to_numpy(float)
    if cost == "unity":
        return np.ones(len(table.cells))
    raise ParameterError(f"The 'cost' parameter of suppress must be 'value', 'freq' or 'unity'. Got {cost!r} instead.")


class _Problem:
    """What both methods share: candidate cells, equations on them, deviation bounds, weights."""

    def __init__(self, table: Table, sens: Sensitivity, w: np.ndarray) -> None:
        self.table, self.sens = table, sens
        v = table.cells["value"].to_numpy(float)
        self.v = v
        self.cand = np.flatnonzero(~table.empty)  # structural zeros are never suppressed
        A = table.equations()[:, self.cand].tocsr()
        keep = np.flatnonzero(np.diff(A.indptr))
        self.A = A[keep].tocsr()
        C = len(self.cand)
        M = float(np.abs(v[self.cand]).sum()) or 1.0
        self.M = M
        vc = v[self.cand]
        self.UB = np.full(C, M)
        self.LB = np.full(C, M) if table.negative else np.maximum(vc, 0.0)
        self.w = w[self.cand]
        self.pos = {int(c): j for j, c in enumerate(self.cand)}
        self.prim = np.array([self.pos[int(i)] for i in np.flatnonzero(sens.primary)], dtype=np.int64)
        self.upl = sens.upper[self.cand]
        self.lpl = sens.lower[self.cand]
        scale = max(float(np.abs(v).max()) if len(v) else 1.0, 1.0)
        self.tol = 1e-7 * scale
        self._att: LP | None = None

    # ------------------------------------------------------------ attacker LPs
    def attacker(self, y: np.ndarray) -> LP:
        if self._att is None:
            C = len(self.cand)
            z = np.zeros(self.A.shape[0])
            self._att = LP(self.A, z, z, np.zeros(C), np.zeros(C))
        on = y > 0.5
        self._att.set_bounds(np.arange(len(y)), np.where(on, -self.LB, 0.0), np.where(on, self.UB, 0.0))
        return self._att

    def violated_cuts(self, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Capacity cuts (columns, coefficients, rhs) violated by pattern ``y``."""
        lp = self.attacker(y)
        cuts = []
        for p in self.prim:
            for sign, level in ((-1.0, self.upl[p]), (1.0, self.lpl[p])):
                if level <= 0:
                    continue
                lp.set_costs([p], [sign])
                st = lp.solve()
                if st != "optimal":  # pragma: no cover - bounded, feasible (z = 0)
                    raise RuntimeError(f"attacker LP: {st}")
                reach = -lp.objective  # max z_p (sign -1) or max -z_p (sign +1)
                if reach < level - self.tol:
                    d = lp.col_dual
                    coef = np.maximum(d, 0) * self.LB + np.maximum(-d, 0) * self.UB
                    coef = np.minimum(coef, level)
                    nz = np.flatnonzero(coef > 1e-9 * level)
                    cuts.append((nz, coef[nz], level))
                lp.set_costs([p], [0.0])
        return cuts

    def row_cuts(self) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """The cuts of each single equation through a primary cell, both directions."""
        A = self.A.tocsc()
        Ar = self.A
        cuts = []
        for p in self.prim:
            for r in A.indices[A.indptr[p]:A.indptr[p + 1]]:
                cols = Ar.indices[Ar.indptr[r]:Ar.indptr[r + 1]]
                sgn = Ar.data[Ar.indptr[r]:Ar.indptr[r + 1]]
                sp_ = sgn[cols == p][0]
                other = cols != p
                c, s = cols[other], sgn[other]
                same = s == sp_
                for level, cap_same, cap_opp in ((self.upl[p], self.LB, self.UB), (self.lpl[p], self.UB, self.LB)):
                    if level <= 0:
                        continue
                    coef = np.minimum(np.where(same, cap_same[c], cap_opp[c]), level)
                    cuts.append((c, coef, level))
        return cuts

    # ------------------------------------------------------------ heuristic
    def flow_protect(self, y: np.ndarray, order: np.ndarray | None = None, boost: float = 1.0) -> np.ndarray:
        """Suppress, for each primary cell and direction, the cells of its cheapest deviation
        flow (cells already suppressed are free). Returns the new pattern."""
        y = y.copy().astype(float)
        C = len(self.cand)
        A2 = sp.hstack([self.A, -self.A]).tocsc()
        z = np.zeros(self.A.shape[0])
        pos_w = self.w[self.w > 0]
        eps = 1e-3 * (float(pos_w.mean()) if len(pos_w) else 1.0)
        base = self.w + eps
        lp = LP(A2, z, z, np.zeros(2 * C), np.r_[self.UB, self.LB], np.r_[base, base])
        if order is None:
            order = self.prim[np.lexsort((self.prim, -self.upl[self.prim]))]
        for p in order:
            for up, level in ((True, self.upl[p] * boost), (False, self.lpl[p] * boost)):
                if level <= 0:
                    continue
                cost = np.where(y > 0.5, 0.0, base)
                lp.set_costs(np.arange(2 * C), np.r_[cost, cost])
                lo, hi = np.zeros(2), np.r_[self.UB[p], self.LB[p]]
                if up:
                    lo[0] = hi[0] = min(level, self.UB[p])
                    hi[1] = 0.0
                else:
                    lo[1] = hi[1] = min(level, self.LB[p])
                    hi[0] = 0.0
                lp.set_bounds([p, C + p], lo, hi)
                st = lp.solve()
                if st != "optimal":
                    raise DataError(f"Primary cell {self.table.cell_name(int(self.cand[p]))} cannot be "
                                    "protected to its levels by any suppression pattern (the table's "
                                    "equations do not allow it).")
                x = lp.x
                moved = (x[:C] + x[C:]) > 1e-9 * max(level, 1.0)
                y[moved] = 1.0
                lp.set_bounds([p, C + p], [0.0, 0.0], [self.UB[p], self.LB[p]])
        return y

    def is_safe(self, y: np.ndarray) -> np.ndarray:
        """Audit (no upper bounds): mask over primaries (positions in self.prim) unprotected."""
        mask = np.zeros(len(self.table.cells), bool)
        mask[self.cand[y > 0.5]] = True
        lo, hi, _ = intervals(self.table, mask)
        ok = protected(self.table, lo, hi, self.sens, mask)
        return ~ok[self.cand[self.prim]]


def suppress(table: Table, rules: Any = None, primary: Any = None, method: str = "optimal",
             cost: str = "value", time_limit: float | None = None) -> SuppressionResult:
    """Protect ``table`` by primary and secondary cell suppression.

    Parameters
    ----------
    table : Table
    rules : Rule or list of rules, optional
        Sensitivity rules (:mod:`sdckit.tabular.rules`) that decide the primary cells and their
        protection levels.
    primary : boolean mask over ``table.cells`` or list of cell keys, optional
        Further primary cells (level 10% of |value| unless a rule asks more).
    method : {"optimal", "fast"}
        Exact MILP with cut generation (Fischetti & Salazar 2001), or the flow heuristic.
    cost : {"value", "freq", "unity"}
        What a suppressed cell costs.
    time_limit : float, optional
        Seconds for the MILP; when it stops the search, the best pattern is completed by the
        heuristic, audited and returned with the gap to the proven lower bound.

    Returns
    -------
    SuppressionResult
        Never an unprotected pattern: the audit runs before it returns.

    Raises
    ------
    DataError
        A primary cell that no pattern can protect (named by its codes).
    """
    start = time.perf_counter()
    if method not in ("optimal", "fast"):
        raise ParameterError(f"The 'method' parameter of suppress must be 'optimal' or 'fast'. Got {method!r} instead.")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise ParameterError(f"The 'time_limit' parameter of suppress must be a number > 0 or None. Got {time_limit!r} instead.")
    if not isinstance(table, Table):
        raise ParameterError(f"The 'table' parameter of suppress must be a Table. Got {type(table).__name__} instead.")
    w = cell_costs(table, cost)
    sens = sensitivity(table, rules, primary)
    prob = _Problem(table, sens, w)
    C = len(prob.cand)
    y0 = np.zeros(C)
    y0[prob.prim] = 1.0
    optimal, gap, lower, rounds = False, None, None, 0
    if not len(prob.prim):
        y = y0
        optimal, gap, lower = True, 0.0, 0.0
    elif method == "fast":
        y = prob.flow_protect(y0)
        y = _drop_redundant(prob, y, deadline=None if time_limit is None else start + time_limit)
    else:
        y, optimal, lower, rounds = _optimal(prob, y0, start, time_limit)
    y = _repair(prob, y)
    mask = np.zeros(len(table.cells), bool)
    mask[prob.cand[y > 0.5]] = True
    status = np.where(sens.primary, "primary", np.where(mask, "secondary", "safe"))
    result_audit = audit_pattern(table, mask, sens, status)
    if not result_audit.safe:  # pragma: no cover - _repair guarantees it
        bad = int(np.flatnonzero(~result_audit.cells["protected"].to_numpy())[0])
        raise DataError(f"Primary cell {table.cell_name(bad)} could not be protected.")
    sec = mask & ~sens.primary
    total_cost = float(w[sec].sum())
    if method == "optimal" and lower is not None:
        base = float(w[sens.primary].sum())
        full = total_cost + base
        gap = 0.0 if optimal else max(0.0, (full - lower) / full) if full > 0 else 0.0
    v = np.abs(table.cells["value"].to_numpy(float))
    share = float(v[mask].sum() / v.sum()) if v.sum() > 0 else 0.0
    cells = table.cells[list(table.dimensions) + ["value", "freq"]].copy()
    cells["status"] = pd.Categorical(status, categories=list(STATUSES)).astype(str)
    return SuppressionResult(table, sens, cells, method, cost, int(sens.primary.sum()), int(sec.sum()),
                             share, total_cost, bool(optimal), gap, lower,
                             time.perf_counter() - start, rounds, result_audit)


def _repair(prob: _Problem, y: np.ndarray) -> np.ndarray:
    """Audit; protect any primary still short (numerical slack) with a larger level."""
    for boost in (1.0, 1.01, 1.1, 1.5):
        bad = prob.is_safe(y)
        if not bad.any():
            return y
        y = prob.flow_protect(y, order=prob.prim[bad], boost=boost)
    if prob.is_safe(y).any():
        i = int(prob.cand[prob.prim[prob.is_safe(y)][0]])
        raise DataError(f"Primary cell {prob.table.cell_name(i)} could not be protected.")
    return y


def _drop_redundant(prob: _Problem, y: np.ndarray, deadline: float | None) -> np.ndarray:
    """Publish again each secondary cell, costliest first, when the pattern stays safe under
    the model's attacker (the audit follows)."""
    sec = np.flatnonzero((y > 0.5))
    sec = np.setdiff1d(sec, prob.prim)
    if not len(sec) or len(sec) > 400:
        return y
    order = sec[np.lexsort((sec, -prob.w[sec]))]
    for j in order:
        if deadline is not None and time.perf_counter() > deadline:
            break
        y[j] = 0.0
        if prob.violated_cuts(y):
            y[j] = 1.0
    return y


def _optimal(prob: _Problem, y0: np.ndarray, start: float, time_limit: float | None):
    C = len(prob.cand)
    lb = y0.copy()
    integrality = np.ones(C)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    rhs: list[float] = []

    def add(cuts):
        for c, coef, level in cuts:
            rows.append(np.full(len(c), len(rhs)))
            cols.append(np.asarray(c))
            vals.append(np.asarray(coef, float))
            rhs.append(float(level))

    add(prob.row_cuts())
    lower = None
    rounds = 0
    y = y0
    seen: set[tuple] = set()
    while True:
        rounds += 1
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if left is not None and left <= 0:
            return y, False, lower, rounds
        options = {"disp": False, "mip_rel_gap": 1e-9}
        if left is not None:
            options["time_limit"] = left
        cons = []
        if rhs:
            M = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(len(rhs), C))
            # scale each cut by its rhs for numerics
            r = np.asarray(rhs)
            M = sp.diags(1.0 / r) @ M
            cons = [LinearConstraint(M, np.ones(len(r)) * (1 - 1e-9), np.inf)]
        res = milp(prob.w, constraints=cons, integrality=integrality, bounds=Bounds(lb, np.ones(C)),
                   options=options)
        if res.x is None:
            if res.status == 1:  # time limit, no incumbent
                return y, False, lower, rounds
            raise DataError("No suppression pattern protects every primary cell (the model is infeasible).")
        y = np.round(res.x)
        bound = getattr(res, "mip_dual_bound", None)
        lower = float(bound) if bound is not None and np.isfinite(bound) else (float(res.fun) if res.status == 0 else lower)
        if res.status != 0:
            return y, False, lower, rounds
        cuts = prob.violated_cuts(y)
        if not cuts:
            return y, True, float(res.fun), rounds
        key = tuple(np.flatnonzero(y))
        if key in seen:  # pragma: no cover - a violated cut always excludes y
            return y, False, lower, rounds
        seen.add(key)
        add(cuts)
