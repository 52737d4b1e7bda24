"""The model of secondary cell suppression that both methods solve: the candidate cells, the
table's equations on them, the deviation bounds an intruder may move a suppressed cell by, and
the weights (Fischetti & Salazar 2001, "Solving the cell suppression problem on tabular data with
linear constraints", *Management Science* 47(7), 1008-1027, section 2).

:class:`SuppressionProblem` answers the two questions the methods ask of a pattern ``y`` (one
entry per candidate cell, 1 = suppressed): which capacity cuts the attacker LPs find violated
(``method="optimal"`` and the polish, through :mod:`sdckit.tabular.cutloop`), and which cells the
cheapest deviation flow of a primary moves (the heuristic of ``method="fast"``, the completion of
refuted points, and the sub-tables of :mod:`sdckit.tabular.modular`).

Deviation bounds: LB_i = x_i when values are non-negative (else the table's total absolute
value), UB_i = the table's total absolute value.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from sdckit.core.errors import DataError
from sdckit.core.params import check_param
from sdckit.tabular.audit import intervals, protected
from sdckit.tabular.cutloop import cpu_time
from sdckit.tabular.lp import LP
from sdckit.tabular.precision import CLIP, audit_tolerance, value_scale
from sdckit.tabular.rules import Sensitivity
from sdckit.tabular.suppress import limits, params
from sdckit.tabular.table import Table


def cell_costs(table: Table, cost: str) -> np.ndarray:
    """Weight of suppressing each cell: its |value|, its frequency, or 1."""
    check_param("suppress", "cost", cost, params.COST)
    if cost == "value":
        return np.abs(table.cells["value"].to_numpy(float))
    if cost == "freq":
        return table.cells["freq"].to_numpy(float)
    return np.ones(len(table.cells))


class SuppressionProblem:
    """What both methods share: candidate cells, equations on them, deviation bounds, weights."""

    def __init__(self, table: Table, sens: Sensitivity, w: np.ndarray) -> None:
        self.table, self.sens = table, sens
        v = table.cells["value"].to_numpy(float)
        self.v = v
        # structural zeros and cells given the status "protected" are never suppressed
        self.cand = np.flatnonzero(~table.empty & ~table.protected)
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
        self.scale = value_scale(v)
        self.undecided = 0  # attacker LPs HiGHS could not decide (then no optimality is claimed)
        self._att: LP | None = None
        self._next = 0
        self._hot: list[int] = []
        self._scanned = 0
        self.codes = table.code_index()[self.cand]  # (C x d) code positions
        self._near = {}  # (dimension, code, siblings kept or None, levels up) -> allowed codes
        self._margins = []
        allpos = table.code_index()
        for k, h in enumerate(table.hierarchies):
            others_root = np.all(np.delete(allpos, k, axis=1) == 0, axis=1)
            m = np.zeros(len(h.codes))
            m[allpos[others_root, k]] = np.abs(v[others_root])
            self._margins.append(m)
        self._flow: LP | None = None
        self.certs: dict[tuple[int, bool | None], np.ndarray] = {}

    # ------------------------------------------------------------ attacker LPs
    def attacker(self, y: np.ndarray) -> LP:
        """The attacker LP with deviation bounds -LB_i y_i <= z_i <= UB_i y_i (y may be fractional)."""
        if self._att is None:
            C = len(self.cand)
            z = np.zeros(self.A.shape[0])
            self._att = LP(self.A, z, z, np.zeros(C), np.zeros(C), primal=True)
        y = np.clip(y, 0.0, 1.0)
        self._att_y = y
        self._att_bounds = (-self.LB * y, self.UB * y)  # set per primary, in units of its level
        return self._att

    def violated_cuts(self, y: np.ndarray, first: bool = False, limit: int | None = None,
                      hot: bool = False, deadline: float | None = None
                      ) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Capacity cuts (columns, coefficients, rhs) violated by pattern ``y`` (Fischetti &
        Salazar 2001, section 3); with ``first``, stop at the first one; with ``limit``, after
        that many, the next call going on from the primary where this one stopped; with ``hot``,
        the primaries violated by the last points are tried first and the others only when they
        give no cut (cheap rounds on the LP relaxation); with ``deadline`` (:func:`cpu_time`), the scan
        stops there, so an empty answer then proves nothing (LP rounds only)."""
        lp = self.attacker(y)
        if hot and self._hot:
            cuts, bad = self._scan(lp, self._hot, first, None, deadline)
            if cuts:
                self._hot = bad + [p for p in self._hot if p not in set(bad)][:4 * max(len(bad), 8)]
                return cuts
        P = len(self.prim)
        start = self._next if limit is not None else 0
        order = [int(self.prim[(start + step) % P]) for step in range(P)]
        cuts, bad = self._scan(lp, order, first, limit, deadline)
        if limit is not None and len(cuts) >= limit:
            self._next = (start + self._scanned) % P
        if hot:
            self._hot = bad
        return cuts

    def _scan(self, lp: LP, order: list[int], first: bool, limit: int | None, deadline: float | None = None):
        """Cuts of the primaries in ``order`` the attacker LP refutes, and those primaries."""
        cuts: list[tuple[np.ndarray, np.ndarray, float]] = []
        bad: list[int] = []
        self._scanned = len(order)
        dev_lo, dev_hi = self._att_bounds
        every = np.arange(len(dev_lo))
        for step, p in enumerate(order):
            if (limit is not None and len(cuts) >= limit) or (deadline is not None and cpu_time() > deadline):
                self._scanned = step
                return cuts, bad
            # in units of the primary's level, deviations clipped at CLIP levels (precision.py)
            unit = float(self.upl[p])
            lp.set_bounds(every, np.maximum(dev_lo / unit, -CLIP), np.minimum(dev_hi / unit, CLIP))
            for sign, level in ((-1.0, self.upl[p]), (1.0, self.lpl[p])):
                if level <= 0:
                    continue
                lp.set_costs([p], [sign])
                st = lp.solve()
                if st != "optimal":  # bounded and feasible (z = 0), yet undecided: no cut, no proof
                    self.undecided += 1
                    continue
                reach = -lp.objective * unit  # max z_p (sign -1) or max -z_p (sign +1)
                if reach < level - audit_tolerance(self.scale, level):
                    d = lp.col_dual  # dual feasible whatever the bounds: a valid capacity cut
                    coef = np.maximum(d, 0) * self.LB + np.maximum(-d, 0) * self.UB
                    coef = np.minimum(coef, level)
                    nz = np.flatnonzero(coef > 1e-9 * level)
                    if float(coef[nz] @ self._att_y[nz]) >= level - audit_tolerance(self.scale, level):
                        continue  # only the clipping refuted y: this cut does not
                    cuts.append((nz, coef[nz], level))
                    if not bad or bad[-1] != p:
                        bad.append(p)
            lp.set_costs([p], [0.0])
            if first and cuts:
                return cuts, bad
        return cuts, bad

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
    def flow_lp(self) -> LP:
        if self._flow is None:
            C = len(self.cand)
            A2 = sp.hstack([self.A, -self.A]).tocsc()
            z = np.zeros(self.A.shape[0])
            self._flow = LP(A2, z, z, np.zeros(2 * C), np.r_[self.UB, self.LB])
            self._flow.h.setOptionValue("presolve", "off")  # re-solved from the last basis
        return self._flow

    def flow(self, p: int, up: bool, level: float, cost: np.ndarray, avail: np.ndarray) -> np.ndarray | None:
        """Support of the cheapest deviation flow that moves cell ``p`` by ``level`` up (or down)
        through the cells in ``avail``; None when there is none."""
        C = len(self.cand)
        lp = self.flow_lp()
        hi = np.r_[np.where(avail, self.UB, 0.0), np.where(avail, self.LB, 0.0)]
        lo = np.zeros(2 * C)
        k = p if up else C + p
        other = C + p if up else p
        if level > hi[k] + 1e-12 or level <= 0:
            return None
        hi = np.minimum(hi / level, CLIP)  # in units of the level (precision.py)
        lo[k] = hi[k] = 1.0
        hi[other] = 0.0
        lp.set_bounds(np.arange(2 * C), lo, hi)
        lp.set_costs(np.arange(2 * C), np.r_[cost, cost])
        st = lp.solve()
        if st != "optimal":
            return None
        x = lp.x
        return np.flatnonzero((x[:C] + x[C:]) > 1e-9 * max(1.0, 1.0 / level))

    def _near_codes(self, k: int, c: int, siblings: int | None, up: int = 1) -> np.ndarray:
        """Codes of dimension ``k`` around code ``c``: the subtree of its ancestor ``up`` levels
        above (with ``up=1`` and ``siblings``, only ``c``'s subtree and those of its
        ``siblings`` largest siblings by their one-way margin), and that ancestor's ancestors."""
        key = (k, c, siblings, up)
        if key not in self._near:
            h = self.table.hierarchies[k]
            par = np.asarray(h.parents)
            size = h.subtree_sizes()  # codes are in depth-first order: a subtree is a run
            ok = np.zeros(len(h.codes), bool)
            top = c
            for _ in range(up):
                if par[top] < 0:
                    break
                top = par[top]
            if up == 1 and siblings is not None and top != c:
                sib = np.flatnonzero(par == top)
                sib = sib[sib != c]
                m = self._margins[k]
                sib = sib[np.lexsort((sib, -m[sib]))][:siblings]
                for r in np.r_[c, sib]:
                    ok[r:r + size[r]] = True
                ok[top] = True
            else:
                ok[top:top + size[top]] = True
            a = par[top]
            while a >= 0:
                ok[a] = True  # ancestors
                a = par[a]
            self._near[key] = ok
        return self._near[key]

    def neighbourhood(self, p: int, siblings: int | None = None, up: tuple[int, ...] | None = None) -> np.ndarray:
        """Candidate cells whose code in every dimension lies below the primary's code or one of
        its siblings, or is one of its ancestors (the sub-table where its cheapest flows lie);
        with ``siblings``, only that many siblings per dimension, the largest first; with
        ``up``, per dimension, the subtree of the ancestor that many levels above instead."""
        keep = np.ones(len(self.cand), bool)
        for k in range(self.codes.shape[1]):
            keep &= self._near_codes(k, int(self.codes[p, k]), siblings, 1 if up is None else up[k])[self.codes[:, k]]
        return np.flatnonzero(keep)

    @cached_property
    def reaches(self) -> list[tuple[int | None, tuple[int, ...] | None]]:
        """The neighbourhoods :meth:`flow_local` tries, smallest first: 3 siblings, all siblings,
        then in one dimension at a time (then in all) the subtree of the grandparent, and so on
        up to the deepest hierarchy (the whole table is left to :meth:`flow`). The same for every
        primary: computed once per table."""
        d = self.codes.shape[1]
        depth = [int(np.max(h.depths())) for h in self.table.hierarchies]
        out: list[tuple[int | None, tuple[int, ...] | None]] = [(3, None), (None, None)]
        for up in range(2, max(depth, default=1) + 1):
            grown = [tuple(up if j == k else 1 for j in range(d)) for k in range(d) if depth[k] >= up]
            for reach in grown + [tuple(min(up, depth[j]) for j in range(d))]:
                if (None, reach) not in out:
                    out.append((None, reach))
        return out

    def flow_local(self, p: int, level: float, cost: np.ndarray, avail: np.ndarray) -> np.ndarray | None:
        """:meth:`flow_near` on growing neighbourhoods (:attr:`reaches`) until one carries a
        protecting flow; None when none does (then the whole table is tried)."""
        tried: set[bytes] = set()
        for siblings, up in self.reaches:
            sub = self.neighbourhood(p, siblings, up)
            if len(sub) == len(self.cand) or sub.tobytes() in tried:
                continue  # the whole table is :meth:`flow`'s, with its re-used model
            tried.add(sub.tobytes())
            sup = self.flow_near(p, level, cost, avail, sub)
            if sup is not None:
                return sup
        return None

    def flow_near(self, p: int, level: float, cost: np.ndarray, avail: np.ndarray,
                  sub: np.ndarray) -> np.ndarray | None:
        """Support of the cheapest flow on the cells ``sub`` (around the primary) that moves it up by
        ``level`` while every other cell moves at most by its value either way, so that the
        reversed flow (scaled to the lower level <= upper level) protects the lower side too."""
        if level > self.UB[p]:
            return None
        sub = self.peel(sub[avail[sub] | (sub == p)])
        if not len(sub) or not np.any(sub == p):
            return None  # the primary is alone in one of its equations: no flow moves it
        A = self.Acsc[:, sub]
        rows = np.unique(A.indices)
        A = sp.csc_matrix((A.data, np.searchsorted(rows, A.indices), A.indptr), shape=(len(rows), len(sub)))
        n = len(sub)
        me = int(np.flatnonzero(sub == p)[0])
        cap = np.minimum(np.minimum(self.UB[sub], self.LB[sub]) / level, CLIP)  # in units of the level
        hi = np.r_[cap, cap]
        lo = np.zeros(2 * n)
        lo[me] = hi[me] = 1.0
        hi[n + me] = 0.0
        if self.lpl[p] > 0 and self.lpl[p] > self.LB[p] + 1e-12:
            return None
        z = np.zeros(A.shape[0])
        lp = LP(sp.hstack([A, -A]).tocsc(), z, z, lo, hi, np.r_[cost[sub], cost[sub]])
        lp.h.setOptionValue("presolve", "off")  # small LP solved once: presolve costs more than it saves
        if lp.solve() != "optimal":
            return None
        x = lp.x
        return sub[(x[:n] + x[n:]) > 1e-9 * max(1.0, 1.0 / level)]

    @property
    def Acsc(self) -> sp.csc_matrix:
        """The equations by column (fast column slices), 0/1 pattern as ``Abool``."""
        if getattr(self, "_Acsc", None) is None:
            self._Acsc = self.A.tocsc()
            self._Abool = (self.A != 0).astype(np.int32).tocsr()
        return self._Acsc

    def peel(self, sub: np.ndarray) -> np.ndarray:
        """The cells of ``sub`` that a flow on ``sub`` may move: a cell alone (within ``sub``)
        in one of its equations cannot move, so it is removed, until none is left alone.
        Cheaper than an infeasible LP and it shrinks the feasible ones."""
        self.Acsc
        B = self._Abool[:, sub].tocsc()
        rows = np.unique(B.indices)
        B = sp.csc_matrix((B.data, np.searchsorted(rows, B.indices), B.indptr), shape=(len(rows), len(sub)))
        Bt = B.T.tocsr()
        on = np.ones(len(sub), np.int32)
        while True:
            count = B @ on
            lone = (Bt @ (count == 1).astype(np.int32)) > 0
            lone &= on > 0
            if not lone.any():
                return sub[on > 0]
            on[lone] = 0

    def base_cost(self) -> np.ndarray:
        pos_w = self.w[self.w > 0]
        eps = 1e-3 * (float(pos_w.mean()) if len(pos_w) else 1.0)
        return self.w + eps

    def flow_protect(self, y: np.ndarray, order: np.ndarray | None = None, boost: float = 1.0) -> np.ndarray:
        """Suppress, for each primary cell and direction, the cells of its cheapest deviation
        flow (cells already suppressed are free). Returns the new pattern; the flows' supports
        are kept as certificates (``self.certs``)."""
        y = y.copy().astype(float)
        base = self.base_cost()
        avail = np.ones(len(self.cand), bool)
        if order is None:
            order = self.prim[np.lexsort((self.prim, -self.upl[self.prim]))]
        local = len(self.cand) > limits.LOCAL_ABOVE
        for p in order:
            if local and self.upl[p] >= self.lpl[p]:
                sup = self.flow_local(p, self.upl[p] * boost, np.where(y > 0.5, 0.0, base), avail)
                if sup is not None:
                    y[sup] = 1.0
                    self.certs[(int(p), None)] = sup
                    continue
            for up, level in ((True, self.upl[p] * boost), (False, self.lpl[p] * boost)):
                if level <= 0:
                    continue
                cap = self.UB[p] if up else self.LB[p]
                sup = self.flow(p, up, min(level, cap), np.where(y > 0.5, 0.0, base), avail)
                if sup is None:
                    raise DataError(f"Primary cell {self.table.cell_name(int(self.cand[p]))} cannot be "
                                    "protected to its levels by any suppression pattern (the table's "
                                    "equations do not allow it).")
                y[sup] = 1.0
                self.certs[(int(p), up)] = sup
        return y

    def drop_redundant(self, y: np.ndarray, deadline: float | None, lp_budget: int | None = None) -> np.ndarray:
        """Publish again each secondary cell, costliest first, when every primary keeps a
        protecting flow through the cells still suppressed (certificates are re-solved only for
        the primaries whose flow used the cell).

        The pass stops at ``deadline`` (:func:`cpu_time` seconds) or once ``lp_budget`` flow LPs have
        been solved; a work budget, unlike a deadline, gives the same pattern on any machine.
        """
        y = y.copy()
        lps = 0
        base = self.base_cost()
        users: dict[int, set] = {}
        for key, sup in self.certs.items():
            for j in sup:
                users.setdefault(int(j), set()).add(key)
        sec = np.setdiff1d(np.flatnonzero(y > 0.5), self.prim)
        order = sec[np.lexsort((sec, -self.w[sec]))]
        for j in order:
            if (deadline is not None and cpu_time() > deadline) or (lp_budget is not None and lps >= lp_budget):
                break
            y[j] = 0.0
            avail = y > 0.5
            new = {}
            for key in sorted(users.get(int(j), ()), key=lambda k: (k[0], str(k[1]))):
                p, up = key
                lps += 1
                if up is None:
                    sup = self.flow_local(p, self.upl[p], base, avail)
                else:
                    level = self.upl[p] if up else self.lpl[p]
                    cap = self.UB[p] if up else self.LB[p]
                    sup = self.flow(p, up, min(level, cap), base, avail)
                if sup is None:
                    break
                new[key] = sup
            else:
                for key, sup in new.items():
                    for i in self.certs[key]:
                        users.get(int(i), set()).discard(key)
                    self.certs[key] = sup
                    for i in sup:
                        users.setdefault(int(i), set()).add(key)
                continue
            y[j] = 1.0
        return y

    def is_safe(self, y: np.ndarray) -> np.ndarray:
        """Audit (no upper bounds): mask over primaries (positions in self.prim) unprotected."""
        mask = np.zeros(len(self.table.cells), bool)
        mask[self.cand[y > 0.5]] = True
        lo, hi, _ = intervals(self.table, mask, only=self.sens.primary, sens=self.sens)
        ok = protected(self.table, lo, hi, self.sens, mask)
        return ~ok[self.cand[self.prim]]
