"""Interval protection of the restricted mode's SUM answers: the p% rule over everything
answered, audited as linked tables by linear programming (issue 27; DESIGN.md section 7).

The exact-value audit (:mod:`sdckit.query.audit.auditor`) makes sure that no total over fewer than k
persons is *determined* by the answers. With the declared bounds of a column an analyst can
still *narrow* values: a SUM over k persons equal to k times the upper bound pins every one of
them; the SUM of a set that one person dominates is nearly that person's value. This module
refuses a SUM whose answer, together with every SUM of the same column answered before, would
let an analyst estimate a person's value closer than the p% rule allows.

Protection interval (Hundepool et al. 2012, *Statistical Disclosure Control*, section 4.2, the
p% rule; tau-ARGUS protection levels): for every person i with value x_i and every attacker --
an outsider, or another person j who knows her own value x_j exactly -- the values of y_i
consistent with the answered sums, the declared bounds ``lo <= y <= hi`` and y_j = x_j must reach
``min(hi, x_i + p |x_i|)`` above and ``max(lo, x_i - p |x_i|)`` below (p = p_percent / 100). For a
total over an atom of fewer than k persons (a small total), its interval must reach p% of its
largest value beyond the total on each side (capped at the atom's box). Values outside the
declared bounds widen the bounds to them (the audit's box always holds the true data).

Check of new sets Q (one, or the groups of a GROUP BY) against the answered sets:

1. *Nothing new*: when each set of Q is in the span of the answered ones (its sum follows from
   them), the answer is given (it tells nothing new).
2. *LP audit*: the atoms (persons grouped by membership over the answered sets and Q) carry
   unknown totals t_a; the analyst's polytope is ``{t : A t = b, n_a lo <= t_a <= n_a hi}``. For
   the atoms connected to Q (the other components did not change), HiGHS finds ``max t_a`` and
   ``min t_a`` over a *restriction* of it: every other atom b keeps
   ``x1_b + (n_b - 1) lo <= t_b <= m1_b + (n_b - 1) hi`` (x1, m1: its largest and smallest value),
   which holds for every attacker who is one of b's persons and knows her own value. A restriction
   only narrows the intervals, so an end it reaches is reachable for each attacker (fail safe).
   Atom a's persons are protected against the best attacker when (x2, m2: second largest and
   smallest; G(x) = min(hi, x + p|x|), g(x) = max(lo, x - p|x|))::

       max t_a - (n_a - 2) lo >= max(x2 + G(x1), x1 + G(x2))      (n_a >= 2; an insider of a)
       min t_a - (n_a - 2) hi <= min(m1 + g(m2), m2 + g(m1))
       max t_a >= G(x1),  min t_a <= g(x1)                        (n_a = 1)

   (an insider j estimates ``y_i <= t_a - x_j - (n_a - 2) lo``; the pair that binds is the two
   largest values above and the two smallest below; every other person and an outsider are
   then protected too). The SUM of Q itself (the p% rule on its persons:
   ``total - x1 - x2 >= p x1``) is implied: its largest person sits in one of its atoms.

The LPs are written in deviations from the true totals, scaled by the largest |total| of the
component, and solved by :class:`sdckit.tabular.lp.LP` (retries on an undecided status); an LP
still undecided refuses. The verdict's tolerance is the tabular audit's
(:func:`sdckit.tabular.precision.audit_tolerance`).

What the refusals reveal: they depend on the values (as a published tau-ARGUS suppression
pattern does); see DESIGN.md section 7 for what exactly, and why this design.
"""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sdckit.core.errors import DataError
from sdckit.core.params import Interval, ParamRule, Satisfies, validate_params
from sdckit.query.audit.auditor import Decision
from sdckit.tabular.lp import LP
from sdckit.tabular.precision import audit_tolerance, value_scale

#: The least protection level (x the component's largest |total|): a value at a bound (0 included,
#: where p% of it is 0) must not be pinned there either.
PIN_FLOOR = 1e-6
#: Relative tolerance of the rank test "this set's sum follows from the answered ones".
_RANK_RTOL = 1e-9


class IntervalAudit:
    """The p% interval audit of the SUM answers of one column for one knowledge holder.

    Parameters
    ----------
    values : numpy.ndarray
        Each person's total of the column (missing values as 0), in the fixed order of the
        membership vectors.
    bounds : tuple of float
        The declared ``(lo, hi)`` of the column (public; ``hi`` may be ``inf``). ``lo`` must be
        >= 0 (a column that can be negative is refused by the service before this audit).
    p_percent : float
        The p of the p% rule, > 0.
    min_query_set : int
        k: an atom of fewer than k persons is a small total, whose interval is protected too.
    """

    #: Parameter rules, checked by the one validator (:func:`sdckit.core.params.validate_params`).
    constraints: ClassVar[dict[str, ParamRule]] = {
        "bounds": Satisfies(lambda b: len(b) == 2 and 0 <= float(b[0]) < float(b[1]), "a pair (lo, hi) with 0 <= lo < hi"),
        "p_percent": Interval(float, 0, 100, closed="right")}

    def __init__(self, values: np.ndarray, bounds: tuple[float, float], p_percent: float,
                 min_query_set: int) -> None:
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or not values.size or not np.isfinite(values).all():
            raise DataError("values must be a non-empty 1-D array of finite numbers (one per person)")
        validate_params("IntervalAudit", {"bounds": bounds, "p_percent": p_percent}, self.constraints)
        lo, hi = float(bounds[0]), float(bounds[1])
        self.values = values
        # the audit's box always holds the true data (a value outside the declared bounds widens them)
        self.lo = min(lo, float(values.min()))
        self.hi = max(hi, float(values.max()))
        self.p = float(p_percent) / 100.0
        self.k = int(min_query_set)
        self.n = values.size
        self._labels = np.zeros(self.n, dtype=np.int64)  # atom of each person over the answered sets
        self._sets: list[np.ndarray] = []  # answered sets as sorted atom ids (of the current labels)

    @property
    def answered(self) -> int:
        """Number of answered sets recorded."""
        return len(self._sets)

    # -- atoms ---------------------------------------------------------------------------------
    def _refine(self, members: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """(labels, answered sets, new sets), all over the atoms of the answered sets and ``members``."""
        labels, sets = self._labels, list(self._sets)
        new: list[np.ndarray] = []
        for m in members:
            pair = labels * 2 + m
            _, first, labels = np.unique(pair, return_index=True, return_inverse=True)
            parent = pair[first] // 2  # each new atom's atom before
            sets = [np.flatnonzero(np.isin(parent, s)) for s in sets]
            new = [np.flatnonzero(np.isin(parent, s)) for s in new]
            new.append(np.flatnonzero(pair[first] % 2 == 1))
        return labels.astype(np.int64), sets, new

    def _members(self, memberships: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = []
        for g, m in enumerate(memberships):
            arr = np.asarray(m)
            if arr.ndim != 1 or arr.shape[0] != self.n:
                raise DataError(f"membership {g} must be a 1-D vector of length {self.n}; got shape {arr.shape}")
            out.append(arr.astype(bool).astype(np.int64))
        if not out:
            raise DataError("memberships is empty: give one membership vector per answered group")
        return out

    # -- the decision --------------------------------------------------------------------------
    def check(self, memberships: Sequence[np.ndarray]) -> Decision:
        """Whether the sums over these sets (one per group of a GROUP BY) may be answered
        together, given the answered ones; nothing is recorded."""
        labels, sets, new = self._refine(self._members(memberships))
        n_atoms = int(labels.max()) + 1
        answered = _incidence(sets, n_atoms)
        if all(_in_span(answered, _incidence([s], n_atoms)) for s in new):
            return Decision(True)
        rows = _incidence(sets + new, n_atoms)
        return self._audit(labels, rows, np.unique(np.concatenate(new)))

    def record(self, memberships: Sequence[np.ndarray]) -> None:
        """Remember sums that were answered (or replay them)."""
        labels, sets, new = self._refine(self._members(memberships))
        self._labels, self._sets = labels, sets + new

    def _audit(self, labels: np.ndarray, rows: sp.csr_matrix, touched: np.ndarray) -> Decision:
        n_atoms = rows.shape[1]
        stats = _atom_stats(self.values, labels, n_atoms)
        # components of the atoms linked by answered sets; only those holding a new set's atoms changed
        link = (rows.T @ rows).tocsr()
        _, comp = connected_components(link, directed=False)
        atoms = np.flatnonzero(np.isin(comp, np.unique(comp[touched])))
        sub = rows[:, atoms]
        sub = sub[np.flatnonzero(np.diff(sub.indptr))]
        n_a, total, x1, x2, m1, m2 = (s[atoms] for s in stats)
        lo, hi, p = self.lo, self.hi, self.p
        # the restriction every attacker who is one of an atom's persons allows, in deviations
        inner_lo = np.maximum(x1 + (n_a - 1) * lo, n_a * lo)
        inner_hi = np.minimum(m1 + (n_a - 1) * hi, n_a * hi)
        scale = value_scale(np.concatenate([total, [p * float(x1.max())]]))
        col_lo, col_hi = (inner_lo - total) / scale, (inner_hi - total) / scale
        lp = None
        for j in range(atoms.size):
            need_up, need_down, level = self._needs(int(n_a[j]), float(total[j]), x1[j], x2[j], m1[j], m2[j],
                                                    PIN_FLOOR * scale)
            tol = float(audit_tolerance(scale, level))
            # the true total is in the polytope: a side it already meets needs no LP (self-protected)
            sides = [s for s, met in ((-1.0, total[j] >= need_up - tol), (1.0, total[j] <= need_down + tol)) if not met]
            if not sides:
                continue
            if lp is None:
                lp = LP(sub, np.zeros(sub.shape[0]), np.zeros(sub.shape[0]), col_lo, col_hi, primal=True)
            lp.set_bounds([j], [(n_a[j] * lo - total[j]) / scale], [(n_a[j] * hi - total[j]) / scale])
            for sign in sides:  # -1: max t_a, +1: min t_a
                lp.set_costs([j], [sign])
                status = lp.solve()
                if status == "optimal":
                    end_ = total[j] + sign * lp.objective * scale
                elif status == "unbounded":
                    end_ = -sign * math.inf
                else:
                    return Decision(False, "the interval audit could not decide whether this sum keeps every person's "
                                           "value protected (the solver did not finish); ask about other sets")
                if (sign < 0 and end_ < need_up - tol) or (sign > 0 and end_ > need_down + tol):
                    return Decision(False, f"with the sums already answered, this sum would let someone estimate a "
                                           f"person's value (or a total over fewer than {self.k} persons) closer than "
                                           f"{_fmt(100 * p)}% (p% rule, interval audit); ask about larger groups or "
                                           "fewer overlapping sets")
            lp.set_costs([j], [0.0])
            lp.set_bounds([j], [col_lo[j]], [col_hi[j]])
        return Decision(True)

    def _needs(self, n: int, total: float, x1: float, x2: float, m1: float, m2: float,
               floor: float) -> tuple[float, float, float]:
        """(how far max t_a must reach, how far min t_a must reach, the protection level); every
        level is at least ``floor`` (> 0), so that no value is pinned, at a bound included."""
        lo, hi, p = self.lo, self.hi, self.p

        def G(x: float) -> float:
            return min(hi, x + max(p * abs(x), floor))

        def g(x: float) -> float:
            return max(lo, x - max(p * abs(x), floor))

        if n == 1:
            up, down = G(x1), g(x1)
        else:
            up = max(x2 + G(x1), x1 + G(x2)) + (n - 2) * lo
            down = min(m1 + g(m2), m2 + g(m1)) + ((n - 2) * hi if n > 2 else 0.0)
        level = max(p * abs(x1), floor)
        if n < self.k:  # a small total: p% of its largest value beyond it, within its box
            up = max(up, min(n * hi, total + level))
            down = min(down, max(n * lo, total - level))
        return up, down, level


def _fmt(x: float) -> str:
    return f"{x:g}"


def _incidence(sets: list[np.ndarray], n_atoms: int) -> sp.csr_matrix:
    """0/1 matrix: one row per set, one column per atom."""
    if not sets:
        return sp.csr_matrix((0, n_atoms))
    indptr = np.concatenate([[0], np.cumsum([s.size for s in sets])])
    indices = np.concatenate(sets) if sets else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(sets), n_atoms))


def _in_span(rows: sp.csr_matrix, q: sp.csr_matrix) -> bool:
    """Whether the row q is a linear combination of ``rows`` (least squares on the atoms they
    touch; 0/1 rows, so a relative residual tolerance is safe)."""
    if not q.indices.size:
        return True  # the empty set: its sum is 0
    if rows.shape[0] == 0:
        return False
    used = np.unique(np.concatenate([rows.indices, q.indices]))
    if np.setdiff1d(q.indices, rows.indices).size:
        return False  # q holds an atom no answered set holds
    A = rows[:, used].toarray().T
    b = q[:, used].toarray().ravel()
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    return bool(np.linalg.norm(A @ coef - b) <= _RANK_RTOL * max(1.0, np.linalg.norm(b)))


def _atom_stats(values: np.ndarray, labels: np.ndarray, n_atoms: int) -> tuple[np.ndarray, ...]:
    """Per atom: size, total, largest, second largest, smallest, second smallest value (a
    one-person atom repeats its value)."""
    order = np.lexsort((values, labels))
    v, lab = values[order], labels[order]
    start = np.searchsorted(lab, np.arange(n_atoms))
    stop = np.searchsorted(lab, np.arange(n_atoms), side="right")
    size = (stop - start).astype(float)
    total = np.bincount(labels, weights=values, minlength=n_atoms)
    last = np.maximum(stop - 1, 0)
    x1, m1 = v[last], v[start]
    x2 = v[np.maximum(stop - 2, start)]
    m2 = v[np.minimum(start + 1, last)]
    return size, total, x1, x2, m1, m2
