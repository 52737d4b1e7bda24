"""Small-support vectors of a subspace given by a basis, modulo a prime (DESIGN.md §7).

The auditor (:mod:`sdckit.query.audit.engine`, :mod:`sdckit.query.audit.wspace`) gives a basis
u_1..u_d of W, the vectors of the answered sets' row space that vanish on every atom of k records
or more, as values modulo a prime p at the small atoms, atoms with equal values making one class.
A derivable total over fewer than k records is a non-zero v in W whose support holds
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

from sdckit.query.audit.modp import inverse

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
def _rref_inplace(a, p):  # pragma: no cover - compiled
    """:func:`_rref` in place on ``a`` (entries in 0..p-1); returns the pivot columns."""
    rows, cols = a.shape
    pivots = np.empty(min(rows, cols), dtype=np.int64)
    r = 0
    for c in range(cols):
        if r == rows:
            break
        h = -1
        for i in range(r, rows):
            if a[i, c] != 0:
                h = i
                break
        if h < 0:
            continue
        if h != r:
            for j in range(c, cols):
                a[r, j], a[h, j] = a[h, j], a[r, j]
        base, e, inv = a[r, c], p - 2, 1
        while e:
            if e & 1:
                inv = inv * base % p
            base = base * base % p
            e >>= 1
        for j in range(c, cols):  # row r is 0 before column c
            a[r, j] = a[r, j] * inv % p
        for i in range(rows):
            f = a[i, c]
            if i != r and f != 0:
                for j in range(c, cols):
                    a[i, j] = (a[i, j] - f * a[r, j]) % p
        pivots[r] = c
        r += 1
    return pivots[:r]


@numba.njit(cache=True)
def _floors(nonzero, members, starts, pivot_weight, other_weight):  # pragma: no cover - compiled
    """Per pivot set J (rows ``members[starts[i]:starts[i + 1]]``): the weight of its pivots plus
    that of the columns where exactly one row of J is non-zero (``other_weight`` per column)."""
    n_sets, cols = starts.size - 1, nonzero.shape[1]
    out = np.zeros(n_sets, dtype=np.int64)
    count = np.zeros(cols, dtype=np.int64)
    for i in range(n_sets):
        total = 0
        count[:] = 0
        for t in range(starts[i], starts[i + 1]):
            j = members[t]
            total += pivot_weight[j]
            for c in range(cols):
                if nonzero[j, c]:
                    count[c] += 1
        for c in range(cols):
            if count[c] == 1:
                total += other_weight[c]
        out[i] = total
    return out


def _rref_large(a: np.ndarray, p: int) -> tuple[np.ndarray, list[int]]:
    """:func:`_rref` (the same canonical form), compiled: for the basis of W over its classes."""
    a = np.ascontiguousarray(a % p, dtype=np.int64)
    pivots = _rref_inplace(a, np.int64(p))
    return a[: pivots.size], pivots.tolist()


@numba.njit(cache=True)
def _pack(classes, values, k, p):  # pragma: no cover - compiled
    """Greedy disjoint spanning sets over atoms in order, atom t having the column
    ``values[classes[t]]``: each atom goes to the first set it is independent of (a set of full rank
    takes nothing). Returns whether every set reached full rank.

    Atoms of one class share a column, and a set's span only grows, so once a column is dependent on
    set g it stays so: ``tried[c]`` is the first set that class c's column may still be independent
    of, and the work is O((placed + classes * k) * d**2) plus O(1) per atom, not O(atoms * k * d**2)."""
    d = values.shape[1]
    bases = np.zeros((k, d, d), dtype=np.int64)
    pivots = np.zeros((k, d), dtype=np.int64)
    counts = np.zeros(k, dtype=np.int64)
    tried = np.zeros(values.shape[0], dtype=np.int64)
    x = np.empty(d, dtype=np.int64)
    full = 0
    for t in range(classes.size):
        c = classes[t]
        g = tried[c]
        while g < k:
            if counts[g] == d:
                g += 1
                continue
            for j in range(d):
                x[j] = values[c, j] % p
            for i in range(counts[g]):
                f = x[pivots[g, i]]
                if f:
                    for j in range(d):
                        x[j] = (x[j] - f * bases[g, i, j]) % p  # > -2**62: one reduction
            lead = -1
            for j in range(d):
                if x[j]:
                    lead = j
                    break
            if lead < 0:
                g += 1
                continue
            # inverse of x[lead] mod p by Fermat (square and multiply)
            a, e, inv = x[lead], p - 2, 1
            while e:
                if e & 1:
                    inv = inv * a % p
                a = a * a % p
                e >>= 1
            for j in range(d):
                bases[g, counts[g], j] = x[j] * inv % p
            pivots[g, counts[g]] = lead
            counts[g] += 1
            if counts[g] == d:
                full += 1
            g += 1
            break
        tried[c] = g
        if full == k:
            return True
    return False


def spanned_k_times(classes: np.ndarray, values: np.ndarray, k: int, p: int) -> bool:
    """A certificate that W (dimension d) holds no non-zero vector on fewer than k atoms: k
    disjoint sets of atoms whose columns each span all d dimensions (greedy, atoms in the order
    given: each goes to the first set it is independent of). Every non-zero v = lambda U is
    non-zero on some atom of each set (lambda is orthogonal to no spanning set), so it covers k
    atoms or more, of k records or more. Atom t's column is ``values[classes[t]]`` (``values``:
    one row of d values mod p per class of atoms with equal columns). False: no certificate (the
    search decides). Whether the greedy succeeds depends only on the columns' linear
    dependencies, so on W and the order, not on the basis of W in which they are given."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    if not values.shape[1]:
        return True
    return bool(_pack(np.ascontiguousarray(classes, dtype=np.int64), values, np.int64(k), np.int64(p)))


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


def _hyperplane_normals(m: int, vectors: list[np.ndarray], weights: list[int], budget: int, p: int,
                        work: list[int], limit: int) -> list[np.ndarray] | None:
    """Every lambda (m entries) that is the normal of a rank m - 1 set of the columns ``vectors``
    (each m values mod p; column i weighs ``weights[i]``) and keeps non-zero at most ``budget``
    weight of them, found by a branching over the columns in order: a column in the span of the
    ones chosen vanishes anyway; another one is either chosen (it vanishes) or kept (it costs its
    weight). None past the work limit."""
    out: list[np.ndarray] = []
    seen: set[bytes] = set()

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
        while position < len(vectors) and in_span(basis, pivots, vectors[position]):
            position += 1
        if position == len(vectors):
            return True
        grown, grown_pivots = _rref(np.vstack([basis, vectors[position][None, :]]), p)
        if not walk(grown, grown_pivots, position + 1, spent):
            return False
        w = int(weights[position])
        if spent + w <= budget:
            return walk(basis, pivots, position + 1, spent + w)
        return True

    if not walk(np.zeros((0, m), dtype=np.int64), [], 0, 0):
        return None
    return out


def heaviest_first(atoms: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``atoms`` ordered by ``weights[atoms]`` descending, ties kept in the given order (a stable
    sort; a radix sort when the weights are small, as atoms of fewer than k records are)."""
    w = weights[atoms]
    top = int(w.max()) if w.size else 0
    if 0 <= int(w.min() if w.size else 0) and top < 2**16:
        return atoms[np.argsort((top - w).astype(np.uint16), kind="stable")]
    return atoms[np.argsort(-w, kind="stable")]


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
    The search of :func:`small_vectors_of_classes`, the atoms with equal columns of ``u`` making
    one class.
    """
    values, classes = np.unique(np.asarray(u, dtype=np.int64).T % p, axis=0, return_inverse=True)
    return small_vectors_of_classes(values, classes.ravel(), weights, k, p, limit)


def small_vectors_of_classes(values: np.ndarray, classes: np.ndarray, weights: np.ndarray, k: int, p: int,
                             limit: int | None = None) -> list[np.ndarray] | None:
    """:func:`small_vectors` of the space whose basis takes the values ``values[classes[t]]`` (d
    values mod p) on atom t: W given by classes of atoms with equal columns, as
    :class:`sdckit.query.audit.wspace.SmallSpace` keeps it.

    The search runs over the atoms (its result and its work are those over the s columns), but
    what depends on a column alone is computed once per class: the reduced echelon form (a
    repeated column never holds a pivot, its first occurrence was reduced before it, and the row
    operations transform it as its first occurrence), the adjacency of pivots, the weight floors,
    the weight of a found vector.

    Notes
    -----
    The basis is put in reduced row echelon form over the support's atoms heaviest first (ties in
    the given order): its pivots are then a basis of greatest weight (the greedy basis of the
    matroid), so the pivot sets J weighing < k, which the search walks, are as few as can be.
    """
    limit = WORK_LIMIT if limit is None else limit
    size = classes.size
    values = np.asarray(values, dtype=np.int64) % p
    support = np.flatnonzero((values != 0).any(axis=1)[classes])
    if not support.size:
        return []
    order = heaviest_first(support, weights)
    weights = np.asarray(weights)[order]
    in_order = classes[order]
    # distinct columns in order of first appearance, and each atom's label among them
    distinct, first = np.unique(in_order, return_index=True)
    by_first = np.argsort(first, kind="stable")
    distinct, first = distinct[by_first], first[by_first]
    label_of = np.full(values.shape[0], -1, dtype=np.int64)
    label_of[distinct] = np.arange(distinct.size)
    label = label_of[in_order]
    u, pivot_labels = _rref_large(values[distinct].T, p)  # (d x distinct columns)
    pivots = [int(first[c]) for c in pivot_labels]  # atom positions (first occurrences)
    nonzero = u != 0
    total = np.rint(np.bincount(label, weights=weights, minlength=distinct.size)).astype(np.int64)  # per class
    other_weight = total.copy()  # without its pivot atom
    other_weight[pivot_labels] -= weights[pivots]
    other = np.ones(order.size, dtype=bool)
    other[pivots] = False
    # a pivot's column is a unit vector after the reduction: every shared column is an other one
    shared = nonzero.sum(axis=0) >= 2
    together = nonzero[:, shared].astype(np.int64)
    touching = (together @ together.T) > 0  # pivots j, j' both non-zero on some shared column
    np.fill_diagonal(touching, False)
    adjacent: list[set[int]] = [set(np.flatnonzero(row).tolist()) for row in touching]
    sets = _connected_sets(adjacent, weights[pivots], k, limit)
    if sets is None:
        return None
    work = [len(sets)]
    if work[0] > limit:
        return None
    found: list[np.ndarray] = []
    # an atom where one u_j of J alone is non-zero stays in the support: with the pivots, a floor
    # on the weight of every v with pivot support J (compiled, all sets at once)
    members = np.array([j for subset in sets for j in subset], dtype=np.int64)
    starts = np.cumsum([0] + [len(subset) for subset in sets]).astype(np.int64)
    floors = _floors(np.ascontiguousarray(nonzero), members, starts,
                     np.ascontiguousarray(weights[pivots], dtype=np.int64), other_weight.astype(np.int64))
    for subset, floor in zip(sets, floors.tolist()):
        if floor >= k:
            continue
        rows = u[list(subset)]
        m = len(subset)
        count = (rows != 0).sum(axis=0)
        if m == 1:
            lambdas: list[np.ndarray] | None = [np.ones(1, dtype=np.int64)]
        else:
            # lambda keeps non-zero a few of the atoms where two or more u_j are (weight <= budget)
            # and vanishes on the others, whose columns have rank m - 1
            atoms = np.flatnonzero(other & (count >= 2)[label])
            lambdas = _hyperplane_normals(m, [rows[:, c] for c in label[atoms]], weights[atoms].tolist(),
                                          k - 1 - floor, p, work, limit)
            if lambdas is None:
                return None
        for lam in lambdas:
            v = np.zeros(u.shape[1], dtype=np.int64)
            for coefficient, row in zip(lam.tolist(), rows):
                v = (v + coefficient * row % p) % p
            if int(total[v != 0].sum()) < k:
                full = np.zeros(size, dtype=np.int64)
                full[order] = v[label]
                found.append(full)
    return found
