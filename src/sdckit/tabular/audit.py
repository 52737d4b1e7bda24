"""The intruder's view of a suppression pattern, by linear programming.

For every suppressed cell, the smallest and largest value consistent with the published cells,
the table's equations (``A x = 0``) and the bounds an intruder knows (``x >= 0`` unless the
response can be negative) — the "attacker problem" of Fischetti & Salazar (2001), "Solving the
cell suppression problem on tabular data with linear constraints", *Management Science* 47(7),
section 2; also Hundepool et al. (2012), ch. 4.4.4 (audit). A primary cell is protected when
``hi >= x + upper`` and ``lo <= x - lower``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sdckit.tabular.lp import LP
from sdckit.tabular.precision import AUDIT_TOL, EQUATION_SLACK, value_scale
from sdckit.tabular.rules import Sensitivity
from sdckit.tabular.table import Table


@dataclass(frozen=True)
class AuditResult:
    """Intervals of the suppressed cells and whether each primary cell is protected.

    ``cells`` has the dimension codes, ``value``, ``status``, ``lo``, ``hi`` (NaN for published
    cells; ``hi`` may be inf), ``upper``/``lower`` (required levels, 0 for non-primary) and
    ``protected`` (False only for an unprotected primary cell)."""

    cells: pd.DataFrame
    safe: bool
    unprotected: int
    suppressed: int
    lp_solved: int

    def to_dict(self) -> dict[str, Any]:
        return {"safe": self.safe, "unprotected_primaries": self.unprotected,
                "suppressed_cells": self.suppressed, "lps_solved": self.lp_solved}


def intervals(table: Table, suppressed: np.ndarray, A: sp.csr_matrix | None = None,
              only: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(lo, hi, number of LPs) for each cell: the intruder's bounds (equal to the value when
    published). Solved per connected component of the suppressed cells' equations; with ``only``
    (a boolean mask), just for those suppressed cells (the others' bounds are left NaN)."""
    A = table.equations() if A is None else A
    v = table.cells["value"].to_numpy(float)
    n = len(v)
    lo, hi = v.copy(), v.copy()
    S = np.flatnonzero(suppressed)
    if not len(S):
        return lo, hi, 0
    A = sp.csr_matrix(A)
    AS = A[:, S].tocsc()
    rows = np.flatnonzero(np.diff(AS.tocsr().indptr))
    AS = AS.tocsr()[rows]
    pub = np.ones(n, bool)
    pub[S] = False
    rhs = -(A[rows][:, np.flatnonzero(pub)] @ v[pub])
    # given cells may add up only within a tolerance (Table.from_cells rtol): each equation keeps
    # the slack the true values leave it, so that the true values stay feasible
    slack = np.abs(A[rows] @ v) + EQUATION_SLACK * value_scale(v)
    if AS.shape[0]:
        adj = (AS.T @ AS).tocsr()
        ncomp, label = connected_components(adj, directed=False)
    else:
        ncomp, label = len(S), np.arange(len(S))
    col_lo = np.full(len(S), -np.inf if table.negative else 0.0)
    nlp = 0
    for c in range(ncomp):
        cols = np.flatnonzero(label == c)
        sub = AS[:, cols]
        r = np.flatnonzero(np.diff(sub.tocsr().indptr))
        if not len(r):  # a suppressed cell in no equation: unbounded above, bounded below by 0
            lo[S[cols]] = col_lo[cols]
            hi[S[cols]] = np.inf
            continue
        sub = sub[r]
        todo = range(len(cols)) if only is None else np.flatnonzero(only[S[cols]])
        if only is not None:
            lo[S[cols]] = np.nan
            hi[S[cols]] = np.nan
        if not len(todo):
            continue
        lp = LP(sub, rhs[r] - slack[r], rhs[r] + slack[r], col_lo[cols], np.full(len(cols), np.inf),
                primal=True)
        for j in todo:
            for sign in (1.0, -1.0):
                lp.set_costs([j], [sign])
                status = lp.solve()
                nlp += 1
                if status == "optimal":
                    val = sign * lp.objective
                elif status == "unbounded":
                    val = -np.inf if sign > 0 else np.inf
                else:  # pragma: no cover - the true values are always feasible
                    raise RuntimeError(f"audit LP ended with status {status}")
                if sign > 0:
                    lo[S[cols[j]]] = val
                else:
                    hi[S[cols[j]]] = val
            lp.set_costs([j], [0.0])
    return lo, hi, nlp


def protected(table: Table, lo: np.ndarray, hi: np.ndarray, sens: Sensitivity,
              suppressed: np.ndarray) -> np.ndarray:
    """True for every cell except an unprotected primary one."""
    v = table.cells["value"].to_numpy(float)
    tol = AUDIT_TOL * value_scale(v)
    ok = (hi >= v + sens.upper - tol) & (lo <= v - sens.lower + tol) & suppressed
    return ok | ~sens.primary


def audit_pattern(table: Table, suppressed: np.ndarray, sens: Sensitivity,
                  status: np.ndarray | None = None) -> AuditResult:
    """Audit the pattern ``suppressed`` (a boolean mask over ``table.cells``) against ``sens``."""
    suppressed = np.asarray(suppressed, bool)
    lo, hi, nlp = intervals(table, suppressed)
    ok = protected(table, lo, hi, sens, suppressed)
    if status is None:
        status = np.where(sens.primary, "primary", np.where(suppressed, "secondary", "safe"))
    frame = table.cells[list(table.dimensions) + ["value"]].copy()
    frame["status"] = status
    frame["lo"] = np.where(suppressed, lo, np.nan)
    frame["hi"] = np.where(suppressed, hi, np.nan)
    frame["upper"] = sens.upper
    frame["lower"] = sens.lower
    frame["protected"] = ok
    bad = int((~ok).sum())
    return AuditResult(frame, bad == 0, bad, int(suppressed.sum()), nlp)


def audit(result: Any, rules: Any = None) -> AuditResult:
    """Audit a suppression result (what :func:`sdckit.tabular.suppress` returns): the LP interval
    of every suppressed cell, and for every primary whether it meets its protection levels."""
    table, sens, status = result.table, result.sensitivity, result.cells["status"].to_numpy()
    return audit_pattern(table, status != "safe", sens, status)
