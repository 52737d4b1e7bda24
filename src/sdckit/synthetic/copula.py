"""Gaussian-copula synthetic data with exactly kept marginals (DESIGN.md section 3:
normal scores and reverse mapping)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.special import ndtri

from sdckit.core.normal import normal_draws
from sdckit.core.method import register
from sdckit.core.ranks import inverse_permutation, order_values, ranks, sort_order
from sdckit.core.schema import ORDERED_KINDS, Schema
from sdckit.synthetic.base import Synthesizer


def quantile_positions(synthetic_ranks: np.ndarray, n: int) -> np.ndarray:
    """Positions (0-based) in the sorted original column of the values given to ranks
    ``1..size`` of a synthetic column: the original quantile at ``(rank - 0.5) / size``
    (the inverted empirical distribution function). With ``size == n`` rank ``r`` gets the
    ``r``-th smallest original value, so the column is a permutation of the original one."""
    size = len(synthetic_ranks)
    positions = np.ceil((synthetic_ranks - 0.5) * n / size).astype(np.int64) - 1
    return np.clip(positions, 0, n - 1)


@register
@dataclass(frozen=True)
class GaussianCopulaSynthesizer(Synthesizer):
    """Synthetic records from a Gaussian copula; every marginal is the original one exactly.

    1. Each column's ranks (ties broken at random, :mod:`sdckit.core.ranks`) are turned into
       normal scores ``Phi^{-1}(rank / (n + 1))``.
    2. The correlation matrix ``R`` of the scores is estimated, and ``n_out`` records are
       drawn from ``N(0, R)``.
    3. Reverse mapping: in each column, the original values are placed in the order of the
       draws' ranks — the draw of rank ``r`` gets the original value of rank ``r``. With
       ``n_out == n`` every synthetic column is a permutation of the original column (sorted
       values are equal); with another ``n`` each draw gets the original quantile at
       ``(rank - 0.5) / n_out``.

    So the release keeps each marginal exactly and the rank (normal-score) dependence
    approximately, and nothing else: no record is carried over.

    Parameters
    ----------
    n : int >= 1, optional
        Records to release; default as many as the input.
    columns : list of str, optional
        Numeric, ordinal or date columns; default every such non-identifier column. Other
        columns are dropped (see :class:`~sdckit.synthetic.base.Synthesizer`).

    Notes
    -----
    ``nan_policy="error"``. Output values are original values, so integer, date and ordinal
    columns keep their dtype.

    References
    ----------
    Seed 000 (Domingo-Ferrer & Muralidhar), reverse mapping (Algorithm 1); seed 001 section
    5 (synthetic data) and DESIGN.md section 3 (the copula null of the verification);
    Sklar's theorem; seed 002 section 4.6.3, synthetic microdata.
    """

    name: ClassVar[str] = "gaussian_copula_synthesizer"
    kinds: ClassVar = ORDERED_KINDS
    example: ClassVar = {}

    def synthesize(
        self, data: pd.DataFrame, schema: Schema, size: int, rng: np.random.Generator
    ) -> pd.DataFrame:
        n, m = data.shape
        keys = np.column_stack([order_values(data[c], schema[c]) for c in data.columns])
        # one sort per column: its order gives the ranks of the scores and, later, the
        # original values by rank (tied keys are equal values, so their order does not matter)
        orders = [sort_order(keys[:, j], ties="random", seed=rng) for j in range(m)]
        scores = np.column_stack([ndtri((inverse_permutation(o) + 1) / (n + 1)) for o in orders])
        corr = np.atleast_2d(np.corrcoef(scores, rowvar=False))
        draws = normal_draws(rng, np.zeros(m), corr, size)
        out = {}
        for j, name in enumerate(data.columns):
            position = quantile_positions(ranks(draws[:, j], ties="random", seed=rng), n)
            out[name] = data[name].iloc[orders[j][position]].reset_index(drop=True)
        return pd.DataFrame(out)
