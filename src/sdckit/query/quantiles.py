"""The quantile mechanism of the query service's dp mode: permute-and-flip over a grid of
candidates with exact coins (McKenna & Sheldon 2020), and the bound on its rank error.

The grid has up to ``2**18 + 1`` points (:func:`~sdckit.query.grid.quantile_bins`), so that on
large tables the answer's error is the mechanism's rank error, not the grid's resolution. Its
histogram comes per cell sparse (the non-empty bins, from the scan) or as its cumulative counts
(from the cube, :mod:`sdckit.query.histcube`); the visiting order is drawn lazily
(:func:`visiting_order`) and the coins are flipped in it, so the sampling work is the candidates
visited, not the grid's size.

``MIN(col)`` and ``MAX(col)`` are the quantiles 0 and 1 (as Tumult Analytics answers them, with
its exponential mechanism over the public bounds): the utility of grid point ``c`` is
``-D #{x < c}`` for MIN and ``-D #{x >= c}`` for MAX, so every grid point at or below the
smallest value (above the largest) is best, and the answer falls among them or, with probability
given by :func:`quantile_rank_radius`, a few records inside the data. It is a *clamping bound*
that leaves out few records, not the extreme value itself (which would disclose one person's).

These are pure epsilon-DP mechanisms; an analyst with another budget definition is charged
(epsilon, delta) as asked (a pure mechanism is (epsilon, 0)-DP) or, under rho-zCDP,
``epsilon**2 / 2`` for the largest ``epsilon`` allowed (:func:`zcdp_epsilon`; Bun & Steinke
2016, Proposition 1.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.dp.exact_samplers import bernoulli_exp_neg, bernoulli_exp_neg_streak, binomial_exp_neg_int
from sdckit.query.grid import QUANTILE_BINS, Below, Histogram, as_below, cumulative

#: Epsilon of a quantile is rounded down to a multiple of 2**-EPS_BITS (exact rational sampling).
EPS_BITS = 20
#: Utilities are integers: D * #{x < c} - round(q D) * n with D = 2**Q_BITS.
Q_BITS = 16
#: Exponents past this are clipped (probability below exp(-64); clipping only shrinks differences).
_MAX_EXPONENT = 64
#: At most this many candidates with a coin of at least 1/e: permute-and-flip flips every coin
#: (:func:`flip_all`) instead of visiting about half the grid in a random order.
FLIP_ALL_NEAR = 2


def permute_and_flip(below: np.ndarray | Below, n: int, q: float, epsilon: float, k: int,
                     rng: np.random.Generator) -> int:
    """Index of the grid point chosen as the q-quantile (McKenna & Sheldon 2020, permute-and-flip).

    ``below[j]`` is the number of records below grid point ``j`` (an array or a lazy
    :class:`~sdckit.query.grid.Below`); the utility
    ``u_j = -|D below_j - round(q D) n|`` (``D = 2**16``) changes by at most
    ``Delta = k max(round(q D), D - round(q D))`` when one person (``k`` rows) is added or removed:
    her ``b <= k`` rows below the point and her ``k`` rows in ``n`` move ``D below_j - round(q D) n``
    by ``D b - round(q D) k``, between ``-round(q D) k`` and ``(D - round(q D)) k`` — ``D k / 2``
    for the median, ``D k`` for MIN and MAX (Tumult Analytics' ``max(q, 1 - q)``). Candidates are
    visited in a random order and candidate ``j`` is taken with probability
    ``exp(-epsilon (u* - u_j) / (2 Delta))``, the best one surely: an epsilon-DP choice. Every coin
    is exact (``epsilon`` rounded down to a multiple of 2**-20); no floating point on the sampling path.

    The coins are flipped as :func:`flip_all` does (every coin, then a uniform one of those that
    came up: the same law), grouped (:func:`flip_grouped`): candidate ``j``'s coin is
    Bernoulli(exp(-w_j)) times Bernoulli(exp(-r_j / den)) for the whole and fractional parts of its
    exponent, and the candidates of one whole part ``w`` form at most two runs of the grid (the
    utility rises, then falls, along it), found by searching ``below``. So the utilities are read
    at a few hundred points, not ``2**18 + 1``.
    """
    if not isinstance(below, Below):
        below = Below(below)
    return flip_grouped(below, int(n), q, epsilon, k, rng)


def flip_grouped(below: Below, n: int, q: float, epsilon: float, k: int, rng: np.random.Generator) -> int:
    """:func:`permute_and_flip`'s choice with its coins flipped by whole part: the law of
    :func:`flip_all` over the exponents ``min(gap_j, cap) eps_num`` (:func:`coin_parameters`),
    ``gap_j = |D below_j - t n| - best`` (``t = round(q D)``, ``best`` the least distance).

    ``D below_j - t n`` does not decrease along the grid, so the points of ``gap_j < G`` form one
    run ``[L, R)`` (two :meth:`~sdckit.query.grid.Below.search` es), and the points of whole part
    ``w = floor(exponent / den)`` are the run of ``gap < G_{w+1}`` less that of ``gap < G_w``
    (``G_w = ceil(w den / eps_num)``; the clipped ones all have the largest whole part ``W``).
    Candidate ``j``'s coin is an exact Bernoulli(exp(-w)) times an exact Bernoulli(exp(-r_j / den))
    (``r_j`` the exponent less ``w den``; the split of
    :func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg_streak`). The first factors of the ``m_w``
    points of whole part ``w`` are i.i.d.: the set of those that come up is a uniformly random
    subset of ``Binomial(m_w, exp(-w))`` of them (exchangeability), drawn as its size
    (:func:`~sdckit.dp.exact_samplers.binomial_exp_neg_int`, exact) and then the subset
    (:func:`uniform_subset`). The second factors are flipped for those points only
    (:func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg`): the same joint law of every coin as
    flipping each, so the same output law; the work is the points of whole part 0 and the few
    that come through their first factor."""
    scale, target = 2**Q_BITS, int(round(q * 2**Q_BITS)) * n
    split = int(below.search(np.array([-(-target // scale)]))[0])  # the first j with D below_j >= t n
    near = np.array([j for j in (split - 1, split) if 0 <= j < below.points], dtype=np.int64)
    best = int(np.abs(below.at(near) * scale - target).min())
    eps_num, den, cap = coin_parameters(epsilon, k, q)
    top = cap * eps_num // den  # the whole part of a clipped exponent, the largest
    reach = [-(-w * den // eps_num) for w in range(1, top + 1)]  # G_1 .. G_top
    # gap_j < G_w on [L_w, R_w): L_w the first j with D below_j > t n - best - G_w, R_w the first
    # with D below_j >= t n + best + G_w; whole part w >= 1: [L_{w+1}, L_w) and [R_w, R_{w+1})
    # (L_{top+1} = 0, R_{top+1} = points); whole part 0: [L_1, R_1)
    lows = np.append(below.search(np.array([(target - best - g) // scale for g in reach]), side="right"), 0)
    highs = np.append(below.search(np.array([-(-(target + best + g) // scale) for g in reach])), below.points)
    on_left, on_right = lows[:-1] - lows[1:], highs[1:] - highs[:-1]  # whole parts 1 .. top
    wholes = np.arange(1, top + 1)
    some = np.flatnonzero(on_left + on_right)
    passed = np.zeros(top, dtype=np.int64)
    passed[some] = binomial_exp_neg_int(on_left[some] + on_right[some], wholes[some], rng)
    chosen, whole = [np.arange(lows[0], highs[0])], [np.zeros(highs[0] - lows[0], dtype=np.int64)]
    for i in np.flatnonzero(passed).tolist():
        at = uniform_subset(int(on_left[i] + on_right[i]), int(passed[i]), rng)
        chosen.append(np.where(at < on_left[i], lows[i + 1] + at, highs[i] + at - on_left[i]))
        whole.append(np.full(at.size, wholes[i], dtype=np.int64))
    js, w = np.concatenate(chosen), np.concatenate(whole)
    exponent = np.minimum(np.abs(below.at(js) * scale - target) - best, cap) * eps_num
    hits = js[bernoulli_exp_neg(exponent - w * den, den, rng)]
    if not hits.size:  # pragma: no cover - the best candidate's coin is 1
        raise AssertionError("flip_grouped: the best candidate's coin came up 0")
    return int(hits[rng.integers(hits.size)])


def uniform_subset(size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random subset of ``count`` of ``0 .. size - 1``: the first ``count`` points of
    a uniform random order (:func:`visiting_order`, drawn lazily: ``O(count)`` work while
    ``count`` is below a quarter of ``size``)."""
    if count >= size:
        return np.arange(size)
    taken, have = [], 0
    for batch in visiting_order(size, rng, max(count, 1)):
        taken.append(batch[: count - have])
        have += taken[-1].size
        if have == count:
            break
    return np.concatenate(taken)


def flip_all(exponents: np.ndarray, den: int, rng: np.random.Generator) -> int:
    """Permute-and-flip with every coin flipped at once: candidate ``j``'s coin is an exact
    Bernoulli(exp(-exponents[j] / den)) (:func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg_streak`;
    the best's exponent is 0, so some coin comes up) and the answer is a uniformly random one of
    the candidates whose coin came up. The same law as visiting them in a uniformly random order and
    taking the first whose coin comes up (the coins do not depend on the order, and the first of a
    set in a uniform random order is uniform over the set); cheaper when that order would visit
    most candidates: one coin each, about 1.6 uniform 64-bit integers for a clipped one."""
    hits = np.flatnonzero(bernoulli_exp_neg_streak(exponents, den, rng))
    if not hits.size:  # pragma: no cover - the best candidate's coin is 1
        raise AssertionError("flip_all: the best candidate's coin came up 0")
    return int(hits[rng.integers(hits.size)])


def visiting_order(size: int, rng: np.random.Generator, first: int = 256) -> Iterator[np.ndarray]:
    """A uniformly random order of ``0 .. size - 1`` in consecutive batches, drawn lazily.

    While fewer than half the points are visited, each batch is the values met for the first
    time in ``first``, then ``2 first``, ... independent uniform draws, in the order first met:
    given the points visited so far, the next new value of an i.i.d. uniform sequence is uniform
    over the points not yet visited, so the order is exactly that of a uniform random permutation
    (:meth:`numpy.random.Generator.permutation`) and its first points cost ``O(first)``, not
    ``O(size)``. Past half (or once a batch would be a quarter of the points), the points left
    are put in a uniform random order at once (``rng.permutation``) and yielded in batches
    (doubling on)."""
    seen = np.zeros(size, dtype=bool)
    visited, batch = 0, first
    while 2 * visited < size and 4 * batch < size:  # (past that, a permutation is the cheaper)
        draws = rng.integers(0, size, batch)
        values, at = np.unique(draws, return_index=True)
        new = draws[np.sort(at[~seen[values]])]
        seen[new] = True
        visited += new.size
        batch *= 2
        if new.size:
            yield new
    rest = np.flatnonzero(~seen)
    rest = rest[rng.permutation(rest.size)]
    start = 0
    while start < rest.size:
        yield rest[start:start + batch]
        start, batch = start + batch, 2 * batch


def coin_parameters(epsilon: float, k: int, q: float = 0.0) -> tuple[int, int, int]:
    """``(eps_num, den, cap)``: candidate ``j``'s coin is ``exp(-min(gap_j, cap) eps_num / den)``,
    ``eps_num / 2**20`` the epsilon rounded down, ``den = 2**21 Delta`` with the utility's
    sensitivity ``Delta = k max(round(q D), D - round(q D))`` (:func:`permute_and_flip`; ``D k``
    for ``q`` 0 or 1); gaps past ``cap`` have probability below exp(-64) and are clipped (clipping
    only shrinks differences: the clipped utility ``max(u_j, u* - cap)`` still moves by at most
    ``Delta``)."""
    eps_num = math.floor(epsilon * 2**EPS_BITS)
    target = int(round(q * 2**Q_BITS))
    den = 2 ** (EPS_BITS + 1) * max(target, 2**Q_BITS - target) * k
    return eps_num, den, -(-_MAX_EXPONENT * den // eps_num)


def permute_and_flip_sparse(bins: np.ndarray, counts: np.ndarray, size: int, q: float, epsilon: float, k: int,
                            rng: np.random.Generator) -> int:
    """:func:`permute_and_flip` over the grid points ``0 .. size - 1`` of a histogram of
    ``size - 1`` bins given sparsely: ``bins`` the sorted indices of the non-empty bins, ``counts``
    their records (``below_j`` = the records in bins ``< j``; ``n`` = all of them)."""
    below = cumulative((bins, counts), size - 1)
    return permute_and_flip(below, int(below[-1]), q, epsilon, k, rng)


def quantile_rank_radius(epsilon: float, k: int, confidence: float = 0.95, candidates: int = QUANTILE_BINS + 1,
                         q: float = 0.0) -> float:
    """Records by which, with probability >= ``confidence``, the rank of a permute-and-flip
    quantile (:func:`permute_and_flip`) is further from the target rank than the best grid point's.

    Permute-and-flip outputs candidate ``j`` only if ``j``'s own coin comes up, so
    ``P(out = j) <= exp(-eps' gap_j / (2 Delta))`` (``eps'`` the epsilon rounded down to a multiple of
    2**-20, ``Delta = k s``, ``s = max(round(q D), D - round(q D))`` the utility's sensitivity per
    row, :func:`coin_parameters`; gaps clipped only past exponent 64, far beyond this bound). A union
    bound over the ``m`` candidates: ``P(gap >= G) <= m exp(-eps' G / (2 Delta)) = 1 - confidence``
    at ``G = (2 Delta / eps') ln(m / (1 - confidence))``, and a gap ``G`` in utility is ``G / D``
    records: ``|below_out - q n| <= |below_best - q n| + (2 k s / (D eps')) ln(m / (1 - confidence))``
    (``s / D`` is 1 for MIN and MAX, 1/2 for the median). This is
    a statement about ranks; a value interval would need the data's density near the quantile,
    which is not released (so the quantile's ``ci95`` stays ``null``).
    """
    eps = math.floor(epsilon * 2**EPS_BITS) / 2**EPS_BITS
    target = int(round(q * 2**Q_BITS))
    share = max(target, 2**Q_BITS - target) / 2**Q_BITS
    return 2.0 * k * share * math.log(candidates / (1.0 - confidence)) / eps


def quantile_key(output: Any) -> str:
    """The measurement name of a quantile output (MIN and MAX are the levels 0 and 1)."""
    return f"quantile:{output.column}:{output.q!r}"


def quantile_word(output: Any) -> str:
    """``MIN(col)``, ``MAX(col)`` or ``QUANTILE(col, q)``: how the answer's text names it."""
    if output.q == 0.0:
        return f"MIN({output.column})"
    if output.q == 1.0:
        return f"MAX({output.column})"
    return f"QUANTILE({output.column}, {output.q:g})"


def zcdp_epsilon(rho: Fraction) -> Fraction:
    """The largest multiple of 2**-EPS_BITS whose ``epsilon**2 / 2`` is at most ``rho``: the
    epsilon a pure mechanism may use under a rho-zCDP share (an epsilon-DP mechanism is
    ``epsilon**2 / 2``-zCDP, Bun & Steinke 2016, Proposition 1.4); 0 when none is."""
    # floor(sqrt(2 rho) 2**b) = isqrt(floor(2 rho 4**b)) exactly
    return Fraction(math.isqrt(math.floor(2 * rho * 4**EPS_BITS)), 2**EPS_BITS)


def quantile_text(output: Any, bounds: tuple[float, float], epsilon: float, k: int, bins: int) -> str:
    """The sentence stating a quantile's (MIN's, MAX's) mechanism in an answer, on a grid of
    ``bins`` bins (:func:`~sdckit.query.grid.quantile_bins`)."""
    lo, hi = bounds
    level = "" if output.q not in (0.0, 1.0) else f" (the quantile {output.q:g}, as Tumult Analytics)"
    return (f"{quantile_word(output)}{level}: permute-and-flip (exponential-mechanism family) over the "
            f"{bins + 1} points of a public grid of [{lo:g}, {hi:g}] (resolution "
            f"{(hi - lo) / bins:.6g}), sensitivity {k}, epsilon {epsilon:.6g} "
            f"(rounded down to a multiple of 2**-{EPS_BITS}); no ci95 (a value interval would need "
            f"the data's density): with probability >= 95% its rank is at most "
            f"{quantile_rank_radius(epsilon, k, candidates=bins + 1, q=output.q):.4g} records further from "
            f"q times the count than the best grid point's (rank_radius95)")


def quantile_scale(bounds: tuple[float, float], epsilon: float, k: int, bins: int, q: float = 0.0) -> dict[str, float]:
    """A quantile's ``noise_scale`` entry on a grid of ``bins`` bins: the grid's resolution, its
    epsilon, its rank radius."""
    lo, hi = bounds
    return {"grid_resolution": (hi - lo) / bins, "epsilon": epsilon,
            "rank_radius95": quantile_rank_radius(epsilon, k, candidates=bins + 1, q=q)}


def choose_quantiles(outputs: Sequence[Any], bounds: dict[str, tuple[float, float]],
                     hist_of: Callable[[str], list[Histogram]], epsilons: dict[str, float], k: int,
                     bins: int, rng: np.random.Generator) -> dict[str, list[float]]:
    """Each quantile output's answer per cell (by :func:`quantile_key`): ``hist_of(column)`` is
    the column's histogram on ``bins`` bins per cell, sparse (its non-empty bins and their
    records, :func:`~sdckit.query.grid.sparse_histograms`) or as its cumulative counts
    (:func:`~sdckit.query.grid.cumulative`), ``epsilons[key]`` the epsilon of the output's
    :func:`permute_and_flip`; the grid point chosen, never outside the bounds."""
    chosen: dict[str, list[float]] = {}
    for o in outputs:
        key = quantile_key(o) if o.kind == "quantile" else None
        if key is None or key in chosen:
            continue
        lo, hi = bounds[o.column]
        width = (hi - lo) / bins
        answers = []
        for hist in hist_of(o.column):
            below = as_below(hist, bins)
            answers.append(min(hi, lo + width * permute_and_flip(below, below.total, o.q, epsilons[key], k, rng)))
        chosen[key] = answers
    return chosen
