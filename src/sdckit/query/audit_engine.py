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
an atom (rows of A are constant on atoms) or v . z != 0 for one of two independent null vectors
(then certainly; both vanish for an independent v with probability 1/p**2). A new pivot is an atom
l with non-zero residual rho_l = v_l - (v_P M^-1) A[I, l]: the part inside of a cut pivot
(rho = 1), else one of the two parts of a cut atom (their residuals differ by 1), else (a row that
cuts no atom) a scattered sample, the lone-atom test, a sweep (see :meth:`Engine._new_pivot`).
Each row costs O(r**2) plus O(atoms) (plus O(atoms * r/8) for a sweep).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit.query.audit_modp import bordered_inverse, inverse

#: What an engine reads of the atoms (``sdckit.query.audit_atoms.Atoms``): ``column`` and
#: ``first_residual``.
Store = Any

#: Atoms tried in a scattered order before the others when a row cuts no atom.
_SAMPLE = 4096



class Engine:
    """One modulus' view of one knowledge (mutable; copy with :meth:`copy`).

    Two independent weight vectors: ``w[0]`` gives the null vector of the derivability test,
    ``w[1]`` a second one that locates a lone atom of non-zero residual (a row that differs from
    the row space on one atom: then rho = c e_l, and v . z0 / v . z1 = w0_l / w1_l).
    """

    def __init__(self, p: int, rng: np.random.Generator, n_atoms: int) -> None:
        self.p = int(p)
        self.rng = rng
        self.w = rng.integers(0, self.p, size=(2, n_atoms), dtype=np.int64)
        self.piv = np.zeros(0, dtype=np.int64)
        self.rows: list[int] = []
        self.minv = np.zeros((0, 0), dtype=np.int64)
        self.W = np.zeros((2, 0), dtype=np.int64)
        self.x = np.zeros((2, 0), dtype=np.int64)

    def copy(self) -> "Engine":
        other = Engine.__new__(Engine)
        other.p, other.rng = self.p, self.rng
        other.w = self.w  # never written in place
        other.piv = self.piv  # replaced, never written in place (as minv, W, x)
        other.rows = list(self.rows)
        other.minv = self.minv
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
        t = self.rng.integers(0, self.p, size=(2, parents.size), dtype=np.int64)
        w = np.concatenate([self.w, t], axis=1)
        w[:, parents] = (w[:, parents] - t) % self.p
        self.w = w

    def derivable(self) -> np.ndarray:
        """Atoms whose count (or sum) this engine finds derivable (coloops of A)."""
        if not self.piv.size:
            return self.piv
        return self.piv[(self.w[0, self.piv] - self.x[0]) % self.p == 0]

    def add_row(self, row_id: int, inside: np.ndarray, parents: np.ndarray, children: np.ndarray,
                store: Store) -> bool:
        """Add the set ``inside`` (bool over atoms, after its split; bits staged as row ``row_id``);
        return whether it raised the rank."""
        p = self.p
        v_piv = inside[self.piv]
        w_v = self.w[:, inside].sum(axis=1) % p
        vz = (w_v - self.x[:, v_piv].sum(axis=1)) % p  # v . z for the two null vectors
        if not children.size and not vz.any():
            return False  # in the row space (probability 1 - 1/p**2): nothing new is learnt
        pi = self.minv[v_piv].sum(axis=0) % p if self.piv.size else np.zeros(0, dtype=np.int64)
        pivot, residual = self._new_pivot(inside, pi, parents, children, store, vz)
        if pivot < 0:
            return False
        column = store.column(pivot, self.rows)
        gamma = (self.minv[:, column.astype(bool)].sum(axis=1) % p if self.piv.size
                 else np.zeros(0, dtype=np.int64))
        self.minv = bordered_inverse(self.minv, gamma, pi, residual, p)
        # x = M^-1 W, bordered: t = (w_v - pi . W) / s; x' = (x - gamma t, t).
        t = (w_v - (pi[None, :] * self.W % p).sum(axis=1) % p) % p * inverse(residual, p) % p
        self.x = np.concatenate([(self.x - gamma[None, :] * t[:, None]) % p, t[:, None]], axis=1)
        self.piv = np.append(self.piv, pivot)
        self.rows.append(row_id)
        self.W = np.concatenate([self.W, w_v[:, None]], axis=1)
        return True

    def _new_pivot(self, inside: np.ndarray, pi: np.ndarray, parents: np.ndarray, children: np.ndarray,
                   store: Store, vz: np.ndarray) -> tuple[int, int]:
        """An atom with non-zero residual and the residual; (-1, 0) if none.

        First the part inside of a cut pivot (residual 1), then the two parts of a cut atom (their
        residuals differ by 1); for a row that cuts no atom, 4,096 atoms in a scattered order
        (finds one of s atoms of non-zero residual among m with probability 1 - (1 - s/m)**4096),
        then the atoms l with w0_l (v . z1) = w1_l (v . z0) (the lone one when s = 1), then all
        atoms. Measured on the benchmark, s ranges from 1 (a refusal follows) to nearly m."""
        p = self.p
        candidates = []
        if children.size:
            is_pivot = np.zeros(inside.size, dtype=bool)
            is_pivot[self.piv] = True
            cut_pivots = np.flatnonzero(is_pivot[parents])
            if cut_pivots.size:
                candidates.append(children[cut_pivots[:1]])
            candidates.append(np.array([children[0], parents[0]], dtype=np.int64))
        else:
            m = inside.size
            start = int(self.rng.integers(0, m))
            candidates.append((start + p * np.arange(min(m, _SAMPLE), dtype=np.int64)) % m)
            lone = np.flatnonzero((self.w[0] * int(vz[1]) - self.w[1] * int(vz[0])) % p == 0)
            candidates.append(lone)
        for atoms in candidates:
            atom, rho = store.first_residual(atoms, self.rows, pi, inside, p)
            if atom >= 0:
                return atom, rho
        # All atoms, in a scattered order from a random start (the p > number of atoms stride).
        return store.first_residual(None, self.rows, pi, inside, p, int(self.rng.integers(0, 2**62)))
