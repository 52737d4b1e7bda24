"""Noise addition: additive, correlated and multiplicative (seed 002 section 4.6.3; seed 001 section 3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.arrays import covariance_root, numeric_block, write_block
from sdckit.core.method import Method, register
from sdckit.core.params import Boolean, Interval, Options
from sdckit.core.rowwise import Moments
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
    needs: ClassVar[str] = "rows"

    def needs_statistics(self) -> bool:
        return True

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> Moments:
        return Moments.of(numeric_block(chunk, columns))

    def merge_statistics(self, first: Moments, second: Moments) -> Moments:
        return first.merge(second)

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: Moments,
    ) -> pd.DataFrame:
        values = numeric_block(chunk, columns)
        sd = np.sqrt(self.alpha * statistics.variance())
        return write_block(chunk, columns, values + rng.standard_normal(values.shape) * sd)


@register
@dataclass(frozen=True)
class CorrelatedNoise(Method):
    """Correlated additive noise: ``Y = X + E`` with each row of ``E ~ N(0, alpha * Sigma)``.

    ``Sigma`` is the sample covariance matrix (ddof=1) of the perturbed columns, so the noise
    has the data's correlation structure: the expected covariance of ``Y`` is
    ``(1 + alpha) * Sigma`` and its correlation matrix is that of ``X`` (seed 002: "means and
    correlations of original data can be preserved").

    Parameters
    ----------
    alpha : float > 0
        Noise covariance as a multiple of ``Sigma``.
    preserve_covariance : bool, default False
        Follow the noise with the linear transformation of Kim (1986) that seed 002 mentions
        ("additional linear transformations ... to ensure that the sample covariance matrix of
        the masked attributes is an unbiased estimator for Sigma"):
        ``y_j = c * z_j + (1 - c) * mean(x_j)`` with ``z = x + e`` and ``c = 1 / sqrt(1 + alpha)``.
        Because ``E[cov(Z)] = (1 + alpha) * Sigma`` for ``Sigma`` the ddof=1 sample covariance,
        ``E[cov(Y)] = c**2 * (1 + alpha) * Sigma = Sigma`` and the mean is kept in expectation.
        (``c`` is derived here for the ddof=1 sample covariance; texts that state Kim's
        transformation with other covariance conventions give constants that differ from it
        by ``O(alpha / n)``.)
    columns : list of str, optional
        Columns to perturb together; default: the numeric quasi-identifiers and confidential
        columns (every numeric column when no roles are declared).

    Notes
    -----
    Missing values are refused (``nan_policy="error"``). Integer columns come out as floats.
    A singular ``Sigma`` (constant or collinear columns) is allowed: the noise then lies in the
    data's own subspace (constant columns stay constant).

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "Noise addition";
    Kim (1986), "A method for limiting disclosure in microdata based on random noise and
    transformation", ASA Proceedings of the Section on Survey Research Methods.
    """

    alpha: float
    preserve_covariance: bool = False
    name: ClassVar[str] = "correlated_noise"
    constraints: ClassVar = {
        "alpha": Interval(float, 0, None, closed="neither"),
        "preserve_covariance": Boolean(),
    }
    example: ClassVar = {"alpha": 0.1}
    needs: ClassVar[str] = "rows"

    def needs_statistics(self) -> bool:
        return True

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> Moments:
        return Moments.of(numeric_block(chunk, columns), cross=True)

    def merge_statistics(self, first: Moments, second: Moments) -> Moments:
        return first.merge(second)

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: Moments,
    ) -> pd.DataFrame:
        values = numeric_block(chunk, columns)
        root = covariance_root(self.alpha * np.atleast_2d(statistics.covariance()))
        masked = values + rng.standard_normal(values.shape) @ root.T
        if self.preserve_covariance:
            c = 1.0 / np.sqrt(1.0 + self.alpha)
            masked = c * masked + (1.0 - c) * statistics.mean
        return write_block(chunk, columns, masked)


@register
@dataclass(frozen=True)
class MultiplicativeNoise(Method):
    """Multiplicative noise: ``y_ij = x_ij * e_ij`` with independent factors of mean 1.

    Parameters
    ----------
    a : float > 0
        Spread of the factors. ``distribution="uniform"``: ``e ~ U(1 - a, 1 + a)`` (seed 001),
        which needs ``a <= 1`` so that no factor is negative. ``distribution="lognormal"``:
        ``e = exp(s * N(0, 1) - s**2 / 2)`` with ``s**2 = log(1 + a**2 / 3)``: a log-normal
        factor with mean 1 and the same variance ``a**2 / 3`` as the uniform one, always
        positive (so signs are kept), any ``a > 0``.
    distribution : {"uniform", "lognormal"}, default "uniform"
    columns : list of str, optional
        Columns to perturb; default: the numeric quasi-identifiers and confidential columns
        (every numeric column when no roles are declared).

    Notes
    -----
    Means are kept in expectation (``E[e] = 1``, independent of ``x``); each value's noise is
    proportional to its size, so zeros stay zero. Missing values are refused
    (``nan_policy="error"``). Integer columns come out as floats.

    References
    ----------
    Seed 001 (Domingo-Ferrer & Muralidhar, slides), "Evaluation of methods: multiplicative
    noise"; seed 002, section 4.6.3, "Noise addition".
    """

    a: float
    distribution: str = "uniform"
    name: ClassVar[str] = "multiplicative_noise"
    constraints: ClassVar = {
        "a": Interval(float, 0, None, closed="neither"),
        "distribution": Options(("uniform", "lognormal")),
    }
    example: ClassVar = {"a": 0.1}

    def check_parameters(self) -> None:
        if self.distribution == "uniform" and self.a > 1:
            raise self.param_error(
                "a", "<= 1 with distribution='uniform' (factors U(1-a, 1+a) must not be negative); "
                "use distribution='lognormal' for larger noise"
            )

    needs: ClassVar[str] = "rows"

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: None,
    ) -> pd.DataFrame:
        return self.transform(chunk, columns, schema, rng)

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> pd.DataFrame:
        values = numeric_block(frame, columns)
        if self.distribution == "uniform":
            factors = rng.uniform(1.0 - self.a, 1.0 + self.a, values.shape)
        else:
            s = np.sqrt(np.log1p(self.a**2 / 3.0))
            factors = np.exp(s * rng.standard_normal(values.shape) - s * s / 2.0)
        return write_block(frame, columns, values * factors)
