"""Verification of the intruder's linkage (seed 000 section 5.2, DESIGN.md section 3) and
subject verification (seed 000 section 4)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.permutation import hellinger, intruder_linkage, verify_linkage, verify_subject
from sdckit.permutation.randomset import copula_correlation, random_positions

X4 = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0]})
Y4 = pd.DataFrame({"a": [1.1, 2.2, 2.9, 4.2], "b": [3.9, 3.1, 1.2, 1.9]})


def test_exhaustive_independent_null_by_hand():
    # Z's rank vectors are Y's: (1, 4), (2, 3), (3, 1), (4, 2). T = all 4^2 = 16 value
    # combinations, whose intruder ranks are all (i, j) in {1..4}^2. Chebyshev distance of
    # each (i, j) to the nearest of the four:
    #        j=1 j=2 j=3 j=4
    #   i=1   2   1   1   0
    #   i=2   1   1   0   1
    #   i=3   0   1   1   1
    #   i=4   1   0   1   2
    # -> Q = {0: 4/16, 1: 10/16, 2: 2/16}. The originals' distances are 2, 1, 1, 2, so
    # P = {1: 1/2, 2: 1/2} and
    # H^2 = ((0 - 1/2)^2 + (sqrt(.5) - sqrt(.625))^2 + (sqrt(.5) - sqrt(.125))^2) / 2
    #     = (0.25 + 0.006966 + 0.125) / 2 = 0.190983 -> H = 0.437016.
    # p_random: d = 2 -> Q(D <= 2) = 1; d = 1 -> Q(D <= 1) = 14/16 = 0.875.
    v = verify_linkage(X4, Y4, null="independent", ties="first", seed=0, n_null=20)
    assert v.exhaustive and v.n_random == 16
    assert v.random_distribution.to_dict() == pytest.approx({0: 0.25, 1: 0.625, 2: 0.125})
    assert v.original_distribution.to_dict() == pytest.approx({1: 0.5, 2: 0.5})
    assert v.hellinger == pytest.approx(0.437016, abs=1e-6)
    assert v.records["p_random"].tolist() == pytest.approx([1.0, 0.875, 0.875, 1.0])
    assert 0.0 <= v.p_value <= 1.0
    # below the limit, T is sampled instead
    sampled = verify_linkage(X4, Y4, null="independent", exhaustive_limit=15, n_random=500,
                             ties="first", seed=0, n_null=5)
    assert not sampled.exhaustive and sampled.n_random == 500


probabilities = st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=8).filter(
    lambda v: sum(v) > 1e-6).map(lambda v: {i: x / sum(v) for i, x in enumerate(v)})


@settings(max_examples=100, deadline=None)
@given(probabilities, probabilities)
def test_hellinger_bounds_and_identity(p, q):
    h = hellinger(p, q)
    assert 0.0 <= h <= 1.0
    assert h == pytest.approx(hellinger(q, p))
    assert hellinger(p, p) == pytest.approx(0.0, abs=1e-7)


def test_hellinger_disjoint_supports_is_one():
    assert hellinger({0: 0.5, 1: 0.5}, {2: 0.3, 5: 0.7}) == 1.0


def _normal(n, m, seed, rho=0.0):
    rng = np.random.default_rng(seed)
    cov = np.full((m, m), rho) + (1 - rho) * np.eye(m)
    return rng, pd.DataFrame(rng.multivariate_normal(np.zeros(m), cov, size=n),
                             columns=[f"x{j}" for j in range(m)])


def test_section_5_2_tiny_noise_is_linked_and_verified():
    # n = 1000, m = 3, noise sd = 1% of each attribute's sd (seed 000 section 5.2, Table 7).
    # With N(0, 1) attributes a shift of 0.01 sd moves a rank by about 0.4 * 1000 * 0.01 = 4,
    # so d(x) is a few ranks, while random records match at distances of several dozen.
    rng, x = _normal(1000, 3, 0)
    y = x + rng.normal(scale=0.01, size=x.shape)
    v = verify_linkage(x, y, null="independent", n_random=20_000, n_null=20, seed=1)
    assert v.hellinger > 0.9
    assert v.p_value == 0.0
    assert v.records["distance"].median() <= 5
    q = v.random_distribution
    assert q[q.index <= 5].sum() < 0.01
    assert v.nonrandom_share > 0.95
    assert intruder_linkage(x, y, seed=1).correct_rate > 0.9
    # with noise sd 0.1% of sd nearly every original links at distance 0-2
    y_tiny = x + rng.normal(scale=0.001, size=x.shape)
    d = verify_linkage(x, y_tiny, null="independent", n_random=2_000, n_null=5,
                       seed=1).records["distance"]
    assert (d <= 2).mean() > 0.9


def test_section_5_2_large_noise_is_plausibly_random():
    rng, x = _normal(1000, 3, 1)
    y = x + rng.normal(scale=1.0, size=x.shape)  # noise variance = the attribute's variance
    v = verify_linkage(x, y, null="independent", n_random=20_000, n_null=50, seed=2)
    assert v.hellinger < 0.2
    assert v.hellinger < v.hellinger_null + 0.05
    assert v.nonrandom_share < 0.1


def test_copula_null_clears_synthetic_data_and_flags_noise():
    # n = 1000, m = 4, correlation 0.5 (DESIGN.md section 3). Synthetic data from a
    # multivariate normal fitted to X carries no link: under the copula null its p-value is
    # (roughly uniform and) not small; additive noise of 1% variance stays linkable (p = 0);
    # the paper's independent null wrongly flags the synthetic release (p = 0, H ~ 0.3).
    p_synthetic = []
    for seed in range(4):
        rng, x = _normal(1000, 4, 10 + seed, rho=0.5)
        synthetic = pd.DataFrame(
            rng.multivariate_normal(x.mean().to_numpy(), x.cov().to_numpy(), size=len(x)),
            columns=x.columns)
        noisy = x + rng.normal(scale=0.1, size=x.shape)
        # 40 replicates estimate p well enough here (p = 0 stays 0; a decision at p = 0 would take 173)
        kw = dict(n_random=20_000, max_replicates=40, seed=seed)
        cop = verify_linkage(x, synthetic, **kw)
        # the finite-sample floor: for K bins, E[H^2] ~ (K - 1)/8 (1/n + 1/|Q|), |Q| = 10,000
        floor = np.sqrt((cop.bins - 1) / 8 * (1 / 1000 + 1 / 10_000))
        assert 20 <= cop.bins <= 40 and abs(cop.hellinger_null - floor) < 0.15 * floor
        p_synthetic.append(cop.p_value)
        assert verify_linkage(x, noisy, **kw).p_value == 0.0
        indep = verify_linkage(x, synthetic, null="independent", **kw)
        assert indep.p_value == 0.0
        assert indep.hellinger > indep.hellinger_null + 0.05
    assert min(p_synthetic) > 0.05
    assert np.mean(p_synthetic) > 0.2


def test_copula_random_set_keeps_marginals_and_dependence():
    rng, x = _normal(2000, 2, 5, rho=0.8)
    pos, exhaustive = random_positions(x.to_numpy(), "copula", 50_000, 0, rng)
    assert not exhaustive
    # marginals: positions in the sorted column are uniform on 0..n-1 (each decile ~ 10%)
    deciles = np.bincount(pos[:, 0] * 10 // 2000, minlength=10) / len(pos)
    assert np.abs(deciles - 0.1).max() < 0.01
    # dependence: Spearman correlation of T close to that of X
    rho_t = pd.DataFrame(pos).corr(method="spearman").iloc[0, 1]
    rho_x = x.corr(method="spearman").iloc[0, 1]
    assert rho_t == pytest.approx(rho_x, abs=0.02)
    # a constant column is independent of the rest and the matrix stays a correlation matrix
    corr = copula_correlation(np.column_stack([x.to_numpy(), np.ones(2000)]))
    assert corr[2, :2] == pytest.approx([0, 0], abs=1e-6) and np.diag(corr) == pytest.approx(1)


def test_verify_subject_by_hand():
    # Her record (2, 2) against Y4: r = (2, 2), nearest released rank vectors (2, 3) and
    # (3, 1) at distance 1; variances of ranks 1..3: a 0.548889, b 0.615556.
    s = verify_subject({"a": "2", "b": 2.0}, Y4, ties="first")
    assert s.distance == 1 and s.matches == (1, 2)
    assert s.variances.to_dict() == pytest.approx({"a": 0.548889, "b": 0.615556}, abs=1e-6)
    assert s.p_random is None and s.plausibly_random is None
    assert s.to_dict()["record"] == {"a": 2.0, "b": 2.0}


def test_verify_subject_pure_permutation():
    rng, x = _normal(2000, 3, 7)
    # independent column-wise shuffles carry no link: p_random is about uniform, so about
    # 95% of subjects find their match plausibly random (binomial sd 0.03 for 60 subjects)
    shuffled = pd.DataFrame({c: rng.permutation(x[c].to_numpy()) for c in x.columns})
    results = [verify_subject(x.iloc[i], shuffled, permutation=True, n_random=2_000,
                              seed=i) for i in range(60)]
    assert np.mean([r.plausibly_random for r in results]) >= 0.85
    # the identity "release": she is found at distance 0, which random records almost never hit
    exposed = verify_subject(x.iloc[0], x, permutation=True, n_random=5_000, seed=0)
    assert exposed.distance == 0 and exposed.matches == (0,)
    assert exposed.p_random < 0.01 and exposed.plausibly_random is False


def test_verify_subject_ordinal_record():
    released = pd.DataFrame({"grade": pd.Categorical(["low", "high", "mid", "mid"],
                                                     categories=["low", "mid", "high"],
                                                     ordered=True),
                             "age": [20, 50, 30, 40]})
    # grade "mid" has ranks 2..3 (lowest 2), age 31 is closest to 30 (rank 2): r = (2, 2);
    # released ranks (ties first): (1, 1), (4, 4), (2, 2), (3, 3) -> record 2 at distance 0
    s = verify_subject({"grade": "mid", "age": "31"}, released, ties="first")
    assert s.distance == 0 and s.matches == (2,)


def test_subject_sees_what_the_protector_sees():
    # a subject's own computation (her record only) gives the protector's d(x) and matches
    from sdckit.permutation import permutation_distances

    rng = np.random.default_rng(4)
    x = pd.DataFrame(rng.integers(0, 8, (40, 3)).astype(float), columns=list("abc"))
    y = pd.DataFrame(rng.integers(0, 8, (35, 3)).astype(float), columns=list("abc"))
    protector = permutation_distances(x, y, ties="first")
    for i in range(0, 40, 7):
        s = verify_subject(x.iloc[i], y, ties="first")
        assert (s.distance, s.matches) == (protector["distance"][i], protector["matches"][i])
