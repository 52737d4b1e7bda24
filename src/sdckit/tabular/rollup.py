"""The roll-up of a table's leaf cells into its subtotals and totals along the hierarchies
(:meth:`Table.from_microdata <sdckit.tabular.table.Table.from_microdata>` and
:mod:`sdckit.tabular.build_duckdb`): sums added into every ancestor one dimension at a time, and
each cell's largest contributions (a record lies in exactly one leaf cell, so a parent's largest
contributions are among its children's largest; per holding, contributions are summed first)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdckit.tabular.hierarchy import DimensionHierarchy


def ancestor_pairs(h: DimensionHierarchy) -> tuple[np.ndarray, np.ndarray]:
    """(code, proper ancestor) pairs of a hierarchy, as two position arrays."""
    src, dst = [], []
    for i in range(len(h.codes)):
        p = h.parents[i]
        while p >= 0:
            src.append(i)
            dst.append(p)
            p = h.parents[p]
    return np.asarray(src, np.int64), np.asarray(dst, np.int64)


def rollup_sums(x: np.ndarray, shape, anc) -> np.ndarray:
    """Add every cell's value into its ancestors, one dimension at a time."""
    a = x.reshape(shape).copy()
    for k, (src, dst) in enumerate(anc):
        if not len(src):
            continue
        b = np.moveaxis(a, k, 0)
        add = np.zeros_like(b)
        np.add.at(add, dst, b[src])
        a = np.moveaxis(b + add, 0, k)
    return np.ascontiguousarray(a).reshape(-1)


def top_per_cell(cell: np.ndarray, val: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the ``top`` largest values of each cell (ties by order, so deterministic)."""
    order = np.lexsort((-val, cell))
    c, v = cell[order], val[order]
    if not len(c):
        return c, v
    start = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
    rank = np.arange(len(c)) - np.repeat(start, np.diff(np.r_[start, len(c)]))
    keep = rank < top
    return c[keep], v[keep]


def rollup_rows(cell, hold, val, shape, anc, top):
    """Copy each (cell, contributor) row to the cell's ancestors, one dimension at a time; with
    holdings, contributions of one holding to one cell are summed, otherwise only each cell's
    ``top`` largest are kept (a record lies in one leaf cell, so a parent's largest
    contributions are among its children's largest)."""
    for k, (src, dst) in enumerate(anc):
        if not len(src):
            continue
        pos = np.stack(np.unravel_index(cell, shape), axis=1)
        order = np.argsort(src, kind="stable")
        src_s, dst_s = src[order], dst[order]
        starts = np.searchsorted(src_s, np.arange(shape[k]))
        ends = np.searchsorted(src_s, np.arange(shape[k]), side="right")
        cnt = (ends - starts)[pos[:, k]]
        rep = np.repeat(np.arange(len(cell)), cnt)
        offs = np.arange(len(rep)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        newk = dst_s[starts[pos[rep, k]] + offs]
        npos = pos[rep].copy()
        npos[:, k] = newk
        newcell = np.ravel_multi_index(npos.T, shape)
        cell = np.concatenate([cell, newcell])
        val = np.concatenate([val, val[rep]])
        if hold is not None:
            hold = np.concatenate([hold, hold[rep]])
            g = pd.DataFrame({"c": cell, "h": hold, "v": val}).groupby(["c", "h"], sort=True)["v"].sum()
            cell = g.index.get_level_values(0).to_numpy(np.int64)
            hold = g.index.get_level_values(1).to_numpy(np.int64)
            val = g.to_numpy(float)
        else:
            cell, val = top_per_cell(cell, val, top)
    return cell, hold, val


def top_matrix(cell: np.ndarray, val: np.ndarray, N: int, top: int) -> np.ndarray:
    out = np.zeros((N, top))
    order = np.lexsort((-val, cell))
    c, v = cell[order], val[order]
    if len(c):
        start = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
        rank = np.arange(len(c)) - np.repeat(start, np.diff(np.r_[start, len(c)]))
        keep = rank < top
        out[c[keep], rank[keep]] = v[keep]
    return out
