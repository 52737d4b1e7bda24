"""Elementary sets (atoms) of a family of query sets (Chin & Ozsoyoglu's audit expert).

The atoms are the partition of the records by their membership signature over the recorded
query sets: every answered COUNT or SUM is the sum of its atoms' counts or sums, so the atoms are
the unknowns of what an analyst learns (DESIGN.md section 7). The partition is refined by each new
set: an atom the set cuts is split in two, the part outside keeping the atom's id and the part
inside getting a new id. Cost per set: O(n) vectorised, no sort.

Each atom keeps its size and one representative record; the membership of an atom in a recorded
set is read at its representative from the set's packed bits (all records of an atom share it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Split:
    """What one refinement did: atoms ``parents[i]`` lost their part inside the set, which became
    atom ``children[i]``; ``inside`` marks the atoms (after the split) contained in the set."""

    parents: np.ndarray
    children: np.ndarray
    inside: np.ndarray


class Atoms:
    """The partition of ``n`` records into atoms (mutable; copy with :meth:`copy`)."""

    def __init__(self, n: int) -> None:
        self.atom_id = np.zeros(n, dtype=np.int32 if n < 2**31 else np.int64)
        self.sizes = np.array([n], dtype=np.int64)
        self.rep = np.array([0], dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    def copy(self) -> "Atoms":
        other = Atoms.__new__(Atoms)
        other.atom_id = self.atom_id.copy()
        other.sizes = self.sizes.copy()
        other.rep = self.rep.copy()
        return other

    def refine(self, member: np.ndarray) -> Split:
        """Split every atom that ``member`` (bool per record) cuts; return what changed."""
        m_before = self.count
        idx = np.flatnonzero(member)
        a = self.atom_id[idx]
        inside_count = np.bincount(a, minlength=m_before)
        cut = (inside_count > 0) & (inside_count < self.sizes)
        parents = np.flatnonzero(cut)
        children = np.arange(m_before, m_before + parents.size, dtype=np.int64)
        if parents.size:
            new_id = np.full(m_before, -1, dtype=np.int64)
            new_id[parents] = children
            moving = cut[a]
            moved_records = idx[moving]
            moved_to = new_id[a[moving]]
            self.atom_id[moved_records] = moved_to
            self.sizes[parents] -= inside_count[parents]
            self.sizes = np.concatenate([self.sizes, inside_count[parents]])
            child_rep = np.empty(parents.size, dtype=np.int64)
            child_rep[moved_to - m_before] = moved_records
            # A parent whose representative moved inside needs one of its records left outside.
            lost = parents[member[self.rep[parents]]]
            if lost.size:
                outside = np.flatnonzero(~member)
                candidate = np.full(m_before, -1, dtype=np.int64)
                candidate[self.atom_id[outside]] = outside
                self.rep[lost] = candidate[lost]
            self.rep = np.concatenate([self.rep, child_rep])
        inside = np.zeros(self.count, dtype=bool)
        inside[self.atom_id[idx]] = True
        return Split(parents, children, inside)

    def signatures(self, rows: list[np.ndarray], row_ids: list[int], atoms: np.ndarray) -> np.ndarray:
        """0/1 matrix (len(row_ids) x len(atoms)): is atom j inside recorded set i.

        ``rows`` are the recorded sets as ``np.packbits(member, bitorder="little")``.
        """
        reps = self.rep[atoms]
        byte = reps >> 3
        bit = (reps & 7).astype(np.uint8)
        out = np.empty((len(row_ids), atoms.size), dtype=np.int64)
        for j, i in enumerate(row_ids):
            out[j] = (rows[i][byte] >> bit) & 1
        return out
