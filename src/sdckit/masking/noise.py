"""Noise addition (seed 002 section 4.6.3; seed 001 section 3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, register
from sdckit.core.params import Interval
from sdckit.core.schema import Schema


@register
@dataclass(frozen=True)
class AdditiveNoise(Method):
    """Uncorrelated additive noise: ``y_j = x_j + e_j`` with ``e_j ~ N(0, alpha * var(x_j))``.

    Each numeric column gets independent normal noise whose variance is ``alpha`` times the
    column's sample variance (ddof=1), so the noise is scaled to each attribute. Means are
    preserved in expectation; variances grow by the factor ``1 + alpha``.

    Parameters
    ----------
    alpha : float > 0
        Noise variance as a share of each column's variance (seed 001 uses 0.01, "1% of the
        attribute's variance").
    columns : list of str, optional
        Columns to perturb; default: the numeric quasi-identifiers and confidential columns
        (every numeric column when no roles are declared).

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). Integer columns come out as floats.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "noise addition";
    seed 001 (Domingo-Ferrer, Muralidhar, Bras-Amorós), section 3, the noise of its comparison.
    """

    alpha: float
    name: ClassVar[str] = "additive_noise"
    constraints: ClassVar = {"alpha": Interval(float, 0, None, closed="neither")}
    example: ClassVar = {"alpha": 0.1}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> pd.DataFrame:
        values = frame.loc[:, list(columns)].to_numpy(dtype=float)
        sd = np.sqrt(self.alpha * values.var(axis=0, ddof=1 if len(values) > 1 else 0))
        noise = rng.standard_normal(values.shape) * sd
        for j, name in enumerate(columns):
            frame[name] = values[:, j] + noise[:, j]
        return frame
