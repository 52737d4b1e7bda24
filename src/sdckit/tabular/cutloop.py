"""The branch-and-cut loop of optimal cell suppression (Fischetti & Salazar 2001, *Management
Science* 47(7), sections 3-5), shared by ``method="optimal"`` (until proved or out of time) and
the polishing step of ``method="fast"`` (the same loop under work limits).

The master problem min w'y over the capacity cuts found so far is solved by HiGHS (highspy). It
starts with the cuts of each single equation through a primary and with the rows
sum_{j in r, j != i} y_j >= y_i (no cell suppressed alone in an equation: such a cell is given away
and protects nothing, so no optimal pattern has one; :func:`no_singletons`). Phase 1 separates cuts
on the LP relaxation (the primaries refuted last are tried first, the full scan only when they give
none), which yields the root bound. Phase 2 solves the integer master: each incumbent HiGHS finds
is separated at once in its improving-solution callback; a refuted one stops the run (HiGHS has no
lazy constraints, so the run restarts with the new cuts, the best safe pattern given as its start);
a safe one is a new upper bound. A run that ends without a refuted incumbent has a safe optimum:
the pattern is proved optimal. Refuted points are now and then completed into safe patterns by the
caller's ``complete`` (the flow heuristic).

The problem object (:class:`~sdckit.tabular.suppress.problem.SuppressionProblem`) provides ``w``
(costs), ``prim`` (primary positions), ``A`` (the equations on the candidate cells), ``row_cuts()``
and ``violated_cuts(y, limit=, hot=)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from sdckit.core.errors import DataError
from sdckit.tabular.lp import new_highs


def cpu_time() -> float:
    """CPU seconds of this process (HiGHS runs single-threaded in it): the clock of every time
    limit and deadline of suppression, so that a loaded machine searches as far as an idle one
    (only a slower processor stops earlier) and a limit of 60 s is at most about 60 s of CPU."""
    return time.process_time()


class Master:
    """min w'y over the cuts so far, lb <= y <= 1 (lb_p = 1 for primaries), highspy."""

    def __init__(self, w: np.ndarray, lb: np.ndarray) -> None:
        import highspy
        self.C = len(w)
        h = new_highs()
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("mip_rel_gap", 1e-9)
        h.setOptionValue("mip_abs_gap", 1e-9)
        lp = highspy.HighsLp()
        lp.num_col_ = self.C
        lp.num_row_ = 0
        lp.col_cost_ = np.asarray(w, float)
        lp.col_lower_ = np.asarray(lb, float)
        lp.col_upper_ = np.ones(self.C)
        h.passModel(lp)
        self.h, self.hs, self.rows = h, highspy, 0
        self._seen: set[bytes] = set()
        self._safe_keys: set[bytes] = set()
        self._listening = False
        self.check: Callable[[np.ndarray], list] | None = None
        self.safe: list[np.ndarray] = []  # integer points no attacker refutes
        self.refuted: list[tuple[np.ndarray, list]] = []  # integer points with their cuts
        self.eager = True  # stop a MILP run at its first refuted point
        self.deadline: float | None = None  # cpu_time() at which a MILP run is interrupted

    def add(self, cuts) -> int:
        """Add the cuts (columns, coefficients, rhs) not already in the master; returns how many."""
        starts, idx, val, lo = [], [], [], []
        k = 0
        for c, coef, level in cuts:
            c = np.asarray(c, np.int32)
            scaled = np.asarray(coef, float) / level  # rhs 1
            key = c.tobytes() + np.round(scaled, 9).tobytes()
            if key in self._seen:
                continue
            self._seen.add(key)
            starts.append(k)
            idx.append(c)
            val.append(scaled)
            lo.append(1.0 - 1e-9)
            k += len(c)
        n = len(starts)
        if n:
            self.h.addRows(n, np.asarray(lo), np.full(n, self.hs.kHighsInf), k, np.asarray(starts, np.int32),
                           np.concatenate(idx), np.concatenate(val))
            self.rows += n
        return n

    def add_rows(self, rows: list[tuple[np.ndarray, np.ndarray]], lo: float) -> None:
        """Rows sum(coef y) >= lo, given as (columns, coefficients)."""
        if not rows:
            return
        starts = np.cumsum([0] + [len(c) for c, _ in rows[:-1]]).astype(np.int32)
        idx = np.concatenate([np.asarray(c, np.int32) for c, _ in rows])
        val = np.concatenate([np.asarray(v, float) for _, v in rows])
        n = len(rows)
        self.h.addRows(n, np.full(n, lo), np.full(n, self.hs.kHighsInf), len(idx), starts, idx, val)
        self.rows += n

    def integral(self, on: bool) -> None:
        kind = self.hs.HighsVarType.kInteger if on else self.hs.HighsVarType.kContinuous
        self.h.changeColsIntegrality(self.C, np.arange(self.C, dtype=np.int32), np.array([kind] * self.C))
        if on and not self._listening:
            self.h.cbMipImprovingSolution.subscribe(self._improving)
            self.h.cbMipInterrupt.subscribe(self._interrupt)
            self._listening = True

    def _improving(self, e: Any) -> None:
        """Each new incumbent of HiGHS is separated at once (the attacker LPs); a refuted one
        stops the run when ``eager`` (HiGHS has no lazy constraints: the run restarts with its
        cuts, as in a row-generation loop)."""
        sol = np.asarray(e.data_out.mip_solution, float)
        if len(sol) != self.C or self.check is None:
            return
        y = np.round(sol)
        key = np.packbits(y > 0.5).tobytes()
        if key in self._safe_keys:
            return
        cuts = self.check(y)
        if cuts:
            self.refuted.append((y, cuts))
        else:
            self.safe.append(y)
            self._safe_keys.add(key)

    def _interrupt(self, e: Any) -> None:
        late = self.deadline is not None and cpu_time() > self.deadline
        e.interrupt(bool((self.eager and self.refuted) or late))  # the flag outlives a run: always set it

    def solve(self, deadline: float | None, incumbent: np.ndarray | None = None, nodes: int | None = None):
        """(x, objective, lower bound, finished) of the current master; the integer points met
        on the way are left, separated, in ``self.safe`` and ``self.refuted``. An integer run is
        interrupted at ``deadline`` (:func:`cpu_time`) by HiGHS's interrupt callback, HiGHS's own
        limit being wall-clock (it would stop early on a loaded machine); an LP run is not."""
        self.deadline = deadline
        if nodes is not None:
            self.h.setOptionValue("mip_max_nodes", int(nodes))
        self.safe, self.refuted = [], []
        if incumbent is not None:
            sol = self.hs.HighsSolution()
            sol.col_value = np.asarray(incumbent, float)
            sol.value_valid = True
            self.h.setSolution(sol)
        self.h.run()
        st = self.h.getModelStatus()
        info = self.h.getInfo()
        ok = st == self.hs.HighsModelStatus.kOptimal
        if st == self.hs.HighsModelStatus.kInfeasible:
            raise DataError("No suppression pattern protects every primary cell (the model is infeasible).")
        x = np.asarray(self.h.getSolution().col_value) if info.primal_solution_status == 2 else None
        bound = getattr(info, "mip_dual_bound", None)
        obj = float(info.objective_function_value)
        return x, obj, bound, ok


#: The last refuted point of every this many integer rounds is completed into a safe pattern by
#: the heuristic (an upper bound); a count, not a time, so that the result is reproducible.
COMPLETE_EVERY = 4


@dataclass(frozen=True)
class Limits:
    """When the loop stops short of a proof: a ``deadline`` (:func:`cpu_time` seconds),
    and, for a deterministic polish, a number of integer rounds and of branch-and-bound nodes per
    MILP run."""

    deadline: float | None = None
    int_rounds: int | None = None
    nodes: int | None = None
    lp_rounds: int = 500


def branch_and_cut(prob: Any, y0: np.ndarray, best: np.ndarray, limits: Limits,
                   complete: Callable[[np.ndarray], np.ndarray]):
    """Minimise the suppression cost from the safe pattern ``best``; returns (pattern, proved,
    lower bound, rounds). ``y0`` fixes the primaries at 1."""
    w = prob.w

    def left() -> float | None:
        return None if limits.deadline is None else limits.deadline - cpu_time()

    master = Master(w, y0)
    master.add(prob.row_cuts())
    master.add_rows(no_singletons(prob.A, w, prob.prim), 0.0)
    best = best.copy()
    best_cost = float(w @ best)
    lower, rounds = 0.0, 0
    limit = max(10, len(prob.prim) // 10)

    def close(lo: float) -> bool:
        return best_cost <= lo + 1e-9 * max(1.0, abs(best_cost))

    # phase 1: cuts on the LP relaxation (the root bound)
    master.integral(False)
    for _ in range(limits.lp_rounds):
        rounds += 1
        t = left()
        if t is not None and t <= 0:
            return best, False, lower, rounds
        x, obj, _, ok = master.solve(limits.deadline)
        if not ok or x is None:
            break
        lower = max(lower, obj)
        if close(lower):
            return best, True, lower, rounds
        cuts = prob.violated_cuts(x, limit=limit, hot=True, deadline=limits.deadline)
        if not cuts or not master.add(cuts):
            break
    # phase 2: integer masters; every incumbent HiGHS finds is separated on the spot, and a run
    # stops at the first refuted one (its cuts are added and the run starts again)
    master.check = lambda y: prob.violated_cuts(y)
    master.integral(True)
    int_rounds = 0
    while True:
        rounds += 1
        if close(lower):
            return best, True, lower, rounds
        t = left()
        if (t is not None and t <= 0) or (limits.int_rounds is not None and int_rounds >= limits.int_rounds):
            return best, False, lower, rounds
        int_rounds += 1
        x, obj, bound, ok = master.solve(limits.deadline, incumbent=best, nodes=limits.nodes)
        for y in master.safe:
            if float(w @ y) < best_cost - 1e-12:
                best, best_cost = y.copy(), float(w @ y)
        new = sum(master.add(cuts) for _, cuts in master.refuted)
        if master.refuted and int_rounds % COMPLETE_EVERY == 1:
            cand = complete(master.refuted[-1][0])
            if float(w @ cand) < best_cost - 1e-12:
                best, best_cost = cand, float(w @ cand)
        if ok and not master.refuted:
            # a run to its end with no refuted incumbent: the master's optimum is safe, and no
            # pattern is cheaper than the master's optimum
            lower = max(lower, obj)
            if x is not None:
                y = np.round(x)
                if master.check(y):  # pragma: no cover - HiGHS reports its optimum as an incumbent
                    master.eager = False
                    continue
                if float(w @ y) < best_cost - 1e-12:
                    best, best_cost = y, float(w @ y)
            return best, True, lower, rounds
        if bound is not None and np.isfinite(bound):
            lower = max(lower, float(bound))
        if not master.refuted and not ok:
            return best, False, lower, rounds  # time or node limit
        if not new:
            # refuted points whose cuts the master already holds (numerical): one run to the end
            # without stopping at refuted points, then give up the proof
            if not master.eager:
                return best, False, lower, rounds
            master.eager = False


def no_singletons(A: Any, w: np.ndarray, prim: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Rows  sum_{j in r, j != i} y_j >= y_i  for every equation r and every non-primary cell i
    of positive cost in it: a cell suppressed alone in one of its equations is given away by it
    (the intruder's deviation there is 0), so publishing it again keeps every primary protected
    and costs less. No optimal pattern violates them; they cut off many of the master's points
    that the attacker LPs would otherwise refute one at a time."""
    A = A.tocsr()
    is_prim = np.zeros(A.shape[1], bool)
    is_prim[prim] = True
    rows = []
    for r in range(A.shape[0]):
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        if len(cols) < 2:
            continue
        for k, i in enumerate(cols):
            if is_prim[i] or w[i] <= 0:
                continue
            coef = np.ones(len(cols))
            coef[k] = -1.0
            rows.append((cols, coef))
    return rows
