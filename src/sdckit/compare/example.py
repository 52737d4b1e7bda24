"""Seed 001's comparison of masking and synthetic data, on simulated correlated data.

Seed 001 ("Evaluation of methods") protects one simulated data set of 4 normal attributes
four ways — additive noise N(0, 0.01 var_j), multiplicative noise U(0.95, 1.05), rank swapping
with p = 15% and multivariate-normal synthetic data — and compares the permutation distances of
the original and random records. Its verdicts: the three masking methods are not plausibly
deniable, the synthetic data are. Under the corrected verification (copula null, p-value
against the finite-sample baseline; DESIGN.md section 3) with n = 1000 and pairwise
correlation 0.5, additive noise keeps the largest Hellinger distance and is flagged, and the
synthetic data are plausibly deniable.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from sdckit.core.normal import normal_draws
from sdckit.permutation.verify import N_RANDOM
from sdckit.compare.core import Candidate, Comparison, Progress, compare
from sdckit.core.params import Interval, check_param
from sdckit.core.random import RandomState, renamed_seed


def correlated_normal(
    n: int, m: int = 4, rho: float = 0.5, mean: float = 50.0, sd: float = 10.0
) -> Callable[[np.random.Generator], pd.DataFrame]:
    """A simulator of ``n`` records of ``m`` normal attributes X1..Xm with the given mean and
    standard deviation and pairwise correlation ``rho``."""
    cov = np.full((m, m), rho) + np.eye(m) * (1 - rho)

    def simulate(rng: np.random.Generator) -> pd.DataFrame:
        values = mean + sd * normal_draws(rng, np.zeros(m), cov, n)
        return pd.DataFrame(values, columns=[f"X{j + 1}" for j in range(m)])

    return simulate


def seed001_candidates() -> list[Candidate]:
    """Seed 001's four releases."""
    from sdckit.masking import AdditiveNoise, MultiplicativeNoise, RankSwapping
    from sdckit.synthetic import MultivariateNormalSynthesizer

    return [
        Candidate("additive_noise_1pct", (AdditiveNoise(alpha=0.01),)),
        Candidate("multiplicative_noise_5pct", (MultiplicativeNoise(a=0.05),)),
        Candidate("rank_swapping_15pct", (RankSwapping(p=15),)),
        Candidate("synthetic_mvn", (MultivariateNormalSynthesizer(),)),
    ]


@renamed_seed()
def example_methods(
    n: int = 1000,
    seeds: int = 5,
    *,
    n_random: int = N_RANDOM,
    n_null: int = 50,
    seed: RandomState = 2015,
    progress: Progress | None = None,
) -> Comparison:
    """Seed 001's comparison on ``n`` simulated records (4 normal attributes, correlation 0.5).

    The attributes have mean 50 and standard deviation 10. The level matters for
    multiplicative noise only: U(0.95, 1.05) factors add noise of standard deviation
    ``0.029 |x|``, about 1.4 at x = 50, against 1.0 (= sqrt(0.01 * 100)) for the additive
    noise — the seed's ordering (multiplicative noise "less different" than additive noise).
    On data centred at 0 multiplicative noise would barely move the values and be flagged
    hardest.

    Each of ``seeds`` repetitions simulates new data; the table holds means over them. At
    n = 1000 with the defaults (seed 2015): additive noise H = 0.484 (p = 0), multiplicative
    noise H = 0.336 (p = 0), rank swapping H = 0.074 (mean p = 0.26), synthetic data
    H = 0.061 (mean p = 0.64), against a null baseline of 0.065 (the microdata guide,
    ``docs/reference/microdata-guide.md``, runs it).
    """
    check_param("example_methods", "n", n, Interval(int, 10, None))
    return compare(correlated_normal(n), seed001_candidates(), seeds=seeds, n_random=n_random,
                   n_null=n_null, seed=seed, progress=progress)
