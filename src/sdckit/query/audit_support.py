"""Small-support vectors of a subspace given by a reduced basis, modulo a prime (DESIGN.md §7).

The auditor's engine (:mod:`sdckit.query.audit_engine`) gives a basis u_1..u_d of W, the
vectors of the answered sets' row space that vanish on every atom of k records or more, as values
modulo a prime p at the small atoms, in reduced form: u_j is 1 at its own pivot atom and 0 at the
other pivots. A derivable total over fewer than k records is a non-zero v in W whose support holds
fewer than k records in all (each atom weighing its number of records). This module lists every
*elementary* vector of W (a minimal support, a circuit) of weight < k: any v of weight < k is a
combination of elementary vectors with supports inside its own (Rockafellar 1969), so if all of
those are already known, v is too.

Search. The basis is first put in reduced row echelon form over the atoms in their fixed order, so
the search (and whether it passes its work limit) depends only on W, never on the engine's random
choices. v = sum_j lambda_j u_j has v = lambda_j at pivot j, so its pivot support J = {j :
lambda_j != 0} weighs at most its weight: only sets J of pivots weighing < k are tried. An
elementary vector's J is connected (pivots j, j' adjacent when some atom has u_j and u_j' both
non-zero there: otherwise v splits into two vectors of smaller supports). An atom where a single
u_j of J is non-zero is in the support of every such v: with J's pivots, a floor on the weight; a
J whose floor reaches k is skipped. For |J| = m > 1, v keeps a few of the atoms where two or more
u_j are non-zero (within the weight left) and vanishes on the others, whose columns U[J, c] must
have rank m - 1 (else a second lambda would cancel one more atom and v would not be elementary):
lambda is their normal. All of it is enumerated, with a limit on the work (beyond it the caller
refuses: a conservative answer).

Example: a set of one record that differs from an answered set (a unit vector, J = {j}); or two
records of different atoms whose total (e_a + e_b) or difference is derivable (|J| = 1 or 2).
"""

from __future__ import annotations

import numba
import numpy as np

from sdckit.query.audit_modp import inverse

#: Work limit of one search (pivot sets plus column choices tried).
WORK_LIMIT = 20_000


def _rref(a: np.ndarray, p: int) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form mod p of the rows of ``a`` (zero rows dropped) and its pivot columns:
    a canonical basis of the row space, whatever basis ``a`` was."""
    a = a.copy() % p
    rows, cols = a.shape
    pivots: list[int] = []
    r = 0
    for c in range(cols):
        if r == rows:
            break
        hits = np.flatnonzero(a[r:, c])
        if not hits.size:
            continue
        h = r + int(hits[0])
        a[[r, h]] = a[[h, r]]
        a[r] = a[r] * inverse(int(a[r, c]), p) % p
        factors = a[:, c].copy()
        factors[r] = 0
        a = (a - factors[:, None] * a[r][None, :] % p) % p
        pivots.append(c)
        r += 1
    return a[:r], pivots


@numba.njit(cache=True)
def _pack(columns, bases, pivots, counts, p):  # pragma: no cover - compiled
    """Greedy disjoint spanning sets: each column (rows of ``columns``, in order) goes to the first
    set it is independent of. ``bases[g, i]`` is set g's i-th vector (normalised at ``pivots[g,
    i]``, zero at the set's earlier pivots); returns whether every set reached full rank."""
    k, d = counts.size, columns.shape[1]
    x = np.empty(d, dtype=np.int64)
    for t in range(columns.shape[0]):
        for g in range(k):
            if counts[g] == d:
                continue
            for j in range(d):
                x[j] = columns[t, j] % p
            for i in range(counts[g]):
                f = x[pivots[g, i]]
                if f:
                    for j in range(d):
                        x[j] = (x[j] - f * bases[g, i, j] % p + p) % p
            c = -1
            for j in range(d):
                if x[j]:
                    c = j
                    break
            if c < 0:
                continue
            # inverse of x[c] mod p by Fermat (square and multiply)
            a, e, inv = x[c], p - 2, 1
            while e:
                if e & 1:
                    inv = inv * a % p
                a = a * a % p
                e >>= 1
            for j in range(d):
                bases[g, counts[g], j] = x[j] * inv % p
            pivots[g, counts[g]] = c
            counts[g] += 1
            break
        done = True
        for g in range(k):
            if counts[g] < d:
                done = False
        if done:
            return True
    return False


def spanned_k_times(values, n_atoms: int, d: int, k: int, p: int) -> bool:
    """A certificate that W (dimension d) holds no non-zero vector on fewer than k atoms: k
    disjoint sets of atoms whose columns each span all d dimensions (greedy, atoms in their fixed
    order: each goes to the first set it is independent of). Every non-zero v = lambda U is
    non-zero on some atom of each set (lambda is orthogonal to no spanning set), so it covers k
    atoms or more, of k records or more. ``values(start, stop)`` gives the columns of atoms
    start..stop-1 (d x (stop - start)), computed only as far as needed. False: no certificate
    (the search decides)."""
    bases = np.zeros((k, d, d), dtype=np.int64)
    pivots = np.zeros((k, d), dtype=np.int64)
    counts = np.zeros(k, dtype=np.int64)
    start, block = 0, max(256, 2 * k * d)
    while start < n_atoms:
        columns = np.ascontiguousarray(values(start, min(n_atoms, start + block)).T)
        if _pack(columns, bases, pivots, counts, np.int64(p)):
            return True
        start += block
        block *= 2
    return False


def _connected_sets(adjacent: list[set[int]], weight: np.ndarray, k: int, limit: int) -> list[tuple[int, ...]] | None:
    """Every connected set of pivots weighing < k (each once); None past ``limit`` sets."""
    seen: set[frozenset[int]] = set()
    frontier = [frozenset([j]) for j in range(len(adjacent)) if weight[j] < k]
    seen.update(frontier)
    while frontier:
        grown = []
        for s in frontier:
            total = int(weight[list(s)].sum())
            for j in set().union(*(adjacent[i] for i in s)) - s:
                if total + weight[j] < k:
                    t = s | {j}
                    if t not in seen:
                        seen.add(t)
                        grown.append(t)
                        if len(seen) > limit:
                            return None
        frontier = grown
    return [tuple(sorted(s)) for s in seen]


def _hyperplane_normals(rows: np.ndarray, columns: list[int], weights: np.ndarray, budget: int, p: int,
                        work: list[int], limit: int) -> list[np.ndarray] | None:
    """Every lambda (m entries) that is the normal of a rank m - 1 set of ``columns`` of ``rows``
    (m x s) and keeps non-zero at most ``budget`` weight of them, found by a branching over the
    columns in order: a column in the span of the ones chosen vanishes anyway; another one is
    either chosen (it vanishes) or kept (it costs its weight). None past the work limit."""
    m = rows.shape[0]
    out: list[np.ndarray] = []
    seen: set[bytes] = set()
    vectors = [rows[:, c] % p for c in columns]

    def in_span(basis: np.ndarray, pivots: list[int], vector: np.ndarray) -> bool:
        v = vector.copy()
        for i, c in enumerate(pivots):
            if v[c]:
                v = (v - v[c] * basis[i] % p) % p
        return not v.any()

    def walk(basis: np.ndarray, pivots: list[int], position: int, spent: int) -> bool:
        work[0] += 1
        if work[0] > limit:
            return False
        if len(pivots) == m - 1:
            free = next(c for c in range(m) if c not in pivots)
            lam = np.zeros(m, dtype=np.int64)
            lam[free] = 1
            for i, c in enumerate(pivots):
                lam[c] = (-basis[i, free]) % p
            if lam.all() and lam.tobytes() not in seen:
                seen.add(lam.tobytes())
                out.append(lam)
            return True
        while position < len(columns) and in_span(basis, pivots, vectors[position]):
            position += 1
        if position == len(columns):
            return True
        grown, grown_pivots = _rref(np.vstack([basis, vectors[position][None, :]]), p)
        if not walk(grown, grown_pivots, position + 1, spent):
            return False
        w = int(weights[columns[position]])
        if spent + w <= budget:
            return walk(basis, pivots, position + 1, spent + w)
        return True

    if not walk(np.zeros((0, m), dtype=np.int64), [], 0, 0):
        return None
    return out


def small_vectors(u: np.ndarray, weights: np.ndarray, k: int, p: int,
                  limit: int | None = None) -> list[np.ndarray] | None:
    """Every elementary vector of weight < k of the space spanned by the rows of ``u``.

    Parameters
    ----------
    u : ndarray of int64, shape (d, s)
        A basis of W mod p over s atoms (in a fixed order: the search, and its work, depend only
        on W, the weights and that order, not on the basis given).
    weights : ndarray of int
        Records in each atom (>= 1).
    k : int
        A vector supported on fewer than k records in all is a disclosure.
    p : int
        The prime.
    limit : int, optional
        Work limit (default :data:`WORK_LIMIT`); past it ``None`` is returned (the caller refuses).

    Returns
    -------
    list of ndarray or None
        Vectors (mod p, length s), each of weight < k (possibly also some non-elementary ones).

    Notes
    -----
    The basis is put in reduced row echelon form over the support's atoms heaviest first (ties in
    the given order): its pivots are then a basis of greatest weight (the greedy basis of the
    matroid), so the pivot sets J weighing < k, which the search walks, are as few as can be.
    """
    limit = WORK_LIMIT if limit is None else limit
    size = u.shape[1]
    support = np.flatnonzero((u % p != 0).any(axis=0))
    if not support.size:
        return []
    order = support[np.argsort(-weights[support], kind="stable")]
    u, pivots = _rref(u[:, order], p)
    weights = weights[order]
    d = u.shape[0]
    nonzero = u != 0
    other = np.ones(u.shape[1], dtype=bool)
    other[pivots] = False
    shared = other & (nonzero.sum(axis=0) >= 2)
    adjacent: list[set[int]] = [set() for _ in range(d)]
    for c in np.flatnonzero(shared):
        rows = np.flatnonzero(nonzero[:, c]).tolist()
        for i in rows:
            adjacent[i].update(rows)
    for i in range(d):
        adjacent[i].discard(i)
    sets = _connected_sets(adjacent, weights[pivots], k, limit)
    if sets is None:
        return None
    work = [len(sets)]
    if work[0] > limit:
        return None
    found: list[np.ndarray] = []
    for subset in sets:
        rows = u[list(subset)]
        m = len(subset)
        count = (rows != 0).sum(axis=0)
        # an atom where one u_j of J alone is non-zero stays in the support: with the pivots, a
        # floor on the weight of every v with pivot support J
        floor = int(weights[[pivots[j] for j in subset]].sum()) + int(weights[other & (count == 1)].sum())
        if floor >= k:
            continue
        if m == 1:
            lambdas: list[np.ndarray] | None = [np.ones(1, dtype=np.int64)]
        else:
            # lambda keeps non-zero a few of the atoms where two or more u_j are (weight <= budget)
            # and vanishes on the others, whose columns have rank m - 1
            lambdas = _hyperplane_normals(rows, np.flatnonzero(other & (count >= 2)).tolist(), weights,
                                          k - 1 - floor, p, work, limit)
            if lambdas is None:
                return None
        for lam in lambdas:
            v = np.zeros(u.shape[1], dtype=np.int64)
            for coefficient, row in zip(lam.tolist(), rows):
                v = (v + coefficient * row % p) % p
            if int(weights[v != 0].sum()) < k:
                full = np.zeros(size, dtype=np.int64)
                full[order] = v
                found.append(full)
    return found
