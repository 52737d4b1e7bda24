"""Multivariate normal synthetic data (seed 001 section 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.normal import normal_draws
from sdckit.core.method import register
from sdckit.core.schema import Schema
from sdckit.synthetic.base import Synthesizer


@register
@dataclass(frozen=True)
class MultivariateNormalSynthesizer(Synthesizer):
    """Synthetic records drawn from ``N(mean of X, covariance of X)``.

    Seed 001's synthetic data: "we generate a synthetic data Y by sampling from a
    multivariate normal distribution with mean vector the mean vector of X and covariance
    the covariance of X" (sample covariance, ddof=1). Each synthetic record is an independent
    draw, so means and covariances are reproduced up to sampling error (standard error of a
    mean ``sqrt(var_j / n)``); marginal shapes (skew, bounds, integrality) are not: every
    column comes out as unbounded floats. A singular covariance (e.g. a column that is a sum
    of others) is allowed: draws then lie in the same subspace.

    Parameters
    ----------
    n : int >= 1, optional
        Records to release; default as many as the input.
    columns : list of str, optional
        Numeric columns to synthesize; default every numeric non-identifier column. Other
        columns are dropped (see :class:`~sdckit.synthetic.base.Synthesizer`).

    Notes
    -----
    ``nan_policy="error"``: impute missing values first. Needs at least 2 records.

    References
    ----------
    Seed 001 (Domingo-Ferrer, Muralidhar, Bras-Amorós), section 5, "Evaluation of methods:
    synthetic data"; seed 002 section 4.6.3, synthetic microdata (Rubin).
    """

    name: ClassVar[str] = "multivariate_normal_synthesizer"
    example: ClassVar = {}

    def synthesize(
        self, data: pd.DataFrame, schema: Schema, size: int, rng: np.random.Generator
    ) -> pd.DataFrame:
        values = data.to_numpy(dtype=float)
        mean = values.mean(axis=0)
        cov = np.atleast_2d(np.cov(values, rowvar=False, ddof=1))
        draws = normal_draws(rng, mean, cov, size)
        return pd.DataFrame(draws, columns=data.columns)
