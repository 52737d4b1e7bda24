"""The fast exact Bernoulli(exp(-gamma)) coins of permute-and-flip (issue 32,
sdckit.dp.exact_samplers): exp(-1)'s binary expansion against a 80-digit decimal oracle; the
draw's law (frequencies within 5 standard deviations of exp(-gamma), gamma 0 to 70); a tie with
exp(-1)'s first word settled by the next words (a scripted generator)."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from sdckit.dp import exact_samplers
from sdckit.dp.exact_samplers import bernoulli_exp_neg_one, bernoulli_exp_neg_streak


def test_the_words_of_exp_minus_one_are_its_binary_expansion():
    getcontext().prec = 80
    scaled = int(Decimal(-1).exp() * 2**192)  # 192 bits after the point; the 80 digits hold ~265
    assert [exact_samplers._exp_neg_one_word(i) for i in range(3)] == [(scaled >> s) & (2**64 - 1) for s in (128, 64, 0)]


def test_bernoulli_exp_neg_one_has_its_law():
    draws = bernoulli_exp_neg_one(400_000, np.random.default_rng(1))
    p = math.exp(-1)
    assert abs(draws.mean() - p) < 5 * math.sqrt(p * (1 - p) / draws.size)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.0, 1.75, 3.5])
def test_bernoulli_exp_neg_streak_has_its_law(gamma):
    """exp(-num/den) with den = 2**37 (permute-and-flip's denominator for k = 1), the exponent
    gamma; gamma = 0 is always true."""
    den = 2**37
    draws = bernoulli_exp_neg_streak(np.full(200_000, round(gamma * den)), den, np.random.default_rng(2))
    p = math.exp(-gamma)
    assert abs(draws.mean() - p) <= 5 * math.sqrt(p * (1 - p) / draws.size)


def test_large_exponents_and_mixed_ones_in_one_call():
    """Exponents 70 (probability exp(-70): never) beside 0 (always) and 0.5 in one array; an
    array of denominators too."""
    rng = np.random.default_rng(3)
    num = np.tile([70 * 1000, 0, 500], 50_000)
    den = np.full(num.size, 1000)
    draws = bernoulli_exp_neg_streak(num, den, rng).reshape(-1, 3)
    assert not draws[:, 0].any() and draws[:, 1].all()
    p = math.exp(-0.5)
    assert abs(draws[:, 2].mean() - p) < 5 * math.sqrt(p * (1 - p) / 50_000)


class _Scripted:
    """A generator whose uniform 64-bit integers are given in order."""

    def __init__(self, first: list[int], then: list[int]) -> None:
        self.first, self.then = first, list(then)

    def integers(self, low, high, size=None, dtype=None, endpoint=False):
        assert (low, high, dtype, endpoint) == (0, 2**64 - 1, np.uint64, True)
        if size is not None:
            return np.array(self.first, dtype=np.uint64)
        return np.uint64(self.then.pop(0))


def test_a_tie_with_the_first_word_is_settled_by_the_next_words():
    """Element 0 ties word 0 then draws below word 1 (true); element 1 is below word 0 (true);
    element 2 above it (false); element 3 ties words 0 and 1, then draws above word 2 (false)."""
    w = [exact_samplers._exp_neg_one_word(i) for i in range(3)]
    rng = _Scripted([w[0], w[0] - 1, w[0] + 1, w[0]], [w[1] - 1, w[1], w[2] + 1])
    assert bernoulli_exp_neg_one(4, rng).tolist() == [True, True, False, False]
    assert rng.then == []
