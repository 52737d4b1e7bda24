"""Tables with hierarchical dimensions: every cell, subtotals included, and their equations.

A table is the full cross-classification of its dimensions' hierarchies (DESIGN.md section 6):
one cell per combination of codes, leaves, subtotals and totals alike. Each cell carries its
value (response total, or the count for a frequency table), its frequency (records), the number
of contributors (holdings when a holding column groups records) and its largest contributions,
largest first, which the sensitivity rules need (Hundepool et al. 2012, *Statistical Disclosure
Control*, ch. 4.2). Cells no record falls into are *empty* (structural zeros): published as 0,
known to everybody, never suppressed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular.dimensions import hierarchies_for, leaf_positions
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.rollup import ancestor_pairs, rollup_rows, rollup_sums, top_matrix, top_per_cell

#: Columns of ``Table.cells`` besides the dimensions and the ``top1..topK`` contributions.
VALUE, FREQ, NCONTRIB = "value", "freq", "contributors"


#: The statuses a cell can be given (:meth:`Table.with_status`; tau-ARGUS's S, U and P).
APRIORI = ("safe", "unsafe", "protected")


@dataclass(frozen=True)
class Apriori:
    """Statuses given per cell (over ``Table.cells``): ``status`` is "", "safe", "unsafe" or
    "protected"; ``lower``/``upper`` the given protection levels (NaN where none is given)."""

    status: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


@dataclass(frozen=True)
class Table:
    """A hierarchical table: ``cells`` holds one row per cell, in C order over the hierarchies'
    codes (:meth:`DimensionHierarchy.codes` order, first dimension slowest).

    Attributes
    ----------
    dimensions : tuple of str
    hierarchies : tuple of DimensionHierarchy
    cells : DataFrame
        Columns: the dimensions (codes as text), ``value``, ``freq``, ``contributors`` and
        ``top1``..``topK`` (largest contributions, 0 where a cell has fewer).
    response : str or None
        The response column (None: a frequency table, value = count or weighted count).
    negative : bool
        True when values can be negative (then an intruder has no lower bound of 0).
    missing : dict of str to tuple of str
        Declared missing codes per dimension (:meth:`with_missing`; a tau-ARGUS ``.rda``'s).
    missing_is_safe : bool
        tau-ARGUS's "missing is safe" option (``TableSet.missingIsSafe``, ``MIS(1)`` in a batch
        safety rule): no rule makes a cell primary whose code in some dimension is a declared
        missing code (cells given as primary stay so).
    apriori : Apriori or None
        Statuses and protection levels given per cell (:meth:`with_status`; a tau-ARGUS
        ``.tab``'s status column): they decide those cells instead of the rules.
    """

    dimensions: tuple[str, ...]
    hierarchies: tuple[DimensionHierarchy, ...]
    cells: pd.DataFrame
    response: str | None = None
    negative: bool = False
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict, kw_only=True, compare=False)
    missing_is_safe: bool = field(default=False, kw_only=True)
    apriori: "Apriori | None" = field(default=None, kw_only=True, compare=False, repr=False)

    # ------------------------------------------------------------------ shape
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(h) for h in self.hierarchies)

    @property
    def n_top(self) -> int:
        """How many largest contributions each cell carries."""
        return sum(1 for c in self.cells.columns if c.startswith("top") and c[3:].isdigit())

    def code_index(self) -> np.ndarray:
        """(cells x dimensions) positions of each cell's codes in its hierarchy."""
        return np.stack(np.unravel_index(np.arange(len(self.cells)), self.shape), axis=1)

    @property
    def empty(self) -> np.ndarray:
        """True for cells with no contributor (structural zeros)."""
        return self.cells[FREQ].to_numpy() == 0

    def locate(self, keys: Any) -> np.ndarray:
        """Positions of cells given as tuples of codes, dicts ``{dimension: code}``, or a boolean
        mask over :attr:`cells`. DataError naming the cell when a key is unknown."""
        if isinstance(keys, (np.ndarray, pd.Series)) and np.asarray(keys).dtype == bool:
            mask = np.asarray(keys)
            if mask.shape != (len(self.cells),):
                raise ParameterError(f"A boolean mask of cells must have {len(self.cells)} entries "
                                     f"(one per cell of table.cells). Got {mask.shape} instead.")
            return np.flatnonzero(mask)
        out = []
        for key in keys:
            if isinstance(key, Mapping):
                missing = [d for d in self.dimensions if d not in key]
                if missing:
                    raise ParameterError(f"Cell {dict(key)} does not name dimension {missing[0]!r}.")
                key = tuple(key[d] for d in self.dimensions)
            if isinstance(key, (str, int)) and len(self.dimensions) == 1:
                key = (key,)
            key = tuple(str(k).strip() for k in key)
            if len(key) != len(self.dimensions):
                raise ParameterError(f"Cell {key} has {len(key)} codes; the table has "
                                     f"{len(self.dimensions)} dimensions {list(self.dimensions)}.")
            pos = [h.index(c) for h, c in zip(self.hierarchies, key)]
            out.append(int(np.ravel_multi_index(pos, self.shape)))
        return np.asarray(out, dtype=np.int64)

    def with_missing(self, codes: Mapping[str, Any], missing_is_safe: bool = True) -> "Table":
        """This table with ``codes`` (``{dimension: code or list of codes}``) declared as missing
        codes and tau-ARGUS's "missing is safe" option set to ``missing_is_safe``: then no
        sensitivity rule makes a cell primary whose code in some dimension is a missing code
        (tau-ARGUS ``TableSet.missingIsSafe``; cells given as ``primary`` stay primary). A missing
        code stays a code of the table, counted under its total. Codes the table does not hold
        are allowed (tau-ARGUS declares them whether or not they occur)."""
        if not isinstance(codes, Mapping):
            raise ParameterError("The 'codes' parameter of Table.with_missing must map dimensions to missing "
                                 f"codes, e.g. {{'act': ['00']}}. Got {type(codes).__name__} instead.")
        if not isinstance(missing_is_safe, (bool, np.bool_)):
            raise ParameterError("The 'missing_is_safe' parameter of Table.with_missing must be True or "
                                 f"False. Got {missing_is_safe!r} instead.")
        out: dict[str, tuple[str, ...]] = {}
        for d, c in codes.items():
            if d not in self.dimensions:
                raise ParameterError(f"The 'codes' parameter of Table.with_missing names {d!r}, which is not a "
                                     f"dimension of the table {list(self.dimensions)}.")
            c = [c] if isinstance(c, (str, int)) else list(c)
            out[d] = tuple(dict.fromkeys(str(x).strip() for x in c))
        return replace(self, missing=out, missing_is_safe=bool(missing_is_safe))

    def with_status(self, keys: Any, status: Sequence[Any], lower: Sequence[float] | None = None,
                    upper: Sequence[float] | None = None) -> "Table":
        """This table with statuses given for the cells ``keys`` (as :meth:`locate` takes them),
        as tau-ARGUS takes a tabular input's status column (manual 4.2, §3.4 and §4.2: cells
        "safe", "unsafe" or "protected" by the user): ``"safe"`` — no rule makes it primary;
        ``"unsafe"`` — primary, with the protection levels ``lower``/``upper`` given for it
        (when positive; else the rules' level, or 10% of its value when no rule flags it);
        ``"protected"`` — never primary and never suppressed (published whatever the pattern
        costs); None — no status, the rules decide. Cells not listed have no status."""
        idx = self.locate(keys)
        status = list(status)
        if len(status) != len(idx):
            raise ParameterError(f"The 'status' parameter of Table.with_status must have one entry per cell "
                                 f"key ({len(idx)}). Got {len(status)} instead.")
        bad = [s for s in status if s is not None and s not in APRIORI]
        if bad:
            raise ParameterError(f"The 'status' parameter of Table.with_status takes {', '.join(map(repr, APRIORI))} "
                                 f"or None. Got {bad[0]!r} instead.")
        n = len(self.cells)
        st = np.full(n, "", dtype=object)
        st[idx] = [s or "" for s in status]
        levels = []
        for name, given in (("lower", lower), ("upper", upper)):
            a = np.full(n, np.nan)
            if given is not None:
                g = np.asarray(given, float)
                if g.shape != (len(idx),):
                    raise ParameterError(f"The '{name}' parameter of Table.with_status must have one entry "
                                         f"per cell key ({len(idx)}). Got shape {g.shape} instead.")
                a[idx] = np.where(g > 0, g, np.nan)
            levels.append(a)
        unsafe_empty = (st == "unsafe") & self.empty
        if unsafe_empty.any():
            raise DataError(f"Cell {self.cell_name(int(np.flatnonzero(unsafe_empty)[0]))} is given as unsafe but "
                            "is empty (a structural zero): it cannot be protected by suppression.")
        return replace(self, apriori=Apriori(st, levels[0], levels[1]))

    @property
    def protected(self) -> np.ndarray:
        """True for cells given the status "protected" (:meth:`with_status`): never suppressed."""
        if self.apriori is None:
            return np.zeros(len(self.cells), bool)
        return self.apriori.status == "protected"

    def missing_mask(self) -> np.ndarray:
        """True for cells whose code in some dimension is a declared missing code."""
        mask = np.zeros(len(self.cells), bool)
        if not self.missing:
            return mask
        pos = self.code_index()
        for k, (d, h) in enumerate(zip(self.dimensions, self.hierarchies)):
            idx = [h.index(c) for c in self.missing.get(d, ()) if c in h]
            if idx:
                mask |= np.isin(pos[:, k], idx)
        return mask

    def cell_name(self, i: int) -> str:
        """A cell named by its codes, e.g. ``(region=A, size=Total)``: never by its value."""
        pos = np.unravel_index(int(i), self.shape)
        return "(" + ", ".join(f"{d}={h.codes[p]}" for d, h, p in zip(self.dimensions, self.hierarchies, pos)) + ")"

    # ------------------------------------------------------------- equations
    def equations(self) -> sp.csr_matrix:
        """The table's linear relations as a sparse matrix ``A`` with ``A @ values == 0``.

        One row per dimension, per code with children, per combination of the other dimensions'
        codes: ``+1`` on the parent cell, ``-1`` on each child cell.
        """
        shape = self.shape
        n = int(np.prod(shape))
        ids = np.arange(n).reshape(shape)
        rows, cols, vals = [], [], []
        r0 = 0
        for k, h in enumerate(self.hierarchies):
            idk = np.moveaxis(ids, k, 0).reshape(shape[k], -1)
            m = idk.shape[1]
            par = np.asarray(h.parents)
            for p in np.unique(par[par >= 0]):
                kids = np.flatnonzero(par == p)
                block = np.arange(r0, r0 + m)
                rows.append(block)
                cols.append(idk[p])
                vals.append(np.ones(m))
                for c in kids:
                    rows.append(block)
                    cols.append(idk[c])
                    vals.append(-np.ones(m))
                r0 += m
        if r0 == 0:
            return sp.csr_matrix((0, n))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(r0, n))

    # --------------------------------------------------------------- builders
    @classmethod
    def from_microdata(cls, frame: pd.DataFrame, dimensions: Sequence[str],
                       hierarchies: Mapping[str, Any] | Sequence[Any] | None = None,
                       response: str | None = None, weight: str | None = None,
                       holding: str | None = None, top: int = 3, total: str = "Total") -> "Table":
        """Every cell of the table of ``frame`` over ``dimensions``.

        Parameters
        ----------
        frame : DataFrame
            One row per record (contributor).
        dimensions : list of str
            The spanning (explanatory) columns.
        hierarchies : mapping or list, optional
            Per dimension a :class:`DimensionHierarchy`, a ``{child: parent}`` mapping, an ``.hrc`` path,
            or None (flat: the column's codes under ``total``). Records must carry leaf codes.
        response : str, optional
            The column summed in each cell; None gives a frequency table (value = count).
        weight : str, optional
            Sampling weights: value = sum of weight x response (weighted count); each
            contribution is weight x response too. ``freq`` stays the number of records.
        holding : str, optional
            Groups records into contributors (enterprises of one holding): the largest
            contributions and the ``contributors`` count are per holding.
        top : int
            How many largest contributions to keep per cell (the rules' n at most).
        """
        dims = _dimension_list(frame, dimensions, "from_microdata")
        if not isinstance(top, (int, np.integer)) or top < 1:
            raise ParameterError(f"The 'top' parameter of Table.from_microdata must be an int >= 1. Got {top!r} instead.")
        for col, what in ((response, "response"), (weight, "weight"), (holding, "holding")):
            if col is not None and col not in frame.columns:
                raise DataError(f"The {what} column {col!r} is not in the data.")
        hier = hierarchies_for(dims, hierarchies, frame, total)
        n = len(frame)
        shape = tuple(len(h) for h in hier)
        pos = np.empty((n, len(dims)), dtype=np.int64)
        for k, (d, h) in enumerate(zip(dims, hier)):
            col = frame[d]
            if col.isna().any():
                raise DataError(f"Column {d!r} has missing codes (row {int(np.flatnonzero(col.isna().to_numpy())[0])}); "
                                "recode them to a code of the hierarchy.")
            codes = col.astype(str).str.strip()
            uniq, inv = np.unique(codes.to_numpy(), return_inverse=True)
            pos[:, k] = leaf_positions(d, uniq, h)[inv]
        w = _numeric(frame, weight, "weight") if weight else np.ones(n)
        y = _numeric(frame, response, "response") if response else np.ones(n)
        contrib = w * y
        leafcell = np.ravel_multi_index(pos.T, shape) if n else np.zeros(0, np.int64)
        N = int(np.prod(shape))
        value = np.bincount(leafcell, weights=contrib, minlength=N)
        freq = np.bincount(leafcell, minlength=N).astype(np.int64)
        anc = [ancestor_pairs(h) for h in hier]
        value = rollup_sums(value, shape, anc)
        freq = np.rint(rollup_sums(freq.astype(float), shape, anc)).astype(np.int64)
        if holding is None:
            ncontrib = freq.copy()
            cell, val = top_per_cell(leafcell, contrib, top)
            cell, _, val = rollup_rows(cell, None, val, shape, anc, top)
        else:
            hcodes = pd.factorize(frame[holding].astype(str), sort=True)[0].astype(np.int64)
            key = pd.DataFrame({"c": leafcell, "h": hcodes, "v": contrib}).groupby(["c", "h"], sort=True)["v"].sum()
            cell = key.index.get_level_values(0).to_numpy(np.int64)
            hold = key.index.get_level_values(1).to_numpy(np.int64)
            cell, hold, val = rollup_rows(cell, hold, key.to_numpy(float), shape, anc, None)
            ncontrib = np.bincount(cell, minlength=N).astype(np.int64)
            cell, val = top_per_cell(cell, val, top)
        tops = top_matrix(cell, val, N, top)
        negative = bool((contrib < 0).any())
        return cls._build(dims, hier, value, freq, ncontrib, tops, response, negative)

    @classmethod
    def from_file(cls, path: Any, dimensions: Sequence[str],
                  hierarchies: Mapping[str, Any] | Sequence[Any] | None = None,
                  response: str | None = None, weight: str | None = None,
                  holding: str | None = None, top: int = 3, total: str = "Total",
                  input_format: str | None = None, memory: int | None = None) -> "Table":
        """Every cell of the table of a CSV/TSV/Parquet file of records, aggregated by DuckDB.

        The same table as :meth:`from_microdata` on the file's records (same parameters), built
        without loading the records: one ``GROUP BY`` over the leaf codes (out of core, spilling
        past ``memory`` bytes when given), then the subtotals by the hierarchies' roll-up; with
        ``holding``, the per-holding contributions are rolled up in DuckDB by joining each
        dimension's (code, ancestor) pairs (:mod:`sdckit.tabular.build_duckdb`). CSV columns are
        read as text, so codes keep their leading zeros; response and weight are cast to numbers.
        """
        from sdckit.tabular.build_duckdb import build_from_file
        return build_from_file(cls, path, dimensions, hierarchies, response=response, weight=weight,
                               holding=holding, top=top, total=total, input_format=input_format,
                               memory=memory)

    @classmethod
    def from_cells(cls, cells: pd.DataFrame, dimensions: Sequence[str],
                   hierarchies: Mapping[str, Any] | Sequence[Any] | None = None,
                   value: str = "value", freq: str | None = "freq", top: Sequence[str] = (),
                   contributors: str | None = None, total: str = "Total",
                   rtol: float = 1e-9) -> "Table":
        """A table from given cells (e.g. a tau-ARGUS ``.tab`` file or a published table).

        Combinations not listed are empty cells (value 0, freq 0). The cells must add up along
        every hierarchy; the first that does not is named (by its codes, never its value).
        ``freq=None`` means the value is a count (freq = value). ``top`` names the columns with
        the largest contributions, largest first; ``contributors`` the number of contributors
        (default: freq).
        """
        dims = _dimension_list(cells, dimensions, "from_cells")
        if isinstance(top, str) or not isinstance(top, Sequence) or not all(isinstance(c, str) for c in top):
            raise ParameterError("The 'top' parameter of Table.from_cells must be a list of column names "
                                 "(largest contribution first), e.g. ['top1', 'top2'], or [] for none. "
                                 f"Got {top!r} instead.")
        for col, what in ((value, "value"), (freq, "freq"), (contributors, "contributors")):
            if col is not None and col not in cells.columns:
                raise DataError(f"The {what} column {col!r} is not in the cells.")
        for col in top:
            if col not in cells.columns:
                raise DataError(f"The top-contribution column {col!r} is not in the cells.")
        hier = hierarchies_for(dims, hierarchies, cells, total, leaves_only=False)
        shape = tuple(len(h) for h in hier)
        N = int(np.prod(shape))
        pos = np.empty((len(cells), len(dims)), dtype=np.int64)
        for k, (d, h) in enumerate(zip(dims, hier)):
            codes = cells[d].astype(str).str.strip().to_numpy()
            uniq, inv = np.unique(codes, return_inverse=True)
            mapped = np.array([h.index(u) for u in uniq], dtype=np.int64)
            pos[:, k] = mapped[inv]
        flat = np.ravel_multi_index(pos.T, shape) if len(cells) else np.zeros(0, np.int64)
        u, first, counts = np.unique(flat, return_index=True, return_counts=True)
        if (counts > 1).any():
            i = int(u[counts > 1][0])
            raise DataError(f"Cell {_name(dims, hier, shape, i)} is listed more than once.")
        v = np.zeros(N)
        v[flat] = _numeric(cells, value, "value")
        f = np.zeros(N, dtype=np.int64)
        if freq is None:
            f[flat] = np.rint(np.abs(v[flat])).astype(np.int64)
        else:
            f[flat] = np.rint(_numeric(cells, freq, "freq")).astype(np.int64)
        nc = f.copy()
        if contributors is not None:
            nc[flat] = np.rint(_numeric(cells, contributors, "contributors")).astype(np.int64)
        tops = np.zeros((N, max(len(top), 0)))
        for j, col in enumerate(top):
            tops[flat, j] = np.nan_to_num(pd.to_numeric(cells[col], errors="coerce").to_numpy(float))
        table = cls._build(dims, hier, v, f, nc, tops, value, bool((v < 0).any()))
        table.check_additivity(rtol=rtol)
        return table

    def check_additivity(self, rtol: float = 1e-9) -> None:
        """DataError naming the first parent cell that is not the sum of its children."""
        A = self.equations()
        v = self.cells[VALUE].to_numpy(float)
        r = A @ v
        scale = float(np.abs(v).max()) if len(v) else 1.0
        bad = np.flatnonzero(np.abs(r) > rtol * max(scale, 1.0) + 1e-9)
        if len(bad):
            row = A.getrow(int(bad[0]))
            parent = int(row.indices[row.data > 0][0])
            raise DataError(f"The cells do not add up: cell {self.cell_name(parent)} is not the sum of "
                            "its children along one dimension (check the hierarchies and the values).")

    @classmethod
    def _build(cls, dims, hier, value, freq, ncontrib, tops, response, negative) -> "Table":
        shape = tuple(len(h) for h in hier)
        idx = np.unravel_index(np.arange(int(np.prod(shape))), shape)
        data: dict[str, Any] = {d: np.asarray(h.codes, dtype=object)[i] for d, h, i in zip(dims, hier, idx)}
        data[VALUE] = np.asarray(value, float)
        data[FREQ] = np.asarray(freq, np.int64)
        data[NCONTRIB] = np.asarray(ncontrib, np.int64)
        for j in range(tops.shape[1]):
            data[f"top{j + 1}"] = tops[:, j]
        return cls(tuple(dims), tuple(hier), pd.DataFrame(data), response, bool(negative))

    def to_dict(self) -> dict[str, Any]:
        return {"dimensions": list(self.dimensions), "shape": list(self.shape), "cells": len(self.cells),
                "empty_cells": int(self.empty.sum()), "response": self.response,
                "negative": self.negative, "hierarchies": [h.to_dict() for h in self.hierarchies]}


# ---------------------------------------------------------------------- helpers
def _dimension_list(frame: pd.DataFrame, dimensions: Sequence[str], where: str) -> list[str]:
    if isinstance(dimensions, str):
        dimensions = [dimensions]
    dims = list(dimensions)
    if not dims:
        raise ParameterError(f"The 'dimensions' parameter of Table.{where} must name at least one column.")
    if len(set(dims)) != len(dims):
        raise ParameterError(f"The 'dimensions' parameter of Table.{where} repeats a column: {dims}.")
    for d in dims:
        if d not in frame.columns:
            raise DataError(f"Dimension column {d!r} is not in the data.")
    return dims


def _numeric(frame: pd.DataFrame, col: str, what: str) -> np.ndarray:
    s = pd.to_numeric(frame[col], errors="coerce")
    bad = s.isna().to_numpy()
    if bad.any():
        raise DataError(f"The {what} column {col!r} has a missing or non-numeric entry at row "
                        f"{int(np.flatnonzero(bad)[0])}.")
    return s.to_numpy(float)


def _name(dims, hier, shape, i) -> str:
    pos = np.unravel_index(int(i), shape)
    return "(" + ", ".join(f"{d}={h.codes[p]}" for d, h, p in zip(dims, hier, pos)) + ")"
