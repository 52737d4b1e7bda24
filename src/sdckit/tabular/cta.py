"""Controlled tabular adjustment (CTA): the closest additive table in which every sensitive cell
has moved by at least its protection level.

Dandekar & Cox (2002), "Synthetic tabular data: an alternative to complementary cell
suppression" (US EIA); Castro (2006), "Minimum-distance controlled perturbation methods for
large-scale tabular data protection", *European Journal of Operational Research* 171; Hundepool
et al. (2012), *Statistical Disclosure Control*, section 4.6. With ``z+``, ``z-`` >= 0 the upward
and downward change of every cell and a binary ``y_p`` per sensitive cell p (1 = up):

    min  sum_i w_i (z+_i + z-_i)
    s.t. A (z+ - z-) = 0                                   (the table stays additive)
         z+_p >= U_p y_p,   z-_p >= L_p (1 - y_p)          (p moves by its level ...)
         z+_p <= M y_p,     z-_p <= M (1 - y_p)            (... in the one direction chosen)
         0 <= z-_i <= x_i (values stay >= 0 unless the table has negative values),
         z = 0 on empty cells (structural zeros) and on cells the user fixes,

a MILP solved by HiGHS; the direction of each sensitive cell is the model's choice. For tables of
whole numbers the changes are whole numbers too (levels rounded up). Weights ``w``: 1 (plain L1
distance), or ``1/max(|x_i|, 1)`` (relative distance, Castro 2006 section 2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Boolean, InstanceOf, IsNone, Options, validated
from sdckit.core.result import Result, plain
from sdckit.tabular.lp import LP
from sdckit.tabular.rounding import MIP_GAP_RULE, TIME_LIMIT_RULE, is_integer_data, solve_milp
from sdckit.tabular.rules import Sensitivity, sensitivity
from sdckit.tabular.table import Table

COSTS = ("unity", "inverse")
METHODS = ("milp", "fast")


@dataclass(frozen=True)
class AdjustmentResult(Result):
    """An adjusted table.

    Attributes
    ----------
    cells : DataFrame
        The dimension codes, ``value`` (original), ``adjusted``, ``change`` (adjusted - value),
        ``relative_change`` (change / |value|; 0 for an unchanged cell of value 0, inf for a
        changed one), ``status`` (``primary`` for the sensitive cells, ``adjusted`` for the other
        cells that moved, ``safe``), ``direction`` (``up``/``down`` for sensitive cells, '' else),
        ``margin`` (True for subtotals and totals: a cell with a non-leaf code).
    sensitive, cells_adjusted : int
        Sensitive cells; cells that moved (sensitive ones included).
    total_abs_adjustment, max_abs_adjustment, mean_abs_adjustment : float
        Sum, largest and mean (over all cells) of |change|.
    max_relative_adjustment, mean_relative_adjustment : float
        Largest and mean (over cells of non-zero value) of |change| / |value|.
    margins_changed, margin_abs_adjustment, max_margin_adjustment : int, float, float
        Margins (subtotals and totals) that moved, their total and largest |change|.
    grand_total_change : float
        The change of the table's grand total.
    objective : float
        The weighted distance minimised.
    optimal : bool
        True when HiGHS proved the adjustment the closest (within ``mip_gap``).
    gap : float
        HiGHS's relative gap of the objective (NaN for ``method="fast"``: no bound; None in
        ``to_dict()``).

    ``to_dict()`` (the manifest's ``result``) has the scalar fields, ``cells`` as the number of
    cells and ``seconds`` to the millisecond.
    """

    table: Table = field(repr=False, metadata={"dict": False})
    sensitivity: Sensitivity = field(repr=False, metadata={"dict": False})
    cells: pd.DataFrame = field(repr=False, metadata={"dict": False})
    method: str
    cost: str
    sensitive: int
    cells_adjusted: int
    total_abs_adjustment: float
    max_abs_adjustment: float
    mean_abs_adjustment: float
    max_relative_adjustment: float
    mean_relative_adjustment: float
    margins_changed: int
    margin_abs_adjustment: float
    max_margin_adjustment: float
    grand_total_change: float
    objective: float
    optimal: bool
    gap: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The fields through :func:`~sdckit.core.result.plain` (a NaN gap is None), ``cells``
        counted and ``seconds`` rounded."""
        return plain({"method": self.method, "cost": self.cost, "cells": len(self.cells), **super().to_dict(),
                      "seconds": round(self.seconds, 3)})

    def summary(self) -> list[tuple[str, str]]:
        """The rows ``sdckit table protect`` prints for an adjustment."""
        return [("cells", f"{len(self.cells):,}"), ("sensitive cells", f"{self.sensitive:,}"),
                ("cells adjusted", f"{self.cells_adjusted:,}"),
                ("total absolute adjustment", f"{self.total_abs_adjustment:g}"),
                ("largest relative adjustment", f"{self.max_relative_adjustment:.3%}"),
                ("optimality", "proved" if self.optimal else "not proved"),
                ("time", f"{self.seconds:.2f} s")]


def cta_weights(table: Table, cost: str) -> np.ndarray:
    """Weight of a unit change of each cell: 1 (``cost="unity"``), or 1/max(|value|, 1)
    (``"inverse"``)."""
    if cost == "unity":
        return np.ones(len(table.cells))
    return 1.0 / np.maximum(np.abs(table.cells["value"].to_numpy(float)), 1.0)


@validated(table=InstanceOf(Table), method=Options(METHODS), cost=Options(COSTS), integer=[IsNone(), Boolean()],
           mip_gap=MIP_GAP_RULE, time_limit=TIME_LIMIT_RULE)
def adjust_table(table: Table, rules: Any = None, primary: Any = None, method: str = "milp",
                 cost: str = "unity", fixed: Any = None, integer: bool | None = None,
                 mip_gap: float = 0.0, time_limit: float | None = None) -> AdjustmentResult:
    """Controlled tabular adjustment of ``table``.

    Parameters
    ----------
    table : Table
    rules : Rule or list of rules, optional
        Sensitivity rules: the sensitive cells and their upper/lower protection levels
        (:mod:`sdckit.tabular.rules`). The lower level is capped at the value for non-negative
        tables, so a sensitive cell may at most go down to 0.
    primary : boolean mask or list of cell keys, optional
        Further sensitive cells (level 10% of |value| unless a rule asks more).
    method : {"milp", "fast"}
        "milp": the directions of the sensitive cells are chosen by the MILP (started from the
        "fast" answer). "fast": directions from the LP relaxation, improved by one pass of
        single flips (each an LP), then the closest adjustment with those directions (an LP, or a MILP over the changes for whole numbers); not proven
        closest (``optimal`` False, ``gap`` NaN) but quick on large tables.
    cost : {"unity", "inverse"}
        Weight of a unit change: 1 (L1 distance) or 1/|value| (relative distance).
    fixed : boolean mask or list of cell keys, optional
        Cells that must not change (e.g. published totals). Empty cells never change.
    integer : bool, optional
        Whole-number changes (default: when every value is a whole number).
    mip_gap : float >= 0
        Relative optimality gap at which HiGHS stops (0: proven closest).
    time_limit : float, optional
        Seconds for the MILP; the best adjustment found is returned with its gap.

    Returns
    -------
    AdjustmentResult

    Raises
    ------
    DataError
        No adjustment exists (a sensitive cell is fixed, or fixed cells block every change), or
        none was found within ``time_limit``.
    """
    start = time.perf_counter()
    w = cta_weights(table, cost)
    mip_gap = float(mip_gap)
    time_limit = None if time_limit is None else float(time_limit)
    v = table.cells["value"].to_numpy(float)
    if not np.all(np.isfinite(v)):
        raise DataError("The table has a missing or infinite cell value; adjust_table needs finite values.")
    whole = is_integer_data(v)
    if integer is None:
        integer = whole
    elif integer and not whole:
        raise ParameterError("The 'integer' parameter of adjust_table is True but the table has values "
                             "that are not whole numbers; pass integer=False.")
    sens = sensitivity(table, rules, primary)
    n = len(v)
    hold = table.empty.copy()
    if fixed is not None:
        fx = table.locate(fixed)
        both = np.intersect1d(fx, np.flatnonzero(sens.primary))
        if len(both):
            raise DataError(f"Cell {table.cell_name(int(both[0]))} is sensitive and also listed in 'fixed': a "
                            "sensitive cell must move; remove it from 'fixed'.")
        hold[fx] = True
    P = np.flatnonzero(sens.primary)
    up_lv = sens.upper[P].copy()
    lo_lv = sens.lower[P].copy()
    if integer:
        up_lv = np.ceil(up_lv - 1e-9)
        lo_lv = np.ceil(lo_lv - 1e-9)
    M = float(np.abs(v).sum()) + float(up_lv.sum()) + 1.0
    cap_up = np.where(hold, 0.0, M)
    cap_dn = np.where(hold, 0.0, M if table.negative else np.maximum(v, 0.0))
    if not table.negative:  # a sensitive cell can go down by at most its value
        lo_lv = np.minimum(lo_lv, np.maximum(v[P], 0.0))
    k = len(P)
    A = sp.csr_matrix(table.equations())
    m = A.shape[0]
    # columns: z+ (n), z- (n), y (k)
    E = sp.hstack([A, -A, sp.csr_matrix((m, k))])
    ar = np.arange(k)
    Iu = sp.csr_matrix((np.ones(k), (ar, P)), shape=(k, n))
    Y = sp.identity(k, format="csr")
    Z = sp.csr_matrix((k, n))
    rows = sp.vstack([
        E,
        sp.hstack([Iu, Z, -sp.diags(up_lv)]),      # z+_p - U y_p >= 0
        sp.hstack([Z, Iu, sp.diags(lo_lv)]),       # z-_p + L y_p >= L
        sp.hstack([Iu, Z, -M * Y]),                # z+_p - M y_p <= 0
        sp.hstack([Z, Iu, M * Y]),                 # z-_p + M y_p <= M
    ]).tocsr()
    inf = np.inf
    row_lo = np.r_[np.zeros(m), np.zeros(k), lo_lv, np.full(k, -inf), np.full(k, -inf)]
    row_hi = np.r_[np.zeros(m), np.full(k, inf), np.full(k, inf), np.zeros(k), np.full(k, M)]
    col_lo = np.zeros(2 * n + k)
    col_hi = np.r_[cap_up, cap_dn, np.ones(k)]
    cost_vec = np.r_[w, w, np.zeros(k)]
    ints = np.r_[np.arange(2 * n), 2 * n + ar] if integer else 2 * n + ar
    x = status = None
    gap = float("inf")
    if k:
        # directions from the LP relaxation, improved by one pass of flips, then the closest
        # adjustment with them fixed: the answer of method="fast", the start of the MILP
        xl, st, _ = solve_milp(rows, row_lo, row_hi, col_lo, col_hi, cost_vec, [])
        if st == "optimal":
            ydir = _improve_directions(rows, row_lo, row_hi, col_lo, col_hi, cost_vec, n,
                                       (xl[2 * n:] >= 0.5).astype(float))
            lo_f, hi_f = col_lo.copy(), col_hi.copy()
            lo_f[2 * n:] = hi_f[2 * n:] = ydir
            # the LP first: with whole levels its answer is often whole already
            xf, stf, gf = solve_milp(rows, row_lo, row_hi, lo_f, hi_f, cost_vec, [])
            if integer and xf is not None and np.abs(xf - np.rint(xf)).max() > 1e-7:
                xf, stf, gf = solve_milp(rows, row_lo, row_hi, lo_f, hi_f, cost_vec, ints, mip_gap=mip_gap,
                                         time_limit=time_limit)
            elif integer and xf is not None:
                xf = np.rint(xf)
            if xf is not None:
                x, status, gap = xf, stf, gf
    if method == "milp" or x is None:
        fast_x = x
        x, status, gap = solve_milp(rows, row_lo, row_hi, col_lo, col_hi, cost_vec, ints,
                                    mip_gap=mip_gap, time_limit=time_limit, start=fast_x)
    else:
        gap = float("nan")  # the directions were not optimised: no bound
    if status == "infeasible":
        raise DataError("No controlled tabular adjustment exists: the fixed cells leave some sensitive "
                        "cell no way to move by its protection level while the table stays additive. "
                        "Fix fewer cells.")
    if x is None:
        raise DataError("No adjustment was found within the time limit; give a larger 'time_limit'.")
    zp, zm, y = x[:n], x[n:2 * n], x[2 * n:]
    change = zp - zm
    if integer:
        change = np.rint(change)
    change[np.abs(change) <= 1e-9 * max(1.0, float(np.abs(v).max(initial=0.0)))] = 0.0
    adjusted = v + change
    _verify(table, A, adjusted, change, P, up_lv, lo_lv, y)
    return _result(table, sens, v, adjusted, change, P, y, w, cost, method, gap, start)


def _improve_directions(rows, row_lo, row_hi, col_lo, col_hi, cost_vec, n: int, ydir: np.ndarray
                        ) -> np.ndarray:
    """One pass of local search over the directions: flip each sensitive cell's direction in turn
    and keep the flip when the LP with the directions fixed gets cheaper (HiGHS restarts from the
    last basis; deterministic: cells in table order)."""
    lp = LP(rows, row_lo, row_hi, col_lo, col_hi, cost_vec)
    k = len(ydir)
    cols = 2 * n + np.arange(k)
    lp.set_bounds(cols, ydir, ydir)
    best = lp.objective if lp.solve() == "optimal" else np.inf
    for j in range(k):
        flip = 1.0 - ydir[j]
        lp.set_bounds([cols[j]], [flip], [flip])
        if lp.solve() == "optimal" and lp.objective < best - 1e-9 * max(1.0, abs(best)):
            ydir[j], best = flip, lp.objective
        else:
            lp.set_bounds([cols[j]], [ydir[j]], [ydir[j]])
    return ydir


def _verify(table: Table, A: sp.csr_matrix, adjusted: np.ndarray, change: np.ndarray, P: np.ndarray,
            up_lv: np.ndarray, lo_lv: np.ndarray, y: np.ndarray) -> None:
    """Safe means checked: additive, and every sensitive cell moved by its level."""
    scale = max(1.0, float(np.abs(adjusted).max(initial=0.0)))
    if len(A.data) and np.abs(A @ adjusted).max() > 1e-6 * scale:  # pragma: no cover - the MILP ensures it
        raise RuntimeError("CTA produced a table that is not additive")
    moved = np.where(y > 0.5, change[P] - up_lv, -change[P] - lo_lv)
    bad = np.flatnonzero(moved < -1e-6 * scale)
    if len(bad):  # pragma: no cover - the MILP ensures it
        raise RuntimeError(f"CTA left cell {table.cell_name(int(P[bad[0]]))} inside its protection interval")


def _result(table, sens, v, adjusted, change, P, y, w, cost, method, gap, start) -> AdjustmentResult:
    n = len(v)
    absch = np.abs(change)
    nz = v != 0
    rel = np.where(nz, change / np.where(nz, np.abs(v), 1.0), np.where(change == 0, 0.0, np.inf))
    status = np.where(sens.primary, "primary", np.where(absch > 0, "adjusted", "safe"))
    direction = np.full(n, "", dtype=object)
    direction[P] = np.where(y > 0.5, "up", "down")
    leaf = [h.is_leaf_array() for h in table.hierarchies]
    pos = table.code_index()
    margin = np.zeros(n, bool)
    for k, lf in enumerate(leaf):
        margin |= ~lf[pos[:, k]]
    cells = table.cells[list(table.dimensions) + ["value"]].copy()
    cells["adjusted"] = adjusted
    cells["change"] = change
    cells["relative_change"] = rel
    cells["status"] = status
    cells["direction"] = direction
    cells["margin"] = margin
    relabs = np.abs(rel[nz])
    grand = int(np.ravel_multi_index(tuple(0 for _ in table.shape), table.shape)) if n else 0
    return AdjustmentResult(
        table, sens, cells, method, cost, len(P), int((absch > 0).sum()), float(absch.sum()),
        float(absch.max(initial=0.0)), float(absch.mean()) if n else 0.0,
        float(relabs.max(initial=0.0)), float(relabs.mean()) if len(relabs) else 0.0,
        int((absch[margin] > 0).sum()), float(absch[margin].sum()), float(absch[margin].max(initial=0.0)),
        float(change[grand]) if n else 0.0, float((w * absch).sum()), bool(gap <= 1e-9), float(gap),
        time.perf_counter() - start)
