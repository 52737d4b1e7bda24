"""How many records share a record's key: sample frequency f_k and weighted frequency F_k.

A *key* is the combination of a record's values on categorical key variables (quasi-identifiers).
Two rules for a missing value in a key (DESIGN.md section 10):

* ``"wildcard"`` — a missing value matches any value (sdcMicro's ``freqCalc`` rule). Record j
  counts for record i when, on every key variable, the two agree or either is missing; the
  relation is symmetric, so a record missing everywhere matches every record.
* ``"category"`` — a missing value is a value of its own: it matches only other missing values.

The measures of :mod:`sdckit.risk` (frequencies, individual risk, k-anonymity violations, SUDA2)
and of :mod:`sdckit.anonymity` share these counts from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.errors import SchemaError
from sdckit.core.params import Options

MISSING_RULES = ("wildcard", "category")
#: The parameter rule of ``missing`` (:func:`sdckit.core.params.validated`).
MISSING_RULE = Options(MISSING_RULES)
_RADIX_LIMIT = 2**62


def check_keys(frame: pd.DataFrame, keys: Sequence[str] | str, owner: str) -> list[str]:
    """The key variables as a list, each a column of ``frame`` and none twice."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    if not keys:
        raise SchemaError(f"{owner} needs at least one key variable; got an empty list.")
    for name in keys:
        if name not in frame.columns:
            raise SchemaError(f"Key variable {name!r} of {owner} is not in the data; "
                              f"the columns are: {', '.join(map(str, frame.columns))}.")
    if len(set(keys)) != len(keys):
        raise SchemaError(f"{owner} was given a key variable twice; name each once.")
    return keys


def key_codes(frame: pd.DataFrame, keys: Sequence[str], *, missing: str) -> np.ndarray:
    """Integer codes of the key columns (records x keys). Under ``"wildcard"`` a missing value
    is coded -1; under ``"category"`` it gets a code of its own (>= 0)."""
    wildcard = missing == "wildcard"
    out = np.empty((len(frame), len(keys)), dtype=np.int64)
    for j, name in enumerate(keys):
        out[:, j] = pd.factorize(frame[name], use_na_sentinel=wildcard)[0]
    return out


def combine(codes: np.ndarray) -> np.ndarray:
    """One label per row of the non-negative integer matrix ``codes``: rows with equal codes
    get equal labels, in ``0 .. 4 * rows + 16`` (not necessarily all used)."""
    n, m = codes.shape
    if m == 0:
        return np.zeros(n, dtype=np.int64)
    label = codes[:, 0].astype(np.int64, copy=True)
    size = int(label.max()) + 1 if n else 1
    for j in range(1, m):
        card = int(codes[:, j].max()) + 1 if n else 1
        if size * card >= _RADIX_LIMIT:  # keep the mixed-radix number inside int64
            label = pd.factorize(label)[0].astype(np.int64)
            size = int(label.max()) + 1
        label = label * card + codes[:, j]
        size *= card
    if size > 4 * n + 16:
        label = pd.factorize(label)[0].astype(np.int64)
    return label


def _class_totals(labels: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(labels)
    fk = counts[labels].astype(float)
    Fk = fk if weights is None else np.bincount(labels, weights=weights)[labels]
    return fk, Fk


def match_totals(codes: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For every record, the number ``fk`` of records whose key matches its key and the sum
    ``Fk`` of their ``weights`` (``Fk == fk`` without weights); the record counts itself.

    ``codes`` is what :func:`key_codes` returns: -1 marks a missing value that matches any value
    (the wildcard rule); without -1 this is plain grouping. With missing values the records are
    grouped by their pattern of missing keys; for two patterns p and q, a record of p matches
    a record of q when they agree on the keys both observe, so each pair of patterns costs one
    grouping on those keys (work: patterns^2 groupings of their records).
    """
    n = codes.shape[0]
    w = None if weights is None else np.asarray(weights, dtype=float)
    absent = codes < 0
    if not absent.any():
        return _class_totals(combine(codes), w)
    fk = np.zeros(n)
    Fk = np.zeros(n)
    pattern = pd.factorize(combine(absent.astype(np.int64)))[0]
    rows = [np.flatnonzero(pattern == p) for p in range(int(pattern.max()) + 1)]
    observed = [~absent[r[0]] for r in rows]
    for rp, op in zip(rows, observed):
        for rq, oq in zip(rows, observed):
            common = op & oq
            wq = None if w is None else w[rq]
            if not common.any():
                fk[rp] += len(rq)
                Fk[rp] += len(rq) if w is None else wq.sum()
                continue
            lab = combine(codes[np.concatenate([rp, rq])][:, common])
            lp, lq = lab[: len(rp)], lab[len(rp):]
            size = int(lab.max()) + 1
            fk[rp] += np.bincount(lq, minlength=size)[lp]
            Fk[rp] += (np.bincount(lq, minlength=size) if w is None
                       else np.bincount(lq, weights=wq, minlength=size))[lp]
    return fk, Fk
