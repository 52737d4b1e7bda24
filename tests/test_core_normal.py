"""Multivariate normal draws independent of the LAPACK build (core/normal.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.core.normal import normal_draws, symmetric_sqrt


def test_symmetric_sqrt_of_a_2x2_covariance_by_hand():
    # [[4, 2], [2, 4]] has eigenvalues 6 and 2, eigenvectors (1, 1)/sqrt2 and (1, -1)/sqrt2:
    # its root is 1/2 [[sqrt6 + sqrt2, sqrt6 - sqrt2], [sqrt6 - sqrt2, sqrt6 + sqrt2]]
    a, b = np.sqrt(6.0), np.sqrt(2.0)
    want = 0.5 * np.array([[a + b, a - b], [a - b, a + b]])
    assert symmetric_sqrt([[4.0, 2.0], [2.0, 4.0]]) == pytest.approx(want, abs=1e-12)


def test_a_repeated_eigenvalue_has_one_root_whatever_the_eigenvectors():
    # the equicorrelation matrix (rho = 0.5, m = 4): eigenvalue 0.5 three times, so the
    # eigenvectors of that space are arbitrary; the root is not: a I + b J with
    # (a + 4b)^2 = 2.5 and a^2 = 0.5
    m, rho = 4, 0.5
    cov = np.full((m, m), rho) + np.eye(m) * (1 - rho)
    a = np.sqrt(0.5)
    b = (np.sqrt(2.5) - a) / m
    assert symmetric_sqrt(cov) == pytest.approx(a * np.eye(m) + b * np.ones((m, m)), abs=1e-12)
    # any other orthonormal basis of the eigenspaces gives the same root
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    rotated = q @ cov @ q.T
    assert q.T @ symmetric_sqrt(rotated) @ q == pytest.approx(symmetric_sqrt(cov), abs=1e-12)


def test_draws_are_standard_normals_times_the_root_and_have_the_covariance():
    cov = np.array([[4.0, 2.0], [2.0, 4.0]])
    x = normal_draws(np.random.default_rng(7), [1.0, -1.0], cov, 5)
    z = np.random.default_rng(7).standard_normal((5, 2))
    assert x == pytest.approx(np.array([1.0, -1.0]) + z @ symmetric_sqrt(cov), abs=1e-12)
    big = normal_draws(np.random.default_rng(8), [0.0, 0.0], cov, 200_000)
    # sample covariance within 2% (sd of each entry ~ 4 sqrt(2/200000) = 0.013)
    assert np.cov(big, rowvar=False) == pytest.approx(cov, abs=0.08)


def test_a_singular_covariance_is_accepted():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])  # the two columns are equal
    x = normal_draws(np.random.default_rng(1), [0.0, 0.0], cov, 100)
    assert np.allclose(x[:, 0], x[:, 1])
