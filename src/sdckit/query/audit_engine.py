"""Which atoms an analyst can isolate: incremental row-space test modulo a prime (DESIGN.md §7).

Knowledge of one kind (COUNT, or SUM of one column) is the matrix A whose rows are the answered
query sets as 0/1 vectors over the atoms. The count (or sum) of atom j is derivable iff the unit
vector e_j is in the row space of A (Chin & Ozsoyoglu 1982, the audit expert), i.e. iff column j
is a *coloop*: removing it lowers the rank, i.e. every null vector z of A (A z = 0) has z_j = 0.

The engine never stores A (after 1,000 queries on 10**6 records it can have 10**5-10**6 columns).
It keeps, modulo a secret prime p:

- a random weight w_l per atom, uniform and independent; when an atom splits, the part inside the
  new set gets a fresh uniform weight t and the part outside keeps w_l - t, so the pair is again
  uniform and independent *and* each recorded row's weight sum W_i = sum over its atoms of w_l
  never changes;
- r independent rows I of A with r pivot atoms P such that M = A[I, P] is invertible, and M^-1.

Then z = w - E_P M^-1 W_I is a uniformly random null vector of A (the map w -> z is a projection
onto null(A)), equal to w off the pivots. So: a non-pivot atom is never derivable; a pivot p is
derivable iff w_p = (M^-1 W_I)_p -- exactly when it is derivable, and falsely (a refusal too
many, never too few) with probability 1/p otherwise. A new row v is independent of A iff it cuts
an atom (rows of A are constant on atoms) or v . z != 0 (then certainly; v . z = 0 for an
independent v has probability 1/p). A new pivot is an atom l with non-zero residual
rho_l = v_l - (v_P M^-1) A[I, l]: the part inside of a cut pivot (rho = 1), else one of the two
parts of a cut atom (their residuals differ by 1), else a search over all atoms (rare: an
independent row that cuts nothing). Each row costs O(r**2) plus O(atoms).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit.query.audit_modp import bordered_inverse, inverse

#: What an engine reads of the atoms (``sdckit.query.audit_atoms.Atoms``): ``column`` and
#: ``first_residual``.
Store = Any



class Engine:
    """One modulus' view of one knowledge (mutable; copy with :meth:`copy`)."""

    def __init__(self, p: int, rng: np.random.Generator, n_atoms: int) -> None:
        self.p = int(p)
        self.rng = rng
        self.w = rng.integers(0, self.p, size=n_atoms, dtype=np.int64)
        self.piv = np.zeros(0, dtype=np.int64)
        self.rows: list[int] = []
        self.minv = np.zeros((0, 0), dtype=np.int64)
        self.W = np.zeros(0, dtype=np.int64)
        self.x = np.zeros(0, dtype=np.int64)

    def copy(self) -> "Engine":
        other = Engine.__new__(Engine)
        other.p, other.rng = self.p, self.rng
        other.w = self.w.copy()
        other.piv = self.piv.copy()
        other.rows = list(self.rows)
        other.minv = self.minv  # replaced, never written in place
        other.W = self.W
        other.x = self.x
        return other

    @property
    def rank(self) -> int:
        return int(self.piv.size)

    def split(self, parents: np.ndarray, children: np.ndarray) -> None:
        """Atoms ``parents`` gave their inside part to new atoms ``children`` (appended in order)."""
        if not parents.size:
            return
        t = self.rng.integers(0, self.p, size=parents.size, dtype=np.int64)
        self.w[parents] = (self.w[parents] - t) % self.p
        self.w = np.concatenate([self.w, t])

    def derivable(self) -> np.ndarray:
        """Atoms whose count (or sum) this engine finds derivable (coloops of A)."""
        if not self.piv.size:
            return self.piv
        return self.piv[(self.w[self.piv] - self.x) % self.p == 0]

    def add_row(self, row_id: int, inside: np.ndarray, parents: np.ndarray, children: np.ndarray,
                store: Store) -> bool:
        """Add the set ``inside`` (bool over atoms, after its split; bits staged as row ``row_id``);
        return whether it raised the rank."""
        p = self.p
        v_piv = inside[self.piv]
        w_v = int(self.w[inside].sum() % p)
        if not children.size:
            vz = (w_v - int(self.x[v_piv].sum())) % p
            if vz == 0:
                return False  # in the row space (probability 1 - 1/p): nothing new is learnt
        pi = self.minv[v_piv].sum(axis=0) % p if self.piv.size else np.zeros(0, dtype=np.int64)
        pivot, residual = self._new_pivot(inside, pi, parents, children, store)
        if pivot < 0:
            return False
        column = store.column(pivot, self.rows)
        gamma = (self.minv[:, column.astype(bool)].sum(axis=1) % p if self.piv.size
                 else np.zeros(0, dtype=np.int64))
        self.minv = bordered_inverse(self.minv, gamma, pi, residual, p)
        # x = M^-1 W, bordered: t = (w_v - pi . W) / s; x' = (x - gamma t, t).
        t = (w_v - int((pi * self.W % p).sum() % p)) % p * inverse(residual, p) % p
        self.x = np.append((self.x - gamma * t) % p, t)
        self.piv = np.append(self.piv, pivot)
        self.rows.append(row_id)
        self.W = np.append(self.W, w_v)
        return True

    def _new_pivot(self, inside: np.ndarray, pi: np.ndarray, parents: np.ndarray, children: np.ndarray,
                   store: Store) -> tuple[int, int]:
        """An atom with non-zero residual and the residual; (-1, 0) if none.

        First the part inside of a cut pivot (residual 1), then the two parts of a cut atom (their
        residuals differ by 1), else all atoms, those inside the set first (an independent row
        that cuts no atom)."""
        candidates = []
        if children.size:
            is_pivot = np.zeros(inside.size, dtype=bool)
            is_pivot[self.piv] = True
            cut_pivots = np.flatnonzero(is_pivot[parents])
            if cut_pivots.size:
                candidates.append(children[cut_pivots[:1]])
            candidates.append(np.array([children[0], parents[0]], dtype=np.int64))
        candidates.append(np.concatenate([np.flatnonzero(inside), np.flatnonzero(~inside)]))
        for atoms in candidates:
            t, rho = store.first_residual(atoms, self.rows, pi, inside, self.p)
            if t >= 0:
                return int(atoms[t]), rho
        return -1, 0
