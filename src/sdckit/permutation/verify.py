"""Verification of the intruder's linkage (seed 000 section 5.2; seed 001; DESIGN.md section 3).

The intruder builds a random data set ``T`` whose records belong to nobody and computes the
permutation distance of each ``t`` against ``Z``. ``P`` is the distribution of ``d(x)`` over
the original records, ``Q`` that of ``d(t)`` over ``T``; the Hellinger distance

    H(P, Q) = sqrt(sum_d (sqrt(p_d) - sqrt(q_d))^2) / sqrt(2)   in [0, 1]

says how far the true linkages are from chance (:mod:`sdckit.permutation.histograms`). Two
corrections (DESIGN.md section 3):

1. ``null="copula"`` (default) draws ``T`` from a Gaussian copula fitted to the normal scores
   of ``X``, mapped back through ``X``'s empirical marginals, so ``T`` keeps ``X``'s dependence;
   ``null="independent"`` is the paper's rule (each attribute drawn independently; all ``n^m``
   combinations when ``n^m <= exhaustive_limit``; :mod:`sdckit.permutation.randomset`).
2. ``H`` of a finite sample has a floor, so ``H`` is reported with its null baseline (mean
   ``H`` between ``Q`` and null samples of ``n`` random records) and a p-value: the chance that a
   null sample's ``H`` is at or above the originals'.

The null samples must be as independent of ``Q`` as the original records are: a sample drawn
from the very records that define ``Q`` lies closer to ``Q`` than the originals can, and the
p-value comes out too small (on a release that carries no link at all, n=1000, m=4,
correlation 0.5, 150 runs: 19% of p-values <= 0.05 instead of 5%). So when ``T`` is sampled,
half of it defines ``Q`` and the null sample is drawn apart from it. When ``T`` is the exhaustive
set of all ``n^m`` combinations, ``Q`` is exact and the null sample is drawn from it.

The p-value is a sequential Monte-Carlo test (issue 27; :mod:`sdckit.permutation.sequential`):
each replicate redraws *everything* random — the tie-breaking of the released ranks, the random
set ``T`` and so ``Q``, the null sample and the sample of originals compared — and contributes one
indicator "the null sample's ``H`` is at or above the originals'". The replicates are i.i.d., so
the count is exactly binomial; the test stops when Gandy's (2009) boundaries decide ``p <= alpha``
("flagged") or ``p > alpha`` ("deniable") with resampling risk at most :data:`RISK`, and says
"borderline" when :data:`MAX_REPLICATES` cannot decide. (Before, the ties were broken once per
run and shared by every batch: on a release keeping AGE and ZIP, five seeds gave p from 0.01 to
0.15 while each reported a standard error of 0.01.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.defaults import N_RANDOM
from sdckit.core.params import validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.core.ranks import ranks
from sdckit.core.result import Result
from sdckit.permutation.columns import RankSpace, SchemaLike, rank_space
from sdckit.permutation.distance import Progress, nearest_distances
from sdckit.permutation.histograms import bin_index, comparison_size, distance_bins, distribution, hellinger_rows
from sdckit.permutation.intruder import intruder_query
from sdckit.permutation.randomset import copula_factor, random_positions, random_query
from sdckit.permutation.rules import VERIFY_PARAMETERS
from sdckit.permutation.sequential import run_sequential

#: Significance level used for the share of records whose match is not plausibly random.
ALPHA = 0.05
#: The verification is a sequential Monte-Carlo test (:mod:`sdckit.permutation.sequential`, Gandy
#: 2009; issue 27): the chance that its verdict differs from the one the exact p-value gives is at
#: most this, whatever the p-value ...
RISK = 1e-3
#: ... and it draws at most this many replicates (each an independent comparison: fresh ties,
#: fresh random set, fresh null sample); undecided then, the verdict is "borderline".
MAX_REPLICATES = 400
#: Replicates on the same ranks are computed in blocks of at most this many (one KD-tree call).
BLOCK = 8
#: Confidence of the reported (Clopper-Pearson) interval of the p-value.
CONFIDENCE = 0.99
# Random records per replicate (half define ``Q``, the rest give the null sample): ``N_RANDOM``,
# imported above from :mod:`sdckit.core.defaults`, where the command line's help reads it cheaply.


@dataclass(frozen=True)
class Verification(Result):
    """Outcome of :func:`verify_linkage`.

    Attributes
    ----------
    null : str
        ``"copula"`` or ``"independent"``: how the random set ``T`` was drawn.
    n_random : int
        Random records drawn per replicate when ``T`` is sampled (half define ``Q``, the rest give
        the null sample), or the ``n^m`` records of the exhaustive ``T``.
    exhaustive : bool
        Whether ``T`` holds all ``n^m`` combinations (independent null only).
    original_distribution, random_distribution : Series
        ``P`` and ``Q``: relative frequency of each distance for the original and random records.
    hellinger : float
        ``H(P, Q)`` in ``[0, 1]``.
    hellinger_null : float
        Mean ``H`` between ``Q`` and the distances of ``n_null`` samples of ``n`` records of ``T``.
    p_value : float
        The Monte-Carlo p-value: the share of replicates in which the null sample's ``H`` is at or
        above the originals' (each replicate independent of the others: its own tie-breaking of the
        released ranks, its own random set ``T`` and its own null sample). Small: the linkages are
        not plausibly random (the release is not plausibly deniable).
    p_value_se : float
        Its binomial standard error ``sqrt(p (1 - p) / replicates)``.
    batches : int
        The number of replicates (the name of earlier versions; same as ``replicates``).
    bins : int
        Number of distance bins of the first replicate (:func:`distance_bins`).
    nonrandom_share : float
        Share of original records with ``p_random < 0.05``.
    records : DataFrame
        Per original record: ``distance`` and ``p_random`` = ``Q(D <= d(x))``, the share of
        random records that match at least as closely.
    verdict : str
        ``"deniable"`` (the sequential test decided ``p > alpha``), ``"flagged"`` (``p <= alpha``:
        not plausibly deniable) or ``"borderline"`` (``max_replicates`` could not decide). The
        chance that a decided verdict differs from the exact p-value's is at most ``risk``
        (Gandy 2009).
    p_value_low, p_value_high : float
        Exact (Clopper-Pearson) 99% interval of the p-value from the replicates drawn.
    replicates, exceedances : int
        Replicates drawn and how many of them exceeded (``p_value = exceedances / replicates``).
    alpha, risk : float
        The level of the verdict and the bound on its resampling risk.
    max_replicates : int
        The budget of replicates.
    """

    null: str
    n_random: int
    exhaustive: bool
    original_distribution: pd.Series
    random_distribution: pd.Series
    hellinger: float
    hellinger_null: float
    p_value: float
    nonrandom_share: float
    records: pd.DataFrame
    p_value_se: float = 0.0
    batches: int = 1
    bins: int = 0
    verdict: str = "borderline"
    p_value_low: float = 0.0
    p_value_high: float = 1.0
    replicates: int = 0
    exceedances: int = 0
    alpha: float = ALPHA
    risk: float = RISK
    max_replicates: int = MAX_REPLICATES

    @property
    def plausibly_deniable(self) -> bool:
        """The sequential test decided ``p > alpha`` (``verdict == "deniable"``)."""
        return self.verdict == "deniable"


def verification_from(
    space: RankSpace,
    *,
    null: str = "copula",
    n_random: int = N_RANDOM,
    exhaustive_limit: int = 1_000_000,
    n_null: int | None = None,
    max_batches: int | None = None,
    alpha: float = ALPHA,
    max_replicates: int = MAX_REPLICATES,
    risk: float = RISK,
    ties: str = "random",
    original_distances: np.ndarray | None = None,
    rows: np.ndarray | None = None,
    progress: Progress = None,
) -> Verification:
    """:class:`Verification` of the records of ``space`` (shared by :func:`verify_linkage` and
    :func:`~sdckit.permutation.assess`, which check the settings before building ``space``), or
    of the original records at positions ``rows`` only (a sample; ``original_distances`` are
    then theirs, under ``space``'s ranks). ``ties`` is the rule ``space`` was ranked with: under
    ``"random"`` each replicate breaks the released data's ties anew. ``n_null`` and
    ``max_batches`` are accepted for compatibility and not used (see :func:`verify_linkage`)."""
    if original_distances is None:
        original_distances = nearest_distances(space, intruder_query(space, rows), progress, "linking")
    setup = _Setup.of(space, null, n_random, exhaustive_limit, ties, original_distances, rows)
    rng = space.rng
    replicates: list[dict[str, Any]] = []

    def stream():
        while len(replicates) < max_replicates:
            done = len(replicates)
            # without ties to break, replicates share a KD-tree call: blocks grow with the count
            # (at most BLOCK, so that at most BLOCK - 1 are drawn past the stop)
            count = 1 if setup.tied else min(BLOCK, max(1, done // 4), max_replicates - done)
            block = _replicates(space, setup, count, first=done == 0, rng=rng)
            replicates.extend(block)
            if progress is not None:
                progress(len(replicates), max_replicates, "verification replicates")
            yield from (r["exceed"] for r in block)

    decision = run_sequential(stream(), alpha, risk, max_replicates)
    if progress is not None and len(replicates) < max_replicates:  # stopped early: the bar completes
        progress(len(replicates), len(replicates), "verification replicates")
    first = replicates[0]
    index = space.original_index if rows is None else space.original_index[rows]
    p_random = _p_random(first["q_set"], original_distances)
    records = pd.DataFrame({"distance": original_distances, "p_random": p_random}, index=index)
    p = decision.p_value
    return Verification(
        null=null, n_random=first["n_random"], exhaustive=setup.exhaustive,
        original_distribution=distribution(original_distances),
        random_distribution=distribution(first["q_set"]),
        hellinger=float(np.mean([r["hellinger"] for r in replicates])),
        hellinger_null=float(np.mean([r["hellinger_null"] for r in replicates])),
        p_value=float(p), p_value_se=float(np.sqrt(p * (1.0 - p) / decision.replicates)),
        batches=decision.replicates, bins=first["bins"],
        nonrandom_share=float(np.mean(p_random < ALPHA)), records=records,
        verdict=decision.verdict, p_value_low=decision.interval[0], p_value_high=decision.interval[1],
        replicates=decision.replicates, exceedances=decision.exceed, alpha=float(alpha), risk=float(risk),
        max_replicates=int(max_replicates),
    )


@dataclass(frozen=True)
class _Setup:
    """What every replicate shares and that is not random: the originals' intruder queries, their
    distances when the ranks are fixed, the exhaustive ``T`` and the sizes."""

    null: str
    n_random: int
    n_q: int
    size: int
    exhaustive: bool
    exhaustive_query: np.ndarray | None
    original_query: np.ndarray
    original_distances: np.ndarray
    tied: tuple[int, ...]
    factor: np.ndarray | None
    exhaustive_distances: np.ndarray | None

    @classmethod
    def of(cls, space: RankSpace, null: str, n_random: int, exhaustive_limit: int, ties: str,
           original_distances: np.ndarray, rows: np.ndarray | None) -> _Setup:
        n, m = space.x.shape
        tied = () if ties == "first" else tuple(
            j for j in range(space.m) if len(space.y_sorted[j]) > 1
            and bool(np.any(space.y_sorted[j][1:] == space.y_sorted[j][:-1])))
        # with ties broken anew in each replicate the exhaustive T is linked again each time: use it
        # only when that costs no more than a sampled one
        exhaustive = (null == "independent" and float(n) ** m <= exhaustive_limit
                      and (not tied or float(n) ** m <= n_random))
        exhaustive_query = None
        if exhaustive:
            positions, _ = random_positions(space.x, null, 0, exhaustive_limit, space.rng)
            exhaustive_query = random_query(space.x_sorted, space.z_sorted, positions)
        n_q = n_random // 2
        size = comparison_size(len(original_distances), n_random - n_q, exhaustive)
        fixed = None  # the exhaustive T's distances, when the ranks never change
        if exhaustive and not tied:
            fixed = nearest_distances(space, exhaustive_query)
        return cls(null, n_random, n_q, size, exhaustive, exhaustive_query, intruder_query(space, rows),
                   np.asarray(original_distances), tied,
                   copula_factor(space.x) if null == "copula" else None, fixed)


def _replicates(space: RankSpace, setup: _Setup, count: int, *, first: bool,
                rng: np.random.Generator) -> list[dict[str, Any]]:
    """``count`` replicates of the verification, each independent of every other: the released
    data's ties broken anew (the first replicate uses ``space``'s own ranks, an equally random
    draw), a fresh random set ``T`` defining ``Q`` (or the exhaustive one), a fresh null sample of
    ``size`` records and a fresh sample of ``size`` originals; ``exceed`` says whether the null
    sample's ``H`` is at or above the originals' (DESIGN.md section 3). Replicates on the same
    ranks (no ties to break) share one KD-tree call; with ties ``count`` must be 1."""
    reranked = bool(setup.tied) and not first
    if reranked:
        rank_y = space.rank_y.copy()
        for j in setup.tied:
            rank_y[:, j] = ranks(space.y[:, j], ties="random", seed=rng)
        space = replace(space, rank_y=rank_y, _tree=None)
    size, n_orig = setup.size, len(setup.original_distances)
    fixed_q = setup.exhaustive and not reranked and setup.exhaustive_distances is not None
    plans, queries = [], []
    for _ in range(count):
        sub = None if size >= n_orig else rng.choice(n_orig, size=size, replace=False)
        parts = []
        if not setup.exhaustive:
            positions, _ = random_positions(space.x, setup.null, setup.n_q + size, 0, rng, setup.factor)
            parts.append(random_query(space.x_sorted, space.z_sorted, positions))
        elif not fixed_q:
            parts.append(setup.exhaustive_query)
        if reranked:
            parts.append(setup.original_query if sub is None else setup.original_query[sub])
        plans.append((sub, sum(len(p) for p in parts)))
        queries += parts
    everything = nearest_distances(space, np.concatenate(queries)) if queries else np.empty(0, np.int64)
    out, at = [], 0
    for sub, length in plans:
        distances, at = everything[at:at + length], at + length
        if setup.exhaustive:
            q_set = setup.exhaustive_distances if fixed_q else distances[:len(setup.exhaustive_query)]
            distances = distances[0 if fixed_q else len(setup.exhaustive_query):]
            null_d = q_set[rng.integers(0, len(q_set), size=size)]  # i.i.d. draws from the exact Q
        else:
            q_set, null_d = distances[:setup.n_q], distances[setup.n_q:setup.n_q + size]
            distances = distances[setup.n_q + size:]
        if reranked:
            compared = distances
        else:
            compared = setup.original_distances if sub is None else setup.original_distances[sub]
        edges = distance_bins(q_set, size)
        n_bins = len(edges)
        q = np.bincount(bin_index(q_set, edges), minlength=n_bins) / len(q_set)
        observed = float(hellinger_rows(np.bincount(bin_index(compared, edges), minlength=n_bins) / size, q))
        null_h = float(hellinger_rows(np.bincount(bin_index(null_d, edges), minlength=n_bins) / size, q))
        out.append({"hellinger": observed, "hellinger_null": null_h, "exceed": null_h >= observed - 1e-12,
                    "q_set": q_set, "bins": n_bins,
                    "n_random": int(len(q_set) if setup.exhaustive else setup.n_random)})
    return out


def _p_random(q_set: np.ndarray, original_distances: np.ndarray) -> np.ndarray:
    """``Q(D <= d(x))`` of each original record: the share of random records at most as far."""
    return np.searchsorted(np.sort(q_set), original_distances, side="right") / len(q_set)


@renamed_seed()
@validated(**VERIFY_PARAMETERS)
def verify_linkage(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    null: str = "copula",
    n_random: int = N_RANDOM,
    exhaustive_limit: int = 1_000_000,
    n_null: int | None = None,
    max_batches: int | None = None,
    alpha: float = ALPHA,
    max_replicates: int = MAX_REPLICATES,
    risk: float = RISK,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
    progress: Progress = None,
) -> Verification:
    """Can the intruder verify his linkages? (seed 000 section 5.2 with DESIGN.md's corrections).

    Parameters
    ----------
    original, released : DataFrame
        ``X`` and ``Y``.
    columns, schema, ties, progress
        As in :func:`~sdckit.permutation.permutation_distances`.
    null : {"copula", "independent"}
        How the random set ``T`` is drawn: a Gaussian copula fitted to ``X`` (keeps its
        dependence; default) or each attribute independently (the paper's rule).
    n_random : int
        Random records (``>= 2``) drawn in each replicate when ``T`` is sampled: half define
        ``Q``, the rest (at most as many as there are original records) are the null sample.
    exhaustive_limit : int
        With ``null="independent"``, use all ``n^m`` combinations when ``n^m`` is at most this
        (and, when the released data has ties to break anew in each replicate, at most
        ``n_random``).
    alpha : float in (0, 1)
        Level of the verdict: ``"flagged"`` when the p-value is at most ``alpha``.
    max_replicates : int
        Budget of the sequential test (Gandy 2009): it draws independent replicates until its
        boundaries decide, at most this many; undecided, the verdict is ``"borderline"``.
    risk : float in (0, 0.5)
        Bound on the chance that a decided verdict differs from the exact p-value's.
    n_null, max_batches : int, optional
        Accepted for compatibility with earlier versions (null samples per batch, and batches);
        not used: each replicate draws one null sample and the sequential test stops by itself.
    seed : int or Generator, optional
        Seed for ties, the random set and the null samples.

    Returns
    -------
    Verification
    """
    space = rank_space(original, released, columns, schema=schema, ties=ties,
                       seed=seed)
    return verification_from(space, null=null, n_random=n_random, exhaustive_limit=exhaustive_limit,
                             alpha=alpha, max_replicates=max_replicates, risk=risk, ties=ties,
                             progress=progress)
