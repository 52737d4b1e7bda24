"""W, the row-space vectors supported on small atoms, kept across checks (DESIGN.md section 7).

The engine (:mod:`sdckit.query.audit.engine`) keeps its pivots on atoms of k records or more
wherever it can; the pivots it cannot move are *settled* and their row-space vectors u_j are a
basis of W, the vectors of the answered sets' row space that vanish on every atom of k records or
more. The check of a new answer needs the values of a basis of W on the small atoms (for the
certificate and the search of :mod:`sdckit.query.audit.support`). Recomputing them on every check
costs O(small atoms * dim W * kept rows / 8); this module keeps them instead, because W only grows:

- a vector of W is a function of the records that does not change when an atom splits (both parts
  take the atom's value), and atoms only shrink, so an atom that is big now was big when a vector
  entered W, and the vector is 0 there;
- a new answer changes W only by the pivots it settles: with the vectors of W kept before, their
  u_j (computed once, on every small atom) are a basis of the new W (the engine's dim W = number of
  settled pivots, and the kept ones span the W before).

So a check that splits atoms but settles no pivot costs O(its splits) here; one that settles m
pivots, O(small atoms * m * kept rows / 8) once. The values are kept as *classes*: atoms with equal
values over the basis share one row of ``values`` (on the benchmark, ~100 classes over ~10**5
atoms), which is what makes the certificate cheap (:func:`sdckit.query.audit.support.spanned_k_times`).
"""

from __future__ import annotations

import numpy as np

from sdckit.query.audit.support import heaviest_first


class SmallSpace:
    """A basis of W (modulo one engine's prime) by its values on the atoms, as classes.

    ``classes[a]`` is atom a's class (-1: every basis vector is 0 there, the atom is outside W's
    support) and ``values[c]`` the basis vectors' values on the atoms of class c (shape ``(classes,
    dim W)``). Arrays are replaced, never written in place, so a copy shares them safely.
    """

    def __init__(self, n_atoms: int) -> None:
        self.classes = np.full(n_atoms, -1, dtype=np.int64)
        self.values = np.zeros((0, 0), dtype=np.int64)

    @property
    def dim(self) -> int:
        return int(self.values.shape[1])

    def copy(self) -> "SmallSpace":
        other = SmallSpace.__new__(SmallSpace)
        other.classes, other.values = self.classes, self.values
        return other

    def split(self, parents: np.ndarray, children: np.ndarray) -> None:
        """Atoms ``parents`` gave their inside part to new atoms ``children`` (appended in order):
        each part keeps the parent's values."""
        if parents.size:
            self.classes = np.concatenate([self.classes, self.classes[parents]])

    def grow(self, small: np.ndarray, new: np.ndarray) -> None:
        """Add basis vectors, given by their values ``new`` (shape ``(m, len(small))``, mod p) on the
        atoms ``small`` (every atom of fewer than k records; the new vectors are 0 elsewhere). The
        classes are refined by the new values, one vector at a time: an atom where the new vector
        is 0 keeps its class (its row of ``values`` gets a 0), the others get a class per distinct
        (class, value)."""
        for values in new:
            hit = np.flatnonzero(values)
            atoms = small[hit]
            p_key = int(values.max()) + 1 if hit.size else 1
            keys = (self.classes[atoms] + 1) * p_key + values[hit]  # < 2**63: classes < 2**31, values < 2**31
            distinct, label = np.unique(keys, return_inverse=True)
            old, value = distinct // p_key - 1, distinct % p_key
            rows = np.zeros((distinct.size, self.dim + 1), dtype=np.int64)
            rows[old >= 0, :-1] = self.values[old[old >= 0]]
            rows[:, -1] = value
            classes = self.classes.copy()
            classes[atoms] = self.values.shape[0] + label.ravel()
            values = np.zeros((self.values.shape[0] + distinct.size, self.dim + 1), dtype=np.int64)
            values[: self.values.shape[0], :-1] = self.values
            values[self.values.shape[0]:] = rows
            # drop the classes left without atoms (all their atoms took a non-zero new value)
            used = np.zeros(values.shape[0], dtype=bool)
            used[classes[classes >= 0]] = True
            if not used.all():
                renumber = np.cumsum(used) - 1
                classes[classes >= 0] = renumber[classes[classes >= 0]]
                values = values[used]
            self.values, self.classes = values, classes

    def support(self, sizes: np.ndarray) -> np.ndarray:
        """The atoms where some basis vector is non-zero, heaviest first (ties by atom id): the
        fixed order of the certificate and the search."""
        return heaviest_first(np.flatnonzero(self.classes >= 0), sizes)
