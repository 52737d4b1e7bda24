"""The generalization lattice and the evaluation of its nodes (seed 003 sections 2 and 4.1).

A *node* is a vector of generalization levels, one per quasi-identifier (a distance vector
of seed 003, Fig. 6); the lattice holds every vector between ``0`` and the hierarchies'
heights. To evaluate a node the data are never re-read: the records are encoded once into
integer codes per attribute (level 0), collapsed into a *group table* of distinct
(quasi-identifier codes, sensitive codes) rows with their counts, and the table of a node is
obtained from the table of any finer node by an array gather through each hierarchy's
roll-up map and a regrouping of the (small) table — the idea behind ARX's roll-up.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdckit.anonymity.criteria import Criterion
from sdckit.core.hierarchy import Hierarchy
from sdckit.core.arrays import first_rows
from sdckit.core.errors import DataError
from sdckit.core.schema import Kind, Schema

#: Largest lattice the searches accept (nodes); beyond it use Mondrian.
MAX_NODES = 2_000_000


def combine_codes(columns: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """One int64 key per row for several code columns (mixed radix; re-densified with
    :func:`pandas.factorize` before it could overflow)."""
    key = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    radix = 1
    for col, size in zip(columns, sizes):
        size = max(int(size), 1)
        if radix * size >= 2**62:
            key = pd.factorize(key)[0].astype(np.int64)
            radix = int(key.max()) + 1 if len(key) else 1
        key = key * size + col
        radix *= size
    return key


@dataclass(frozen=True)
class Sensitive:
    """A sensitive attribute encoded: codes per record, labels in the attribute's order and
    the whole table's count of each value."""

    name: str
    codes: np.ndarray
    labels: np.ndarray
    overall: np.ndarray


def sensitive_order(series: pd.Series, schema: Schema | None) -> tuple[np.ndarray, np.ndarray]:
    """Codes and labels of a sensitive column, labels in the column's order (numbers and
    dates ascending, ordinal by its declared order, others sorted as text)."""
    name = series.name
    if series.isna().any():
        row = series.index[series.isna().to_numpy().argmax()]
        raise DataError(f"Sensitive column {name!r} is missing at row {row!r}; impute or remove those records.")
    column = schema[name] if schema is not None and name in schema else None
    order = column.order if column is not None and column.kind is Kind.ORDINAL else None
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


@dataclass
class Encoded:
    """The data as the lattice sees them: level-0 codes of each quasi-identifier per record."""

    quasi: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    codes: np.ndarray  # records x quasi, level-0 codes
    sensitive: tuple[Sensitive, ...]

    @property
    def n(self) -> int:
        return len(self.codes)

    @property
    def heights(self) -> np.ndarray:
        return np.array([h.height for h in self.hierarchies], dtype=np.int64)


def encode(frame: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], criteria: Sequence[Criterion],
           schema: Schema | None = None) -> Encoded:
    """Encode the quasi-identifiers (through their hierarchies) and the sensitive columns."""
    quasi = tuple(hierarchies)
    codes = np.empty((len(frame), len(quasi)), dtype=np.int64)
    for j, name in enumerate(quasi):
        h = hierarchies[name]
        codes[:, j] = h.codes(0)[h.index_of(frame[name], name)]
    names = []
    for c in criteria:
        s = c.needs_sensitive
        if s is not None and s not in names:
            if s not in frame.columns:
                raise DataError(f"The sensitive column {s!r} of {type(c).__name__} is not in the data.")
            if s in quasi:
                raise DataError(f"Column {s!r} cannot be both a quasi-identifier and the sensitive attribute.")
            names.append(s)
    sens = []
    for s in names:
        scodes, labels = sensitive_order(frame[s], schema)
        sens.append(Sensitive(s, scodes, labels, np.bincount(scodes, minlength=len(labels)).astype(float)))
    return Encoded(quasi, tuple(hierarchies[q] for q in quasi), codes, tuple(sens))


@dataclass(frozen=True)
class GroupTable:
    """Distinct (quasi codes at a node, sensitive codes) rows with their record counts."""

    node: tuple[int, ...]
    codes: np.ndarray  # rows x quasi
    sens: np.ndarray  # rows x sensitive
    counts: np.ndarray
    grouped: bool = True  # rows are distinct (False: one row per record, not regrouped)


@dataclass(frozen=True)
class NodeStats:
    """A node's equivalence classes: sizes, which violate each criterion, and the suppression."""

    node: tuple[int, ...]
    sizes: np.ndarray
    violating: np.ndarray  # classes x criteria
    monotone_suppressed: int
    suppressed: int

    @property
    def classes(self) -> int:
        return int((~self.violating.any(axis=1)).sum())


class Evaluator:
    """Evaluates lattice nodes by rolling up group tables; caches every result and the most
    recent tables up to ``cache_rows`` rows in all, and rolls each node up from the smallest
    cached table of a finer node."""

    def __init__(self, encoded: Encoded, criteria: Sequence[Criterion], allowed: int,
                 monotone_flags: Sequence[bool], cache_rows: int = 2_000_000):
        self.enc = encoded
        self.criteria = tuple(criteria)
        self.allowed = int(allowed)
        self.monotone = np.asarray(monotone_flags, dtype=bool)
        self.sens_index = [
            None if c.needs_sensitive is None else [s.name for s in encoded.sensitive].index(c.needs_sensitive)
            for c in self.criteria
        ]
        self.level_sizes = [np.array(h.level_sizes()) for h in encoded.hierarchies]
        self._rollups: dict[tuple[int, int, int], np.ndarray] = {}
        self.bottom = self._group(tuple([0] * len(encoded.quasi)), encoded.codes,
                                  np.column_stack([s.codes for s in encoded.sensitive])
                                  if encoded.sensitive else np.zeros((encoded.n, 0), dtype=np.int64),
                                  np.ones(encoded.n, dtype=np.int64))
        self._tables: OrderedDict[tuple[int, ...], GroupTable] = OrderedDict()
        self._cache_rows = cache_rows
        self._cached_total = 0
        self._cached_nodes: np.ndarray | None = None
        self._cached_rows: np.ndarray | None = None
        self.results: dict[tuple[int, ...], NodeStats] = {}

    # -------------------------------------------------------------- tables
    def rollup(self, j: int, low: int, high: int) -> np.ndarray:
        key = (j, low, high)
        if key not in self._rollups:
            self._rollups[key] = self.enc.hierarchies[j].rollup(low, high)
        return self._rollups[key]

    def _group(self, node, codes, sens, counts) -> GroupTable:
        sizes = [self.level_sizes[j][node[j]] for j in range(len(node))]
        sizes += [len(s.labels) for s in self.enc.sensitive]
        key = combine_codes([codes[:, j] for j in range(codes.shape[1])] + [sens[:, i] for i in range(sens.shape[1])], sizes)
        inverse, uniques = pd.factorize(key)
        first = first_rows(inverse, len(uniques))
        return GroupTable(node, codes[first], sens[first], np.bincount(inverse, weights=counts).astype(np.int64))

    def table(self, node: tuple[int, ...], source: GroupTable | None = None) -> GroupTable:
        """The group table of ``node``, rolled up from ``source`` or the smallest cached
        finer table (the bottom table at worst)."""
        if source is None:
            source = self.bottom
            if self._tables:
                if self._cached_nodes is None:
                    self._cached_nodes = np.array(list(self._tables), dtype=np.int64)
                    self._cached_rows = np.array([len(t.counts) for t in self._tables.values()])
                finer = np.all(self._cached_nodes <= np.asarray(node), axis=1)
                if finer.any():
                    best = int(np.argmin(np.where(finer, self._cached_rows, np.iinfo(np.int64).max)))
                    if self._cached_rows[best] < len(source.counts):
                        source = self._tables[tuple(int(x) for x in self._cached_nodes[best])]
        if source.node == node:
            return source
        cols = np.empty_like(source.codes)
        for j, (low, high) in enumerate(zip(source.node, node)):
            cols[:, j] = source.codes[:, j] if low == high else self.rollup(j, low, high)[source.codes[:, j]]
        table = self._group(node, cols, source.sens, source.counts)
        self._remember(table)
        return table

    def _remember(self, table: GroupTable) -> None:
        """Cache ``table`` for later roll-ups; the oldest go once the cached rows exceed the budget."""
        self._tables[table.node] = table
        self._cached_total += len(table.counts)
        while self._cached_total > self._cache_rows and len(self._tables) > 1:
            _, old = self._tables.popitem(last=False)
            self._cached_total -= len(old.counts)
        self._cached_nodes = None

    # -------------------------------------------------------------- classes
    def class_stats(self, table: GroupTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Class of each table row, class sizes and the classes x criteria violation matrix."""
        node = table.node
        if table.grouped and table.sens.shape[1] == 0:
            # a grouped table without sensitive columns: its rows are the classes
            cls = np.arange(len(table.counts))
            g = len(cls)
            sizes = table.counts
        else:
            key = combine_codes([table.codes[:, j] for j in range(len(node))],
                                [self.level_sizes[j][node[j]] for j in range(len(node))])
            cls, uniques = pd.factorize(key)
            g = len(uniques)
            sizes = np.bincount(cls, weights=table.counts, minlength=g).astype(np.int64)
        violating = np.zeros((g, len(self.criteria)), dtype=bool)
        hists: dict[int, np.ndarray] = {}
        for i, (c, si) in enumerate(zip(self.criteria, self.sens_index)):
            hist = None
            sens = None
            if si is not None:
                sens = self.enc.sensitive[si]
                if si not in hists:
                    m = len(sens.labels)
                    hists[si] = np.bincount(cls * m + table.sens[:, si], weights=table.counts,
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
        set, so this ends)."""
        against_overall = [i for i, c in enumerate(self.criteria)
                           if self.sens_index[i] is not None and getattr(c, "uses_overall", False)]
        while against_overall:
            kept = ~violating.any(axis=1)
            if kept.all() or not kept.any():
                return
            changed = False
            for i in against_overall:
                si = self.sens_index[i]
                hist = hists[si]
                published = hist[kept].sum(axis=0).astype(float)
                now = self.criteria[i].violates(sizes, hist, published, self.enc.sensitive[si].labels)
                added = now & kept
                if added.any():
                    violating[added, i] = True
                    changed = True
            if not changed:
                return

    def evaluate(self, node: tuple[int, ...], source: GroupTable | None = None) -> NodeStats:
        """Evaluate ``node`` once (later calls return the stored result)."""
        node = tuple(int(x) for x in node)
        if node in self.results:
            return self.results[node]
        _, sizes, violating = self.class_stats(self.table(node, source))
        mono = violating[:, self.monotone].any(axis=1) if self.monotone.any() else np.zeros(len(sizes), bool)
        stats = NodeStats(node, sizes, violating, int(sizes[mono].sum()),
                          int(sizes[violating.any(axis=1)].sum()))
        self.results[node] = stats
        return stats

    def passes(self, node: tuple[int, ...], monotone_only: bool = False) -> bool:
        s = self.evaluate(node)
        return (s.monotone_suppressed if monotone_only else s.suppressed) <= self.allowed


class Lattice:
    """Every node between ``0`` and ``heights`` as rows of an int array."""

    def __init__(self, heights: Sequence[int]):
        self.heights = np.asarray(heights, dtype=np.int64)
        size = int(np.prod(self.heights + 1))
        if size > MAX_NODES:
            raise DataError(
                f"The generalization lattice has {size:,} nodes (levels {list(self.heights + 1)}), "
                f"more than the {MAX_NODES:,} a full-domain search handles. Use fewer "
                "quasi-identifiers or shorter hierarchies, or Mondrian."
            )
        grids = np.indices(tuple(self.heights + 1)).reshape(len(self.heights), -1).T
        self.nodes = np.ascontiguousarray(grids, dtype=np.int64)
        self.height = self.nodes.sum(axis=1)
        self.order = np.lexsort(tuple(self.nodes.T[::-1]) + (self.height,))

    def __len__(self) -> int:
        return len(self.nodes)

    def index(self, node: Sequence[int]) -> int:
        return int(np.ravel_multi_index(tuple(node), tuple(self.heights + 1)))

    def above(self, node: Sequence[int]) -> np.ndarray:
        return np.all(self.nodes >= np.asarray(node), axis=1)

    def below(self, node: Sequence[int]) -> np.ndarray:
        return np.all(self.nodes <= np.asarray(node), axis=1)
