"""The generalization lattice and the evaluation of its nodes (seed 003 sections 2 and 4.1).

A *node* is a vector of generalization levels, one per quasi-identifier (a distance vector
of seed 003, Fig. 6); the lattice holds every vector between ``0`` and the hierarchies'
heights. The search never re-reads the data (Kohlmayer et al. 2012, "Flash", section 5):

1. **encode once** — each quasi-identifier becomes the integer code of its value's row in
   the hierarchy (its level-0 code; coarser codes come from ``parent`` maps, never from
   strings). Values are matched through :func:`~sdckit.core.hierarchy.value_keys`, which is
   injective, so classes are formed on exactly the values released;
2. **aggregate once** — the records collapse into the *bottom frequency table*: the distinct
   (level-0 codes, sensitive codes) rows with their record counts (:func:`encode`); another
   engine may compute that table and hand it over (:func:`encode_table`);
3. **roll up** — a node's table is computed from the smallest cached table of a finer node
   (:func:`~sdckit.anonymity.rollup.rollup_group`); a bounded cache keeps recent tables;
4. a node is checked on its table, stopping once the records of too-small classes pass
   MaxSup; the winning node is applied to the records once, at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdckit.anonymity.criteria import Criterion, KAnonymity
from sdckit.anonymity.rollup import finest_below, parent_maps, records_in_small_classes, rollup_group
from sdckit.core.errors import DataError
from sdckit.core.hierarchy import Hierarchy
from sdckit.core.schema import Kind, Schema

#: Largest lattice the searches accept (nodes); beyond it use Mondrian.
MAX_NODES = 2_000_000


@dataclass(frozen=True)
class Sensitive:
    """A sensitive attribute encoded: its labels in the attribute's order (codes index them)
    and the whole table's count of each value. ``declared``: the labels are the attribute's
    declared domain (a schema's ordinal order, or labels handed over with a frequency table),
    which stays the domain whatever is suppressed; otherwise the domain is the values the
    records hold, and the published table's domain is the values it still holds."""

    name: str
    labels: np.ndarray
    overall: np.ndarray
    declared: bool = False


def declared_order(name: str, schema: Schema | None) -> tuple | None:
    """The declared order of an ordinal column in ``schema`` (its domain), else None."""
    column = schema[name] if schema is not None and name in schema else None
    return column.order if column is not None and column.kind is Kind.ORDINAL else None


def sensitive_order(series: pd.Series, schema: Schema | None) -> tuple[np.ndarray, np.ndarray]:
    """Codes and labels of a sensitive column, labels in the column's order (numbers and
    dates ascending, ordinal by its declared order, others sorted as text)."""
    name = series.name
    if series.isna().any():
        row = series.index[series.isna().to_numpy().argmax()]
        raise DataError(f"Sensitive column {name!r} is missing at row {row!r}; impute or remove those records.")
    order = declared_order(name, schema)
    if order is not None:
        cat = pd.Categorical(series, categories=list(order), ordered=True)
        if (cat.codes < 0).any():
            row = series.index[int(np.argmax(cat.codes < 0))]
            raise DataError(f"Sensitive column {name!r} holds a value that is not in its declared order, "
                            f"first at row {row!r}.")
        return cat.codes.astype(np.int64), np.asarray(order, dtype=object)
    uniques = pd.unique(series)
    try:
        uniques = np.sort(uniques)
    except TypeError:
        uniques = np.array(sorted(uniques, key=str), dtype=object)
    codes = pd.Index(uniques).get_indexer(series)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


@dataclass(frozen=True)
class GroupTable:
    """A frequency table at ``node``: distinct rows of codes with their record counts.

    ``columns`` (column-major: one array row per attribute) holds the quasi-identifiers'
    codes at the node's levels (the first ``len(node)``) followed by the sensitive codes
    (never generalized)."""

    node: tuple[int, ...]
    columns: np.ndarray  # (quasi + sensitive) x rows, C-contiguous ints
    counts: np.ndarray  # int64

    @property
    def quasi(self) -> np.ndarray:
        return self.columns[: len(self.node)]

    @property
    def sens(self) -> np.ndarray:
        return self.columns[len(self.node):]


@dataclass
class Encoded:
    """The data as the lattice sees them: the bottom frequency table and, when built from
    records, the bottom row of each record (to apply the winning node at the end)."""

    quasi: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    sensitive: tuple[Sensitive, ...]
    bottom: GroupTable
    records: np.ndarray | None = None  # bottom-table row of each record

    @property
    def n(self) -> int:
        return int(self.bottom.counts.sum())

    @property
    def heights(self) -> np.ndarray:
        return np.array([h.height for h in self.hierarchies], dtype=np.int64)


def _small_codes(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Columns given as (codes, value of each code) pairs, gathered into one columns x records
    array of the narrowest unsigned type."""
    top = max([0] + [int(values.max()) for _, values in parts if len(values)])
    dtype = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32
    out = np.empty((len(parts), len(parts[0][0]) if parts else 0), dtype=dtype)
    for j, (codes, values) in enumerate(parts):
        np.take(values.astype(dtype), codes, out=out[j])
    return out


def _sensitive_names(frame: pd.DataFrame | None, quasi: Sequence[str], criteria: Sequence[Criterion]) -> list[str]:
    names: list[str] = []
    for c in criteria:
        s = c.needs_sensitive
        if s is not None and s not in names:
            if frame is not None and s not in frame.columns:
                raise DataError(f"The sensitive column {s!r} of {type(c).__name__} is not in the data.")
            if s in quasi:
                raise DataError(f"Column {s!r} cannot be both a quasi-identifier and the sensitive attribute.")
            names.append(s)
    return names


def _bottom_sizes(hierarchies: Sequence[Hierarchy], sensitive: Sequence) -> np.ndarray:
    """Distinct codes of each column of the bottom table (level 0, then sensitive labels)."""
    return np.array([h.level_sizes()[0] for h in hierarchies] + [len(s.labels) for s in sensitive], dtype=np.int64)


def encode(frame: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], criteria: Sequence[Criterion],
           schema: Schema | None = None) -> Encoded:
    """Encode the records once and aggregate them once into the bottom frequency table."""
    quasi = tuple(hierarchies)
    parts = [hierarchies[q].rows_of(frame[q], q) for q in quasi]  # level-0 code = hierarchy row
    sens = []
    for s in _sensitive_names(frame, quasi, criteria):
        codes, labels = sensitive_order(frame[s], schema)
        parts.append((codes, np.arange(len(labels))))
        sens.append(Sensitive(s, labels, np.bincount(codes, minlength=len(labels)).astype(float),
                              declared_order(s, schema) is not None))
    matrix = _small_codes(parts)
    del parts
    zeros = np.zeros(len(matrix), dtype=np.int64)
    parent = parent_maps([hierarchies[q] for q in quasi], len(sens))
    sizes = _bottom_sizes([hierarchies[q] for q in quasi], sens)
    records, codes, counts = rollup_group(matrix, np.ones(matrix.shape[1], dtype=np.int64), parent, zeros, zeros,
                                          sizes)
    bottom = GroupTable(tuple([0] * len(quasi)), codes, counts)
    return Encoded(quasi, tuple(hierarchies[q] for q in quasi), tuple(sens), bottom, records)


def encode_table(codes: np.ndarray, counts: np.ndarray, hierarchies: Mapping[str, Hierarchy],
                 sensitive: Mapping[str, Sequence] | None = None) -> Encoded:
    """The bottom frequency table given directly (e.g. computed by another engine).

    Parameters
    ----------
    codes : (rows, quasi + sensitive) array of ints
        Column ``j < len(hierarchies)``: the row, in ``hierarchies``' ``j``-th table, of the
        records' value (its level-0 code, :meth:`Hierarchy.index_of`); the following columns:
        the index of the sensitive value in its labels. Rows may repeat (they are regrouped).
    counts : (rows,) array of positive ints
        Records behind each row.
    hierarchies : mapping quasi-identifier -> Hierarchy, in the columns' order
    sensitive : mapping sensitive column -> labels in the attribute's order, optional
    """
    sensitive = dict(sensitive or {})
    quasi = tuple(hierarchies)
    codes = np.asarray(codes)
    counts = np.asarray(counts)
    m = len(quasi) + len(sensitive)
    if codes.ndim != 2 or codes.shape[1] != m or counts.shape != (len(codes),):
        raise DataError(f"The frequency table needs {m} code columns ({len(quasi)} quasi-identifiers and "
                        f"{len(sensitive)} sensitive) and one count per row; got codes of shape "
                        f"{codes.shape} and counts of shape {counts.shape}.")
    if not np.issubdtype(codes.dtype, np.integer) or not np.issubdtype(counts.dtype, np.integer):
        raise DataError("The frequency table's codes and counts must be integers.")
    if len(counts) and counts.min() < 1:
        raise DataError(f"The frequency table's count at row {int(np.argmin(counts))} is below 1.")
    names = list(quasi) + list(sensitive)
    sizes = [hierarchies[q].level_sizes()[0] for q in quasi] + [len(v) for v in sensitive.values()]
    for j, (name, size) in enumerate(zip(names, sizes)):
        bad = (codes[:, j] < 0) | (codes[:, j] >= size)
        if bad.any():
            raise DataError(f"The frequency table's column {name!r} holds a code outside 0..{size - 1}, "
                            f"first at row {int(np.argmax(bad))}.")
    zeros = np.zeros(m, dtype=np.int64)
    parent = parent_maps([hierarchies[q] for q in quasi], len(sensitive))
    columns = _small_codes([(codes[:, j], np.arange(size)) for j, size in enumerate(sizes)])
    _, grouped, sums = rollup_group(columns, counts.astype(np.int64), parent, zeros, zeros,
                                    np.asarray(sizes, dtype=np.int64))
    sens = []
    for i, (name, labels) in enumerate(sensitive.items()):
        overall = np.bincount(grouped[len(quasi) + i], weights=sums, minlength=len(labels))
        sens.append(Sensitive(name, np.asarray(labels, dtype=object), overall.astype(float), declared=True))
    bottom = GroupTable(tuple([0] * len(quasi)), grouped, sums)
    return Encoded(quasi, tuple(hierarchies[q] for q in quasi), tuple(sens), bottom)


@dataclass(frozen=True)
class NodeStats:
    """A node's equivalence classes: sizes, which violate each criterion, and the suppression.

    For a node that fails by k-anonymity alone, ``suppressed`` may be a partial count that
    already exceeds MaxSup (the check stopped there)."""

    node: tuple[int, ...]
    sizes: np.ndarray
    violating: np.ndarray  # classes x criteria
    monotone_suppressed: int
    suppressed: int

    @property
    def classes(self) -> int:
        return int((~self.violating.any(axis=1)).sum())


class TableCache:
    """Computed frequency tables, at most ``budget`` rows and ``slots`` tables in all; the
    oldest go first. :meth:`finest_below` finds the smallest cached table of a finer node."""

    def __init__(self, width: int, budget: int, slots: int = 4096):
        self.budget = int(budget)
        self.nodes = np.zeros((slots, width), dtype=np.int64)
        self.rows = np.full(slots, -1, dtype=np.int64)  # -1: empty slot
        self.tables: list[GroupTable | None] = [None] * slots
        self.next = 0
        self.total = 0

    def add(self, table: GroupTable) -> None:
        slot = self.next
        self.next = (slot + 1) % len(self.tables)
        self._drop(slot)
        self.tables[slot] = table
        self.nodes[slot] = table.node
        self.rows[slot] = len(table.counts)
        self.total += len(table.counts)
        oldest = self.next
        while self.total > self.budget and oldest != slot:
            self._drop(oldest)
            oldest = (oldest + 1) % len(self.tables)

    def _drop(self, slot: int) -> None:
        if self.tables[slot] is not None:
            self.total -= len(self.tables[slot].counts)
            self.tables[slot] = None
            self.rows[slot] = -1

    def finest_below(self, node: np.ndarray) -> GroupTable | None:
        """The cached table with the fewest rows among nodes ``<= node``."""
        best = finest_below(self.nodes, self.rows, node)
        return None if best < 0 else self.tables[best]


class Evaluator:
    """Evaluates lattice nodes on frequency tables rolled up from finer ones; caches every
    result and the most recent tables (``cache_rows`` rows in all)."""

    def __init__(self, encoded: Encoded, criteria: Sequence[Criterion], allowed: int,
                 monotone_flags: Sequence[bool], cache_rows: int = 4_000_000):
        self.enc = encoded
        self.criteria = tuple(criteria)
        self.allowed = int(allowed)
        self.monotone = np.asarray(monotone_flags, dtype=bool)
        names = [s.name for s in encoded.sensitive]
        self.sens_index = [None if c.needs_sensitive is None else names.index(c.needs_sensitive)
                           for c in self.criteria]
        self.q = len(encoded.quasi)
        self.parent = parent_maps(encoded.hierarchies, len(encoded.sensitive))
        self._width = self.q + len(encoded.sensitive)
        depth = int(encoded.heights.max()) + 1 if self.q else 1
        self._sizes = np.zeros((self._width, depth), dtype=np.int64)  # codes per column and level
        for j, h in enumerate(encoded.hierarchies):
            self._sizes[j, : h.levels] = h.level_sizes()
        for i, s in enumerate(encoded.sensitive):
            self._sizes[self.q + i, :] = len(s.labels)
        self.bottom = encoded.bottom
        self.only_k = len(self.criteria) == 1 and isinstance(self.criteria[0], KAnonymity)
        self.cache = TableCache(self.q, cache_rows)
        self.results: dict[tuple[int, ...], NodeStats] = {}

    # -------------------------------------------------------------- tables
    def _levels(self, node: Sequence[int]) -> np.ndarray:
        levels = np.zeros(self._width, dtype=np.int64)
        levels[: self.q] = node
        return levels

    def roll(self, source: GroupTable, node: tuple[int, ...]) -> tuple[np.ndarray, GroupTable]:
        """``source`` rolled up to ``node``: the row of the result each source row goes to, and
        the result."""
        target = self._levels(node)
        inverse, columns, counts = rollup_group(source.columns, source.counts, self.parent,
                                                self._levels(source.node), target,
                                                self._sizes[np.arange(self._width), target])
        return inverse, GroupTable(node, columns, counts)

    def table(self, node: tuple[int, ...], source: GroupTable | None = None) -> GroupTable:
        """The frequency table of ``node``, rolled up from ``source`` or the smallest cached
        table of a finer node (the bottom table at worst)."""
        if source is None:
            cached = self.cache.finest_below(np.asarray(node, dtype=np.int64))
            source = cached if cached is not None and len(cached.counts) < len(self.bottom.counts) else self.bottom
        if source.node == node:
            return source
        table = self.roll(source, node)[1]
        self.cache.add(table)
        return table

    # -------------------------------------------------------------- classes
    def class_stats(self, table: GroupTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Class of each table row, class sizes and the classes x criteria violation matrix."""
        if not self.enc.sensitive:  # the rows are the classes
            cls = np.arange(len(table.counts))
            sizes = table.counts
        else:
            levels = self._levels(table.node)[: self.q]
            cls = rollup_group(table.quasi, table.counts, self.parent, levels, levels,
                               self._sizes[np.arange(self.q), levels])[0]
            sizes = np.bincount(cls, weights=table.counts).astype(np.int64)
        g = len(sizes)
        violating = np.zeros((g, len(self.criteria)), dtype=bool)
        hists: dict[int, np.ndarray] = {}
        for i, (c, si) in enumerate(zip(self.criteria, self.sens_index)):
            hist = None
            sens = None
            if si is not None:
                sens = self.enc.sensitive[si]
                if si not in hists:
                    m = len(sens.labels)
                    hists[si] = np.bincount(cls.astype(np.int64) * m + table.sens[si], weights=table.counts,
                                            minlength=g * m).reshape(g, m)
                hist = hists[si]
            violating[:, i] = c.violates(sizes, hist, None if sens is None else sens.overall,
                                         None if sens is None else sens.labels)
        self._against_published(sizes, hists, violating)
        return cls, sizes, violating

    def _against_published(self, sizes: np.ndarray, hists: dict[int, np.ndarray], violating: np.ndarray) -> None:
        """Measure t-closeness against the distribution of the records that are published.

        Suppressing the violating classes changes the overall distribution the published table
        shows; t-closeness must hold against that one (Li, Li & Venkatasubramanian 2007; issue
        19 item 10), or the release fails t-closeness against itself. So the classes are
        measured again against the kept records' distribution, and those that now violate are
        suppressed too, until nothing changes (classes are only ever added to the suppressed
        set, so this ends).

        The domain is the published one too: unless the attribute's domain is declared
        (:attr:`Sensitive.declared`), a value whose only records are suppressed leaves it, as
        :func:`~sdckit.anonymity.check` on the release cannot see it. The ordered distance
        ``|i - j| / (m - 1)`` is then over the ``m`` values published (issue 27)."""
        against_overall = [i for i, c in enumerate(self.criteria)
                           if self.sens_index[i] is not None and getattr(c, "uses_overall", False)]
        while against_overall:
            kept = ~violating.any(axis=1)
            if kept.all() or not kept.any():
                return
            changed = False
            for i in against_overall:
                si = self.sens_index[i]
                sens = self.enc.sensitive[si]
                published = hists[si][kept].sum(axis=0).astype(float)
                domain = slice(None) if sens.declared else published > 0
                now = self.criteria[i].violates(sizes, hists[si][:, domain], published[domain],
                                                sens.labels[domain])
                added = now & kept
                if added.any():
                    violating[added, i] = True
                    changed = True
            if not changed:
                return

    def evaluate(self, node: tuple[int, ...], source: GroupTable | None = None) -> NodeStats:
        """Evaluate ``node`` once (later calls return the stored result)."""
        node = tuple(int(x) for x in node)
        stats = self.results.get(node)
        if stats is not None:
            return stats
        table = self.table(node, source)
        if self.only_k:  # k-anonymity alone: the table's rows are the classes; stop past MaxSup
            sizes = table.counts
            suppressed = int(records_in_small_classes(sizes, self.criteria[0].k, self.allowed))
            violating = (sizes < self.criteria[0].k)[:, None]
            stats = NodeStats(node, sizes, violating, suppressed if self.monotone[0] else 0, suppressed)
        else:
            _, sizes, violating = self.class_stats(table)
            bad = violating.any(axis=1)
            mono = violating[:, self.monotone].any(axis=1) if self.monotone.any() else np.zeros(len(sizes), bool)
            stats = NodeStats(node, sizes, violating, int(sizes[mono].sum()), int(sizes[bad].sum()))
        self.results[node] = stats
        return stats

    def passes(self, node: tuple[int, ...], monotone_only: bool = False) -> bool:
        s = self.evaluate(node)
        return (s.monotone_suppressed if monotone_only else s.suppressed) <= self.allowed

    def bottom_classes(self, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``node`` applied to the bottom table: the quasi-identifier codes at the node
        (quasi x bottom rows) and class of each bottom row, the classes' sizes and their violation matrix (exact, no early exit)."""
        node = tuple(int(x) for x in node)
        rows, table = self.roll(self.bottom, node)
        cls, sizes, violating = self.class_stats(table)
        return table.quasi[:, rows], cls[rows], sizes, violating


class Lattice:
    """Every node between ``0`` and ``heights``: as rows of an int array (in lattice index
    order, C order of the grid) and as a grid, so that the nodes above or below one are a
    slice."""

    def __init__(self, heights: Sequence[int]):
        self.heights = np.asarray(heights, dtype=np.int64)
        self.shape = tuple(int(h) + 1 for h in self.heights)
        size = int(np.prod(self.heights + 1))
        if size > MAX_NODES:
            raise DataError(
                f"The generalization lattice has {size:,} nodes (levels {list(self.heights + 1)}), "
                f"more than the {MAX_NODES:,} a full-domain search handles. Use fewer "
                "quasi-identifiers or shorter hierarchies, or Mondrian."
            )
        grids = np.indices(self.shape).reshape(len(self.heights), -1).T
        self.nodes = np.ascontiguousarray(grids, dtype=np.int64)
        self.height = self.nodes.sum(axis=1)
        self.order = np.lexsort(tuple(self.nodes.T[::-1]) + (self.height,))

    def __len__(self) -> int:
        return len(self.nodes)

    def index(self, node: Sequence[int]) -> int:
        return int(np.ravel_multi_index(tuple(node), self.shape))

    def above(self, node: Sequence[int]) -> np.ndarray:
        return np.all(self.nodes >= np.asarray(node), axis=1)

    def below(self, node: Sequence[int]) -> np.ndarray:
        return np.all(self.nodes <= np.asarray(node), axis=1)

    def up_slice(self, node: Sequence[int]) -> tuple[slice, ...]:
        """Grid slice of the nodes ``>= node``."""
        return tuple(slice(int(x), None) for x in node)

    def down_slice(self, node: Sequence[int]) -> tuple[slice, ...]:
        """Grid slice of the nodes ``<= node``."""
        return tuple(slice(0, int(x) + 1) for x in node)

    def minimal(self, passing: np.ndarray) -> np.ndarray:
        """Mask of the passing nodes with no other passing node below them: prefix-or of the
        passing grid along every axis gives 'some passing node at or below'."""
        grid = passing.reshape(self.shape)
        below = grid.copy()
        for axis in range(below.ndim):
            np.logical_or.accumulate(below, axis=axis, out=below)
        strictly = np.zeros_like(grid)
        for axis in range(grid.ndim):  # a passing node at or below an immediate predecessor
            lower = [slice(None)] * grid.ndim
            upper = [slice(None)] * grid.ndim
            lower[axis] = slice(0, -1)
            upper[axis] = slice(1, None)
            strictly[tuple(upper)] |= below[tuple(lower)]
        return (grid & ~strictly).reshape(-1)
