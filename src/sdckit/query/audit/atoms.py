"""Elementary sets (atoms) of a family of query sets (Chin & Ozsoyoglu's audit expert).

The atoms are the partition of the records by their membership signature over the recorded
query sets: every answered COUNT or SUM is the sum of its atoms' counts or sums, so the atoms are
the unknowns of what an analyst learns (DESIGN.md section 7). The partition is refined by each new
set: an atom the set cuts is split in two, the part outside keeping the atom's id and the part
inside getting a new id. Cost per set: O(n) vectorised, no sort.

Each atom keeps its size and one representative record. The kept sets (those that raised the
rank) are stored as one bit per record and set, records by rows (``n x capacity/8`` bytes), so the
membership signature of an atom is the contiguous bytes at its representative record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)


@dataclass(frozen=True)
class Split:
    """What one refinement did: atoms ``parents[i]`` lost their part inside the set, which became
    atom ``children[i]``; ``inside`` marks the atoms (after the split) contained in the set."""

    parents: np.ndarray
    children: np.ndarray
    inside: np.ndarray
    members: np.ndarray


@numba.njit(cache=True)
def _first_residual(bits, reps, atoms, inside, tables, p, start, stride):  # pragma: no cover - compiled
    """First t with rho = inside[a] - sum_b tables[b, bits[reps[a], b]] != 0 (mod p), where
    a = atoms[t], or, if ``atoms`` is empty, a = (start + t * stride) mod (number of atoms): a
    sweep of all atoms in a scattered order (``stride`` a prime above the number of atoms)."""
    nb = tables.shape[0]
    m = inside.size
    count = atoms.size if atoms.size else m
    for t in range(count):
        a = atoms[t] if atoms.size else (start + t * stride) % m
        r = reps[a]
        acc = 0
        for b in range(nb):
            acc += tables[b, bits[r, b]]
        rho = (np.int64(inside[a]) - acc % p + p) % p
        if rho != 0:
            return a, rho
    return -1, 0


@numba.njit(cache=True)
def _row_values(bits, reps, atoms, tables, p):  # pragma: no cover - compiled
    """out[j, t] = sum_b tables[j, b, bits[reps[atoms[t]], b]] mod p: row-space vector j's value at
    atom atoms[t], the weighted sum of the atom's column over the kept rows."""
    nj, nb = tables.shape[0], tables.shape[1]
    out = np.zeros((nj, atoms.size), dtype=np.int64)
    for t in range(atoms.size):
        r = reps[atoms[t]]
        for j in range(nj):
            acc = 0
            for b in range(nb):
                acc += tables[j, b, bits[r, b]]
            out[j, t] = acc % p
    return out


@numba.njit(cache=True)
def _write_bit(bits, byte, mask, clear, members):  # pragma: no cover - compiled
    off = np.uint8(255) ^ mask
    for i in clear:
        bits[i, byte] &= off
    for i in members:
        bits[i, byte] |= mask


class _BitStore:
    """One bit per record and row, records by rows; ``written[row]`` lists the records whose bit
    may be set in that row, so a row is rewritten in O(its set's size), not O(n)."""

    def __init__(self, n: int, n_bytes: int) -> None:
        self.bits = np.zeros((n, n_bytes), dtype=np.uint8)
        self.written: dict[int, np.ndarray] = {}

    def grown(self) -> "_BitStore":
        other = _BitStore.__new__(_BitStore)
        other.bits = np.zeros((self.bits.shape[0], 2 * self.bits.shape[1]), dtype=np.uint8)
        other.bits[:, : self.bits.shape[1]] = self.bits
        other.written = dict(self.written)
        return other

    def write(self, row: int, members: np.ndarray) -> None:
        previous = self.written.get(row)
        _write_bit(self.bits, row >> 3, np.uint8(1 << (row & 7)),
                   previous if previous is not None else members[:0], members)
        self.written[row] = members


class Atoms:
    """The partition of ``n`` records into atoms and the kept sets' bits (copy with :meth:`copy`).

    Copies share the bit store: a copy writes only past the rows its original knows of, and a
    store that must grow is reallocated, so an original never sees a copy's rows (a copy that is
    dropped leaves bits past them, cleared when that row is written again).
    """

    def __init__(self, n: int) -> None:
        self.atom_id = np.zeros(n, dtype=np.int32 if n < 2**31 else np.int64)
        self.sizes = np.array([n], dtype=np.int64)
        self.rep = np.array([0], dtype=np.int64)
        self._own_ids = True
        self.store = _BitStore(n, 8)
        self.n_rows = 0

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    def copy(self) -> "Atoms":
        other = Atoms.__new__(Atoms)
        other.atom_id = self.atom_id  # copied on the first refinement that cuts an atom
        other.sizes = self.sizes  # never written in place (as rep)
        other.rep = self.rep
        other._own_ids = self._own_ids = False
        other.store = self.store
        other.n_rows = self.n_rows
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
            if not self._own_ids:
                self.atom_id = self.atom_id.copy()
                self._own_ids = True
            self.atom_id[moved_records] = moved_to
            sizes = np.concatenate([self.sizes, inside_count[parents]])
            sizes[parents] -= inside_count[parents]
            self.sizes = sizes
            child_rep = np.empty(parents.size, dtype=np.int64)
            child_rep[moved_to - m_before] = moved_records
            rep = np.concatenate([self.rep, child_rep])
            # A parent whose representative moved inside needs one of its records left outside.
            lost = parents[member[self.rep[parents]]]
            if lost.size:
                outside = np.flatnonzero(~member)
                candidate = np.full(m_before, -1, dtype=np.int64)
                candidate[self.atom_id[outside]] = outside
                rep[lost] = candidate[lost]
            self.rep = rep
        inside = np.zeros(self.count, dtype=bool)
        inside[self.atom_id[idx]] = True
        return Split(parents, children, inside, idx)

    # -- the kept sets, as bits ---------------------------------------------------------------
    def stage_row(self, members: np.ndarray) -> int:
        """Write the set (its record indices) as row ``n_rows``, not yet kept; return the row id."""
        row = self.n_rows
        if row >> 3 >= self.store.bits.shape[1]:
            self.store = self.store.grown()
        self.store.write(row, members)
        return row

    def keep_row(self) -> None:
        """Keep the staged row."""
        self.n_rows += 1

    def committed(self) -> None:
        """This state became the live one: rows below ``n_rows`` are never written again, so
        their write logs are dropped (only copies of it, which start at ``n_rows``, write)."""
        self.store.written = {row: m for row, m in self.store.written.items() if row >= self.n_rows}

    def column(self, atom: int, row_ids: list[int]) -> np.ndarray:
        """0/1 membership of ``atom`` in the kept rows ``row_ids``."""
        n_bytes = (max(row_ids) >> 3) + 1 if row_ids else 0
        unpacked = np.unpackbits(self.store.bits[self.rep[atom], :n_bytes], bitorder="little").astype(np.int64)
        return unpacked[np.asarray(row_ids, dtype=np.int64)] if row_ids else unpacked[:0]

    def _tables(self, row_ids: list[int], pi: np.ndarray, p: int) -> np.ndarray:
        """Per byte of a record's bits, the weighted sum (mod p) of its 256 patterns: weights ``pi``
        on the kept rows ``row_ids`` (shape ``(n_bytes, 256)``)."""
        n_bytes = (max(row_ids) >> 3) + 1 if row_ids else 0
        weights = np.zeros(8 * n_bytes, dtype=np.int64)
        weights[np.asarray(row_ids, dtype=np.int64)] = pi
        return (weights.reshape(n_bytes, 1, 8) * _BYTE_BITS[None, :, :]).sum(axis=2) % p

    def value_tables(self, row_ids: list[int], pis: np.ndarray, p: int) -> np.ndarray:
        """The byte tables of :meth:`row_values` for the weight vectors ``pis`` (build once, reuse)."""
        return np.stack([self._tables(row_ids, pi, p) for pi in pis]) if len(pis) else np.zeros((0, 0, 256), np.int64)

    def row_values(self, atoms: np.ndarray, tables: np.ndarray, p: int) -> np.ndarray:
        """``pis[j] . column(a)`` mod p for each weight vector ``pis[j]`` (over the kept rows;
        ``tables`` from :meth:`value_tables`) and atom ``a`` of ``atoms``: shape
        ``(len(pis), len(atoms))``."""
        return _row_values(self.store.bits, self.rep, atoms.astype(np.int64), tables, np.int64(p))

    def first_residual(self, atoms: np.ndarray | None, row_ids: list[int], pi: np.ndarray, inside: np.ndarray,
                       p: int, start: int = 0) -> tuple[int, int]:
        """An atom of ``atoms`` (all atoms, swept from ``start`` in a scattered order, if ``None``)
        whose residual ``inside - pi . column`` is non-zero mod p, and that residual; (-1, 0) if none.

        The scattered sweep finds one of s atoms with a non-zero residual after about m / s atoms."""
        tables = self._tables(row_ids, pi, p)
        listed = np.zeros(0, dtype=np.int64) if atoms is None else atoms.astype(np.int64)
        if atoms is not None and not atoms.size:
            return -1, 0
        a, rho = _first_residual(self.store.bits, self.rep, listed, inside, tables, np.int64(p),
                                 np.int64(start % max(self.count, 1)), np.int64(p))
        return int(a), int(rho)
