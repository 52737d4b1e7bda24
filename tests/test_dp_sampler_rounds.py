"""Rounds of several candidates per pending draw (sdckit.dp.exact_samplers): the first accepted
candidate of each element, so one draw at a time has the exact discrete Laplace and Gaussian laws."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from sdckit.dp import exact_samplers
from sdckit.dp.exact_samplers import discrete_gaussian, discrete_laplace


def test_the_first_accepted_candidate_of_each_element_by_hand():
    owner = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])  # three elements, three candidates each, in turn
    keep = np.array([False, False, True, True, False, True, True, False, False])
    elements, first = exact_samplers._first_accepted(keep, owner, 3)
    assert elements.tolist() == [0, 2]  # element 1 has none: still pending
    assert first.tolist() == [3, 2]  # element 0's first accepted is candidate 3 (not 6); element 2's is 2 (not 5)


def test_every_pending_element_gets_candidates_in_turn():
    assert exact_samplers._candidates(1).tolist() == [0, 0, 0, 0]
    assert exact_samplers._candidates(3).tolist() == [0, 1, 2, 0, 1, 2]


def _chi_square_p(draws: np.ndarray, pmf) -> float:
    """Chi-square p-value of integer ``draws`` against ``pmf`` over the values seen, tails pooled
    so that every expected count is at least 5."""
    values = np.arange(draws.min(), draws.max() + 1)
    expected = np.array([pmf(v) for v in values]) * draws.size
    observed = np.array([(draws == v).sum() for v in values], dtype=float)
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], draws.size - expected[keep].sum())
    return float(stats.chisquare(observed, expected).pvalue)


def test_single_discrete_laplace_draws_have_the_exact_law():
    """4,000 calls of one draw each (every round: one element, four candidates) against
    P(y) = (1 - q) / (1 + q) q**|y| with q = exp(-r / s); level 1e-3."""
    rng = np.random.default_rng(20261129)
    s, r = 3, 2
    draws = np.array([discrete_laplace(1, s, r, rng)[0] for _ in range(4000)])
    q = math.exp(-r / s)
    assert _chi_square_p(draws, lambda y: (1 - q) / (1 + q) * q ** abs(y)) > 1e-3


def test_few_discrete_gaussian_draws_have_the_exact_law():
    """1,500 calls of three draws each (rounds of two to three elements) against the discrete
    Gaussian of variance parameter t c = 6, normalised over |y| <= 60; level 1e-3."""
    rng = np.random.default_rng(11)
    t, c = 2, 3
    draws = np.concatenate([discrete_gaussian(3, t, c, rng) for _ in range(1500)])
    weights = {y: math.exp(-y * y / (2 * t * c)) for y in range(-60, 61)}
    total = sum(weights.values())
    assert _chi_square_p(draws, lambda y: weights.get(int(y), 0.0) / total) > 1e-3
