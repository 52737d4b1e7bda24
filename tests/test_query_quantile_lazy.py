"""Permute-and-flip read lazily (issue 32, line 3 latency): the exact Binomial(m, exp(-w)) by
comparison with exp(-w)'s binary expansion, the two paths of permute-and-flip (in the visiting
order and by groups) against the exact law, and the cube's lazy cumulative histograms
(``HistCube.belows``) equal to the whole histograms at every point, in every form.

Laws are checked by chi-square at level 1e-3 against probabilities computed independently
(scipy's binomial pmf; permute-and-flip's ``p_j int_0^1 prod_{i != j} (1 - p_i t) dt`` by
Gauss-Legendre), never against the code's earlier draws.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from sdckit.dp.binomial_kernel import binomial_by_bits
from sdckit.dp.exact_samplers import bernoulli_exp_neg_int, binomial_exp_neg_int, exp_neg_int_words
from sdckit.query import histcube, quantiles
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.grid import QUANTILE_GRID, Below, cumulative
from sdckit.query.histcube import HistCube


def _exp_neg_floor(w: int, bits: int) -> int:
    """floor(exp(-w) 2**bits) from the alternating series, exactly (Fractions)."""
    total, term, k = Fraction(1), Fraction(1), 0
    while True:
        k += 1
        term = term * -w / k
        low, high = sorted((total, total + term))
        if k > w and (low.numerator << bits) // low.denominator == (high.numerator << bits) // high.denominator:
            return (low.numerator << bits) // low.denominator
        total += term


@pytest.mark.parametrize("w", [1, 2, 7, 30, 64, 65])
def test_the_words_of_exp_neg_w_are_its_binary_expansion(w):
    words = exp_neg_int_words(w, 3)
    assert sum(x << (64 * (2 - i)) for i, x in enumerate(words)) == _exp_neg_floor(w, 192)
    assert exp_neg_int_words(w, 1) == words[:1]


@pytest.mark.parametrize("m, w", [(6, 1), (40, 3), (2000, 6)])
def test_the_binomial_by_bits_has_the_binomial_law(m, w):
    """Binomial(m, exp(-w)) against scipy's pmf (outcomes of expected count below 5 pooled),
    4,000 draws, with a second group in the same call (each group its own law)."""
    rng = np.random.default_rng(m)
    draws = np.array([binomial_exp_neg_int(np.array([m, 5]), np.array([w, 1]), rng) for _ in range(4000)])
    for column, (size, whole) in enumerate([(m, w), (5, 1)]):
        law = stats.binom(size, math.exp(-whole))
        support = np.arange(size + 1)
        expected = law.pmf(support) * draws.shape[0]
        big = expected >= 5
        observed = np.bincount(draws[:, column], minlength=size + 1)
        cells_o = np.append(observed[big], observed[~big].sum())
        cells_e = np.append(expected[big], expected[~big].sum())
        keep = cells_e > 0
        assert stats.chisquare(cells_o[keep], cells_e[keep] * cells_o.sum() / cells_e[keep].sum()).pvalue > 1e-3


def test_the_kernel_asks_for_more_words_and_gives_the_same_counts_from_the_same_ones():
    counts, pwords = np.array([300, 7]), np.array([exp_neg_int_words(1, 2), exp_neg_int_words(2, 2)], np.uint64)
    pool = np.random.default_rng(1).integers(0, 2**64 - 1, 200, dtype=np.uint64, endpoint=True)
    out = np.zeros(2, np.int64)
    assert binomial_by_bits(counts, pwords, pool[:2], out) == -1  # 300 reals need more than 128 bits
    used = binomial_by_bits(counts, pwords, pool, out)
    again = np.zeros(2, np.int64)
    assert 0 < used <= 200 and binomial_by_bits(counts, pwords, pool[:used], again) == used
    assert np.array_equal(out, again)
    assert binomial_by_bits(counts, pwords[:, :0], pool, out) == -2  # no bits of p: ask for more
    with pytest.raises(ValueError, match="wholes"):
        binomial_exp_neg_int(np.array([3]), np.array([0]), np.random.default_rng(0))


def test_bernoulli_exp_neg_int_has_its_law():
    """exp(-w) for w = 0 .. 3 in one call, 20,000 draws each: every count within 4.5 binomial
    standard deviations (w = 0 always)."""
    rng = np.random.default_rng(6)
    draws = rng.permutation(np.repeat(np.arange(4), 20_000))
    hits = bernoulli_exp_neg_int(draws, rng)
    assert hits[draws == 0].all()
    for w in range(1, 4):
        p, got = math.exp(-w), int(hits[draws == w].sum())
        assert abs(got - 20_000 * p) <= 4.5 * math.sqrt(20_000 * p * (1 - p)), w


class _Scripted:
    """A generator whose uniform 64-bit integers are given in order: a vector, then one at a time."""

    def __init__(self, first: list[int], then: list[int]) -> None:
        self.first, self.then = first, list(then)

    def integers(self, low, high, size=None, dtype=None, endpoint=False):
        assert (low, high, dtype, endpoint) == (0, 2**64 - 1, np.uint64, True)
        return np.array(self.first, dtype=np.uint64) if size is not None else np.uint64(self.then.pop(0))


def test_bernoulli_exp_neg_int_settles_a_tie_by_the_next_words():
    """exp(-3): element 0 ties word 0, then draws below word 1 (true); element 1 is above word 0
    (false). exp(-64) < 2**-64, its word 0 is 0: element 2 ties it, then ties word 1, then draws
    above word 2 (false); exp(0): element 3 true whatever its word."""
    three, big = exp_neg_int_words(3, 2), exp_neg_int_words(64, 3)
    assert big[0] == 0 and big[1] > 0
    rng = _Scripted([three[0], three[0] + 1, 0, 2**64 - 1], [three[1] - 1, big[1], big[2] + 1])
    assert bernoulli_exp_neg_int(np.array([3, 3, 64, 0]), rng).tolist() == [True, False, False, True]
    assert rng.then == []


def _law(below: np.ndarray, n: int, q: float, epsilon: float, k: int) -> np.ndarray:
    """Permute-and-flip's exact law from its coins (computed here from the docstring's formula)."""
    d = 2**quantiles.Q_BITS
    distance = np.abs(d * below - round(q * d) * n).astype(float)
    eps = math.floor(epsilon * 2**20) / 2**20
    target = round(q * d)
    coins = np.exp(-eps * (distance - distance.min()) / (2 * k * max(target, d - target)))
    nodes, weights = np.polynomial.legendre.leggauss(200)
    t, w = (nodes + 1) / 2, weights / 2
    log_all = np.log1p(-np.outer(t, np.minimum(coins, 1 - 1e-15))).sum(axis=1)
    law = np.array([coins[j] * np.sum(w * np.exp(log_all - np.log1p(-min(coins[j], 1 - 1e-15) * t)))
                    for j in range(coins.size)])
    law[coins >= 1] = [np.sum(w * np.exp(log_all - np.log1p(-(1 - 1e-15) * t)))] * int((coins >= 1).sum())
    return law / law.sum()


@pytest.mark.parametrize("visit_from", [0, 10**9])  # every query in the visiting order / by groups
@pytest.mark.parametrize("points, q, epsilon", [(257, 0.5, 0.03), (257, 1.0, 0.03), (257, 0.0, 0.03),
                                                (41, 0.5, 0.3), (41, 1.0, 0.2)])
def test_both_paths_have_permute_and_flips_exact_law(monkeypatch, visit_from, points, q, epsilon):
    """300 records (5 piled at the upper bound) on a grid of 256 bins (blocks of 64 points, the
    last alone: near the best blocks of bound 0 and 1, flipped whole, further ones of bound 2 and
    3, by groups) or of 40 (one point a block: exact whole parts, groups of several points); the
    epsilon makes the coins fall by about e over a block (a few points of the small grid), so
    that groups with a Binomial above 0, their uniform subsets and second factors take part;
    1,200 draws of each path against the exact law (outcomes of expected count below 5 pooled)."""
    monkeypatch.setattr(quantiles, "VISIT_FROM", visit_from)
    rng = np.random.default_rng(points)
    values = np.concatenate([rng.integers(0, points - 1, 295), np.full(5, points - 2)])
    below = np.array([np.sum(values < c) for c in range(points)])
    law = _law(below, 300, q, epsilon, 1)
    draws = np.bincount([quantiles.permute_and_flip(below, 300, q, epsilon, 1, rng) for _ in range(1200)],
                        minlength=points)
    expected = law * draws.sum()
    big = expected >= 5
    assert big.sum() >= 5
    cells_o = np.append(draws[big], draws[~big].sum())
    cells_e = np.append(expected[big], expected[~big].sum())
    assert stats.chisquare(cells_o, cells_e).pvalue > 1e-3


def _table(tmp_path, weighted: bool) -> Database:
    rng = np.random.default_rng(9)
    n = 3000
    v = rng.integers(0, 40, n) * 25 + 0.5 if weighted else rng.random(n) * 1000  # weighted: many records per bin
    v[:300] = 1000.0  # a pile at the upper bound (reals: v is no cube key)
    pd.DataFrame({"pid": range(n), "region": rng.choice(["N", "S", "E", "W"], n), "g": rng.integers(0, 7, n),
                  "v": v}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     '[table.bounds]\nv = [0, 1000]\n[table.domains]\nregion = ["N", "S", "E", "W"]\n'
                                     'g = [0, 1, 2, 3, 4, 5, 6]\n', encoding="utf-8")
    return Database(load_config(tmp_path / "s.toml"))


@pytest.fixture(scope="module", params=[False, True], ids=["one-per-pair", "weighted"])
def hist_forms(request, tmp_path_factory):
    """v's histograms over the cube rows (with ``SORT_PAIRS`` 16, so that a block table is
    built for these 3,000 records): sparse with the block table as built (about 64 pairs a block)
    and of 64 or 128 blocks, sparse without one, and cumulative; by name, the ``SORT_PAIRS`` to
    read them with (16: the block table or the whole histograms; 2**12: the selected pairs sorted)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(histcube, "SORT_PAIRS", 16)
        db = _table(tmp_path_factory.mktemp("lazy"), request.param)
    try:
        built = db.moments["t"].bins["v"]
        assert built.form == "sparse" and built.blocks is not None and built.blocks.shape[1] - 1 >= 64
        assert (built.records is not None) == request.param
        plain = dataclasses.replace(built, blocks=None, block_records=None, block_bins=None, block_weights=None)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(histcube, "SORT_PAIRS", 16)
            few = plain.with_blocks(65 * (plain.order.size + 1) * 4 * 2 + plain.bins.size * 8)
        assert few.blocks is not None and few.blocks.shape[1] - 1 in (64, 128)
        dense = HistCube.build(db._con, db.cubes["t"], "v", dense_share=0.0)
        assert dense.form == "cumulative"
        yield {"built": (built, 16), "few": (few, 16), "plain": (plain, 16), "sorted": (plain, 2**12),
               "dense": (dense, 16)}
    finally:
        db.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_cells=st.sampled_from([1, 3, 256]), share=st.floats(0.05, 1.0))
def test_lazy_belows_are_the_whole_histograms_at_every_point(hist_forms, seed, n_cells, share):
    """On a random selection and assignment of the cube rows to cells, each form's lazy
    ``below`` (``HistCube.belows``) equals the cumulative histogram of ``HistCube.histograms`` at
    every point of the cell's grid (2**18, 2**16 or 1024 bins: blocks of 64, 16 or 1 points), and
    its search equals numpy's searchsorted on it for random values, both sides."""
    rng = np.random.default_rng(seed)
    size = max(QUANTILE_GRID // 2 ** math.ceil(math.log2(n_cells)), 1024)
    for name, (hist, sort_pairs) in hist_forms.items():
        keep = rng.random(hist.order.size) < share
        cell = rng.integers(0, n_cells, hist.order.size)
        whole = hist.histograms(keep, cell, n_cells, size)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(histcube, "SORT_PAIRS", sort_pairs)
            lazy = hist.belows(keep, cell, n_cells, size)
        for c in range(n_cells) if n_cells < 10 else rng.choice(n_cells, 4, replace=False):
            truth = cumulative(whole[c], size)
            assert lazy[c].points == size + 1 and lazy[c].total == truth[-1], name
            order = rng.permutation(size + 1)
            assert np.array_equal(lazy[c].at(order), truth[order]), name
            values = np.concatenate([rng.integers(-2, truth[-1] + 3, 200), truth[rng.integers(0, size + 1, 50)]])
            for side in ("left", "right"):
                assert np.array_equal(lazy[c].search(values, side), np.searchsorted(truth, values, side)), (name, side)


def test_an_array_below_reads_as_its_blocks():
    """``Below`` of a whole array: blocks of 64 points when the bins are a multiple of 64, of one
    point otherwise; at and search as numpy's."""
    rng = np.random.default_rng(2)
    for points in (129, 6):
        values = np.cumsum(rng.integers(0, 3, points))
        below = Below(values)
        assert below.step == (64 if points == 129 else 1) and below.total == values[-1]
        assert np.array_equal(below.at(np.arange(points)[::-1]), values[::-1])
        probe = np.arange(-1, values[-1] + 2)
        assert np.array_equal(below.search(probe, "right"), np.searchsorted(values, probe, "right"))


@pytest.mark.parametrize("n_cells", [1, 3, 256])
def test_every_form_gives_the_same_answers_under_one_seed(hist_forms, n_cells):
    """Permute-and-flip reads its segments of 64 points however ``below`` is held (the block
    table's blocks of 64 pairs, 16 points or 4096, the sorted pairs, the cumulative form, the
    whole array the scan gives): from one seed, the same answers for the median, MIN, MAX and the
    0.9-quantile at epsilon 0.01 and 1, on each cell of a random selection."""
    rng = np.random.default_rng(n_cells)
    size = max(QUANTILE_GRID // 2 ** math.ceil(math.log2(n_cells)), 1024)
    first = next(iter(hist_forms.values()))[0]
    keep, cell = rng.random(first.order.size) < 0.6, rng.integers(0, n_cells, first.order.size)
    cells = range(n_cells) if n_cells < 10 else rng.choice(n_cells, 3, replace=False).tolist()
    answers = {}
    for name, (hist, sort_pairs) in hist_forms.items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(histcube, "SORT_PAIRS", sort_pairs)
            lazy = hist.belows(keep, cell, n_cells, size)
        whole = hist.histograms(keep, cell, n_cells, size)
        for source, belows in (("lazy", lazy), ("whole", [Below(cumulative(h, size)) for h in whole])):
            draws = np.random.default_rng(99)
            answers[name, source] = [quantiles.permute_and_flip(belows[c], belows[c].total, q, eps, 2, draws)
                                     for c in cells for q in (0.5, 0.0, 1.0, 0.9) for eps in (0.01, 1.0)]
    assert len({tuple(a) for a in answers.values()}) == 1, answers


@pytest.mark.parametrize("n_cells, size", [(1, QUANTILE_GRID), (3, QUANTILE_GRID // 4), (3, 1024)])
def test_the_coins_bounds_from_each_forms_lazy_below_hold_at_every_point(hist_forms, n_cells, size):
    """(Review of issue 32.) Each form's lazy ``below`` gives :class:`quantiles.Coins` its blocks'
    first points (``coarse``) equal to the whole histogram's, and bounds at most every grid
    point's whole part ``floor(x_j / den)``, the exponents computed here from the whole histogram
    (``x_j = min(|D below_j - t n| - best, cap) eps_num``, ``den = 2**21 k max(t, D - t)``), for
    the median, MIN, MAX and the 0.9-quantile at epsilon 0.01, 1 and 30 (k = 2)."""
    rng = np.random.default_rng(5 + size)
    first = next(iter(hist_forms.values()))[0]
    keep, cell = rng.random(first.order.size) < 0.6, rng.integers(0, n_cells, first.order.size)
    cells = range(n_cells)
    d, k, tight = 2**quantiles.Q_BITS, 2, []
    for name, (hist, sort_pairs) in hist_forms.items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(histcube, "SORT_PAIRS", sort_pairs)
            lazy = hist.belows(keep, cell, n_cells, size)
        whole = hist.histograms(keep, cell, n_cells, size)
        for c in cells:
            truth = cumulative(whole[c], size)
            assert np.array_equal(lazy[c].coarse, truth[:: lazy[c].step]), name
            n = int(truth[-1])
            for q in (0.5, 0.0, 1.0, 0.9):
                t = round(q * d)
                gap = np.abs(d * truth - t * n)
                gap -= gap.min()
                for eps in (0.01, 1.0, 30.0):
                    eps_num = math.floor(eps * 2**20)
                    den = 2**21 * k * max(t, d - t)
                    cap = -(-64 * den // eps_num)
                    wholes = np.minimum(gap, cap) * eps_num // den
                    coins = quantiles.Coins(lazy[c], n, q, eps, k)
                    bound = coins.bound[coins.segment(np.arange(size + 1))]
                    assert coins.den == den and (bound >= 0).all() and (bound <= wholes).all(), (name, q, eps)
                    tight.append(float(np.mean(bound == wholes)))
    assert np.mean(tight) > 0.5  # (most points' bound is their whole part: the check bites)
