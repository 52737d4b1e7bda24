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

*Small atoms* (issue 27; DESIGN.md section 7). The row space R may hold a non-zero vector supported
on atoms of fewer than k records in all (a total over a union of small atoms), not only a unit
vector. Such a vector lies in W = R restricted to the small atoms (atoms of fewer than k records).
The engine keeps its pivots on *big* atoms (k records or more) wherever it can: a new row's pivot
is a big atom of non-zero residual when there is one, and a pivot that became small (its atom was
cut) is exchanged for a big atom l with (M^-1 A[I, l])_j != 0 when there is one (one column of M
replaced: O(r**2)). A small pivot j for which no big atom qualifies is *settled*: the row-space
vector u_j = e_j M^-1 A[I, :] (1 at pivot j, 0 at the other pivots) vanishes on every big atom, so
u_j is in W. Then the pivots on big atoms span the big atoms' columns (no exchange is left), so
dim W = r - rank A[I, big] = the number of small pivots, and the settled u_j are a basis of W.
A settled pivot stays settled: later pivots and exchanges use big atoms, where u_j is 0, so u_j is
unchanged, and atoms only shrink (a big atom now was big before).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit.query.audit.modp import bordered_inverse, inverse

#: What an engine reads of the atoms (``sdckit.query.audit.atoms.Atoms``): ``column`` and
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
        self.settled = np.zeros(0, dtype=bool)  # per pivot position: small, and no big atom to exchange

    def copy(self) -> "Engine":
        other = Engine.__new__(Engine)
        other.p, other.rng = self.p, self.rng
        other.w = self.w  # never written in place
        other.piv = self.piv  # replaced, never written in place (as minv, W, x)
        other.rows = list(self.rows)
        other.minv = self.minv
        other.W = self.W
        other.x = self.x
        other.settled = self.settled
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
                store: Store, big: np.ndarray) -> bool:
        """Add the set ``inside`` (bool over atoms, after its split; bits staged as row ``row_id``);
        return whether it raised the rank. ``big`` marks the atoms of k records or more: the new
        pivot is one of them when one has a non-zero residual."""
        p = self.p
        v_piv = inside[self.piv]
        w_v = self.w[:, inside].sum(axis=1) % p
        vz = (w_v - self.x[:, v_piv].sum(axis=1)) % p  # v . z for the two null vectors
        if not children.size and not vz.any():
            return False  # in the row space (probability 1 - 1/p**2): nothing new is learnt
        pi = self.minv[v_piv].sum(axis=0) % p if self.piv.size else np.zeros(0, dtype=np.int64)
        pivot, residual = self._new_pivot(inside, pi, parents, children, store, vz, big)
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
        self.settled = np.append(self.settled, not big[pivot])  # no big atom had a residual
        return True

    def settle(self, big: np.ndarray, store: Store) -> None:
        """Exchange every small pivot that is not settled for a big atom where its row-space vector
        u_j is non-zero, or mark it settled (u_j vanishes on all big atoms: u_j is in W)."""
        todo = np.flatnonzero(~big[self.piv] & ~self.settled)
        if not todo.size:
            return
        m = big.size
        start = int(self.rng.integers(0, m))
        order = (start + self.p * np.arange(m, dtype=np.int64)) % m  # scattered: early exits come fast
        bigs = order[big[order]]
        nothing = np.zeros(m, dtype=bool)
        settled = self.settled.copy()
        for j in todo.tolist():
            atom, minus_g = store.first_residual(bigs, self.rows, self.minv[j], nothing, self.p)
            if atom >= 0:
                self._exchange(j, atom, store)
            else:
                settled[j] = True
        self.settled = settled

    def _exchange(self, j: int, atom: int, store: Store) -> None:
        """Pivot position ``j`` moves to ``atom`` (g_j != 0 for g = M^-1 A[I, atom]): row j of M^-1
        divided by g_j, row i minus g_i times the new row j (Sherman-Morrison); x likewise."""
        p = self.p
        column = store.column(atom, self.rows).astype(bool)
        g = self.minv[:, column].sum(axis=1) % p
        inv = inverse(int(g[j]), p)
        row = self.minv[j] * inv % p
        minv = (self.minv - g[:, None] * row[None, :] % p) % p
        minv[j] = row
        xj = self.x[:, j] * inv % p
        x = (self.x - xj[:, None] * g[None, :] % p) % p
        x[:, j] = xj
        piv = self.piv.copy()
        piv[j] = atom
        self.minv, self.x, self.piv = minv, x, piv

    def small_pivots(self, big: np.ndarray) -> np.ndarray:
        """After :meth:`settle`: the pivot positions j on small atoms. Rows ``minv[j]`` weight the
        kept rows into the basis u_j of W (its value at atom a is ``minv[j] . column(a)``)."""
        return np.flatnonzero(~big[self.piv])

    def in_row_space(self, vector: np.ndarray) -> bool:
        """Whether ``vector`` (mod p, over this engine's atoms) is orthogonal to both random null
        vectors z = w - E_P x, i.e. in the row space (a false yes with probability 1/p**2)."""
        p = self.p
        for i in range(2):
            dot = int((vector % p * self.w[i] % p).sum() % p)
            dot = (dot - int((vector[self.piv] % p * self.x[i] % p).sum() % p)) % p
            if dot:
                return False
        return True

    def _new_pivot(self, inside: np.ndarray, pi: np.ndarray, parents: np.ndarray, children: np.ndarray,
                   store: Store, vz: np.ndarray, big: np.ndarray) -> tuple[int, int]:
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
            atom, rho = store.first_residual(atoms[big[atoms]], self.rows, pi, inside, p)
            if atom >= 0:
                return atom, rho
        if big.all():
            # All atoms, in a scattered order from a random start (the p > number of atoms stride).
            return store.first_residual(None, self.rows, pi, inside, p, int(self.rng.integers(0, 2**62)))
        m = inside.size
        order = (int(self.rng.integers(0, m)) + p * np.arange(m, dtype=np.int64)) % m
        atom, rho = store.first_residual(order[big[order]], self.rows, pi, inside, p)
        if atom >= 0:
            return atom, rho
        return store.first_residual(order[~big[order]], self.rows, pi, inside, p)  # the new row adds to W
