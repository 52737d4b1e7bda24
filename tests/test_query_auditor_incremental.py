"""The auditor's W kept across checks (issue 27, auditor speed; DESIGN.md section 7).

The restricted mode's auditor keeps W (the row-space vectors supported on atoms of fewer than k
records) and its values on the small atoms from one check to the next instead of recomputing them
on every small atom. These tests hold the kept W to the from-scratch computation (the engine's
settled pivots evaluated on every small atom, as each check did before) and to brute force over Q,
the certificate of k disjoint spanning sets to a plain first-fit greedy, the search to an
enumeration of a whole small space, and show that a check that does not grow W evaluates nothing
on the small atoms.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from query_helpers import small_totals_learnt
from sdckit.query.audit.atoms import Atoms
from sdckit.query.audit.support import small_vectors, spanned_k_times
from sdckit.query.audit.auditor import Auditor


def _rank(rows, p: int) -> int:
    """Rank modulo the prime p (Gaussian elimination on Python ints)."""
    rows = [[int(x) % p for x in r] for r in rows]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((i for i in range(rank, len(rows)) if rows[i][c]), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        inv = pow(rows[rank][c], p - 2, p)
        rows[rank] = [x * inv % p for x in rows[rank]]
        for i in range(len(rows)):
            if i != rank and rows[i][c]:
                f = rows[i][c]
                rows[i] = [(x - f * y) % p for x, y in zip(rows[i], rows[rank])]
        rank += 1
    return rank


def _first_fit(columns, k: int, d: int, p: int) -> bool:
    """The certificate as first defined: each column, in order, goes to the first of k sets it is
    independent of (a set of rank d takes nothing); True when all k sets reach rank d."""
    sets: list[list] = [[] for _ in range(k)]
    for col in columns:
        for s in sets:
            if len(s) < d and _rank(s + [col], p) > len(s):
                s.append(col)
                break
        if all(len(s) == d for s in sets):
            return True
    return False


def _from_scratch(knowledge, e: int) -> tuple[np.ndarray, np.ndarray]:
    """W of engine e as each check computed it before: the row-space vectors of the settled small
    pivots evaluated on every small atom (shape (dim W, atoms), zero on big atoms)."""
    engine, atoms = knowledge.engines[e], knowledge.atoms
    big = atoms.sizes >= knowledge.k
    positions = engine.small_pivots(big)
    small = np.flatnonzero(~big)
    full = np.zeros((positions.size, atoms.count), dtype=np.int64)
    if positions.size:
        tables = atoms.value_tables(engine.rows, engine.minv[positions], engine.p)
        full[:, small] = atoms.row_values(small, tables, engine.p)
    return full, small


def _check_kept_space(knowledge) -> None:
    for e, (engine, space) in enumerate(zip(knowledge.engines, knowledge.spaces)):
        p = engine.p
        scratch, _ = _from_scratch(knowledge, e)
        d = scratch.shape[0]
        assert space.dim == d
        kept = np.zeros((d, knowledge.atoms.count), dtype=np.int64)
        inside = np.flatnonzero(space.classes >= 0)
        kept[:, inside] = space.values[space.classes[inside]].T
        if not d:
            assert not inside.size
            continue
        # the same subspace: each basis has rank d, and together they still have rank d
        assert _rank(kept.tolist(), p) == d == _rank(scratch.tolist(), p)
        assert _rank(kept.tolist() + scratch.tolist(), p) == d
        # the same support, and the certificate as first defined over it, heaviest atoms first
        support = np.flatnonzero((scratch != 0).any(axis=0))
        support = support[np.argsort(-knowledge.atoms.sizes[support], kind="stable")]
        assert np.array_equal(space.support(knowledge.atoms.sizes), support)
        expected = _first_fit([scratch[:, a].tolist() for a in support], knowledge.k, d, p)
        assert spanned_k_times(space.classes[support], space.values, knowledge.k, p) == expected


_batch = st.tuples(st.sampled_from(["count", "sum"]),
                   st.lists(st.lists(st.booleans(), min_size=9, max_size=9), min_size=1, max_size=3))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(5, 9), k=st.integers(2, 4), known=st.booleans(), batches=st.lists(_batch, min_size=1, max_size=9))
def test_kept_w_equals_w_from_scratch_and_decisions_equal_brute_force(n, k, known, batches):
    auditor = Auditor(n, k, known_totals=known)
    answered: dict[str, list[np.ndarray]] = {"count": [], "sum": []}
    base = [np.ones(n, dtype=bool)] if known else []
    for kind, raw in batches:
        batch = [np.array(r[:n], dtype=bool) for r in raw]
        column = "x" if kind == "sum" else None
        size_ok = all(k <= int(m.sum()) <= n - k for m in batch)
        expected = size_ok and not small_totals_learnt(k, base + answered[kind], base + answered[kind] + batch)
        assert auditor.check(batch, kind, column).allowed == expected
        key = ("count", None) if kind == "count" else ("sum", "x")
        if size_ok:  # the state the decision was taken on (size control stops before the audit)
            _check_kept_space(auditor._pending[key][1])
        if expected:
            auditor.record(batch, kind, column)
            answered[kind].extend(batch)
            _check_kept_space(auditor._knowledge[key])


def _range_queries(rng: np.random.Generator, n: int, steps: int):
    """COUNT or SUM over an age range, often AND a region IN-list, sometimes grouped by region
    parity: 300 records over 40 ages and 8 regions give many atoms of fewer than k = 4 records."""
    age, region = rng.integers(0, 40, n), rng.integers(0, 8, n)
    for _ in range(steps):
        low = int(rng.integers(0, 35))
        where = (age >= low) & (age <= low + int(rng.integers(1, 13)))
        if rng.random() < 0.7:
            where &= np.isin(region, rng.choice(8, int(rng.integers(1, 5)), replace=False))
        batch = [where & (region % 2 == v) for v in range(2)] if rng.random() < 0.2 else [where]
        yield batch, ("sum", "x") if rng.random() < 0.5 else ("count", None)


def test_kept_w_on_a_larger_table():
    # W grows to several dimensions over dozens of atoms; splits, GROUP BYs and refusals interleave.
    n, k = 300, 4
    auditor = Auditor(n, k)
    grew = 0
    for batch, key in _range_queries(np.random.default_rng(2), n, 60):
        decision = auditor.check(batch, *key)
        if key in auditor._pending:
            _check_kept_space(auditor._pending[key][1])
        if decision.allowed:
            auditor.record(batch, *key)
            grew = max(grew, auditor._knowledge[key].spaces[0].dim)
    assert grew >= 8  # W was not trivial


def test_a_check_that_does_not_grow_w_evaluates_nothing_on_the_small_atoms(monkeypatch):
    # Before W was kept, every check evaluated W's basis on every small atom (O(small atoms *
    # dim W * kept sets / 8)); now only a check that settles a pivot evaluates its new vectors.
    evaluated = [0]
    row_values = Atoms.row_values

    def counting(self, atoms, tables, p):
        evaluated[0] += int(atoms.size) * int(tables.shape[0])
        return row_values(self, atoms, tables, p)

    monkeypatch.setattr(Atoms, "row_values", counting)
    n, k = 300, 4
    auditor = Auditor(n, k)
    quiet = 0
    for batch, key in _range_queries(np.random.default_rng(2), n, 60):
        before = auditor._knowledge.get(key)
        dims = [e.small_pivots(before.atoms.sizes >= k).size for e in before.engines] if before else [0]
        evaluated[0] = 0
        decision = auditor.check(batch, *key)
        pending = auditor._pending.get(key)
        if before is not None and pending is not None and min(dims) > 0:
            after = pending[1]
            if [e.small_pivots(after.atoms.sizes >= k).size for e in after.engines] == dims:
                assert evaluated[0] == 0
                quiet += 1
        if decision.allowed:
            auditor.record(batch, *key)
    assert quiet >= 10  # the case was exercised


_columns = st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=2), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)
@given(distinct=_columns, picks=st.lists(st.integers(0, 4), min_size=1, max_size=24), k=st.integers(1, 4),
       d=st.integers(1, 2))
def test_certificate_over_classes_is_the_first_fit_greedy(distinct, picks, k, d):
    p = 5
    values = np.array([c[:d] for c in distinct], dtype=np.int64)
    classes = np.array([i % len(distinct) for i in picks], dtype=np.int64)
    columns = [values[c].tolist() for c in classes]
    assert spanned_k_times(classes, values, k, p) == _first_fit(columns, k, d, p)


@settings(max_examples=40, deadline=None)
@given(basis=st.lists(st.lists(st.integers(0, 4), min_size=3, max_size=3), min_size=1, max_size=3),
       picks=st.lists(st.integers(0, 2), min_size=1, max_size=8), weights=st.lists(st.integers(1, 3), min_size=8,
                                                                                      max_size=8),
       k=st.integers(2, 5))
def test_small_vectors_lists_every_small_elementary_vector(basis, picks, weights, k):
    # W spanned by rows over 3 distinct columns repeated along ``picks`` (repeated columns: the
    # reduction is computed once per distinct column). Brute force over GF(5): every non-zero vector
    # of W of weight < k with a minimal support is found (up to a scalar); everything found is in W.
    p = 5
    u = np.array(basis, dtype=np.int64)[:, picks]
    w = np.array(weights[: len(picks)], dtype=np.int64)
    found = small_vectors(u, w, k, p)
    assert found is not None
    space = {tuple((np.array(lam) @ u % p).tolist()) for lam in itertools.product(range(p), repeat=u.shape[0])}
    space.discard((0,) * u.shape[1])
    supports = {v: frozenset(np.flatnonzero(v).tolist()) for v in space}
    elementary = [v for v in space if not any(supports[x] < supports[v] for x in space)]
    for v in found:
        assert tuple(v.tolist()) in space and int(w[v != 0].sum()) < k
    for v in elementary:
        if int(w[list(supports[v])].sum()) < k:
            assert any(tuple((c * f % p).tolist()) == v for f in found for c in range(1, p))
