"""Local suppression to k-anonymity (seed 002 section 4.6.3; seed 003 for k-anonymity).

The rule used everywhere here (sdcMicro's): a suppressed (missing) cell matches any value.
Two records are *compatible* when, on every quasi-identifier, their values are equal or one of
them is suppressed. A record's *class count* is the number of records compatible with it
(itself included), and the data are k-anonymous when every class count is at least ``k``.
Suppressing a cell never lowers a count, so suppressing every quasi-identifier of a record
gives it count ``n``: the greedy below always ends, with k-anonymous data, when ``n >= k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, IsNone, StrList
from sdckit.core.schema import Kind, Role, Schema

#: Pairs of patterns compared at once when counting (memory of a block: this many booleans x m).
_BLOCK = 4_000_000


def compatible_counts(codes: np.ndarray) -> np.ndarray:
    """Class count of every record under the wildcard rule.

    ``codes`` is an ``n x m`` int array, one column per quasi-identifier, ``-1`` for a
    suppressed cell. The count of record ``i`` is the number of records ``s`` with, for every
    ``j``, ``codes[i, j] == codes[s, j]`` or either of them ``-1``. Identical rows are counted
    once as a pattern, then patterns are compared block by block.
    """
    codes = np.asarray(codes, dtype=np.int64)
    patterns, inverse, multiplicity = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    p = len(patterns)
    counts = np.empty(p, dtype=np.int64)
    rows = max(1, _BLOCK // max(1, p * patterns.shape[1]))
    for start in range(0, p, rows):
        block = patterns[start : start + rows, None, :]
        match = (block == patterns[None, :, :]) | (block < 0) | (patterns[None, :, :] < 0)
        counts[start : start + rows] = match.all(axis=2) @ multiplicity
    return counts[inverse.reshape(-1)]


def _compatible_with(pattern: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Which records (rows of ``codes``) are compatible with one ``pattern`` (``-1`` = any)."""
    return ((codes == pattern) | (codes < 0) | (pattern < 0)).all(axis=1)


def greedy_suppression(codes: np.ndarray, k: int, priority: Sequence[int] | None = None) -> np.ndarray:
    """Cells to suppress so that every class count (wildcard rule) is at least ``k``.

    Greedy, in the manner of sdcMicro's ``localSuppression``: while some record violates
    (count < k), take the violating record ``r`` with the smallest count (the lowest position
    among equals) and, among its unsuppressed quasi-identifiers ``j``, make the one
    suppression that removes the most violations. The candidates for column ``j`` are ``r``
    itself and each *twin* of ``r`` — a record identical to ``r`` except in column ``j`` (one
    per value): suppressing column ``j`` of either gives the same pattern, but suppressing it
    in a twin from a large, safe group lifts ``r``'s whole group by one, often the cheaper
    repair. A candidate's score is the violations it removes — its own, plus every record
    one short of ``k`` that becomes compatible with it; ties go to the larger new count, to
    ``r`` itself, to the column with the lower ``priority`` (the less important one), then to
    the first column. Suppressing never lowers a count and a fully suppressed record has
    count ``n``, so each step suppresses one more cell and the loop ends after at most
    ``n * m`` steps. A second pass then gives back, last suppression first, every cell whose
    value can return without any count falling below ``k``.

    Finding the fewest suppressions is NP-hard (Meyerson & Williams 2004); this greedy is a
    heuristic, compared with the exact optimum on small tables in the tests.

    Parameters
    ----------
    codes : (n, m) int array
        Category codes per quasi-identifier, ``-1`` for an already suppressed (missing) cell.
    k : int >= 1
    priority : sequence of m ints, optional
        Importance of each column; higher = suppressed later among equally good choices.

    Returns
    -------
    (n, m) bool array: the cells to suppress (pre-existing ``-1`` cells are not included).
    """
    original = np.asarray(codes, dtype=np.int64)
    codes = original.copy()
    n, m = codes.shape
    if n < k:
        raise DataError(
            f"Local suppression cannot reach k={k} with {n} record(s): even with every cell "
            "suppressed each record has only n compatible records. Lower k or add records."
        )
    priority = np.zeros(m) if priority is None else np.asarray(priority, dtype=float)
    counts = compatible_counts(codes)
    while True:
        violating = np.flatnonzero(counts < k)
        if len(violating) == 0:
            break
        r = violating[np.argmin(counts[violating])]
        best: tuple[Any, ...] | None = None
        for j in np.flatnonzero(codes[r] >= 0):
            candidate = codes[r].copy()
            candidate[j] = -1
            after = _compatible_with(candidate, codes)  # compatible with the new pattern
            size = int(after.sum())
            column = codes[:, j]
            # records identical to r but (perhaps) in column j: suppressing column j of any
            # of them yields the same pattern; r's own value first
            twins = (np.delete(codes, j, axis=1) == np.delete(codes[r], j)).all(axis=1) & (column >= 0)
            values, holder = np.unique(column[twins], return_index=True)
            holders = np.flatnonzero(twins)[holder]
            for v, s in zip(values, holders, strict=True):
                s = r if v == codes[r, j] else s
                newly = after & (column >= 0) & (column != v)
                gained = int(counts[s] < k <= size) + int(np.count_nonzero(counts[newly] == k - 1))
                score = (gained, size, s == r, -priority[j], -j)
                if best is None or score > best[0]:
                    best = (score, s, j, newly, size)
        _, s, j, newly, size = best
        codes[s, j] = -1
        counts[newly] += 1
        counts[s] = size
    _restore_unneeded(codes, original, counts, k)
    return (codes < 0) & (original >= 0)


def _restore_unneeded(codes: np.ndarray, original: np.ndarray, counts: np.ndarray, k: int) -> None:
    """Second pass: give back every suppressed cell whose value can return without any count
    falling below ``k`` (the greedy may have suppressed a cell that later ones made redundant).
    Works in place on ``codes`` and ``counts``; cells are tried in reverse order of position."""
    suppressed = np.nonzero((codes < 0) & (original >= 0))
    for r, j in reversed(list(zip(*suppressed, strict=True))):
        now = _compatible_with(codes[r], codes)
        candidate = codes[r].copy()
        candidate[j] = original[r, j]
        after = _compatible_with(candidate, codes)
        lost = now & ~after
        new_count = int(after.sum())
        if new_count >= k and np.all(counts[lost] > k):
            codes[r, j] = original[r, j]
            counts[lost] -= 1
            counts[r] = new_count


@register
@dataclass(frozen=True)
class LocalSuppression(Method):
    """Suppress few cells so that every quasi-identifier combination occurs at least k times.

    Cells of the quasi-identifiers are set to missing by :func:`greedy_suppression` until
    every record's class count is at least ``k``, where **a suppressed cell matches any
    value**: a record's count is the number of records compatible with it (equal or missing
    on every quasi-identifier; see the module docstring). This is sdcMicro's rule; it is the
    honest one, since an intruder cannot tell which value a suppressed cell hid.

    Parameters
    ----------
    k : int >= 1
        The k of k-anonymity.
    importance : list of str, optional
        Quasi-identifiers from most to least important; among equally effective
        suppressions the less important column is suppressed (columns not listed are the
        least important). Default: column order decides ties.
    columns : list of str, optional
        The quasi-identifiers; default the columns with role ``quasi`` (every column when no
        roles are declared). Any kind: values are compared for equality only.

    Notes
    -----
    ``nan_policy="pass"``: a cell missing in the input is treated as **already suppressed** —
    a wildcard that matches any value — never as a category of its own; it stays missing and
    is reported apart (``missing_before``), not counted among the method's suppressions.
    The report gives the suppressed cells per column, the records touched and the smallest
    class count after. Exact minimum suppression is NP-hard; the greedy's distance from the
    optimum on small tables is measured in ``tests/test_masking_suppression.py``.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "local suppression";
    seed 003 (k-anonymity chapter), k-anonymity and suppression; Templ, Kowarik, Meindl,
    sdcMicro ``localSuppression`` (wildcard counting, importance).

    Examples
    --------
    >>> import pandas as pd
    >>> data = pd.DataFrame({"sex": ["F", "F", "M"], "zip": ["1", "1", "1"]})
    >>> LocalSuppression(k=2).apply(data)["sex"].tolist()
    ['F', 'F', nan]
    """

    k: int
    importance: tuple[str, ...] | None = None
    name: ClassVar[str] = "local_suppression"
    constraints: ClassVar = {"k": Interval(int, 1, None), "importance": [IsNone(), StrList()]}
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"k": 2, "columns": ["sex", "region", "education"]}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        unknown = [c for c in (self.importance or ()) if c not in columns]
        if unknown:
            raise SchemaError(
                f"LocalSuppression's importance names {', '.join(map(repr, unknown))}, which "
                f"is not among its quasi-identifiers ({', '.join(columns)}); fix the list."
            )
        codes = np.column_stack([pd.factorize(frame[c], use_na_sentinel=True)[0] for c in columns])
        order = list(self.importance or ())
        priority = [len(order) - order.index(c) if c in order else 0 for c in columns]
        cells = greedy_suppression(codes, self.k, priority)
        for j, name in enumerate(columns):
            if cells[:, j].any():
                frame[name] = frame[name].mask(pd.Series(cells[:, j], index=frame.index))
        after = np.where(cells, -1, codes)
        info = {
            "suppressed": {c: int(cells[:, j].sum()) for j, c in enumerate(columns)},
            "suppressed_total": int(cells.sum()),
            "records_suppressed": int(cells.any(axis=1).sum()),
            "missing_before": {c: int((codes[:, j] < 0).sum()) for j, c in enumerate(columns)},
            "min_class_count": int(compatible_counts(after).min()),
        }
        return Outcome(frame, schema, info)
