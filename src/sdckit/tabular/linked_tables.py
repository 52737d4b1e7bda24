"""Linked tables as one table: the union of several tables' cells and equations (issue 14).

Tables that share cells — e.g. region x size and region x activity from one survey share the
region margin — cannot be protected one at a time: a pattern safe in each table alone can be
undone by differencing across them (a shared cell suppressed in one release and published in the
other; equations of one table bounding cells of the other). This is the known weakness of
table-by-table processing (de Wolf & Giessing 2009, "Adjusting the tau-ARGUS modular approach to
deal with linked tables", *Data & Knowledge Engineering* 68(11); Hundepool et al. 2012,
*Statistical Disclosure Control*, §4.4.5 "linked tables"). The remedy is one model over the union
of the tables' cells and the union of their equations: an intruder who reads every release knows
all of them at once.

Cells are identified by their codes: a cell of one table and a cell of another are the same cell
when they carry the same code on every dimension both tables have and each is the grand total on
the dimensions only the other table has (region x size ``(N, Total)`` = region x activity
``(N, Total)``). So the union is a set of cells of the hypercube over the union of the dimensions
(a table's cell has the total code on the dimensions it lacks), and :class:`LinkedTables` is a
:class:`~sdckit.tabular.table.Table` over those dimensions whose ``cells`` are the union (not the
whole hypercube) and whose ``equations()`` are the tables' equations stacked (duplicates once).
Everything that works on a table's cells and equations — the sensitivity rules, both suppression
methods, the LP audit — works on it unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, validated
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.table import FREQ, NCONTRIB, VALUE, Table


@dataclass(frozen=True, eq=False)
class LinkedTables(Table):
    """The union of several tables' cells, with the union of their equations.

    Attributes (besides :class:`Table`'s, over the union of the dimensions)
    -----------------------------------------------------------------------
    tables : tuple of Table
        The linked tables, in the order given.
    names : tuple of str
        Their names (``table 1``, ``table 2``, ... unless given), used in cell names.
    members : tuple of ndarray
        ``members[k][i]`` is the position in :attr:`cells` of cell ``i`` of ``tables[k]``.
    positions : ndarray
        (cells x dimensions) positions of each union cell's codes in its dimension's hierarchy.
    """

    tables: tuple[Table, ...] = ()
    names: tuple[str, ...] = ()
    members: tuple[np.ndarray, ...] = field(default=(), repr=False)
    positions: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _equations: list = field(default_factory=list, repr=False, compare=False)  # computed once

    # --------------------------------------------------- Table's interface, on the union
    def code_index(self) -> np.ndarray:
        return self.positions

    def owners(self) -> np.ndarray:
        """(cells x tables) True where a table holds the cell."""
        out = np.zeros((len(self.cells), len(self.tables)), bool)
        for k, m in enumerate(self.members):
            out[m, k] = True
        return out

    def cell_name(self, i: int) -> str:
        """The cell by the first table holding it and that table's codes, e.g.
        ``table 1 (region=N, size=Total)``: never by its value."""
        i = int(i)
        for k, m in enumerate(self.members):
            hit = np.flatnonzero(m == i)
            if len(hit):
                return f"{self.names[k]} {self.tables[k].cell_name(int(hit[0]))}"
        raise IndexError(i)  # pragma: no cover - every union cell belongs to a table

    def locate(self, keys: Any) -> np.ndarray:
        """Positions of cells given as a boolean mask over :attr:`cells`, tuples of codes over
        all the union's dimensions, or dicts ``{dimension: code}`` (a dimension left out is its
        total). DataError naming the cell when no table holds it."""
        if isinstance(keys, (np.ndarray, pd.Series)) and np.asarray(keys).dtype == bool:
            return Table.locate(self, keys)
        lookup = {tuple(int(x) for x in row): j for j, row in enumerate(self.positions)}
        out = []
        for key in keys:
            if isinstance(key, Mapping):
                unknown = [d for d in key if d not in self.dimensions]
                if unknown:
                    raise ParameterError(f"Cell {dict(key)} names {unknown[0]!r}, which is not a dimension of "
                                         f"the linked tables {list(self.dimensions)}.")
                key = tuple(key.get(d, h.total) for d, h in zip(self.dimensions, self.hierarchies))
            if isinstance(key, (str, int)):
                key = (key,)
            key = tuple(str(k).strip() for k in key)
            if len(key) != len(self.dimensions):
                raise ParameterError(f"Cell {key} has {len(key)} codes; the linked tables have "
                                     f"{len(self.dimensions)} dimensions {list(self.dimensions)} (or give "
                                     "{dimension: code}, a dimension left out being its total).")
            pos = []
            for d, h, c in zip(self.dimensions, self.hierarchies, key):
                if c not in h:
                    raise DataError(f"Cell {key}: code {c!r} is not in the hierarchy of dimension {d!r}.")
                pos.append(h.index(c))
            j = lookup.get(tuple(pos))
            if j is None:
                raise DataError("Cell (" + ", ".join(f"{d}={c}" for d, c in zip(self.dimensions, key))
                                + ") is in none of the linked tables.")
            out.append(j)
        return np.asarray(out, dtype=np.int64)

    def equations(self) -> sp.csr_matrix:
        """Every table's equations on the union's cells, each distinct equation once."""
        if not self._equations:
            self._equations.append(self._stack())
        return self._equations[0].copy()

    def _stack(self) -> sp.csr_matrix:
        n = len(self.cells)
        blocks = []
        for t, m in zip(self.tables, self.members):
            A = t.equations().tocoo()
            blocks.append(sp.csr_matrix((A.data, (A.row, m[A.col])), shape=(A.shape[0], n)))
        if not blocks:
            return sp.csr_matrix((0, n))
        A = sp.vstack(blocks).tocsr()
        A.sort_indices()
        # only an equation on shared cells alone can be in two tables: look for repeats among those
        shared = (self.owners().sum(axis=1) > 1).astype(float)
        outside = np.asarray(abs(A) @ (1.0 - shared)).ravel()
        keep = np.ones(A.shape[0], bool)
        seen: set = set()
        for r in np.flatnonzero(outside == 0):
            s, e = A.indptr[r], A.indptr[r + 1]
            key = (A.indices[s:e].tobytes(), A.data[s:e].tobytes())
            if key in seen:
                keep[r] = False
            seen.add(key)
        return A[np.flatnonzero(keep)]

    def to_dict(self) -> dict[str, Any]:
        shared = int((self.owners().sum(axis=1) > 1).sum())
        return {"linked": True, "dimensions": list(self.dimensions), "cells": len(self.cells),
                "shared_cells": shared, "empty_cells": int(self.empty.sum()), "response": self.response,
                "negative": self.negative,
                "tables": [{"name": nm, **t.to_dict()} for nm, t in zip(self.names, self.tables)]}


@validated(rtol=Interval(float, 0, None, closed="left"))
def link_tables(tables: Sequence[Table], names: Sequence[str] | None = None, rtol: float = 1e-9) -> LinkedTables:
    """The union of ``tables``, shared cells identified by their codes.

    Parameters
    ----------
    tables : list of Table
        Tables of one response (or all frequency tables) from one source. A dimension several
        tables have must have the same hierarchy in each (same codes, same parents).
    names : list of str, optional
        One name per table (default ``table 1``, ``table 2``, ...), used in messages.
    rtol : float
        Relative tolerance (of the largest |value|) within which a shared cell's values must agree.

    Raises
    ------
    ParameterError
        Not a list of Tables, names that do not match, different responses, or a common dimension
        with different hierarchies (named).
    DataError
        A shared cell whose value or frequency differs between two tables (named by its codes in
        both; no value is quoted).
    """
    if isinstance(tables, Table) or not isinstance(tables, Sequence) or not len(tables):
        raise ParameterError("Linked tables are given as a non-empty list of Tables.")
    for k, t in enumerate(tables, start=1):
        if not isinstance(t, Table) or isinstance(t, LinkedTables):
            raise ParameterError(f"Entry {k} of the linked tables is a {type(t).__name__}, not a Table.")
    tables = tuple(tables)
    if names is None:
        names = tuple(f"table {k}" for k in range(1, len(tables) + 1))
    else:
        names = tuple(str(n) for n in names)
        if len(names) != len(tables) or len(set(names)) != len(names):
            raise ParameterError(f"The 'names' parameter of link_tables needs {len(tables)} distinct names, "
                                 "one per table.")
    resp = {t.response for t in tables}
    if len(resp) > 1:
        k = next(k for k, t in enumerate(tables) if t.response != tables[0].response)
        raise ParameterError(f"{names[k]} has response {tables[k].response!r} and {names[0]} "
                             f"{tables[0].response!r}; linked tables share one response (or are all "
                             "frequency tables).")
    dims: list[str] = []
    hier: dict[str, DimensionHierarchy] = {}
    first: dict[str, int] = {}
    for k, t in enumerate(tables):
        for d, h in zip(t.dimensions, t.hierarchies):
            if d not in hier:
                dims.append(d)
                hier[d], first[d] = h, k
            elif tuple(h.codes) != tuple(hier[d].codes) or tuple(h.parents) != tuple(hier[d].parents):
                raise ParameterError(f"Dimension {d!r} has another hierarchy in {names[k]} than in "
                                     f"{names[first[d]]}; linked tables must share the hierarchy of a "
                                     "common dimension.")
    shape = tuple(len(hier[d]) for d in dims)
    keys = []
    for t in tables:
        pos = np.zeros((len(t.cells), len(dims)), np.int64)  # a missing dimension: its total (0)
        ci = t.code_index()
        for j, d in enumerate(t.dimensions):
            pos[:, dims.index(d)] = ci[:, j]
        keys.append(np.ravel_multi_index(pos.T, shape) if len(pos) else np.zeros(0, np.int64))
    allkeys = np.concatenate(keys)
    uniq, inv = np.unique(allkeys, return_inverse=True)
    members, s = [], 0
    for kk in keys:
        members.append(inv[s:s + len(kk)].astype(np.int64))
        s += len(kk)
    N = len(uniq)
    value = np.full(N, np.nan)
    freq = np.full(N, -1, np.int64)
    ncon = np.zeros(N, np.int64)
    ntop = max(t.n_top for t in tables)
    tops = np.zeros((N, ntop))
    owner = np.full(N, -1)
    owner_pos = np.full(N, -1)
    scale = max([float(np.abs(t.cells[VALUE]).max()) for t in tables if len(t.cells)] + [1.0])
    for k, (t, m) in enumerate(zip(tables, members)):
        v = t.cells[VALUE].to_numpy(float)
        f = t.cells[FREQ].to_numpy(np.int64)
        seen = owner[m] >= 0
        bad = seen & ((np.abs(value[m] - v) > rtol * scale + 1e-9) | (freq[m] != f))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            u = int(m[i])
            o = int(owner[u])
            what = "value" if abs(value[u] - v[i]) > rtol * scale + 1e-9 else "frequency"
            raise DataError(f"Cell {names[o]} {tables[o].cell_name(int(owner_pos[u]))} and {names[k]} "
                            f"{t.cell_name(i)} are the same cell but have a different {what}; linked "
                            "tables must be built from the same data.")
        new = ~seen
        value[m[new]] = v[new]
        freq[m[new]] = f[new]
        owner[m[new]] = k
        owner_pos[m[new]] = np.flatnonzero(new)
        ncon[m] = np.maximum(ncon[m], t.cells[NCONTRIB].to_numpy(np.int64))
        for j in range(t.n_top):
            np.maximum.at(tops[:, j], m, t.cells[f"top{j + 1}"].to_numpy(float))
    positions = np.stack(np.unravel_index(uniq, shape), axis=1) if N else np.zeros((0, len(dims)), np.int64)
    data: dict[str, Any] = {d: np.asarray(hier[d].codes, dtype=object)[positions[:, j]] for j, d in enumerate(dims)}
    data[VALUE] = value
    data[FREQ] = freq
    data[NCONTRIB] = ncon
    for j in range(ntop):
        data[f"top{j + 1}"] = tops[:, j]
    missing: dict[str, tuple[str, ...]] = {}
    for t in tables:  # each table's declared missing codes (tau-ARGUS "missing is safe" if any asks)
        for d, c in t.missing.items():
            missing[d] = tuple(dict.fromkeys(missing.get(d, ()) + tuple(c)))
    return LinkedTables(tuple(dims), tuple(hier[d] for d in dims), pd.DataFrame(data), tables[0].response,
                        any(t.negative for t in tables), tables, names, tuple(members), positions,
                        missing=missing, missing_is_safe=any(t.missing_is_safe for t in tables))
