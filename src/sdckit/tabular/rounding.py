"""Rounding of a whole table to multiples of a base: controlled (additive) or random.

``method="controlled"``: zero-restricted controlled rounding. Every cell, subtotals and totals
included, goes to the multiple of ``base`` just below or just above it (a cell that already is a
multiple stays), and the rounded table still satisfies every equation of the table. Among those
roundings the one closest to the table in L1 is chosen: with ``x = base*f + r`` (``0 < r < base``)
and a binary ``u`` per cell (1 = round up), the change of a cell is ``r`` or ``base - r``, so

    min  sum_i (base - 2 r_i) u_i   s.t.   A (f + u) = 0,  u binary

a MILP solved by HiGHS (``highspy``, stopped at a proven relative gap, 1% by default); Cox & Ernst (1982), "Controlled rounding",
*INFOR* 20(4); Salazar-Gonzalez (2006), "Controlled rounding and cell perturbation: statistical
disclosure limitation methods for tabular data", *Mathematical Programming* 105; Hundepool et al.
(2012), *Statistical Disclosure Control*, section 4.5. For 2-D tables (hierarchical too) the
equations form a network matrix, so the LP relaxation is integral and a rounding always exists
(Cox 1987, "A constructive procedure for unbiased controlled rounding", *JASA* 82); in 3-D
and for linked tables it may not exist (Causey, Cox & Ernst 1985): a DataError says so.

``method="random"``: unbiased random rounding, each cell independently up with probability
``r/base`` (so E[rounded] = x). It is NOT additive: the result says so and counts the broken
equations.

:func:`audit_rounding` gives the intruder's view: for each sensitive cell the interval of values
consistent with the published rounded table (every true value lies strictly within ``base`` of
its rounded value, the true table is additive, non-negative unless the table has negative values,
empty cells are known zeros), by two LPs per cell; the cell is protected when the interval covers
its protection levels (Hundepool et al. 2012, section 4.4.4; seed 002 section 4.6.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
import highspy

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import InstanceOf, Interval, IsNone, Options, validated
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.result import Result, plain
from sdckit.tabular.lp import LP
from sdckit.tabular.precision import audit_tolerance, value_scale
from sdckit.tabular.rules import sensitivity
from sdckit.tabular.table import Table

METHODS = ("controlled", "random")


@dataclass(frozen=True)
class RoundingAudit(Result):
    """Feasible intervals of the sensitive cells after rounding.

    ``cells`` has, for each sensitive cell, the dimension codes, ``value``, ``rounded``, ``lo``
    and ``hi`` (the smallest and largest value an intruder can deduce; an open bound is reported
    as its limit), ``upper``/``lower`` (the required protection levels) and ``protected``.
    ``to_dict()`` gives the counts under their published names (``sensitive_cells``,
    ``unprotected_cells``, ``lps_solved``), not the cells.
    """

    cells: pd.DataFrame = field(metadata={"dict": False})
    safe: bool
    sensitive: int
    unprotected: int
    lp_solved: int

    def to_dict(self) -> dict[str, Any]:
        """``safe`` and the counts under their published names."""
        return plain({"safe": self.safe, "sensitive_cells": self.sensitive,
                      "unprotected_cells": self.unprotected, "lps_solved": self.lp_solved})

    def summary(self) -> list[tuple[str, str]]:
        """The row ``sdckit table protect`` prints for the audit of a rounding."""
        return [("sensitive cells protected", f"{self.sensitive - self.unprotected:,} of {self.sensitive:,}")]


@dataclass(frozen=True)
class RoundingResult(Result):
    """A rounded table.

    Attributes
    ----------
    cells : DataFrame
        The dimension codes, ``value`` (original), ``rounded`` and ``change`` (rounded - value).
    base : float
        The rounding base.
    method : {"controlled", "random"}
    additive : bool
        Whether the rounded table satisfies every equation (always True for "controlled").
    equations_violated : int
        Equations the rounded table breaks (0 for "controlled").
    cells_moved, max_abs_change, mean_abs_change, total_abs_change
        Cells whose value changed; largest, mean (over all cells) and total absolute change.
    optimal : bool
        True when HiGHS proved the rounding the closest one (controlled only).
    gap : float or None
        HiGHS's relative MIP gap when a time limit stopped it.
    audit : RoundingAudit or None
        Intervals of the sensitive cells, when rules or primary cells were given.

    ``to_dict()`` (the manifest's ``result``) has the scalar fields, ``cells`` as the number of
    cells, ``seconds`` to the millisecond, a ``note`` for random rounding and the ``audit``'s
    counts when there is one.
    """

    table: Table = field(repr=False, metadata={"dict": False})
    cells: pd.DataFrame = field(repr=False, metadata={"dict": False})
    base: float
    method: str
    additive: bool
    equations_violated: int
    cells_moved: int
    max_abs_change: float
    mean_abs_change: float
    total_abs_change: float
    optimal: bool
    gap: float | None
    seconds: float
    audit: RoundingAudit | None = field(default=None, repr=False, metadata={"dict": False})

    def to_dict(self) -> dict[str, Any]:
        """The fields through :func:`~sdckit.core.result.plain`, with the derived keys above."""
        d = {"method": self.method, "base": self.base, "cells": len(self.cells), **super().to_dict(),
             "seconds": round(self.seconds, 3)}
        if self.method == "random":
            d["note"] = "random rounding is unbiased but not additive"
        if self.audit is not None:
            d["audit"] = self.audit.to_dict()
        return plain(d)

    def summary(self) -> list[tuple[str, str]]:
        """The rows ``sdckit table protect`` prints for a rounding."""
        rows = [("cells", f"{len(self.cells):,}"), ("cells moved", f"{self.cells_moved:,}"),
                ("largest absolute change", f"{self.max_abs_change:g}"),
                ("mean absolute change", f"{self.mean_abs_change:.3g}"),
                ("additive", "yes" if self.additive else f"no ({self.equations_violated} equations broken)")]
        if self.audit is not None:
            rows += self.audit.summary()
        return rows + [("time", f"{self.seconds:.2f} s")]


# ---------------------------------------------------------------------- checks
def is_integer_data(values: np.ndarray) -> bool:
    """True when every value is a whole number (counts, or integer magnitudes)."""
    v = np.asarray(values, float)
    return bool(np.all(np.abs(v - np.rint(v)) <= 1e-9 * np.maximum(1.0, np.abs(v))))


#: The rule of ``mip_gap`` of the MILPs (:func:`round_table`, :func:`sdckit.tabular.adjust_table`):
#: HiGHS's relative gap, 0 (proven closest) up to but not including 1.
MIP_GAP_RULE = Interval(float, 0, 1, closed="left")
#: The rule of ``time_limit`` of the MILPs: None (no limit) or seconds > 0.
TIME_LIMIT_RULE = [IsNone(), Interval(float, 0, None, closed="neither")]


def solve_milp(A: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray,
               col_hi: np.ndarray, cost: np.ndarray, integer: np.ndarray, offset: float = 0.0,
               mip_gap: float = 0.0, time_limit: float | None = None,
               start: np.ndarray | None = None) -> tuple[np.ndarray | None, str, float]:
    """min cost'x + offset over the rows and bounds with ``x[integer]`` whole, by HiGHS (one
    thread, fixed seed: deterministic unless the time limit stops it).

    Returns (x or None, status, relative gap): status "optimal" (within ``mip_gap``),
    "infeasible", or "time limit" (x is the best solution found, None when there is none).
    ``start``: a feasible solution HiGHS starts from.
    """
    lp = LP(A, row_lo, row_hi, col_lo, col_hi, cost)
    h = lp.h
    idx = np.asarray(integer, np.int32)
    if len(idx):
        h.changeColsIntegrality(len(idx), idx, np.full(len(idx), highspy.HighsVarType.kInteger))
    if offset:
        h.changeObjectiveOffset(float(offset))
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    h.setOptionValue("mip_abs_gap", 1e-9)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(np.asarray(start, float))
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    st = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value) if has_x else None
    if st == highspy.HighsModelStatus.kOptimal:
        return x, "optimal", max(0.0, float(info.mip_gap)) if len(idx) else 0.0
    if st in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return None, "infeasible", float("inf")
    if st == highspy.HighsModelStatus.kTimeLimit:
        return x, "time limit", float(info.mip_gap) if x is not None else float("inf")
    raise RuntimeError(f"HiGHS ended with status {h.modelStatusToString(st)}")  # pragma: no cover


def split(values: np.ndarray, base: float) -> tuple[np.ndarray, np.ndarray]:
    """(floor multiple index f, remainder r) with ``values = base*f + r`` and ``0 <= r < base``;
    ``r = 0`` exactly for values that are multiples (within 1e-9 relative)."""
    q = np.asarray(values, float) / base
    k = np.rint(q)
    multiple = np.abs(q - k) <= 1e-9 * np.maximum(1.0, np.abs(q))
    f = np.where(multiple, k, np.floor(q))
    r = np.where(multiple, 0.0, values - f * base)
    return f, r


# ---------------------------------------------------------------------- rounding
@renamed_seed()
@validated(table=InstanceOf(Table), base=Interval(float, 0, None, closed="neither", finite=True),
           method=Options(METHODS), mip_gap=MIP_GAP_RULE, time_limit=TIME_LIMIT_RULE)
def round_table(table: Table, base: float, method: str = "controlled", rules: Any = None,
                primary: Any = None, seed: RandomState = None, mip_gap: float = 0.01,
                time_limit: float | None = None) -> RoundingResult:
    """Round every cell of ``table`` to a multiple of ``base`` (zero-restricted).

    Parameters
    ----------
    table : Table
    base : number > 0
        The rounding base; a whole number when the table's values are whole numbers.
    method : {"controlled", "random"}
        "controlled": the additive rounding closest to the table in L1 (a MILP solved by HiGHS;
        deterministic). "random": each cell up with probability remainder/base, independently
        (unbiased, NOT additive).
    rules, primary : optional
        Sensitivity rules and/or further sensitive cells (as for :func:`sdckit.tabular.suppress`):
        when given, the result carries :func:`audit_rounding`'s intervals of those cells.
    seed : int, str, Generator or None
        The randomness of ``method="random"`` (ignored by "controlled").
    mip_gap : float >= 0
        Stop when the rounding's total absolute change is proven within this relative distance of
        the smallest possible (HiGHS's ``mip_rel_gap``; default 1%, which keeps a 10k-cell 3-D
        table at seconds; 0 asks for the proven closest). The stop does not depend on time, so
        the result is deterministic.
    time_limit : float, optional
        Seconds for the MILP; when it stops the search, the best additive rounding found is
        returned with its gap (then the result may depend on the machine's speed).

    Returns
    -------
    RoundingResult

    Raises
    ------
    DataError
        No controlled rounding exists (possible in 3-D and linked tables), or none was found
        within ``time_limit``.
    ParameterError
        A bad base, method or time limit.
    """
    start = time.perf_counter()
    values = table.cells["value"].to_numpy(float)
    if not np.all(np.isfinite(values)):
        raise DataError("The table has a missing or infinite cell value; round_table needs finite values.")
    if is_integer_data(values) and float(base) != int(base):
        raise ParameterError("The 'base' parameter of round_table must be a whole number for a table of "
                             f"whole numbers (counts). Got {base!r} instead.")
    base, mip_gap = float(base), float(mip_gap)
    time_limit = None if time_limit is None else float(time_limit)
    f, r = split(values, base)
    A = table.equations()
    optimal, gap = True, None
    if method == "random":
        rng = as_generator(seed)
        up = rng.random(len(values)) < r / base
        up &= r > 0
        optimal = False
    else:
        up, optimal, gap = _controlled(table, A, f, r, base, mip_gap, time_limit)
    rounded = base * (f + up)
    if is_integer_data(values):
        rounded = np.rint(rounded)
    tol = 1e-9 * max(1.0, float(np.abs(values).max(initial=0.0)))
    violated = int((np.abs(A @ rounded) > tol).sum())
    change = rounded - values
    absch = np.abs(change)
    cells = table.cells[list(table.dimensions) + ["value"]].copy()
    cells["rounded"] = rounded
    cells["change"] = change
    moved = absch > 1e-9 * base
    n = len(values)
    result = RoundingResult(table, cells, base, method, violated == 0, violated, int(moved.sum()),
                            float(absch.max(initial=0.0)), float(absch.mean()) if n else 0.0,
                            float(absch.sum()), bool(optimal), gap, 0.0)
    if rules is not None or primary is not None:
        result = replace(result, audit=audit_rounding(result, rules, primary))
    return replace(result, seconds=time.perf_counter() - start)


def _controlled(table: Table, A: sp.csr_matrix, f: np.ndarray, r: np.ndarray, base: float,
                mip_gap: float, time_limit: float | None) -> tuple[np.ndarray, bool, float | None]:
    """The up/down choice (bool per cell) of the closest controlled rounding."""
    n = len(f)
    up = np.zeros(n, bool)
    J = np.flatnonzero(r > 0)
    if not len(J):
        return up, True, 0.0
    A = sp.csr_matrix(A)
    rhs = -(A @ f)
    AJ = A[:, J].tocsr()
    rows = np.flatnonzero(np.diff(AJ.indptr))
    other = np.setdiff1d(np.arange(A.shape[0]), rows)
    if len(other) and np.abs(rhs[other]).max() > 1e-6:  # pragma: no cover - the table is additive
        raise DataError("The table is not additive; check it with Table.check_additivity().")
    AJ = AJ[rows]
    b = np.rint(rhs[rows])
    if len(b) and np.abs(b - rhs[rows]).max() > 1e-6:
        raise DataError("The table is not additive; check it with Table.check_additivity().")
    # objective in units of base, offset so that it is the total absolute change / base: HiGHS's
    # relative gap is then the gap on the total change
    cost = (base - 2.0 * r[J]) / base
    x, status, gap = solve_milp(AJ, b, b, np.zeros(len(J)), np.ones(len(J)), cost, np.arange(len(J)),
                                offset=float(r[J].sum() / base), mip_gap=mip_gap, time_limit=time_limit)
    if status == "infeasible":
        raise DataError(_no_rounding(table, base))
    if x is None:
        raise DataError("No controlled rounding was found within the time limit; give a larger "
                        "'time_limit' (or use method='random', which is not additive).")
    up[J] = x > 0.5
    return up, gap <= 1e-9, gap


def _no_rounding(table: Table, base: float) -> str:
    dims = len(table.dimensions)
    why = (" (in 3-D and larger tables a zero-restricted controlled rounding need not exist; "
           "Causey, Cox & Ernst 1985)" if dims >= 3 else "")
    return (f"No zero-restricted controlled rounding of this {dims}-D table to base {base:g} exists{why}. "
            "Try another base, round a 2-D table, or use method='random' (not additive).")


# ---------------------------------------------------------------------- audit
@validated(result=InstanceOf(RoundingResult))
def audit_rounding(result: RoundingResult, rules: Any = None, primary: Any = None) -> RoundingAudit:
    """The interval an intruder can deduce for each sensitive cell from the rounded table.

    The intruder knows every rounded value ``R_i``, that each true value lies within ``base`` of
    it (strictly: ``R_i - base < x_i < R_i + base``, so ``R_i - base + 1 .. R_i + base - 1`` for
    whole numbers and a whole base), that the true table satisfies its equations, that values are
    non-negative (unless the table has negative values) and that empty cells are zero. The bounds
    are the LP minimum and maximum of each sensitive cell (HiGHS; the LP relaxation, so an outer
    interval for whole-number data). A cell is protected when ``lo <= x - lower`` and
    ``hi >= x + upper``.
    """
    table = result.table
    sens = sensitivity(table, rules, primary)
    v = table.cells["value"].to_numpy(float)
    R = result.cells["rounded"].to_numpy(float)
    b = result.base
    step = 1.0 if is_integer_data(v) and float(b) == int(b) else 0.0
    lo_b = R - b + step
    hi_b = R + b - step
    if not table.negative:
        lo_b = np.maximum(lo_b, 0.0)
    empty = table.empty
    lo_b[empty] = 0.0
    hi_b[empty] = 0.0
    idx = np.flatnonzero(sens.primary)
    lo, hi = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    nlp = 0
    if len(idx):
        A = table.equations()
        z = np.zeros(A.shape[0])
        unit = value_scale(v)  # bounds of order 1 for HiGHS's tolerances (precision.py)
        lp = LP(A, z, z, lo_b / unit, hi_b / unit)
        # each solve differs from the last in two costs: primal simplex from the last basis
        lp.h.setOptionValue("presolve", "off")
        lp.h.setOptionValue("simplex_strategy", 4)
        for k, i in enumerate(idx):
            for sign in (1.0, -1.0):
                lp.set_costs([i], [sign])
                st = lp.solve()
                nlp += 1
                # undecided after HiGHS's retries: NaN, not proven, so the cell counts as exposed
                val = sign * lp.objective * unit if st == "optimal" else np.nan
                if sign > 0:
                    lo[k] = val
                else:
                    hi[k] = val
            lp.set_costs([i], [0.0])
    scale = value_scale(v)
    ok = ((hi >= v[idx] + sens.upper[idx] - audit_tolerance(scale, sens.upper[idx]))
          & (lo <= v[idx] - sens.lower[idx] + audit_tolerance(scale, sens.lower[idx])))
    frame = table.cells[list(table.dimensions) + ["value"]].iloc[idx].copy()
    frame["rounded"] = R[idx]
    frame["lo"] = lo
    frame["hi"] = hi
    frame["upper"] = sens.upper[idx]
    frame["lower"] = sens.lower[idx]
    frame["protected"] = ok
    frame = frame.reset_index(drop=True)
    bad = int((~ok).sum())
    return RoundingAudit(frame, bad == 0, len(idx), bad, nlp)
