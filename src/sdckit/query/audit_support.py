"""Small-support vectors of a subspace given by a reduced basis, modulo a prime (DESIGN.md §7).

The auditor's engine (:mod:`sdckit.query.audit_engine`) gives a basis u_1..u_d of W, the
vectors of the answered sets' row space that vanish on every atom of k records or more, as values
modulo a prime p at the small atoms, in reduced form: u_j is 1 at its own pivot atom and 0 at the
other pivots. A derivable total over fewer than k records is a non-zero v in W whose support holds
fewer than k records in all (each atom weighing its number of records). This module lists every
*elementary* vector of W (a minimal support, a circuit) of weight < k: any v of weight < k is a
combination of elementary vectors with supports inside its own (Rockafellar 1969), so if all of
those are already known, v is too.

Search. v = sum_j lambda_j u_j has v = lambda_j at pivot j, so its pivot support J = {j : lambda_j
!= 0} weighs at most its weight: only sets J of pivots weighing < k are tried. An elementary
vector's J is connected (pivots j, j' adjacent when some atom has u_j and u_j' both non-zero there:
otherwise v splits into two vectors of smaller supports). For |J| = m > 1, lambda vanishes on the
columns U[J, c] of its zero set, which have rank m - 1 (else a second lambda would cancel one more
atom, and v would not be elementary) and are among the columns with two or more non-zeros in J:
lambda is the normal of m - 1 independent such columns. All of it is enumerated, with a limit on
the work (beyond it the caller refuses: a conservative answer).

Example: a set of one record that differs from an answered set (a unit vector, J = {j}); or two
records of different atoms whose total (e_a + e_b) or difference is derivable (|J| = 1 or 2).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from sdckit.query.audit_modp import inverse

#: Work limit of one search (pivot sets plus column choices tried).
WORK_LIMIT = 20_000


def _normal(columns: np.ndarray, p: int) -> np.ndarray | None:
    """The non-zero lambda (m entries, first non-zero entry 1) with lambda . c = 0 for the m - 1
    columns c of ``columns`` (m x (m-1), mod p), or None when they do not have rank m - 1."""
    a = (columns.T % p).astype(object)  # (m-1) x m; Python ints: no overflow
    rows, cols = a.shape
    pivots = []
    r = 0
    for c in range(cols):
        hit = next((i for i in range(r, rows) if a[i, c] % p), None)
        if hit is None:
            continue
        a[[r, hit]] = a[[hit, r]]
        inv = inverse(int(a[r, c]), p)
        a[r] = [x * inv % p for x in a[r]]
        for i in range(rows):
            if i != r and a[i, c] % p:
                f = a[i, c]
                a[i] = [(x - f * y) % p for x, y in zip(a[i], a[r])]
        pivots.append(c)
        r += 1
        if r == rows:
            break
    if r != cols - 1:
        return None
    free = next(c for c in range(cols) if c not in pivots)
    lam = [0] * cols
    lam[free] = 1
    for i, c in enumerate(pivots):
        lam[c] = (-a[i, free]) % p
    out = np.array(lam, dtype=np.int64)
    first = out[np.flatnonzero(out)[0]]
    return out * inverse(int(first), p) % p


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


def small_vectors(u: np.ndarray, pivots: np.ndarray, weights: np.ndarray, k: int, p: int,
                  limit: int = WORK_LIMIT) -> list[np.ndarray] | None:
    """Every elementary vector of weight < k of the space spanned by the rows of ``u``.

    Parameters
    ----------
    u : ndarray of int64, shape (d, s)
        Basis of W mod p over s atoms, reduced: ``u[:, pivots]`` is the identity.
    pivots : ndarray of int
        Column of each row's pivot.
    weights : ndarray of int
        Records in each atom (>= 1).
    k : int
        A vector supported on fewer than k records in all is a disclosure.
    p : int
        The prime.
    limit : int
        Work limit; past it ``None`` is returned (the caller refuses).

    Returns
    -------
    list of ndarray or None
        Vectors (mod p, length s), each of weight < k (possibly also some non-elementary ones).
    """
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
    found: list[np.ndarray] = []
    for subset in sets:
        rows = u[list(subset)]
        m = len(subset)
        if m == 1:
            lambdas = [np.ones(1, dtype=np.int64)]
        else:
            nz = rows != 0
            candidates = np.flatnonzero(other & (nz.sum(axis=0) >= 2))
            # parallel columns give the same normals: keep one of each direction
            columns = rows[:, candidates]
            lead = columns[np.argmax(columns != 0, axis=0), np.arange(columns.shape[1])]
            scaled = columns * np.array([inverse(int(x), p) for x in lead], dtype=np.int64)[None, :] % p
            distinct = np.unique(scaled.T, axis=0)
            n_choices = _n_choose(len(distinct), m - 1)
            work += n_choices
            if work > limit:
                return None
            lambdas = []
            seen: set[bytes] = set()
            for combo in itertools.combinations(range(len(distinct)), m - 1):
                lam = _normal(distinct[list(combo)].T, p)
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


def _n_choose(n: int, r: int) -> int:
    return math.comb(n, r) if 0 <= r <= n else 0
