"""Data shuffling (Muralidhar & Sarathy 2006; seed 001 "Permutation model"; seed 002 section 4.6.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.arrays import covariance_root
from sdckit.core.method import Method, Outcome, register
from sdckit.core.ranks import normal_scores, sort_order
from sdckit.core.schema import ORDERED_KINDS, Role, Schema
from sdckit.masking.reorder import column_order_values, take_column


def ordered_normal_scores(orders: list[np.ndarray]) -> np.ndarray:
    """Normal scores ``Phi^-1((rank - 0.5) / n)``, one column per sort order (``order[r]`` is
    the record of rank ``r + 1``). Every column holds the same ``n`` scores, in its own order."""
    n = len(orders[0]) if orders else 0
    table = normal_scores(np.arange(1, n + 1), n)
    scores = np.empty((n, len(orders)))
    for j, order in enumerate(orders):
        scores[order, j] = table
    return scores


def conditional_normal_draw(scores: np.ndarray, c: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of the first ``c`` columns of ``scores`` (the confidential normal scores) from
    their normal distribution given the other columns (the conditioning scores):
    ``S beta + e`` with ``beta = R_SS^-1 R_SC`` and ``e ~ N(0, R_CC - R_CS R_SS^-1 R_SC)``,
    ``R`` the correlation matrix of the scores. All columns hold the same set of scores, so
    they share one mean (0 up to rounding) and one variance and ``R = S'S / (n var)``."""
    n = len(scores)
    centred_var = float(np.var(scores[:, 0])) * n
    gram = scores.T @ scores - np.outer(scores.sum(axis=0), scores.sum(axis=0)) / n
    corr = gram / centred_var if centred_var > 0 else np.eye(scores.shape[1])
    r_cc = corr[:c, :c]
    if scores.shape[1] == c:
        mean, cov = 0.0, r_cc
    else:
        beta = np.linalg.pinv(corr[c:, c:]) @ corr[c:, :c]  # pinv: collinear columns allowed
        mean = scores[:, c:] @ beta
        cov = r_cc - corr[:c, c:] @ beta
    root = covariance_root((cov + cov.T) / 2.0)
    return mean + rng.standard_normal((n, c)) @ root.T


@register
@dataclass(frozen=True)
class DataShuffling(Method):
    """Data shuffling: the confidential values, reordered by a draw from their conditional law.

    Following Muralidhar & Sarathy (2006): every column is turned into normal scores
    ``Phi^-1((rank - 0.5) / n)`` (ties broken at random); perturbed confidential scores ``Y*``
    are drawn from the multivariate normal of the confidential scores given the
    non-confidential ones (the conditional normal with the scores' correlation matrix); then
    each confidential column's original values are put in the rank order of ``Y*`` (reverse
    mapping: the value of rank ``r`` goes to the record where ``Y*`` has rank ``r``).

    Parameters
    ----------
    columns : list of str, optional
        The confidential columns to shuffle; default: the numeric, date and ordinal columns
        with role ``confidential`` (every such column when no roles are declared).

    Notes
    -----
    *Conditioning columns*: every other numeric, date or ordinal column that is not an
    identifier (quasi-identifiers, non-confidential and undeclared columns, and confidential
    columns left out of ``columns``); they are released unchanged. Nominal columns do not
    condition. The shuffled columns keep their values exactly (each is a permutation of
    itself, dtype kept), and their rank correlations with each other and with the conditioning
    columns are kept in expectation.

    *No conditioning column* (e.g. data without declared roles, where every ordered column is
    shuffled): ``Y*`` is drawn from ``N(0, R_CC)``, the normal law of the confidential scores,
    so each column is randomly permuted while the rank correlations among the shuffled
    columns are kept in expectation; ``info["warnings"]`` says so.

    Missing values are refused (``nan_policy="error"``), in conditioning columns too.
    ``info["conditioning_columns"]`` lists the conditioning columns.

    References
    ----------
    Muralidhar & Sarathy (2006), "Data shuffling — a new masking approach for numerical data",
    Management Science 52(5); seed 001 (Domingo-Ferrer & Muralidhar, slides), "Permutation model:
    reverse mapping"; seed 002, section 4.6.3.
    """

    name: ClassVar[str] = "data_shuffling"
    kinds: ClassVar = ORDERED_KINDS
    roles: ClassVar = frozenset({Role.CONFIDENTIAL})
    example: ClassVar = {}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        conditioning = tuple(
            c.name for c in schema.columns
            if c.kind in ORDERED_KINDS and c.role is not Role.IDENTIFIER
            and c.name not in columns and c.name in frame.columns
        )
        info: dict = {"conditioning_columns": list(conditioning), "warnings": []}
        if not conditioning:
            info["warnings"].append(
                "DataShuffling found no non-confidential numeric, date or ordinal column to "
                "condition on: the shuffled columns are permuted at random, keeping only their "
                "rank correlations with each other."
            )
        n = len(frame)
        if n < 2:
            return Outcome(frame, schema, info)
        orders = [
            sort_order(column_order_values(frame, name, schema), seed=rng)
            for name in (*columns, *conditioning)
        ]
        perturbed = conditional_normal_draw(ordered_normal_scores(orders), len(columns), rng)
        for j, name in enumerate(columns):
            source = np.empty(n, dtype=np.int64)
            # continuous draws have no ties, so the fast unstable sort gives the rank order
            source[np.argsort(perturbed[:, j])] = orders[j]
            take_column(frame, name, source)
        return Outcome(frame, schema, info)
