"""Diversity of a sensitive attribute within classes, from a histogram (classes x values).

Shared by the l-diversity criteria that :mod:`sdckit.anonymity` enforces and the l-diversity
measure that :mod:`sdckit.risk` reports (Machanavajjhala et al. 2007, "l-Diversity: privacy
beyond k-anonymity", ACM TKDD 1(1), Definitions 4.1 and 4.2).
"""

from __future__ import annotations

import numpy as np


def value_histogram(labels: np.ndarray, codes: np.ndarray, n_labels: int, n_values: int) -> np.ndarray:
    """Counts of each value code (0..n_values-1) in each class label (0..n_labels-1)."""
    return np.bincount(labels * n_values + codes, minlength=n_labels * n_values).reshape(n_labels, n_values)


def distinct_values(hist: np.ndarray) -> np.ndarray:
    """Distinct l-diversity of each row: the number of values that occur."""
    return (np.asarray(hist) > 0).sum(axis=1).astype(float)


def entropy_values(hist: np.ndarray) -> np.ndarray:
    """Entropy l-diversity of each row: ``exp(entropy)``, the effective number of values."""
    hist = np.asarray(hist, dtype=float)
    p = hist / np.maximum(hist.sum(axis=1, keepdims=True), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return np.exp(terms.sum(axis=1))
