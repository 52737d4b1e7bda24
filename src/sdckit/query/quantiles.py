"""The quantile mechanism of the query service's dp mode: permute-and-flip over a grid of
candidates with exact coins (McKenna & Sheldon 2020), and the bound on its rank error.

The grid has up to ``2**18 + 1`` points (:func:`~sdckit.query.grid.quantile_bins`), so that on
large tables the answer's error is the mechanism's rank error, not the grid's resolution. Its
histogram comes per cell sparse (the non-empty bins, from the scan), as its cumulative counts,
or lazily (from the cube, :mod:`sdckit.query.histcube`, read where asked:
:class:`~sdckit.query.grid.Below`). Each coin is flipped as two exact factors, the first from a
bound on the exponents of its block of 64 points read off the cumulative counts at the blocks'
first points (:class:`Coins`), in a lazily drawn visiting order (:func:`flip_visiting`,
:func:`visiting_order`) or, when few coins are likely, all at once by groups
(:func:`flip_grouped`: an exact binomial count per bound, then a uniform subset): the counts are
read at the blocks' first points and where a first factor came up, not at every grid point.

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

from sdckit.dp.exact_samplers import bernoulli_exp_neg_int, bernoulli_exp_neg_streak, binomial_exp_neg_int
from sdckit.query.grid import QUANTILE_BINS, Below, Histogram, as_below, cumulative

#: Epsilon of a quantile is rounded down to a multiple of 2**-EPS_BITS (exact rational sampling).
EPS_BITS = 20
#: Utilities are integers: D * #{x < c} - round(q D) * n with D = 2**Q_BITS.
Q_BITS = 16
#: Exponents past this are clipped (probability below exp(-64); clipping only shrinks differences).
_MAX_EXPONENT = 64
#: :func:`flip_grouped` flips every coin of a segment whose whole parts may be below this (near the
#: best: most of their first factors would come up), the others' first factors by groups.
FLIP_EACH_BELOW = 2
#: Points of a segment of :class:`Coins` (its first point's ``below`` read for a bound on all).
SEGMENT = 64
#: Coins that may add up to more than this: :func:`permute_and_flip` visits in a random order
#: (about ``size / sum`` visits) instead of flipping every coin.
VISIT_FROM = 128


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

    Each coin is flipped as two exact factors, the first from a bound on its block's exponents
    read off ``below`` at the blocks' first points (:class:`Coins`), so that ``below`` is read at
    a few hundred points, not ``2**18 + 1``: when the coins may add up to more than
    :data:`VISIT_FROM` (``sum exp(-bound)``, at least their sum), in the visiting order
    (:func:`flip_visiting`: about ``size / sum`` visits), else every coin at once, by groups
    (:func:`flip_grouped`, :func:`flip_all`'s law: e.g. MAX over values piled at the upper bound,
    where about half the grid would be visited). The choice (in floating point) changes the
    work, not the law.
    """
    coins = Coins(below if isinstance(below, Below) else Below(below), int(n), q, epsilon, k)
    mass = float(np.dot(coins.length, np.exp(-coins.bound.astype(float))))  # (chooses the work, not the law)
    return flip_visiting(coins, mass, rng) if mass > VISIT_FROM else flip_grouped(coins, rng)


class Coins:
    """Permute-and-flip's coins over ``below``'s grid points: candidate ``j``'s is
    Bernoulli(exp(-x_j / den)), ``x_j = min(gap_j, cap) eps_num`` (:func:`coin_parameters`),
    ``gap_j = |v_j| - best``, ``v_j = D below_j - t n`` (``t = round(q D)``, ``best`` the least
    ``|v_j|``), and the points in *segments* (blocks of :data:`SEGMENT` points, or of one when
    the bins are not a multiple of it, then the last point alone; the same however ``below`` is
    held, so the cube's and the scan's histograms give the same draws) with a lower bound
    ``bound`` on the whole part ``floor(x_j / den)`` of their points.

    ``v`` does not decrease along the grid, so on a block ``[a, b)`` (``b`` the next block's first
    point) ``gap`` is at least ``gap_a`` when ``v_a >= 0`` and at least ``gap_b`` when ``v_b <= 0``:
    the bound is the least of those two whole parts (0 for a block where ``v`` changes sign; the
    exact one for blocks of one point). A coin is then an exact Bernoulli(exp(-w)) (``w`` its
    segment's bound; :func:`flip_visiting`, :func:`flip_grouped`) times an exact
    Bernoulli(exp(-(x_j - w den) / den)) (:meth:`second`,
    :func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg_streak`): the first needs no ``below``,
    the second is flipped (and ``below`` read) only where the first came up."""

    def __init__(self, below: Below, n: int, q: float, epsilon: float, k: int) -> None:
        self.below, self.scale, self.target = below, 2**Q_BITS, int(round(q * 2**Q_BITS)) * n
        split = int(below.search(np.array([-(-self.target // self.scale)]))[0])  # the first j with v_j >= 0
        near = np.array([j for j in (split - 1, split) if 0 <= j < below.points], dtype=np.int64)
        self.best = int(np.abs(below.at(near) * self.scale - self.target).min())
        self.eps_num, self.den, self.cap = coin_parameters(epsilon, k, q)
        # segments of 64 points however below is held (the same draws from the cube and the scan)
        self.step = SEGMENT if (below.points - 1) % SEGMENT == 0 else 1
        coarse = below.coarse if below.step == self.step else below.at(np.arange(0, below.points, self.step))
        v = coarse * self.scale - self.target
        whole = np.minimum(np.abs(v) - self.best, self.cap) * self.eps_num // self.den
        blocks = coarse.size - 1
        bound = whole[:-1] if self.step == 1 else np.minimum(whole[:-1], whole[1:])
        if self.step > 1:
            bound[(v[:-1] < 0) & (v[1:] > 0)] = 0
        self.bound = np.append(bound, whole[-1])  # the last point, alone
        self.first = np.append(np.arange(blocks) * self.step, below.points - 1)
        self.length = np.append(np.full(blocks, self.step), 1)

    def segment(self, js: np.ndarray) -> np.ndarray:
        """The segment of each point."""
        return np.minimum(js // self.step, self.first.size - 1)

    def second(self, js: np.ndarray, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The second factors of the points ``js`` whose first, Bernoulli(exp(-w)), came up."""
        exponent = np.minimum(np.abs(self.below.at(js) * self.scale - self.target) - self.best, self.cap) * self.eps_num
        return bernoulli_exp_neg_streak(exponent - w * self.den, self.den, rng)


def flip_visiting(coins: Coins, mass: float, rng: np.random.Generator) -> int:
    """Permute-and-flip in a uniformly random order (:func:`visiting_order`, in batches of about
    half the visits expected, ``size / (2 mass)``, at least 256, then doubling): each visited
    point's first factor (:class:`Coins`; :func:`~sdckit.dp.exact_samplers.bernoulli_exp_neg_int`,
    one uniform word each), then the second factor of those whose first came up; the first point
    visited whose both came up. ``below`` is read only at those."""
    for visit in visiting_order(coins.below.points, rng, max(256, int(coins.below.points / (2 * mass)))):
        w = coins.bound[coins.segment(visit)]
        passed = np.flatnonzero(bernoulli_exp_neg_int(w, rng))
        if passed.size:
            hit = np.flatnonzero(coins.second(visit[passed], w[passed], rng))
            if hit.size:
                return int(visit[passed[hit[0]]])
    raise AssertionError("flip_visiting: the best candidate's coin came up 0")  # pragma: no cover


def flip_grouped(coins: Coins, rng: np.random.Generator) -> int:
    """:func:`flip_all`'s choice (every coin, then a uniform one of those that came up) with the
    first factors (:class:`Coins`) flipped by groups: those of the ``m_w`` points of segments of
    bound ``w`` are i.i.d., so the ones that come up are a uniformly random subset of
    ``Binomial(m_w, exp(-w))`` of them (exchangeability), drawn as its size
    (:func:`~sdckit.dp.exact_samplers.binomial_exp_neg_int`, exact) and then the subset
    (:func:`uniform_subset`); the coins of segments of bound below :data:`FLIP_EACH_BELOW`
    (most of whose first factors come up) are flipped whole. Then the second factors of those
    points only: the same joint law of every coin as flipping each, so the same output law; the
    work is the segments near the best and the few points whose first factor comes up."""
    each = np.flatnonzero(coins.bound < FLIP_EACH_BELOW)
    chosen = [spans(coins.first[each], coins.length[each])]
    base = [np.zeros(chosen[0].size, dtype=np.int64)]
    grouped = np.flatnonzero(coins.bound >= FLIP_EACH_BELOW)
    sizes = np.bincount(coins.bound[grouped], weights=coins.length[grouped]).astype(np.int64)
    wholes = np.flatnonzero(sizes)
    passed = binomial_exp_neg_int(sizes[wholes], wholes, rng)
    for w, count in zip(wholes[passed > 0].tolist(), passed[passed > 0].tolist()):
        mine = grouped[coins.bound[grouped] == w]  # its segments, in order; a uniform subset of their points
        ends = np.cumsum(coins.length[mine])
        at = uniform_subset(int(ends[-1]), count, rng)
        segment = np.searchsorted(ends, at, side="right")
        chosen.append(coins.first[mine][segment] + at - (ends - coins.length[mine])[segment])
        base.append(np.full(count, w, dtype=np.int64))
    js = np.concatenate(chosen)
    hits = js[coins.second(js, np.concatenate(base), rng)]
    if not hits.size:  # pragma: no cover - the best candidate's coin is 1
        raise AssertionError("flip_grouped: the best candidate's coin came up 0")
    return int(hits[rng.integers(hits.size)])


def spans(first: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The points ``first[i] .. first[i] + length[i] - 1``, one span after the other."""
    starts = np.cumsum(length) - length
    return np.repeat(first - starts, length) + np.arange(int(length.sum()))


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
