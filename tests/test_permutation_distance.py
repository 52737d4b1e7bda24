"""Permutation distance (Algorithm 2) and (d,v)-permuted privacy (seed 000 section 4)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sdckit.permutation import permutation_distances, permuted_privacy
from sdckit.permutation.privacy import WindowVariance

# A 4 x 2 example worked by hand (used by several tests).
#   X: x0 = (1, 1), x1 = (2, 2), x2 = (3, 3), x3 = (4, 4)
#   Y: y0 = (1.1, 3.9), y1 = (2.2, 3.1), y2 = (2.9, 1.2), y3 = (4.2, 1.9)
# Ranks in Y: column a sorted 1.1 < 2.2 < 2.9 < 4.2 -> y0..y3 have ranks 1, 2, 3, 4;
#             column b sorted 1.2 < 1.9 < 3.1 < 3.9 -> y0..y3 have ranks 4, 3, 1, 2.
# Released rank vectors: y0 = (1, 4), y1 = (2, 3), y2 = (3, 1), y3 = (4, 2).
# r(x): the rank of the released value closest to x_j in each column:
#   x0: a -> 1.1 (rank 1), b -> 1.2 (rank 1): r = (1, 1)
#   x1: a -> 2.2 (rank 2), b -> 1.9 (rank 2): r = (2, 2)
#   x2: a -> 2.9 (rank 3), b -> 3.1 (rank 3): r = (3, 3)
#   x3: a -> 4.2 (rank 4), b -> 3.9 (rank 4): r = (4, 4)
# Chebyshev distances r(x) to y0..y3:
#   x0: 3, 2, 2, 3 -> d = 2, matches y1, y2
#   x1: 2, 1, 1, 2 -> d = 1, matches y1, y2
#   x2: 2, 1, 2, 1 -> d = 1, matches y1, y3
#   x3: 3, 2, 3, 2 -> d = 2, matches y1, y3
X4 = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0]}, index=list("pqrs"))
Y4 = pd.DataFrame({"a": [1.1, 2.2, 2.9, 4.2], "b": [3.9, 3.1, 1.2, 1.9]})


def test_permutation_distance_by_hand():
    out = permutation_distances(X4, Y4, ties="first")
    assert list(out.index) == list("pqrs")
    assert out["distance"].tolist() == [2, 1, 1, 2]
    assert out["matches"].tolist() == [(1, 2), (1, 2), (1, 3), (1, 3)]
    assert out["distance"].dtype == np.int64


def test_closest_value_ties_take_the_lower_rank():
    # x = 2 is equally close to 1 (rank 1) and 3 (rank 2): r = 1 (the lower rank), so the
    # released record of rank 1 is at distance 0.
    x = pd.DataFrame({"a": [2.0, 0.0]})
    y = pd.DataFrame({"a": [3.0, 1.0]})
    out = permutation_distances(x, y, ties="first")
    assert out["distance"].tolist() == [0, 0]
    assert out["matches"].tolist() == [(1,), (1,)]


def brute_force(x: np.ndarray, y: np.ndarray):
    """Algorithm 2 written out: ranks of Y by order of appearance, closest value with the
    lowest rank, then a scan of every released record."""
    n, m = y.shape
    ranks = np.empty((n, m), dtype=int)
    for j in range(m):
        for rank, i in enumerate(sorted(range(n), key=lambda i: (y[i, j], i)), start=1):
            ranks[i, j] = rank
    dists, matches = [], []
    for row in x:
        r = []
        for j in range(m):
            best = min(abs(v - row[j]) for v in y[:, j])
            r.append(min(ranks[i, j] for i in range(n) if abs(y[i, j] - row[j]) == best))
        cheb = [max(abs(ranks[i, j] - r[j]) for j in range(m)) for i in range(n)]
        d = min(cheb)
        dists.append(d)
        matches.append(tuple(i for i in range(n) if cheb[i] == d))
    return dists, matches


small = st.tuples(st.integers(2, 9), st.integers(2, 9), st.integers(1, 3)).flatmap(
    lambda s: st.tuples(
        arrays(np.int64, (s[0], s[2]), elements=st.integers(0, 4)),
        arrays(np.int64, (s[1], s[2]), elements=st.integers(0, 4)),
    )
)


@settings(max_examples=150, deadline=None)
@given(small)
def test_distances_and_matches_agree_with_brute_force(data):
    xv, yv = (a.astype(float) for a in data)
    cols = [f"c{j}" for j in range(xv.shape[1])]
    out = permutation_distances(pd.DataFrame(xv, columns=cols), pd.DataFrame(yv, columns=cols),
                                ties="first")
    dists, matches = brute_force(xv, yv)
    assert out["distance"].tolist() == dists
    assert out["matches"].tolist() == matches


def test_larger_random_inputs_with_many_ties_agree_with_brute_force():
    rng = np.random.default_rng(3)
    xv = rng.integers(0, 6, (60, 3)).astype(float)
    yv = rng.integers(0, 6, (70, 3)).astype(float)
    out = permutation_distances(pd.DataFrame(xv), pd.DataFrame(yv), ties="first")
    dists, matches = brute_force(xv, yv)
    assert out["distance"].tolist() == dists
    assert out["matches"].tolist() == matches


def test_permuted_privacy_by_hand():
    # Data-set-level distance = min(2, 1, 1, 2) = 1.
    # Variances at distance 1 around x0's r = (1, 1): ranks 1..2 (clipped):
    #   a: 1.1, 2.2 -> var = 0.55^2 = 0.3025;  b: 1.2, 1.9 -> var = 0.35^2 = 0.1225
    # around x1's r = (2, 2): ranks 1..3:
    #   a: 1.1, 2.2, 2.9, mean 2.0667 -> (0.93444 + 0.01778 + 0.69444) / 3 = 0.548889
    #   b: 1.2, 1.9, 3.1, mean 2.0667 -> (0.75111 + 0.02778 + 1.06778) / 3 = 0.615556
    # x0's own distance is 2: ranks 1..3 -> the same 0.548889 and 0.615556.
    # Data-set-level variances: the minimum over records at distance 1; x3 (r = (4, 4)) has
    #   a: 2.9, 4.2 -> 0.65^2 = 0.4225, b: 3.1, 3.9 -> 0.4^2 = 0.16, x2 has a: 2.2, 2.9, 4.2 ...
    #   so a: min(0.3025, ...) = 0.3025 and b: 0.1225.
    result = permuted_privacy(X4, Y4, 1, {"a": 0.2, "b": 0.1}, ties="first")
    rec = result.records
    assert result.dataset_distance == 1
    assert rec.loc["p", "var_a"] == pytest.approx(0.3025)
    assert rec.loc["p", "var_b"] == pytest.approx(0.1225)
    assert rec.loc["q", "var_a"] == pytest.approx(0.548889, abs=1e-6)
    assert rec.loc["q", "var_b"] == pytest.approx(0.615556, abs=1e-6)
    assert rec.loc["p", "var_own_a"] == pytest.approx(0.548889, abs=1e-6)
    assert rec.loc["p", "var_own_b"] == pytest.approx(0.615556, abs=1e-6)
    assert rec.loc["s", "var_b"] == pytest.approx(0.16)
    assert result.dataset_variances.to_dict() == pytest.approx({"a": 0.3025, "b": 0.1225})
    # every record has d(x) >= 1 and variances at distance 1 above (0.2, 0.1)
    assert result.satisfied and rec["satisfied"].all()
    # b's threshold 0.13 fails for x0 only (0.1225 at distance 1)
    strict = permuted_privacy(X4, Y4, 1, [0.2, 0.13], ties="first")
    assert not strict.satisfied and strict.records["satisfied"].tolist() == [False, True, True, True]
    # d = 2 fails for x1 and x2 (distance 1)
    assert permuted_privacy(X4, Y4, 2, [0, 0], ties="first").records["satisfied"].tolist() == [
        True, False, False, True]


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(-1e3, 1e3, allow_nan=False)),
       st.data())
def test_window_variance_matches_numpy(values, data):
    s = np.sort(values)
    n = len(s)
    centre = data.draw(st.integers(1, n))
    radius = data.draw(st.integers(0, n + 2))
    lo, hi = max(centre - radius, 1), min(centre + radius, n)
    expected = np.var(s[lo - 1:hi])
    got = WindowVariance(s)(np.array([centre]), radius)[0]
    assert got == pytest.approx(expected, abs=1e-9 * max(1.0, np.abs(s).max() ** 2))
