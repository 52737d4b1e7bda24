"""The cell key method (CKM) for frequency tables (issue 30 section 2; DESIGN.md section 6.k).

Every record carries a *record key*, uniform in [0, 1) with ``digits`` decimals, drawn once from
the release's secret seed; a cell's *cell key* is the sum of its records' keys mod 1, and its
perturbation ``v`` is looked up in the p-table (:func:`sdckit.tabular.ptable`): in the row of the
cell's count ``n`` (the last row for every larger count), the first interval whose upper bound
``p_int_ub`` is above the cell key — cellKey's ``lookup_freq`` (sdcTools/cellKey, commit
80bb032, ``R/cellkey_pkg.R``): ``which.max(ckey < ub)``. Empty cells are not perturbed. So the
same set of records gets the same perturbation in every table and every query, and differencing
two tables gives noise, not a person (Thompson, Broadfoot and Elazar 2013, "Methodology for the
automatic confidentialisation of statistical outputs from remote servers at the Australian Bureau
of Statistics", UNECE SDC work session; Giessing and Tent 2019, UNECE SDC work session).

Cell keys are computed exactly: the keys are integers over ``10**digits``, summed as integers
(cellKey sums doubles, which can differ from the exact sum in the last bit of a key that falls
exactly on an interval bound). Margins sum the finest cells' integer key sums and counts, so a
margin's cell key is the sum of its children's mod 1 and the records are grouped once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Interval, IsNone, check_param, validated
from sdckit.core.random import RandomState, as_generator
from sdckit.core.result import Result, plain
from sdckit.tabular.hierarchy import TOTAL_RULE, DimensionHierarchy, as_dimension_hierarchy
from sdckit.tabular.ptable import PTABLE_DIGITS, check_ptable
from sdckit.tabular.table import leaf_positions

#: Largest number of cells of a cell-key table (every combination of codes and margins).
MAX_CELLS = 50_000_000
#: Records per block when the keys are summed.
CHUNK = 1 << 20
_SPLIT = 20  # keys < 10**12 < 2**40 are summed as two 20-bit halves, each exact in float64


#: The rule of ``digits``, the decimals of the record keys (cellKey's and tau-ARGUS's default 8).
DIGITS_RULE = Interval(int, 5, 12)
#: The rule of ``total``, the code of a flat dimension's grand total.


@validated(n=Interval(int, 0, None), digits=DIGITS_RULE)
def record_keys(n: int, seed: RandomState, digits: int = 8) -> np.ndarray:
    """``n`` record keys, uniform on {0, 1/10**digits, ..., 1 - 1/10**digits}.

    Drawn from the cryptographic generator of ``seed`` (:func:`sdckit.core.random.as_generator`;
    a seed under 128 bits warns :class:`~sdckit.core.errors.SecurityWarning`: whoever finds it
    recomputes the keys and undoes the perturbation). The same seed gives the same keys, so the
    keys need not be stored: they can be recomputed from the seed for the same record order.
    cellKey's ``ck_generate_rkeys`` rounds ``runif`` to ``nr_digits``; here the integer numerator
    is drawn, so every key has exactly ``digits`` decimals.
    """
    digits = int(digits)
    rng = as_generator(seed)
    return rng.integers(0, 10 ** digits, size=int(n), dtype=np.int64) / 10.0 ** digits


def key_integers(keys: Any, digits: int) -> np.ndarray:
    """The record keys (numbers in [0, 1) with at most ``digits`` decimals) as integers over
    ``10**digits``, checked (:class:`~sdckit.core.errors.DataError` naming the fix)."""
    try:
        k = np.asarray(keys, dtype=float)
    except (TypeError, ValueError):
        raise DataError("The record keys must be numbers in [0, 1).") from None
    if k.size and (not np.isfinite(k).all() or k.min() < 0 or k.max() > 1):
        raise DataError("The record keys must be numbers in [0, 1] (cellKey's check), with no missing value.")
    scaled = k * 10.0 ** digits
    ints = np.rint(scaled)
    if k.size and np.abs(scaled - ints).max() > 1e-3:  # a double holds ~16 digits: 12 decimals are exact
        raise DataError(f"The record keys have more than {digits} decimals: pass digits= with their number of "
                        "decimals (at most 12), or round them.")
    return ints.astype(np.int64) % 10 ** digits


def _sum_mod(index: np.ndarray, keys: np.ndarray, size: int, modulus: int) -> np.ndarray:
    """Per-cell sums of integer keys (< 2**40) mod ``modulus``, exact (two 20-bit halves)."""
    low = np.bincount(index, weights=keys & ((1 << _SPLIT) - 1), minlength=size).astype(np.int64)
    high = np.bincount(index, weights=keys >> _SPLIT, minlength=size).astype(np.int64)
    return ((high % modulus) * (1 << _SPLIT) + low) % modulus


def roll_up(a: np.ndarray, rollups: list[np.ndarray], modulus: int | None = None) -> np.ndarray:
    """Map each axis of the leaf array ``a`` to every code of its hierarchy: ``rollups[axis]`` is
    the 0/1 matrix (codes x observed leaves) of "code is the leaf or one of its ancestors"."""
    for axis, up in enumerate(rollups):
        a = np.moveaxis(np.tensordot(up, a, axes=([1], [axis])), 0, axis)
        if modulus is not None:
            a %= modulus
    return a


def rollup_matrix(h: DimensionHierarchy, leaves: np.ndarray) -> np.ndarray:
    """Codes x leaves: 1 where the code is the leaf (position in ``h``) or one of its ancestors."""
    up = np.zeros((len(h), len(leaves)), dtype=np.int64)
    for col, pos in enumerate(leaves):
        while pos >= 0:
            up[pos, col] = 1
            pos = h.parents[pos]
    return up


def cell_grid(frame: pd.DataFrame, dimensions: Sequence[str], total: str = "Total",
              hierarchies: Mapping[str, Any] | None = None
              ) -> tuple[np.ndarray, list[DimensionHierarchy], list[np.ndarray], list[int]]:
    """The cells of a table over ``dimensions`` (as :func:`cell_key_counts` describes them):
    each record's leaf cell (C order over the observed codes of each dimension), the dimensions'
    hierarchies, their roll-up matrices (codes x observed leaves, for :func:`roll_up`) and the
    leaf shape. Refuses missing codes, a ``total`` that is a code, and over :data:`MAX_CELLS` cells."""
    dims = list(dimensions)
    hierarchies = dict(hierarchies or {})
    if not dims or len(set(dims)) != len(dims):
        raise ParameterError("'dimensions' must name one or more distinct columns.")
    missing = [c for c in dims if c not in frame.columns]
    if missing:
        raise DataError(f"The records lack the column(s) {missing}.")
    unknown = sorted(set(hierarchies) - set(dims))
    if unknown:
        raise ParameterError(f"'hierarchies' names {unknown}, which are not among the dimensions {dims}.")
    flat = np.zeros(len(frame), dtype=np.int64)
    trees, rollups, shape = [], [], []
    for d in dims:
        col = frame[d]
        if col.isna().any():
            raise DataError(f"Column {d!r} has missing codes; code them (e.g. 'unknown') before tabulating.")
        idx, uniques = pd.factorize(col, sort=True)
        names = [str(u).strip() for u in uniques]
        if d not in hierarchies and total in names:
            raise ParameterError(f"{total!r} is a code of {d!r} and the code of its total: pass another total=.")
        h = as_dimension_hierarchy(hierarchies.get(d), name=d, codes=names, total=total)
        rollups.append(rollup_matrix(h, leaf_positions(d, names, h)))
        trees.append(h)
        flat *= len(names)
        flat += idx
        shape.append(len(names))
    size = int(np.prod([len(h) for h in trees], dtype=float))
    if size > MAX_CELLS:
        raise ParameterError(f"The table has {size:,} cells (over {MAX_CELLS:,}): use fewer dimensions or codes.")
    return flat, trees, rollups, shape


class Lookup:
    """A p-table prepared for repeated lookups (the query service's table mode answers many
    tables from one p-table): :meth:`__call__` is :func:`lookup` without re-checking the table."""

    def __init__(self, ptable: pd.DataFrame, digits: int) -> None:
        t = check_ptable(ptable)
        check_param("Lookup", "digits", digits, DIGITS_RULE)
        self.digits = int(digits)
        self._scale = max(self.digits, PTABLE_DIGITS)
        ub = np.rint(t["p_int_ub"].to_numpy() * 10.0 ** self._scale).astype(np.int64)
        i, v = t["i"].to_numpy(), t["v"].to_numpy()
        self.top = int(i.max())
        self._rows = [(ub[i == k], v[i == k]) for k in range(self.top + 1)]

    def __call__(self, n: np.ndarray, key_int: np.ndarray) -> np.ndarray:
        """The perturbations of cells of counts ``n`` and integer cell keys ``key_int``."""
        ck = np.asarray(key_int, dtype=np.int64) * 10 ** (self._scale - self.digits)
        row = np.minimum(n, self.top)
        pert = np.zeros(len(n), dtype=np.int64)
        for i in range(1, self.top + 1):
            sel = np.flatnonzero(row == i)
            if sel.size == 0:
                continue
            ub, v = self._rows[i]
            at = np.searchsorted(ub, ck[sel], side="right")
            pert[sel] = v[np.minimum(at, len(ub) - 1)]
        return pert


def lookup(ptable: pd.DataFrame, n: np.ndarray, key_int: np.ndarray, digits: int) -> np.ndarray:
    """The perturbation of cells with counts ``n`` and integer cell keys ``key_int`` (over
    ``10**digits``): cellKey's rule, first ``v`` of row ``min(n, max i)`` with ``key < p_int_ub``;
    0 for empty cells."""
    return Lookup(ptable, digits)(n, key_int)


def leaf_sums(index: np.ndarray, keys: Any, size: int, digits: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell ``0 .. size-1`` (``index`` gives each record's cell): the count of records and the
    exact sum of their keys' integers over ``10**digits`` (:func:`key_integers`) mod ``10**digits``,
    in blocks of :data:`CHUNK` records (bounded working memory)."""
    modulus = 10 ** digits
    counts = np.zeros(size, dtype=np.int64)
    sums = np.zeros(size, dtype=np.int64)
    for start in range(0, len(index), CHUNK):
        part = index[start:start + CHUNK]
        counts += np.bincount(part, minlength=size)
        sums = (sums + _sum_mod(part, key_integers(keys[start:start + CHUNK], digits), size, modulus)) % modulus
    return counts, sums


@validated(total=TOTAL_RULE, digits=DIGITS_RULE)
def cell_key_counts(frame: pd.DataFrame, dimensions: Sequence[str], record_key: str, ptable: pd.DataFrame,
                    total: str = "Total", digits: int = 8,
                    hierarchies: Mapping[str, Any] | None = None, weight: str | None = None) -> pd.DataFrame:
    """The frequency table over ``dimensions``, perturbed by the cell key method.

    Parameters
    ----------
    frame
        The records.
    dimensions
        Columns spanning the table.
    record_key
        Column of record keys in [0, 1) with at most ``digits`` decimals (:func:`record_keys`).
    ptable
        A count p-table (:func:`sdckit.tabular.ptable`, :func:`sdckit.tabular.read_ptable`).
    total
        Code of the grand total of a dimension without a hierarchy; must not be one of its codes.
    digits
        Decimals of the record keys (cellKey's and tau-ARGUS's default 8).
    hierarchies
        ``{dimension: hierarchy}`` as :meth:`Table.from_microdata` takes them (a
        :class:`~sdckit.tabular.DimensionHierarchy`, a ``{child: parent}`` mapping or an ``.hrc`` path);
        records carry leaf codes. A dimension without one is flat: its codes, sorted, under
        ``total``.
    weight
        Column of sampling weights: adds ``weighted`` (the weighted count) and ``weighted_pert``
        (``n_pert`` times the cell's mean weight, cellKey's ``pwc``; 0 for an empty cell).

    Returns
    -------
    pandas.DataFrame
        One row per cell — every combination of the dimensions' codes, subtotals and totals, empty
        cells included, each dimension root first then depth-first (C order, as ``Table.cells``) —
        with the dimensions' codes and ``n`` (original count), ``cell_key`` (sum of the records'
        keys mod 1), ``pert`` and ``n_pert = n + pert``. Only the codes and ``n_pert`` are for
        publication: ``n``, ``cell_key`` and ``pert`` are confidential (the cell keys, with the
        p-table, tell the perturbation).
    """
    digits = int(digits)
    dims = list(dimensions)
    missing = [c for c in [record_key, *([weight] if weight else [])] if c not in frame.columns]
    if missing:
        raise DataError(f"The records lack the column(s) {missing}.")
    modulus = 10 ** digits
    flat, trees, rollups, shape = cell_grid(frame, dims, total, hierarchies)
    leaves = int(np.prod(shape, dtype=float))
    raw = frame[record_key].to_numpy()
    if weight is not None:
        w = pd.to_numeric(frame[weight], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(w).all():
            raise DataError(f"The weight column {weight!r} has a missing or non-numeric entry at row "
                            f"{int(np.flatnonzero(~np.isfinite(w))[0])}.")
        wsum = np.bincount(flat, weights=w, minlength=leaves)
    counts, sums = leaf_sums(flat, raw, leaves, digits)  # bounded working memory beyond the codes
    n = roll_up(counts.reshape(shape), rollups).ravel()
    ck = roll_up(sums.reshape(shape), rollups, modulus).ravel()
    pert = lookup(ptable, n, ck, digits)
    grid = pd.MultiIndex.from_product([list(h.codes) for h in trees], names=dims).to_frame(index=False)
    out = grid.assign(n=n, cell_key=ck / float(modulus), pert=pert, n_pert=n + pert)
    if weight is not None:
        weighted = roll_up(wsum.reshape(shape), [u.astype(float) for u in rollups]).ravel()
        out["weighted"] = weighted
        out["weighted_pert"] = np.divide((n + pert) * weighted, n, out=np.zeros(len(n)), where=n > 0)
    out.attrs["parents"] = [tuple(h.parents) for h in trees]
    return out


@dataclass(frozen=True)
class CellKeyMeasures(Result):
    """What a cell-key perturbation changed, and the disclosure it leaves (see :func:`cell_key_measures`).

    ``to_dict()`` has every field, the disclosure table as a list of rows (NaN as None)."""

    cells: int
    nonempty: int
    changed: float
    mean_abs: float
    mean_rel: float
    max_abs: int
    false_zero: int
    additivity: dict[str, float]
    disclosure: pd.DataFrame = field(repr=False, metadata={"dict": False})

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the disclosure table as a list of rows, without an index), e.g. for a manifest."""
        return plain({**super().to_dict(), "disclosure": self.disclosure.to_dict("records")})

    def summary(self) -> list[tuple[str, str]]:
        """What the perturbation changed, as rows of text."""
        return [("cells", f"{self.cells:,}"), ("non-empty cells", f"{self.nonempty:,}"),
                ("non-empty cells changed", f"{self.changed:.1%}"),
                ("mean absolute change", f"{self.mean_abs:.3g}"),
                ("mean relative change", f"{self.mean_rel:.3%}"),
                ("largest absolute change", f"{self.max_abs:,}"),
                ("non-empty cells published as 0", f"{self.false_zero:,}")]


def transition_matrix(ptable: pd.DataFrame, counts: np.ndarray, j_max: int) -> np.ndarray:
    """P(perturbed = j | original = i) for the original counts ``counts`` (rows) and ``j = 0 ..
    j_max`` (columns); counts beyond the p-table's last ``i`` shift its last row."""
    t = check_ptable(ptable)
    top = int(t["i"].max())
    m = np.zeros((len(counts), j_max + 1))
    for r, i in enumerate(np.asarray(counts, dtype=np.int64)):
        row = t[t["i"] == min(i, top)]
        j = i + row["v"].to_numpy()
        keep = j <= j_max
        np.add.at(m[r], j[keep], row["p"].to_numpy()[keep])
    return m


@validated(small=[IsNone(), Interval(int, 1, None)])
def cell_key_measures(cells: pd.DataFrame, ptable: pd.DataFrame, small: int | None = None) -> CellKeyMeasures:
    """Utility lost and disclosure left by a cell-key perturbation (:func:`cell_key_counts`' output).

    * ``changed``: share of non-empty cells whose count changed; ``mean_abs`` / ``mean_rel``: mean
      ``|pert|`` and ``|pert| / n`` over non-empty cells (cellKey's ``d1``, ``d2``); ``false_zero``:
      non-empty cells published as 0.
    * ``additivity``: per dimension, the mean ``|parent - sum of its children|`` of the perturbed
      counts over that dimension's equations (0 before perturbation).
    * ``disclosure``: for each original count ``i = 1 .. small`` (default ``js + 2``, ``js`` the
      p-table's blocked counts), the posterior ``P(i | j)`` of the original count given the
      published one, with the table's own distribution of original counts (empty cells included)
      as the intruder's prior and the p-table as the likelihood; columns ``i``, ``cells``,
      ``inferred`` (share of those cells whose posterior exceeds 0.5), ``expected`` (the same
      share expected over the p-table's draws) and ``mean_posterior``.
    """
    n = cells["n"].to_numpy(dtype=np.int64)
    pert = cells["pert"].to_numpy(dtype=np.int64)
    nz = n > 0
    parents = cells.attrs.get("parents")
    shape = tuple(len(p) for p in parents) if parents else None
    additivity: dict[str, float] = {}
    if shape is not None and int(np.prod(shape)) == len(cells):
        published = cells["n_pert"].to_numpy(dtype=np.int64).reshape(shape)
        for axis, (d, up) in enumerate(zip(cells.columns[:len(shape)], parents)):
            up = np.asarray(up)
            gaps = []
            for code in np.unique(up[up >= 0]):
                children = np.take(published, np.flatnonzero(up == code), axis=axis).sum(axis=axis)
                gaps.append(np.abs(np.take(published, code, axis=axis) - children).ravel())
            additivity[str(d)] = float(np.concatenate(gaps).mean()) if gaps else 0.0
    t = check_ptable(ptable)
    if small is None:
        produced = set((t["i"] + t["v"]).tolist())
        js = next((k for k in range(1, int(t["i"].max()) + 1) if k in produced), 1) - 1
        small = js + 2
    # only published counts j <= small + D can come from a small count, and only original counts
    # i <= small + 2 D can be published as such a j: the posterior needs no other row or column
    reach = int(t["v"].abs().max())
    j_max = small + reach
    values, prior = np.unique(n[n <= j_max + reach], return_counts=True)
    m = transition_matrix(t, values, j_max)
    joint = prior[:, None] * m
    post = np.divide(joint, joint.sum(axis=0, keepdims=True), out=np.zeros_like(joint), where=joint > 0)
    rows = []
    n_pub = cells["n_pert"].to_numpy(dtype=np.int64)
    for i in range(1, small + 1):
        hit = np.flatnonzero(values == i)
        sel = n == i
        if hit.size == 0:
            rows.append({"i": i, "cells": 0, "inferred": float("nan"), "expected": float("nan"),
                         "mean_posterior": float("nan")})
            continue
        r = int(hit[0])
        p_obs = post[r, n_pub[sel]]
        rows.append({"i": i, "cells": int(sel.sum()), "inferred": float((p_obs > 0.5).mean()),
                     "expected": float(m[r] @ (post[r] > 0.5)), "mean_posterior": float(p_obs.mean())})
    return CellKeyMeasures(
        cells=len(cells), nonempty=int(nz.sum()),
        changed=float((pert[nz] != 0).mean()) if nz.any() else 0.0,
        mean_abs=float(np.abs(pert[nz]).mean()) if nz.any() else 0.0,
        mean_rel=float((np.abs(pert[nz]) / n[nz]).mean()) if nz.any() else 0.0,
        max_abs=int(np.abs(pert).max(initial=0)), false_zero=int((nz & (n + pert == 0)).sum()),
        additivity=additivity, disclosure=pd.DataFrame(rows))
