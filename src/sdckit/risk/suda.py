"""SUDA2: minimal sample uniques, SUDA and DIS-SUDA scores (Manning, Haglin & Keane 2008).

A *sample unique* on a set S of key variables is a record no other record matches on S; it is
a *minimal sample unique* (MSU) on S when it is unique on no proper subset of S (Elliot et al.
2002, "SUDA: a program for detecting special uniques"). Uniqueness only grows with S, so S is
minimal exactly when the record is not unique on any of the |S| subsets one variable smaller;
SUDA2's search (Manning, Haglin & Keane 2008, Data Min Knowl Disc 16:165-196) is run here level
by level over the subsets of size 1..``max_size``, each level's uniqueness grouped with numpy:

* records identical on all keys are merged first (a record not unique on all keys is unique on
  no subset, so only the full-key uniques are candidates);
* a subset none of whose candidates is still non-unique on all its smaller subsets needs no
  grouping (it holds no MSU and every candidate is unique on it).

Scores (sdcMicro ``suda2(original_scores=TRUE)``, after Elliot et al.): with M key variables,
an MSU of size k scores ``(M-k)!``; a record's SUDA score is the sum over its MSUs. The DIS-SUDA
score calibrates it to the probability that a sample unique is a population unique under the
sampling fraction ``dis_fraction`` (Skinner & Elliot 2002's DIS): with U full-key sample uniques
and P records in classes of two, ``dis = U f / (U f + P (1-f))``, ``Q = 1 + (8 - M)/20``,
``A = sum over scored records of score^-Q`` and ``dis_score = 1 / (1 + (U/dis - U) / (score^Q A))``.
Missing key values follow ``missing`` (:mod:`sdckit.core.matching`); note that sdcMicro's SUDA2
never puts a missing value into an MSU but lets another record's missing value mismatch, a
hybrid of the two rules. sdcMicro pads fewer than 3 keys with constant columns (so M = 3 there);
sdckit takes M as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.matching import MISSING_RULE, check_keys, combine, key_codes, match_totals
from sdckit.core.params import Interval, IsNone, validated
from sdckit.risk.frequencies import require_frame


def _subset_counter(reduced: np.ndarray, mult: np.ndarray, cand: np.ndarray) -> Callable[[tuple[int, ...]], np.ndarray]:
    """``count(subset)``: for each candidate, the (multiplicity-weighted) number of records
    matching it on the keys of ``subset``. Without missing codes the key is a mixed-radix
    number of contiguous columns, counted with one bincount (no hashing)."""
    if (reduced < 0).any():
        return lambda subset: match_totals(reduced[:, list(subset)], mult)[1][cand]
    columns = [np.ascontiguousarray(reduced[:, j]) for j in range(reduced.shape[1])]
    cards = [int(c.max()) + 1 for c in columns]
    limit = 4 * len(mult) + 1024

    def count(subset: tuple[int, ...]) -> np.ndarray:
        label = columns[subset[0]].copy()
        size = cards[subset[0]]
        for j in subset[1:]:
            if size * cards[j] > limit:
                label = np.unique(label, return_inverse=True)[1]
                size = int(label.max()) + 1
            label *= cards[j]
            label += columns[j]
            size *= cards[j]
        return np.bincount(label, weights=mult, minlength=size)[label[cand]]

    return count


def _msu_counts(codes: np.ndarray, max_size: int,
                progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MSU counts (records x max_size) and each record's full-key frequency, for one stratum."""
    n, m = codes.shape
    labels = combine(codes + 1)  # identical rows (missing included) merge
    first = np.unique(labels, return_index=True)[1]
    reduced = codes[first]
    _, inverse = np.unique(labels, return_inverse=True)
    mult = np.bincount(inverse).astype(float)
    full = match_totals(reduced, mult)[1]
    cand = np.flatnonzero(full == 1)
    counts = np.zeros((len(reduced), max_size), dtype=np.int64)
    count = _subset_counter(reduced, mult, cand)
    previous: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(len(cand), dtype=bool)}
    total = sum(math.comb(m, k) for k in range(1, max_size + 1))
    done = 0
    for k in range(1, max_size + 1):
        level: dict[tuple[int, ...], np.ndarray] = {}
        for subset in combinations(range(m), k):
            covered = np.zeros(len(cand), dtype=bool)
            for drop in range(k):
                covered |= previous[subset[:drop] + subset[drop + 1:]]
            if covered.all():
                level[subset] = covered
            else:
                unique = count(subset) == 1
                counts[cand[unique & ~covered], k - 1] += 1
                level[subset] = unique | covered
            done += 1
            if progress is not None:
                progress(done, total)
        previous = level
    return counts[inverse], full[inverse]


def _scores(counts: np.ndarray, full: np.ndarray, m: int, dis_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    weights = np.array([math.factorial(m - k) for k in range(1, counts.shape[1] + 1)], dtype=float)
    score = counts @ weights
    u = float((full == 1).sum())
    pairs = float((full == 2).sum())
    dis_score = np.zeros(len(score))
    scored = score > 0
    if u > 0 and scored.any():
        dis = u * dis_fraction / (u * dis_fraction + pairs * (1 - dis_fraction))
        q = 1 + (8 - m) / 20
        adj = float((score[scored] ** -q).sum())
        dis_score[scored] = 1 / (1 + (u / dis - u) / (score[scored] ** q * adj))
    return score, dis_score


@validated(max_size=[IsNone(), Interval(int, 1, None)], missing=MISSING_RULE,
           dis_fraction=Interval(float, 0, 1, closed="neither"))
def suda2(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    max_size: int | None = None,
    missing: str = "wildcard",
    *,
    dis_fraction: float = 0.01,
    strata: Sequence[str] | str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Per record the number of MSUs of each size (``msu_1`` .. ``msu_<max_size>``), the SUDA
    ``score`` and the ``dis_score`` (see the module docstring). ``max_size`` defaults to the
    number of keys; ``strata`` runs the search within each stratum; ``progress(done, total)``
    is called after each subset of keys.

    Examples
    --------
    The example of the SDC practice guide (sdcMicro's suda2 tests): record 5 is the only rural
    one (an MSU of size 1, score 3! = 6) and unique on three pairs (3 x 2! = 6).

    >>> f = pd.DataFrame({
    ...     "res": ["U", "U", "U", "U", "R", "U", "U", "U", "U", "U"],
    ...     "sex": ["F", "F", "F", "M", "F", "M", "F", "M", "F", "F"],
    ...     "edu": ["SI", "SI", "PI", "SC", "SC", "SC", "PC", "PS", "SI", "SI"],
    ...     "lab": ["E", "E", "N", "E", "U", "E", "N", "U", "N", "N"]})
    >>> suda2(f, ["res", "sex", "edu", "lab"])["score"].tolist()
    [0.0, 0.0, 6.0, 0.0, 12.0, 0.0, 6.0, 10.0, 0.0, 0.0]
    """
    owner = "suda2"
    require_frame(frame, owner)
    keys = check_keys(frame, keys, owner)
    m = len(keys)
    if max_size is None:
        max_size = m
    if max_size > m:
        raise ParameterError(f"The 'max_size' parameter of suda2 must be an int in [1, {m}] (the number of keys). Got {max_size!r} instead.")
    codes = key_codes(frame, keys, missing=missing)
    if strata is None or (not isinstance(strata, str) and len(strata) == 0):
        groups = [np.arange(len(frame))]
    else:
        strata_codes = combine(key_codes(frame, check_keys(frame, strata, owner), missing="category"))
        order = np.argsort(strata_codes, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(strata_codes[order])) + 1)
    counts = np.zeros((len(frame), max_size), dtype=np.int64)
    score = np.zeros(len(frame))
    dis_score = np.zeros(len(frame))
    for rows in groups:
        c, full = _msu_counts(codes[rows], max_size, progress)
        counts[rows] = c
        score[rows], dis_score[rows] = _scores(c, full, m, dis_fraction)
    out = pd.DataFrame(counts, index=frame.index, columns=[f"msu_{k}" for k in range(1, max_size + 1)])
    out["score"] = score
    out["dis_score"] = dis_score
    return out
