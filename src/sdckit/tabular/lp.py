"""A small wrapper over HiGHS (highspy) for the many related LPs of auditing and suppression:
one model, solved again after its costs or bounds change (HiGHS restarts from the last basis)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import highspy

INF = highspy.kHighsInf
_QUIET = False


def new_highs() -> highspy.Highs:
    """A silent HiGHS instance (the first one ever made prints a banner on file descriptor 1,
    which is sent to /dev/null)."""
    global _QUIET
    if _QUIET:
        h = highspy.Highs()
    else:
        import os
        import sys
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _QUIET = True
    h.setOptionValue("output_flag", False)
    return h


#: The HiGHS model statuses the callers branch on, by name; any other is reported as HiGHS words it.
_STATUS = {highspy.HighsModelStatus.kOptimal: "optimal", highspy.HighsModelStatus.kUnbounded: "unbounded",
           highspy.HighsModelStatus.kInfeasible: "infeasible"}
_DECIDED = ("optimal", "unbounded", "infeasible")
#: What :meth:`LP.solve` tries, in turn, after a solve that ends undecided (each from scratch):
#: the same settings, no presolve, dual simplex, primal simplex, interior point + crossover.
RETRIES: tuple[dict, ...] = ({}, {"presolve": "off"}, {"presolve": "off", "simplex_strategy": 1},
                             {"presolve": "off", "simplex_strategy": 4}, {"solver": "ipm"})


class LP:
    """min c'x  s.t.  row_lo <= A x <= row_hi,  col_lo <= x <= col_hi  (HiGHS, one thread)."""

    def __init__(self, A: sp.spmatrix, row_lo, row_hi, col_lo, col_hi, cost=None, primal: bool = False) -> None:
        A = sp.csc_matrix(A)
        A.sort_indices()
        m, n = A.shape
        h = new_highs()
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        # re-solves after cost changes only: the basis stays primal feasible, so the primal simplex
        # goes on from it; the first solve, from scratch, is left to HiGHS's choice (the primal
        # simplex from scratch stalled for minutes on an audit LP of testdata's income table)
        self._primal_after_first = primal
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = m
        lp.col_cost_ = np.zeros(n) if cost is None else np.asarray(cost, float)
        lp.col_lower_ = _finite(col_lo)
        lp.col_upper_ = _finite(col_hi)
        lp.row_lower_ = _finite(row_lo)
        lp.row_upper_ = _finite(row_hi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        h.passModel(lp)
        self.h, self.n, self.m = h, n, m

    def set_costs(self, idx, cost) -> None:
        idx = np.asarray(idx, np.int32)
        if len(idx):
            self.h.changeColsCost(len(idx), idx, np.asarray(cost, float))

    def set_bounds(self, idx, lo, hi) -> None:
        idx = np.asarray(idx, np.int32)
        if len(idx):
            self.h.changeColsBounds(len(idx), idx, _finite(lo), _finite(hi))

    def set_row_bounds(self, idx, lo, hi) -> None:
        idx = np.asarray(idx, np.int32)
        if len(idx):
            self.h.changeRowsBounds(len(idx), idx, _finite(lo), _finite(hi))

    def solve(self) -> str:
        """Run HiGHS; 'optimal', 'unbounded', 'infeasible' or another status text.

        A solve that ends in another status (HiGHS's 'Unknown' when it cannot meet its
        tolerances, a limit, an error) is retried (:data:`RETRIES`): from scratch, without
        presolve, by the dual then the primal simplex, and by the interior point method with
        crossover; the last status is returned when none ends optimal, unbounded or infeasible.
        The options are restored afterwards."""
        status = self._solve()
        if self._primal_after_first:
            self.h.setOptionValue("simplex_strategy", 4)
            self._primal_after_first = False
        if status in _DECIDED:
            return status
        saved = {k: self.h.getOptionValue(k)[1] for k in ("presolve", "simplex_strategy", "solver")}
        try:
            for options in RETRIES:
                self.h.clearSolver()
                for k, v in options.items():
                    self.h.setOptionValue(k, v)
                status = self._solve()
                if status in _DECIDED:
                    break
        finally:
            for k, v in saved.items():
                self.h.setOptionValue(k, v)
        return status

    def _solve(self) -> str:
        self.h.run()
        st = self.h.getModelStatus()
        if st == highspy.HighsModelStatus.kUnboundedOrInfeasible:
            # Solve again without presolve to tell the two apart.
            presolve = self.h.getOptionValue("presolve")[1]
            self.h.setOptionValue("presolve", "off")
            self.h.run()
            self.h.setOptionValue("presolve", presolve)
            st = self.h.getModelStatus()
        return _STATUS.get(st) or self.h.modelStatusToString(st)

    @property
    def objective(self) -> float:
        return float(self.h.getInfo().objective_function_value)

    @property
    def x(self) -> np.ndarray:
        return np.asarray(self.h.getSolution().col_value)

    @property
    def row_dual(self) -> np.ndarray:
        return np.asarray(self.h.getSolution().row_dual)

    @property
    def col_dual(self) -> np.ndarray:
        return np.asarray(self.h.getSolution().col_dual)


def _finite(v) -> np.ndarray:
    a = np.asarray(v, float).copy()
    a[a == np.inf] = INF
    a[a == -np.inf] = -INF
    return a
