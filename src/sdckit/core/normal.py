"""Multivariate normal draws that give the same numbers with any linear-algebra library.

``numpy.random.Generator.multivariate_normal`` multiplies standard normals by a factor built from
the covariance's singular vectors or eigenvectors. Their signs — and, for a repeated eigenvalue
(e.g. an equicorrelation matrix), their directions — depend on the LAPACK build inside the numpy
wheel, so the same seed gave different draws after a numpy upgrade. The symmetric square root
``S^(1/2) = V diag(sqrt(s)) V'`` of a positive semi-definite matrix is unique, so draws
``z S^(1/2)`` depend only on the seed (up to rounding, ~1e-15).
"""

from __future__ import annotations

import numpy as np


def symmetric_sqrt(cov: np.ndarray) -> np.ndarray:
    """The unique symmetric positive semi-definite square root of ``cov`` (negative eigenvalues
    from rounding are taken as 0)."""
    cov = np.atleast_2d(np.asarray(cov, float))
    s, v = np.linalg.eigh((cov + cov.T) / 2)
    root = (v * np.sqrt(np.clip(s, 0.0, None))) @ v.T
    return (root + root.T) / 2


def normal_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of N(mean, cov): ``size x m`` standard normals from ``rng`` times
    :func:`symmetric_sqrt` (cov), plus ``mean``."""
    root = symmetric_sqrt(cov)
    z = rng.standard_normal((int(size), root.shape[0]))
    return np.asarray(mean, float) + z @ root
