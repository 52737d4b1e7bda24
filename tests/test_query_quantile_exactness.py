"""Review of permute-and-flip's exact coins (issue 32): every piece against an oracle computed
here, independently of the code, with high-power tests.

* The first factor's bound ``w`` of each segment is at most every point's whole part
  ``floor(x_j / den)`` (hypothesis, exponents computed from the whole histogram), and the second
  factor's exponent is exactly ``x_j - w den`` (so the product is the stated coin).
* ``exp(-w)``'s words are its binary expansion (``decimal``, 80 digits past those compared), as used by
  ``bernoulli_exp_neg_int`` (its first word and the words settling ties).
* ``binomial_exp_neg_int``'s law: 200,000 draws per ``(m, w)`` against the Binomial pmf in
  ``decimal``, a G-test at level 1e-4; its retries (pool exhausted, words of ``exp(-w)``
  exhausted) give the counts of one long pool.
* Lazily drawn orders and subsets (the part of ``visiting_order`` a small grid never reaches).
* The whole mechanism, both paths forced (the groups' from a lazy ``below`` in other blocks),
  against the exact law
  ``P(j) = p_j int_0^1 prod_{i != j} (1 - p_i t) dt`` (McKenna & Sheldon 2020) expanded as a
  polynomial in ``decimal`` (120 digits), G-test at level 1e-4.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from sdckit.dp.binomial_kernel import binomial_by_bits
from sdckit.dp.exact_samplers import bernoulli_exp_neg_int, binomial_exp_neg_int, exp_neg_int_words
from sdckit.query import quantiles
from sdckit.query.grid import Below, BlockBelow, cumulative

D = 2**16
LEVEL = 1e-4


# ---------------------------------------------------------------- oracles (from the docstrings)
def exponents(below: np.ndarray, n: int, q: float, epsilon: float, k: int) -> tuple[list[int], int]:
    """``(x, den)``: coin ``j`` is exp(-x_j / den) = exp(-eps' min(u* - u_j, cap) / (2 Delta)), from
    the whole histogram in Python integers: ``u_j = -|D below_j - round(q D) n|``, ``eps'`` the
    epsilon rounded down to a multiple of 2**-20, ``Delta = k max(t, D - t)``, clipped at exponent 64."""
    t = int(round(q * D))
    v = [D * int(b) - t * n for b in below]
    best = min(abs(x) for x in v)
    eps_num = math.floor(epsilon * 2**20)
    den = 2 * 2**20 * k * max(t, D - t)
    cap = -(-64 * den // eps_num)
    return [min(abs(x) - best, cap) * eps_num for x in v], den


def exact_law(x: list[int], den: int) -> list[float]:
    """Permute-and-flip's law with coins exp(-x_j / den): ``p_j int_0^1 prod_{i != j}(1 - p_i t) dt``,
    the product expanded as a polynomial, in 120-digit decimals (the alternating coefficients
    cancel: far more digits than lost)."""
    with localcontext() as ctx:
        ctx.prec = 120
        p = [(-(Decimal(xj) / Decimal(den))).exp() for xj in x]
        poly = [Decimal(1)]  # coefficients of prod (1 - p_i t), lowest first
        for pi in p:
            poly = [a - pi * b for a, b in zip(poly + [Decimal(0)], [Decimal(0)] + poly)]
        law, cache = [], {}
        for pj in p:
            if pj not in cache:
                # divide by (1 - pj t): c_0 = a_0, c_i = a_i + pj c_{i-1}
                c, quotient = Decimal(0), []
                for a in poly[:-1]:
                    c = a + pj * c
                    quotient.append(c)
                cache[pj] = pj * sum(ci / (i + 1) for i, ci in enumerate(quotient))
            law.append(cache[pj])
        total = sum(law)
        return [float(a / total) for a in law]


def g_test(observed: np.ndarray, probabilities: np.ndarray) -> float:
    """The G-test's p-value of ``observed`` counts against ``probabilities`` (cells of expected
    count below 5 pooled into one)."""
    expected = np.asarray(probabilities, float) * observed.sum()
    big = expected >= 5
    cells_o = np.append(observed[big], observed[~big].sum())
    cells_e = np.append(expected[big], expected[~big].sum())
    keep = cells_e > 0
    assert cells_o[~keep].sum() == 0  # nothing observed where the law puts (numerically) nothing
    cells_o, cells_e = cells_o[keep], cells_e[keep]
    return float(stats.power_divergence(cells_o, cells_e * cells_o.sum() / cells_e.sum(),
                                        lambda_="log-likelihood").pvalue)


# ---------------------------------------------------------------- (1) the segments' bounds
class _Reading(BlockBelow):
    """A lazy ``below`` (as the cube's) read off a whole array in blocks of ``step``."""

    def __init__(self, values: np.ndarray, step: int) -> None:
        super().__init__(values.size, step, values[::step], lambda ts: values[ts[:, None] * step + np.arange(step)])


@st.composite
def histograms(draw):
    points = draw(st.sampled_from([2, 3, 5, 17, 33, 64, 65, 66, 129, 193, 257]))
    bins = points - 1
    n = draw(st.integers(0, 60))
    where = draw(st.sampled_from(["uniform", "low", "high", "ends", "one"]))
    if where == "uniform":
        values = draw(st.lists(st.integers(0, bins - 1), min_size=n, max_size=n))
    elif where == "low":
        values = [min(v, bins - 1) for v in draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))]
    elif where == "high":
        values = [max(bins - 1 - v, 0) for v in draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))]
    elif where == "ends":
        values = draw(st.lists(st.sampled_from([0, bins - 1]), min_size=n, max_size=n))
    else:
        values = [draw(st.integers(0, bins - 1))] * n
    below = np.array([sum(v < c for v in values) for c in range(points)], dtype=np.int64)
    q = draw(st.sampled_from([0.0, 0.5, 1.0, 0.25, 0.9]) | st.floats(0.0, 1.0))
    k = draw(st.integers(1, 4))
    epsilon = draw(st.sampled_from([2**-20, 0.001, 0.05, 0.3, 1.0, 3.0, 40.0]) | st.floats(2**-19, 50.0))
    form = draw(st.sampled_from(["array", "sparse", "lazy"]))
    if form == "sparse":
        nonempty = np.flatnonzero(np.diff(below))
        below_form = Below(cumulative((nonempty, np.diff(below)[nonempty]), bins))
    elif form == "lazy":
        steps = [s for s in (1, 2, 32, 64, 128) if bins % s == 0]
        below_form = _Reading(below, draw(st.sampled_from(steps)))
    else:
        below_form = Below(below)
    return below, below_form, n, q, epsilon, k


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histograms())
def test_every_segments_bound_is_at_most_every_points_whole_part(case):
    """Grids of 1 .. 256 bins (segments of 64 points and the last alone, or of one point), records
    spread, piled low / high / at both ends / on one bin, or none; q 0, 0.5, 1 or any; k 1 .. 4;
    epsilon 2**-20 .. 50 (clipped exponents); ``below`` whole, from a sparse histogram, or lazy
    in blocks of 1 .. 128: the segments partition the grid, every point's segment bound ``w``
    satisfies ``0 <= w den <= x_j``, and the second factor is flipped with exponent ``x_j - w den``."""
    below, below_form, n, q, epsilon, k = case
    x, den = exponents(below, n, q, epsilon, k)
    coins = quantiles.Coins(below_form, n, q, epsilon, k)
    points = below.size
    assert coins.den == den
    # the segments partition the grid, and segment() names each point's
    assert quantiles.spans(coins.first, coins.length).tolist() == list(range(points))
    seg = coins.segment(np.arange(points))
    assert np.array_equal(seg, np.repeat(np.arange(coins.first.size), coins.length))
    w = coins.bound[seg].tolist()
    assert all(0 <= wj and wj * den <= xj for wj, xj in zip(w, x)), "a segment's bound exceeds a point's exponent"
    # the second factor's exponent is exactly x_j - w den (captured where the code flips it)
    seen = []
    real = quantiles.bernoulli_exp_neg_streak

    def spy(num, d, rng):
        seen.append((np.asarray(num).copy(), d))
        return real(num, d, rng)

    quantiles.bernoulli_exp_neg_streak = spy
    try:
        js = np.arange(points)
        coins.second(js, coins.bound[seg], np.random.default_rng(0))
    finally:
        quantiles.bernoulli_exp_neg_streak = real
    (num, d), = seen
    assert d == den and [int(a) + wj * den for a, wj in zip(num, w)] == x


def test_the_bound_is_tight_where_it_can_be_and_the_best_segment_is_flipped_whole():
    """Hand-worked: 20 records, 10 at bin 10 and 10 at bin 30 of 128 bins, the median at
    epsilon 0.3: the best points (11 .. 30, |v| = 0) in segment 0 (v from -10 D to +10 D: bound
    0); points 64 .. 128 have below = 20, gap 10 D, exponent 0.3 * 10 = 3: bound 3."""
    below = np.array([0] * 11 + [10] * 20 + [20] * 98)
    coins = quantiles.Coins(Below(below), 20, 0.5, 0.3, 1)
    assert coins.first.tolist() == [0, 64, 128] and coins.length.tolist() == [64, 64, 1]
    assert coins.bound.tolist() == [0, 2, 2]  # floor(3 * floor(0.3 * 2**20) / (0.3 * 2**20)) = 2 (rounded down)


# ---------------------------------------------------------------- (2) exp(-w)'s words
def _decimal_words(w: int, count: int) -> list[int]:
    with localcontext() as ctx:
        ctx.prec = 80 + 20 * count + w  # digits: 64 count bits (19.3 count digits) past exp(-w)'s leading ones
        scaled = (-Decimal(w)).exp() * (Decimal(2) ** (64 * count))
        whole = int(scaled)
        assert Decimal(10) ** -40 < scaled - whole < 1 - Decimal(10) ** -40  # far from a carry
    return [(whole >> (64 * (count - 1 - i))) & (2**64 - 1) for i in range(count)]


def test_the_words_of_exp_neg_w_are_its_expansion_for_w_1_to_100():
    for w in range(1, 101):
        want = _decimal_words(w, 10)
        for count in (1, 2, 3, 5, 10):
            assert list(exp_neg_int_words(w, count)) == want[:count], (w, count)


class _Scripted:
    """A generator whose uniform 64-bit integers are given in order: each vector draw takes the
    next ``size`` of ``stream``, each scalar draw the next one."""

    def __init__(self, stream: list[int]) -> None:
        self.stream, self.at = [int(s) for s in stream], 0

    def integers(self, low, high, size=None, dtype=None, endpoint=False):
        assert (low, high, dtype, endpoint) == (0, 2**64 - 1, np.uint64, True)
        if size is None:
            self.at += 1
            return np.uint64(self.stream[self.at - 1])
        self.at += int(size)
        assert self.at <= len(self.stream), "the script ran out"
        return np.array(self.stream[self.at - size:self.at], dtype=np.uint64)


def test_bernoulli_exp_neg_int_compares_with_the_decimal_words_for_w_1_to_100():
    """Per w: a uniform word one below / one above word 0 (when they exist), a tie on word 0 then
    one below word 1, a tie on words 0 and 1 then one above word 2: the outcomes of U < exp(-w)."""
    for w in range(1, 101):
        p = _decimal_words(w, 3)
        wholes, first, then, want = [], [], [], []
        if p[0] > 0:
            wholes.append(w), first.append(p[0] - 1), want.append(True)
        if p[0] < 2**64 - 1:
            wholes.append(w), first.append(p[0] + 1), want.append(False)
        if p[1] > 0:
            wholes.append(w), first.append(p[0]), then.append(p[1] - 1), want.append(True)
        if p[2] < 2**64 - 1:
            wholes.append(w), first.append(p[0]), then.extend([p[1], p[2] + 1]), want.append(False)
        rng = _Scripted(first + then)
        assert bernoulli_exp_neg_int(np.array(wholes), rng).tolist() == want, w
        assert rng.at == len(first) + len(then)


# ---------------------------------------------------------------- (3) the binomial
def _binomial_pmf(m: int, w: int) -> np.ndarray:
    with localcontext() as ctx:
        ctx.prec = 60
        p = (-Decimal(w)).exp()
        return np.array([float(math.comb(m, i) * p**i * (1 - p) ** (m - i)) for i in range(m + 1)])


def _binomial_draws(m: int, w: int, draws: int, seed: int) -> np.ndarray:
    rng, out = np.random.default_rng(seed), []
    chunk = max(1, min(draws, 2_000_000 // m))
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        out.append(binomial_exp_neg_int(np.full(size, m), np.full(size, w), rng))
    return np.concatenate(out)


def _check_binomial(m: int, w: int, draws: int) -> float:
    got = _binomial_draws(m, w, draws, seed=1000 * m + w)
    pvalue = g_test(np.bincount(got, minlength=m + 1), _binomial_pmf(m, w))
    assert pvalue > LEVEL, (m, w, pvalue)
    return pvalue


@pytest.mark.parametrize("w", [1, 2, 5])
@pytest.mark.parametrize("m", [1, 2, 7, 64, 1000])
def test_the_binomial_has_its_law_200000_draws(m, w):
    """200,000 draws of Binomial(m, exp(-w)) (each a group of one call: their bits are read one
    after the other from one pool) against the pmf in 60-digit decimals, G-test at level 1e-4."""
    _check_binomial(m, w, 200_000)


def test_the_binomial_groups_of_one_call_have_each_their_law():
    """Groups of different (m, w), interleaved in one call: each its own law (50,000 draws each)."""
    rng = np.random.default_rng(77)
    pattern = [(3, 1), (64, 2), (1, 5), (20, 3)]
    counts = np.tile([m for m, _ in pattern], 50_000)
    wholes = np.tile([w for _, w in pattern], 50_000)
    got = binomial_exp_neg_int(counts, wholes, rng).reshape(-1, len(pattern))
    for column, (m, w) in enumerate(pattern):
        assert g_test(np.bincount(got[:, column], minlength=m + 1), _binomial_pmf(m, w)) > LEVEL, (m, w)


def _reversed_word(bits: list[int]) -> int:
    """The word whose bits read least significant first (as the kernel reads) are ``bits``."""
    return sum(b << i for i, b in enumerate(bits))


def _expansion_bits(w: int, count: int) -> list[int]:
    words = _decimal_words(w, count)
    return [(word >> (63 - i)) & 1 for word in words for i in range(64)]


def test_a_real_tied_past_the_pool_and_past_the_words_is_settled_as_one_long_comparison():
    """m = 1: the real's bits follow exp(-w)'s for 12 words (768 bits: past the 2 words of
    exp(-w) first read, so -2 several times, and past the pool of 10 words, -1), then differ at
    bit 768: the count is 1 exactly when exp(-w)'s bit 768 is 1 (U's is then 0, U < p)."""
    for w in (1, 2, 5):
        bits = _expansion_bits(w, 13)
        stream_bits = bits[:768] + [1 - bits[768]] + [0] * 63
        stream = [_reversed_word(stream_bits[64 * i:64 * i + 64]) for i in range(13)]
        rng = _Scripted(stream + [0] * 200)
        assert binomial_exp_neg_int(np.array([1]), np.array([w]), rng).tolist() == [bits[768]]
        assert rng.at > 10  # the first pool (10 words) ran out


def test_many_reals_tied_past_the_pool_give_the_counts_of_one_long_pool():
    """Group 0's 5 reals stay tied with exp(-2) for 300 steps (1,500 bits: past the first pool of
    19 words, -1, and past the 2 words of exp(-2) first read, -2), the stream built from
    exp(-2)'s bits (a tied real reads p's bit), then random words for it and the other groups:
    the code's counts equal the kernel's on the one long stream with 16 words of each exp(-w)."""
    counts, wholes, tied = np.array([5, 40, 1, 3]), np.array([2, 1, 5, 3]), 300
    bits = _expansion_bits(2, 16)
    head_bits = [b for step in range(tied) for b in [bits[step]] * 5]
    for seed in range(30):
        tail = np.random.default_rng(seed).integers(0, 2**64 - 1, 400, dtype=np.uint64, endpoint=True)
        stream_bits = head_bits + [(int(tail[0]) >> i) & 1 for i in range(64 - len(head_bits) % 64)]
        head = [_reversed_word(stream_bits[64 * i:64 * i + 64]) for i in range(len(stream_bits) // 64)]
        stream = head + [int(t) for t in tail[1:]]
        scripted = _Scripted(stream)
        got = binomial_exp_neg_int(counts, wholes, scripted)
        assert scripted.at > counts.sum() // 16 + 2 * counts.size + 8  # the first pool ran out
        pwords = np.array([_decimal_words(w, 16) for w in wholes.tolist()], dtype=np.uint64)
        once = np.zeros(counts.size, np.int64)
        assert binomial_by_bits(counts, pwords, np.array(stream, dtype=np.uint64), once) > 0
        assert got.tolist() == once.tolist(), seed


# ---------------------------------------------------------------- lazily drawn orders and subsets
def _check_order(draws: int) -> None:
    rng = np.random.default_rng(12)
    size = 12
    triples = np.empty(draws, dtype=np.int64)
    for i in range(draws):
        order = np.concatenate(list(quantiles.visiting_order(size, rng, 1)))
        if i < 200:
            assert sorted(order.tolist()) == list(range(size))
        triples[i] = (order[0] * size + order[1]) * size + order[2]
    counts = np.bincount(triples, minlength=size**3)
    distinct = np.array([a != b and b != c and a != c for a in range(size) for b in range(size) for c in range(size)])
    assert counts[~distinct].sum() == 0
    assert g_test(counts[distinct], np.full(distinct.sum(), 1 / distinct.sum())) > LEVEL


def test_the_lazily_drawn_order_begins_as_a_uniform_permutation():
    """visiting_order(12, first=1) draws its first batches lazily (1, then 2 uniform draws, then
    4 while 4 * batch < 12 ...): its first three points, 1,320 ordered triples, 50,000 orders
    (the slow test: 200,000), uniform (G-test, level 1e-4); every order a permutation."""
    _check_order(50_000)


@pytest.mark.slow
def test_the_lazily_drawn_order_begins_as_a_uniform_permutation_200000():
    _check_order(200_000)


def _check_subsets(draws: int) -> None:
    rng = np.random.default_rng(20)
    for size, count in ((20, 2), (9, 3)):
        keys = []
        for _ in range(draws):
            s = quantiles.uniform_subset(size, count, rng)
            assert s.size == count == np.unique(s).size
            keys.append(int(np.sum(1 << s.astype(np.int64))))
        _, observed = np.unique(keys, return_counts=True)
        assert observed.size == math.comb(size, count)
        assert g_test(observed, np.full(observed.size, 1 / observed.size)) > LEVEL


def test_a_lazily_drawn_subset_is_uniform():
    """uniform_subset(20, 2) (lazy: 4 * 2 < 20) and (9, 3) (a permutation): all C(20, 2) = 190 /
    C(9, 3) = 84 subsets equally likely, 25,000 draws each (the slow test: 100,000), G-test at
    level 1e-4."""
    _check_subsets(25_000)


@pytest.mark.slow
def test_a_lazily_drawn_subset_is_uniform_100000():
    _check_subsets(100_000)


# ---------------------------------------------------------------- (4) the whole mechanism
def _setting(name: str) -> tuple[np.ndarray, int, float, float, int]:
    """Tiny histograms whose coins span bounds 0 .. 5 (flipped whole, and by groups with
    non-trivial second factors): ``(below, n, q, epsilon, k)``."""
    rng = np.random.default_rng(sum(map(ord, name)))
    if name == "median-129":  # 2 segments and the last point; the best in segment 0, segment 1 by groups
        points, q, epsilon, k = 129, 0.5, 0.25, 1
        values = np.concatenate([rng.integers(5, 31, 30), rng.integers(64, 128, 10)])
    elif name == "max-257-k2":  # MAX, k = 2: segments left of the records by groups, one with records
        points, q, epsilon, k = 257, 1.0, 0.4, 2
        values = np.concatenate([rng.integers(100, 128, 5), rng.integers(192, 256, 25)])
    elif name == "min-129":  # MIN: the best at the grid's start, segment 1 by groups
        points, q, epsilon, k = 129, 0.0, 0.4, 1
        values = np.concatenate([np.full(2, 3), rng.integers(20, 128, 25)])
    elif name == "quartile-41":  # one point a segment: exact whole parts, groups of several points
        points, q, epsilon, k = 41, 0.25, 0.5, 1
        values = rng.integers(0, 40, 30)
    else:  # pragma: no cover
        raise KeyError(name)
    below = np.array([np.sum(values < c) for c in range(points)], dtype=np.int64)
    return below, int(below[-1]), q, epsilon, k


def _mechanism_law(name: str, path: str, draws: int) -> float:
    below, n, q, epsilon, k = _setting(name)
    x, den = exponents(below, n, q, epsilon, k)
    law = exact_law(x, den)
    if path == "visiting":
        held = Below(below)
    else:  # a lazy below in blocks other than the coins' segments (read off at its blocks)
        bins = below.size - 1
        held = _Reading(below, 128 if bins % 128 == 0 else 8 if bins % 8 == 0 else 1)
    coins = quantiles.Coins(held, n, q, epsilon, k)
    assert (coins.bound >= quantiles.FLIP_EACH_BELOW).any() and (coins.bound < quantiles.FLIP_EACH_BELOW).any()
    mass = float(np.dot(coins.length, np.exp(-coins.bound.astype(float))))
    rng = np.random.default_rng(sum(map(ord, name + path)))
    if path == "visiting":
        out = [quantiles.flip_visiting(coins, mass, rng) for _ in range(draws)]
    else:
        out = [quantiles.flip_grouped(coins, rng) for _ in range(draws)]
    pvalue = g_test(np.bincount(out, minlength=below.size), np.array(law))
    assert pvalue > LEVEL, (name, path, pvalue)
    return pvalue


def test_the_exact_law_oracle_on_hand_worked_cases():
    """Two coins 1 and p: P(0) = int_0^1 (1 - p t) dt = 1 - p / 2; P(1) = p / 2."""
    law = exact_law([0, 2**20], 2**20)
    p = math.exp(-1)
    assert law == pytest.approx([1 - p / 2, p / 2], abs=1e-15)
    assert exact_law([0, 0, 0], 5) == pytest.approx([1 / 3] * 3, abs=1e-15)


@pytest.mark.parametrize("path", ["visiting", "grouped"])
@pytest.mark.parametrize("name", ["median-129", "quartile-41"])
def test_both_paths_have_the_exact_law_fast(name, path):
    """median-129 (segments of 64) and quartile-41 (groups of non-adjacent one-point segments),
    10,000 draws of each path (the slow test: 100,000 draws, four settings)."""
    _mechanism_law(name, path, 10_000)


def test_permute_and_flip_forced_by_visit_from_takes_each_path(monkeypatch):
    """VISIT_FROM forces the path: 0 the visiting order, 10**9 the groups (both record the call)."""
    below, n, q, epsilon, k = _setting("median-129")
    for visit_from, want in ((0, "visiting"), (10**9, "grouped")):
        calls = []
        monkeypatch.setattr(quantiles, "VISIT_FROM", visit_from)
        for name in ("flip_visiting", "flip_grouped"):
            real = getattr(quantiles, name)
            monkeypatch.setattr(quantiles, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a))
        quantiles.permute_and_flip(below, n, q, epsilon, k, np.random.default_rng(0))
        monkeypatch.undo()
        assert calls == ["flip_" + want]


@pytest.mark.slow
@pytest.mark.parametrize("path", ["visiting", "grouped"])
@pytest.mark.parametrize("name", ["median-129", "max-257-k2", "min-129", "quartile-41"])
def test_both_paths_have_the_exact_law_100000_draws(name, path):
    _mechanism_law(name, path, 100_000)
