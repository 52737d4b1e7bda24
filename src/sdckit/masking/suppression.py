"""Local suppression to k-anonymity (seed 002 section 4.6.3; seed 003 for k-anonymity).

Two semantics of a suppressed (missing) cell, both offered (issue 19 item 3):

* **strict** (the default; Samarati and Sweeney's definition, and :func:`sdckit.anonymity.check`'s):
  a suppressed cell is ``*``, a value of its own. A record's class is the records with exactly
  its released pattern, and the data are k-anonymous when every class has at least ``k``
  records. This holds against an intruder who knows the true values: a suppressed cell hides
  the value, but the record is still found among the records suppressed the same way.
* **wildcard** (sdcMicro's): a suppressed cell matches any value. Two records are *compatible*
  when, on every quasi-identifier, their values are equal or one of them is suppressed; a
  record's *class count* is the number of records compatible with it. Weaker: a target whose
  suppressed cell hides a unique combination can still be alone for an intruder who knows
  her true values. Suppressing a cell never lowers a count, so suppressing every
  quasi-identifier of a record gives it count ``n``: the greedy always ends when ``n >= k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, IsNone, Options, StrList
from sdckit.core.schema import Kind, Role, Schema

#: Pairs of patterns compared at once when counting (memory of a block: this many booleans x m).
_BLOCK = 4_000_000


def _weighted_counts(queries: np.ndarray, patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """For each query row, the total weight of the pattern rows compatible with it."""
    out = np.empty(len(queries), dtype=np.int64)
    rows = max(1, _BLOCK // max(1, len(patterns) * patterns.shape[1]))
    for start in range(0, len(queries), rows):
        block = queries[start : start + rows, None, :]
        match = (block == patterns[None, :, :]) | (block < 0) | (patterns[None, :, :] < 0)
        out[start : start + rows] = match.all(axis=2) @ weights
    return out


def pattern_counts(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Class count of each of a set of *distinct* patterns held by ``weights`` records each.

    A pattern without a suppressed cell is compatible, among the fully given patterns, only
    with itself; so those are compared with the patterns holding a ``-1`` only, and the
    latter with all: ``O(P * W)`` work for ``W`` patterns with a suppressed cell.
    """
    patterns = np.asarray(patterns, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.int64)
    partial = (patterns < 0).any(axis=1)
    counts = np.empty(len(patterns), dtype=np.int64)
    counts[partial] = _weighted_counts(patterns[partial], patterns, weights)
    counts[~partial] = weights[~partial] + _weighted_counts(
        patterns[~partial], patterns[partial], weights[partial]
    )
    return counts


def compatible_counts(codes: np.ndarray) -> np.ndarray:
    """Class count of every record under the wildcard rule.

    ``codes`` is an ``n x m`` int array, one column per quasi-identifier, ``-1`` for a
    suppressed cell. The count of record ``i`` is the number of records ``s`` with, for every
    ``j``, ``codes[i, j] == codes[s, j]`` or either of them ``-1``. Identical rows are counted
    once as a pattern (:func:`pattern_counts`).
    """
    codes = np.asarray(codes, dtype=np.int64).reshape(len(codes), -1)
    patterns, inverse, multiplicity = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return pattern_counts(patterns, multiplicity)[inverse.reshape(-1)]


class _Groups:
    """Records grouped by (original pattern, current pattern); identical records share a
    group, so every step costs ``O(groups * m)`` instead of ``O(n * m)``.

    ``move(s, j, value, w)`` moves ``w`` records of group ``s`` to the pattern with column
    ``j`` set to ``value`` (``-1`` suppresses, the original code restores) and keeps every
    group's class count exact: a group ``q`` gains ``w`` when it becomes compatible with the
    moved records and loses ``w`` when it stops being compatible.
    """

    def __init__(self, codes: np.ndarray) -> None:
        keys, inverse, mult = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        self.inverse = inverse.reshape(-1)
        size = len(keys)
        self.orig = keys.copy()
        self.cur = keys.copy()
        self.mult = mult.astype(np.int64)
        self.counts = pattern_counts(keys, mult)
        self.size = size
        self.index = {(k.tobytes(), k.tobytes()): g for g, k in enumerate(keys)}
        self.moves: list[tuple[int, int, int]] = []

    def compatible(self, pattern: np.ndarray) -> np.ndarray:
        cur = self.cur[: self.size]
        return ((cur == pattern) | (cur < 0) | (pattern < 0)).all(axis=1)

    def move(self, s: int, j: int, value: int, w: int, before: np.ndarray, after: np.ndarray) -> int:
        """Move ``w`` records of group ``s``; ``before``/``after`` are the compatibility
        vectors of the old and the new pattern. Returns the destination group."""
        pattern = self.cur[s].copy()
        pattern[j] = value
        n = self.size
        self.counts[:n] += w * (after.astype(np.int64) - before.astype(np.int64))
        key = (self.orig[s].tobytes(), pattern.tobytes())
        dest = self.index.get(key)
        if dest is None:
            dest = self._append(self.orig[s], pattern)
            self.index[key] = dest
        self.mult[s] -= w
        self.mult[dest] += w
        self.counts[dest] = int(self.compatible(pattern) @ self.mult[: self.size])
        self.moves.append((s, dest, w))
        return dest

    def _append(self, orig: np.ndarray, cur: np.ndarray) -> int:
        if self.size == len(self.cur):
            grow = max(16, len(self.cur))
            self.orig = np.vstack([self.orig, np.zeros((grow, self.orig.shape[1]), np.int64)])
            self.cur = np.vstack([self.cur, np.zeros((grow, self.cur.shape[1]), np.int64)])
            self.mult = np.concatenate([self.mult, np.zeros(grow, np.int64)])
            self.counts = np.concatenate([self.counts, np.zeros(grow, np.int64)])
        g = self.size
        self.orig[g], self.cur[g] = orig, cur
        self.size += 1
        return g

    def cells(self) -> np.ndarray:
        """The suppressed cells per record: the moves replayed on the records (the records of
        a group are interchangeable; the lowest positions move first)."""
        members: list[list[int]] = [[] for _ in range(self.size)]
        for i, g in enumerate(self.inverse.tolist()):
            members[g].append(i)
        for s, dest, w in self.moves:
            members[dest].extend(members[s][:w])
            del members[s][:w]
        group_of = np.empty(len(self.inverse), dtype=np.int64)
        for g, rows in enumerate(members):
            group_of[rows] = g
        return (self.cur[group_of] < 0) & (self.orig[group_of] >= 0)


def greedy_suppression(codes: np.ndarray, k: int, priority: Sequence[int] | None = None) -> np.ndarray:
    """Cells to suppress so that every class count (wildcard rule) is at least ``k``.

    Greedy, in the manner of sdcMicro's ``localSuppression``, on groups of identical
    records: while some group violates (count < k), take the violating group ``r`` with the
    smallest count (the first among equals) and, among its unsuppressed quasi-identifiers
    ``j``, make the move that removes the most violations per suppressed cell. The candidates
    for column ``j`` are suppressing it in all records of ``r``, or in one record of a *twin*
    group — identical to ``r`` except in column ``j`` (one per value): both give the same
    pattern, but one suppression in a twin from a large, safe group lifts every record of
    ``r`` by one, often the cheaper repair. A move's violations removed are those of the
    moved records plus those of every record one short of ``k`` that becomes compatible
    with them. Ties go to the larger new count, to ``r`` itself, to the column with the lower
    ``priority`` (the less important one), then to the first column. Suppressing never lowers
    a count and a fully suppressed record has count ``n``, so every step suppresses more cells
    and the loop ends after at most ``n * m`` of them. A second pass then gives back, last
    suppression first, every suppressed cell (in a whole group, else in one record) whose
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
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    if n < k:
        raise DataError(
            f"Local suppression cannot reach k={k} with {n} record(s): even with every cell "
            "suppressed each record has only n compatible records. Lower k or add records."
        )
    priority = np.zeros(m) if priority is None else np.asarray(priority, dtype=float)
    groups = _Groups(codes)
    while True:
        size = groups.size
        mult, counts = groups.mult[:size], groups.counts[:size]
        violating = np.flatnonzero((mult > 0) & (counts < k))
        if len(violating) == 0:
            break
        r = violating[np.argmin(counts[violating])]
        best = _best_suppression(groups, r, k, priority)
        groups.move(*best)
    _restore_unneeded(groups, k)
    return groups.cells()


def _best_suppression(groups: _Groups, r: int, k: int, priority: np.ndarray) -> tuple:
    """The arguments of :meth:`_Groups.move` for the best suppression that repairs ``r``."""
    size = groups.size
    cur, mult, counts = groups.cur[:size], groups.mult[:size], groups.counts[:size]
    best: tuple | None = None
    for j in np.flatnonzero(cur[r] >= 0):
        pattern = cur[r].copy()
        pattern[j] = -1
        after = groups.compatible(pattern)
        new_count = int(after @ mult)
        column = cur[:, j]
        others = np.ones(cur.shape[1], dtype=bool)
        others[j] = False
        twins = (mult > 0) & (column >= 0) & (cur[:, others] == cur[r, others]).all(axis=1)
        values, first = np.unique(column[twins], return_index=True)
        for v, s in zip(values.tolist(), np.flatnonzero(twins)[first].tolist(), strict=True):
            s = r if v == cur[r, j] else s
            w = int(mult[r]) if s == r else 1
            before = after & ((column == v) | (column < 0))  # compatible with the source
            newly = after & ~before
            gained = w * int(counts[s] < k <= new_count) + int(
                mult[newly] @ ((counts[newly] < k) & (counts[newly] + w >= k))
            )
            score = (gained / w, new_count, s == r, -priority[j], -j)
            if best is None or score > best[0]:
                best = (score, (s, int(j), -1, w, before, after))
    return best[1]


def _restore_unneeded(groups: _Groups, k: int) -> None:
    """Give back suppressed cells whose value can return without any count falling below
    ``k`` (the greedy may have suppressed a cell that later ones made redundant): the whole
    group first, else one record of it; last groups first, and a group that received
    records is looked at again. Each move gives back a cell, so the pass ends."""
    stack = list(range(groups.size))
    while stack:
        g = stack.pop()
        for j in np.flatnonzero((groups.cur[g] < 0) & (groups.orig[g] >= 0))[::-1]:
            if groups.mult[g] == 0:
                break
            before = groups.compatible(groups.cur[g])
            pattern = groups.cur[g].copy()
            pattern[j] = groups.orig[g, j]
            after = groups.compatible(pattern)
            live = groups.mult[: groups.size] > 0
            if int(after @ groups.mult[: groups.size]) < k:
                continue
            lost = groups.counts[: groups.size][before & ~after & live]
            for w in (int(groups.mult[g]), 1):
                if np.all(lost - w >= k):
                    stack.append(groups.move(g, int(j), int(groups.orig[g, j]), w, before, after))
                    break


def strict_counts(codes: np.ndarray) -> np.ndarray:
    """Class size of every record under the strict rule: the records with the same pattern,
    a suppressed cell (``-1``) being a value of its own."""
    codes = np.asarray(codes, dtype=np.int64).reshape(len(codes), -1)
    _, inverse, sizes = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return sizes[inverse.reshape(-1)]


def strict_suppression(codes: np.ndarray, k: int, priority: Sequence[int] | None = None) -> np.ndarray:
    """Cells to suppress so that every class (strict rule: ``*`` is a value) has ``k`` records.

    Greedy on classes: while a class ``r`` is smaller than ``k`` (the smallest first), each of
    its unsuppressed columns ``j`` is a candidate: suppressing ``j`` in ``r`` moves it to the
    class ``t`` of the new pattern; if ``t`` and ``r`` together stay below ``k``, records of
    *twin* classes (equal to ``r`` except in column ``j``) are moved along — small twins
    whole, then spare records of large ones (a class keeps ``k``), then whole large ones. The
    candidate that reaches ``k`` with the fewest suppressed cells wins (ties: the less
    important column, lower ``priority``, then the first); if none reaches ``k``, the one that
    gathers the most records. Every move suppresses at least one cell and classes only merge
    upward, so the loop ends; the fully suppressed class takes, if it is left below ``k``,
    records from the classes with the most to spare. ``n >= k`` is required.

    Returns an ``(n, m)`` bool array of the cells to suppress (pre-existing ``-1`` cells are
    not included).
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    if n < k:
        raise DataError(
            f"Local suppression cannot reach k={k} with {n} record(s): even with every cell "
            "suppressed the records form one class of n. Lower k or add records."
        )
    priority = np.zeros(m) if priority is None else np.asarray(priority, dtype=float)
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    key_list = [tuple(key) for key in keys.tolist()]
    members: dict[tuple[int, ...], list[int]] = {key: [] for key in key_list}
    for i, g in enumerate(inverse.reshape(-1).tolist()):
        members[key_list[g]].append(i)
    full = (-1,) * m
    while True:
        small = [key for key, rows in members.items() if 0 < len(rows) < k and key != full]
        if not small:
            break
        r = min(small, key=lambda key: (len(members[key]), key))
        best = None
        for j in range(m):
            if r[j] < 0:
                continue
            target = r[:j] + (-1,) + r[j + 1:]
            plan = _gather(members, r, j, target, k)
            gathered, cost = len(members.get(target, ())) + sum(w for _, w in plan), sum(w for _, w in plan)
            score = (gathered >= k, -cost if gathered >= k else gathered, -priority[j], -j)
            if best is None or score > best[0]:
                best = (score, target, plan)
        _, target, plan = best
        destination = members.setdefault(target, [])
        for source, w in plan:
            destination.extend(members[source][-w:])
            del members[source][-w:]
    pool = members.setdefault(full, [])
    while 0 < len(pool) < k:
        donor = max((key for key in members if key != full and members[key]),
                    key=lambda key: (len(members[key]), key))
        spare = len(members[donor]) - k
        take = min(k - len(pool), spare) if spare > 0 else len(members[donor])
        pool.extend(members[donor][-take:])
        del members[donor][-take:]
    cells = np.zeros((n, m), dtype=bool)
    for key, rows in members.items():
        if rows:
            cells[np.asarray(rows)] = (np.asarray(key) < 0)[None, :]
    return cells & (codes >= 0)


def _gather(members: dict, r: tuple, j: int, target: tuple, k: int) -> list[tuple[tuple, int]]:
    """The moves (class, records) that suppressing column ``j`` of class ``r`` makes: all of
    ``r``, then twins of ``r`` (equal except in ``j``) until the target class holds ``k``."""
    plan = [(r, len(members[r]))]
    have = len(members.get(target, ())) + len(members[r])
    if have >= k:
        return plan
    twins = [key for key, rows in members.items()
             if rows and key != r and key[j] >= 0 and key[:j] == r[:j] and key[j + 1:] == r[j + 1:]]
    small = sorted((t for t in twins if len(members[t]) < k), key=lambda t: (len(members[t]), t))
    large = sorted((t for t in twins if len(members[t]) >= k), key=lambda t: (-len(members[t]), t))
    for t in small:
        plan.append((t, len(members[t])))
        have += len(members[t])
        if have >= k:
            return plan
    for t in large:
        spare = len(members[t]) - k
        if spare > 0:
            w = min(spare, k - have)
            plan.append((t, w))
            have += w
            if have >= k:
                return plan
    for t in large:
        if len(members[t]) - k <= 0:
            plan.append((t, len(members[t])))
            have += len(members[t])
            if have >= k:
                return plan
    return plan


@register
@dataclass(frozen=True)
class LocalSuppression(Method):
    """Suppress few cells so that every quasi-identifier combination occurs at least k times.

    Cells of the quasi-identifiers are set to missing until every record's class has at least
    ``k`` records. Under the default ``missing="strict"`` a suppressed cell is ``*``, a value
    of its own (Samarati and Sweeney's definition, and :func:`sdckit.anonymity.check`'s), so
    the release is k-anonymous even for an intruder who knows every true value
    (:func:`strict_suppression`). ``missing="wildcard"`` is sdcMicro's rule — a suppressed
    cell matches any value (:func:`greedy_suppression`) — which suppresses fewer cells but is
    weaker: a target whose suppressed cell hides a unique combination can still be alone
    (issue 19 item 3). The report gives the k that holds under each rule.

    Parameters
    ----------
    k : int >= 1
        The k of k-anonymity.
    missing : {"strict", "wildcard"}
        What a suppressed (or already missing) cell means when classes are counted; see above.
    importance : list of str, optional
        Quasi-identifiers from most to least important; among equally effective
        suppressions the less important column is suppressed (columns not listed are the
        least important). Default: column order decides ties.
    columns : list of str, optional
        The quasi-identifiers (the issue's ``quasi=``); default the columns with role
        ``quasi`` (every column when no roles are declared). Any kind: values are compared
        for equality only.

    Notes
    -----
    ``nan_policy="pass"``: a cell missing in the input is treated as **already suppressed**
    (``*`` under the strict rule, a wildcard under the other); it stays missing and is
    reported apart (``missing_before``), not counted among the method's suppressions.
    The report gives the suppressed cells per column, the records touched, the k that holds
    under each rule (``k_strict``, ``k_wildcard``; ``min_class_count`` is the chosen rule's),
    and warns when more than 10% of the cells were suppressed. Exact
    minimum suppression is NP-hard; against the brute-force optimum on 50 random tables of
    3-6 records (``tests/test_masking_suppression.py``) the greedy was optimal on 45, never
    above twice the optimum, and used 91 cells where 83 sufficed in all. Work grows with
    the number of distinct quasi-identifier combinations, not of records: 10^5 records
    take about 1 to 7 s (``benchmarks/bench_synthetic.py``).

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "local suppression";
    seed 003 (k-anonymity chapter), k-anonymity and suppression; Templ, Kowarik, Meindl,
    sdcMicro ``localSuppression`` (wildcard counting, importance).

    Examples
    --------
    >>> import pandas as pd
    >>> data = pd.DataFrame({"sex": ["F", "F", "M"], "zip": ["1", "1", "1"]})
    >>> LocalSuppression(k=2, missing="wildcard").apply(data)["sex"].tolist()
    ['F', 'F', nan]
    >>> LocalSuppression(k=2).apply(data)["sex"].tolist()  # strict: a suppressed cell is '*'
    [nan, nan, nan]
    """

    k: int
    importance: tuple[str, ...] | None = None
    missing: str = "strict"
    name: ClassVar[str] = "local_suppression"
    constraints: ClassVar = {"k": Interval(int, 1, None), "importance": [IsNone(), StrList()],
                             "missing": Options(("strict", "wildcard"))}
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    nan_policy: ClassVar[str] = "pass"
    suppresses: ClassVar[bool] = True
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
        suppress = strict_suppression if self.missing == "strict" else greedy_suppression
        cells = suppress(codes, self.k, priority)
        for j, name in enumerate(columns):
            if cells[:, j].any():
                frame[name] = frame[name].mask(cells[:, j])
        after = np.where(cells, -1, codes)
        info = {
            "suppressed": {c: int(cells[:, j].sum()) for j, c in enumerate(columns)},
            "suppressed_total": int(cells.sum()),
            "records_suppressed": int(cells.any(axis=1).sum()),
            "missing_before": {c: int((codes[:, j] < 0).sum()) for j, c in enumerate(columns)},
        }
        info["k_strict"] = int(strict_counts(after).min())
        info["k_wildcard"] = int(compatible_counts(after).min())
        info["min_class_count"] = info["k_strict" if self.missing == "strict" else "k_wildcard"]
        share = cells.sum() / cells.size
        if share > 0.1:
            info["warnings"] = [
                f"LocalSuppression suppressed {share:.0%} of the quasi-identifier cells; "
                "recode the quasi-identifiers globally first (GlobalRecoding) to lose less."
            ]
        return Outcome(frame, schema, info)
