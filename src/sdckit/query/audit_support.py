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

import itertools

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


def _normal(columns: np.ndarray, p: int) -> np.ndarray | None:
    """The lambda (m entries, first non-zero one 1) with lambda . c = 0 for every column c of
    ``columns`` (m x q, mod p) when those columns have rank m - 1; else None."""
    m = columns.shape[0]
    reduced, pivots = _rref(columns.T, p)  # rows: the columns' span, reduced
    if len(pivots) != m - 1:
        return None
    free = next(c for c in range(m) if c not in pivots)
    lam = np.zeros(m, dtype=np.int64)
    lam[free] = 1
    for i, c in enumerate(pivots):
        lam[c] = (-reduced[i, free]) % p
    first = lam[np.flatnonzero(lam)[0]]
    return lam * inverse(int(first), p) % p


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


def small_vectors(u: np.ndarray, weights: np.ndarray, k: int, p: int,
                  limit: int | None = None) -> list[np.ndarray] | None:
    """Every elementary vector of weight < k of the space spanned by the rows of ``u``.

    Parameters
    ----------
    u : ndarray of int64, shape (d, s)
        A basis of W mod p over s atoms (in a fixed order: the search, and its work, depend only
        on W and that order, not on the basis given).
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
    """
    limit = WORK_LIMIT if limit is None else limit
    u, pivots = _rref(u, p)
    d = u.shape[0]
    if not d:
        return []
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
    work = len(sets)
    if work > limit:
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
            lambdas = [np.ones(1, dtype=np.int64)]
        else:
            # lambda keeps non-zero a few of the atoms where two or more u_j are (weight <= budget)
            # and vanishes on the others, which must have rank m - 1
            shared_j = np.flatnonzero(other & (count >= 2))
            budget = k - 1 - floor
            lambdas, seen = [], set()
            for size in range(0, min(budget, shared_j.size) + 1):
                for kept in itertools.combinations(range(shared_j.size), size):
                    if int(weights[shared_j[list(kept)]].sum()) > budget:
                        continue
                    work += 1
                    if work > limit:
                        return None
                    zeroed = np.delete(shared_j, list(kept))
                    lam = _normal(rows[:, zeroed], p)
                    if lam is None or not lam.all() or lam.tobytes() in seen:
                        continue
                    seen.add(lam.tobytes())
                    lambdas.append(lam)
        for lam in lambdas:
            v = np.zeros(u.shape[1], dtype=np.int64)
            for coefficient, row in zip(lam.tolist(), rows):
                v = (v + coefficient * row % p) % p
            if int(weights[v != 0].sum()) < k:
                found.append(v)
    return found
