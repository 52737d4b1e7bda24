"""Propensity-score utility: pMSE (Woo, Reiter, Oganian & Karr 2009; Snoke et al. 2018).

Stack the original (label 0) and the released data (label 1), fit a classifier that predicts
the label, and measure how well it tells them apart::

    pMSE = 1/N * sum_i (p_i - c)^2,    c = n_released / N

where ``p_i`` is the fitted probability that record i is released. pMSE is 0 when the
classifier cannot tell the two apart and reaches ``c^2``-ish values (0.25 for equal sizes)
when it separates them perfectly. For logistic regression with k parameters, when the release
is an independent sample from the original's distribution, ``N * pMSE / (c (1 - c))`` is
asymptotically chi-square with ``k - 1`` degrees of freedom (a first-order expansion of the
fitted probabilities around ``c``), so its null expectation is ``(k - 1) c (1 - c) / N``; the
ratio to that value is reported (about 1: "as good as a fresh sample"). Snoke et al. (2018)
give ``(k - 1) (1 - c)^2 c / N``, which is half of it at c = 1/2; simulation with independent
samples agrees with the chi-square value (tests/test_utility.py).

The logistic model uses, by default, every numeric column standardized, their squares and
pairwise products (so that differences in variance and correlation are visible, not only in
means) and one-hot dummies of non-numeric columns. The tree model (a CART classifier from
scikit-learn) needs no such choice but has no analytic null value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from sdckit.core.arrays import standardize
from sdckit.core.errors import DataError, SchemaError
from sdckit.core.params import Boolean, Interval, IsNone, Options, validated
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.result import Result

#: Inverse strength of the ridge penalty of the logistic model. On standardized features it is
#: negligible, but it keeps the fit finite when original and release are (nearly) separable.
RIDGE_C = 1e4


@dataclass(frozen=True)
class Propensity(Result):
    """The pMSE of a release and, for logistic regression, its null expectation and ratio."""

    pmse: float
    null_pmse: float | None
    ratio: float | None
    model: str
    n_parameters: int | None
    sampled: int | None = None


def _design(stacked: pd.DataFrame, interactions: bool) -> np.ndarray:
    numeric = [c for c in stacked.columns if pd.api.types.is_numeric_dtype(stacked[c].dtype)
               and not pd.api.types.is_bool_dtype(stacked[c].dtype)]
    other = [c for c in stacked.columns if c not in numeric]
    parts = []
    if numeric:
        x = standardize(stacked[numeric].to_numpy(dtype=float))
        parts.append(x)
        if interactions:
            parts.append(x**2)
            pairs = list(combinations(range(x.shape[1]), 2))
            if pairs:
                parts.append(np.column_stack([x[:, a] * x[:, b] for a, b in pairs]))
    if other:
        dummies = pd.get_dummies(stacked[other].astype(str), drop_first=True, dtype=float)
        parts.append(dummies.to_numpy())
    design = np.hstack(parts) if parts else np.empty((len(stacked), 0))
    # drop constant features (e.g. a constant column): they carry nothing and are not parameters
    keep = design.std(axis=0) > 0 if design.size else np.zeros(0, dtype=bool)
    return design[:, keep]


@renamed_seed()
@validated(model=Options(("logistic", "tree")), interactions=Boolean(), sample=[IsNone(), Interval(int, 2, None)])
def pmse(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    model: str = "logistic",
    interactions: bool = True,
    sample: int | None = None,
    seed: RandomState = None,
) -> Propensity:
    """Propensity-score mean squared error of ``released`` against ``original``.

    Parameters
    ----------
    columns : sequence of str, optional
        Default: every column the two frames share.
    model : {"logistic", "tree"}
        Logistic regression (with the null expectation; a negligible ridge penalty, see
        :data:`RIDGE_C`, keeps separable cases finite) or a CART tree
        (``min_samples_leaf`` = max(5, 1% of the records)).
    interactions : bool
        Logistic model only: add squares and pairwise products of the numeric columns.
    sample : int, optional
        Fit on a simple random sample of at most this many records of each data set (pMSE and
        its null expectation are then those of the samples; ``sampled`` says how many records
        were used in all). On large files the logistic fit dominates a report's time.
    seed : int or Generator
        Seeds the samples and the tree's tie-breaking (logistic regression is deterministic).

    Examples
    --------
    One binary attribute; the model's fitted probabilities are the group shares:
    a = 0 holds 3 original and 1 released record (p = 1/4), a = 1 holds 1 and 3 (p = 3/4),
    so pMSE = mean((p - 1/2)^2) = 1/16.

    >>> x = pd.DataFrame({"a": [0, 0, 0, 1]}); y = pd.DataFrame({"a": [0, 1, 1, 1]})
    >>> round(pmse(x, y).pmse, 4)
    0.0625
    """
    for name, frame in (("original", original), ("released", released)):
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"pmse expects the {name} data as a pandas DataFrame; got {type(frame).__name__}.")
        if len(frame) == 0:
            raise DataError(f"pmse needs records in the {name} data; it has none.")
    cols = [c for c in released.columns if c in original.columns] if columns is None else list(columns)
    if not cols:
        raise SchemaError("pmse found no column shared by the original and released data; name columns=[...].")
    for name, frame in (("original", original), ("released", released)):
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise SchemaError(f"pmse: column {missing[0]!r} is not in the {name} data.")
        if frame[cols].isna().to_numpy().any():
            bad = next(c for c in cols if frame[c].isna().any())
            raise DataError(f"pmse cannot handle missing values: column {bad!r} of the {name} data has some; impute or remove them first.")
    rng = as_generator(seed, secret=False)
    sampled = None
    if sample is not None and max(len(original), len(released)) > sample:
        original, released = (frame.iloc[np.sort(rng.choice(len(frame), size=sample, replace=False))]
                              if len(frame) > sample else frame for frame in (original, released))
        sampled = len(original) + len(released)
    stacked = pd.concat([original[cols], released[cols]], ignore_index=True)
    labels = np.r_[np.zeros(len(original)), np.ones(len(released))]
    n_total = len(stacked)
    c = len(released) / n_total
    design = _design(stacked, interactions if model == "logistic" else False)
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression

        if design.shape[1] == 0:
            p = np.full(n_total, c)
        else:
            fit = LogisticRegression(C=RIDGE_C, solver="newton-cholesky", tol=1e-10, max_iter=500).fit(design, labels)
            p = fit.predict_proba(design)[:, 1]
        k = design.shape[1] + 1
        null = (k - 1) * c * (1 - c) / n_total
    else:
        from sklearn.tree import DecisionTreeClassifier

        tree_seed = int(rng.integers(2**31 - 1))
        leaf = max(5, n_total // 100)
        if design.shape[1] == 0:
            p = np.full(n_total, c)
        else:
            p = DecisionTreeClassifier(min_samples_leaf=leaf, random_state=tree_seed).fit(design, labels).predict_proba(design)[:, 1]
        k, null = None, None
    value = float(np.mean((p - c) ** 2))
    ratio = value / null if null else None
    return Propensity(value, null, ratio, model, k, sampled)
