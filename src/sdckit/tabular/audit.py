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

from sdckit.core.errors import ParameterError
from sdckit.core.params import validated
from sdckit.core.result import Result
from sdckit.tabular.lp import LP
from sdckit.tabular.precision import CLIP, COARSE_BAND, EQUATION_SLACK, audit_tolerance, value_scale
from sdckit.tabular.rules import Sensitivity
from sdckit.tabular.table import Table


@dataclass(frozen=True)
class AuditResult(Result):
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
        """The verdict and its counts under their published names, without the per-cell frame."""
        return {"safe": self.safe, "unprotected_primaries": self.unprotected,
                "suppressed_cells": self.suppressed, "lps_solved": self.lp_solved}


def intervals(table: Table, suppressed: np.ndarray, A: sp.csr_matrix | None = None,
              only: np.ndarray | None = None, sens: Sensitivity | None = None
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """(lo, hi, number of LPs) for each cell: the intruder's bounds (equal to the value when
    published). Solved per connected component of the suppressed cells' equations; with ``only``
    (a boolean mask), just for those suppressed cells (the others' bounds are left NaN).

    The LPs are in deviations from the true values, scaled by the component's largest |value|
    (:mod:`sdckit.tabular.precision`). With ``sens``, a primary's interval end that lies within
    ``COARSE_BAND`` x that scale of its protection level (or is infinite) is computed again by
    the LP scaled by the level, every deviation clipped at ``CLIP`` levels: a restriction of the
    intruder's problem, so the end it gives is one the intruder can surely reach. An LP HiGHS
    cannot decide after its retries (:meth:`LP.solve`) leaves the end NaN: not proven, so the
    primary counts as unprotected (fail safe) and suppression protects it further."""
    A = table.equations() if A is None else A
    v = table.cells["value"].to_numpy(float)
    lo, hi = v.copy(), v.copy()
    S = np.flatnonzero(suppressed)
    if not len(S):
        return lo, hi, 0
    A = sp.csr_matrix(A)
    AS = A[:, S].tocsc()
    rows = np.flatnonzero(np.diff(AS.tocsr().indptr))
    AS = AS.tocsr()[rows]
    # deviations d = x_S - v_S: A_S d + A v = 0 within each equation's slack. Given cells may add
    # up only within a tolerance (Table.from_cells rtol): each equation keeps the slack the true
    # values leave it, so that the true values (d = 0) stay feasible
    resid = A[rows] @ v
    slack = np.abs(resid) + EQUATION_SLACK * value_scale(v)
    row_lo, row_hi = -resid - slack, -resid + slack
    if AS.shape[0]:
        adj = (AS.T @ AS).tocsr()
        ncomp, label = connected_components(adj, directed=False)
    else:
        ncomp, label = len(S), np.arange(len(S))
    vS = v[S]
    dev_lo = np.full(len(S), -np.inf) if table.negative else -vS
    nlp = 0
    for c in range(ncomp):
        cols = np.flatnonzero(label == c)
        sub = AS[:, cols]
        r = np.flatnonzero(np.diff(sub.tocsr().indptr))
        if not len(r):  # a suppressed cell in no equation: unbounded above, bounded below by 0
            lo[S[cols]] = vS[cols] + dev_lo[cols]
            hi[S[cols]] = np.inf
            continue
        sub = sub[r]
        todo = range(len(cols)) if only is None else np.flatnonzero(only[S[cols]])
        if only is not None:
            lo[S[cols]] = np.nan
            hi[S[cols]] = np.nan
        if not len(todo):
            continue
        scale = max(1.0, float(np.abs(vS[cols]).max()), float(np.abs(row_lo[r]).max()),
                    float(np.abs(row_hi[r]).max()))
        lp = LP(sub, row_lo[r] / scale, row_hi[r] / scale, dev_lo[cols] / scale,
                np.full(len(cols), np.inf), primal=True)
        for j in todo:
            for sign in (1.0, -1.0):
                lp.set_costs([j], [sign])
                status = lp.solve()
                nlp += 1
                if status == "optimal":
                    val = vS[cols[j]] + sign * lp.objective * scale
                elif status == "unbounded":
                    val = -np.inf if sign > 0 else np.inf
                else:  # undecided (or 'infeasible' though d = 0 is feasible): not proven
                    val = np.nan
                if sign > 0:
                    lo[S[cols[j]]] = val
                else:
                    hi[S[cols[j]]] = val
            lp.set_costs([j], [0.0])
        if sens is not None:
            nlp += _refine(sub, cols, S, v, row_lo[r], row_hi[r], dev_lo, scale, sens, lo, hi, todo)
    return lo, hi, nlp


def _refine(sub: sp.csr_matrix, cols: np.ndarray, S: np.ndarray, v: np.ndarray, row_lo: np.ndarray,
            row_hi: np.ndarray, dev_lo: np.ndarray, scale: float, sens: Sensitivity,
            lo: np.ndarray, hi: np.ndarray, todo) -> int:
    """Check again, in units of its level, each interval end of a primary of this component
    that the component-scaled LP left within ``COARSE_BAND`` x scale of the level (or infinite
    or undecided); updates ``lo``/``hi`` in place, returns the number of LPs."""
    band = COARSE_BAND * scale
    jobs = []
    for j in todo:
        i = int(S[cols[j]])
        if not sens.primary[i]:
            continue
        for up, level in ((True, sens.upper[i]), (False, sens.lower[i])):
            if level <= 0:
                continue
            end = hi[i] if up else lo[i]
            target = v[i] + level if up else v[i] - level
            if not np.isfinite(end) or abs(end - target) <= band:
                jobs.append((j, i, up, float(level)))
    if not jobs:
        return 0
    m, k = sub.shape
    z = np.zeros(k)
    lp = LP(sub, np.zeros(m), np.zeros(m), z, z)
    every, rows = np.arange(k), np.arange(m)
    cols_lo = dev_lo[cols]
    for j, i, up, level in jobs:
        lo_b = np.maximum(cols_lo / level, -CLIP)
        hi_b = np.full(k, CLIP)
        if up:
            hi_b[j] = 2.0  # reaching twice the level is enough to know
        else:
            lo_b[j] = max(lo_b[j], -2.0)
        lp.set_bounds(every, lo_b, hi_b)
        lp.set_row_bounds(rows, row_lo / level, row_hi / level)
        lp.set_costs([j], [-1.0 if up else 1.0])
        status = lp.solve()
        reach = -lp.objective * level if status == "optimal" else np.nan  # how far it moves
        if up:
            hi[i] = np.fmax(hi[i], v[i] + reach) if reach >= 2.0 * level * (1 - 1e-9) else v[i] + reach
        else:
            lo[i] = np.fmin(lo[i], v[i] - reach) if reach >= 2.0 * level * (1 - 1e-9) else v[i] - reach
        lp.set_costs([j], [0.0])
    return len(jobs)


def protected(table: Table, lo: np.ndarray, hi: np.ndarray, sens: Sensitivity,
              suppressed: np.ndarray) -> np.ndarray:
    """True for every cell except an unprotected primary one (an interval end that is NaN, not
    proven, does not protect)."""
    v = table.cells["value"].to_numpy(float)
    scale = value_scale(v)
    ok = ((hi >= v + sens.upper - audit_tolerance(scale, sens.upper))
          & (lo <= v - sens.lower + audit_tolerance(scale, sens.lower)) & suppressed)
    return ok | ~sens.primary


def audit_pattern(table: Table, suppressed: np.ndarray, sens: Sensitivity,
                  status: np.ndarray | None = None) -> AuditResult:
    """Audit the pattern ``suppressed`` (a boolean mask over ``table.cells``) against ``sens``."""
    suppressed = np.asarray(suppressed, bool)
    lo, hi, nlp = intervals(table, suppressed, sens=sens)
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


@validated()  # no option to rule: the result is data, checked below
def audit(result: Any, rules: Any = None) -> AuditResult:
    """Audit a suppression result (what :func:`sdckit.tabular.suppress` returns): the LP interval
    of every suppressed cell, and for every primary whether it meets its protection levels.

    Raises
    ------
    ParameterError
        ``result`` is not a suppression result (it has no ``table``, ``sensitivity`` and ``cells``).
    """
    if not all(hasattr(result, a) for a in ("table", "sensitivity", "cells")):
        raise ParameterError("The 'result' parameter of audit must be a suppression result (what suppress "
                             f"returns). Got {type(result).__name__} instead.")
    table, sens, status = result.table, result.sensitivity, result.cells["status"].to_numpy()
    return audit_pattern(table, status != "safe", sens, status)
