"""Sums in the query service's table mode (issue 30 section 3; DESIGN.md section 7): a magnitude
table whose every cell is perturbed by cellKey's flex function
(:func:`sdckit.tabular.cell_key_sums`; Giessing and Tent 2019), answered from the finest cells.

:class:`SumCells` keeps, per finest cell of a table served as tables (every combination of the
codes of all its declared dimensions), what the flex function needs of any union of finest cells:

* the **exact** sum of the values, as signed integer limbs of :data:`~sdckit.query.limbs.LIMB` bits (every value is
  an integer multiple of the data's smallest power of two, so the sum of any set of records is an
  exact integer: the same whatever the order or grouping in which the cells are added);
* the sum mod ``10**digits`` of the record keys of the records with a non-zero value (cellKey's
  ``use_zero_rkeys = FALSE``; all records with ``use_zero_rkeys``);
* the ``top_k`` largest contributions (by ``|x|``, then record order: the order
  ``cell_key_sums`` takes them in) with their record positions, or the largest and smallest value
  (``type = "range"``).

A requested cell merges its finest cells (:meth:`SumCells.reduce`) and every cell of the table
is perturbed at once by :func:`sdckit.tabular.cellkey_flex.perturb_cells`, bit for bit
:func:`sdckit.tabular.cellkey_sums.perturb_cell`, the function ``cell_key_sums`` runs per cell.
Each of these is a function of the cell's set of records only, so the same cell gets the same
perturbed sum in every table and under every where filter, and equals ``cell_key_sums``' ``sum_pert``
on the same records, keys and parameters (up to the last bit of a sum that ``cell_key_sums`` adds
in floating point).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sdckit.core.errors import DataError
from sdckit.query.limbs import exact_limbs, limbs_to_float
from sdckit.tabular.cellkey import leaf_sums
from sdckit.tabular.cellkey_flex import FlexLookup, perturb_cells, scrambled_key_arrays
from sdckit.tabular.cellkey_sums import CellKeySumParams, NumericLookup

_EMPTY = np.iinfo(np.int64).max  # record position of an empty top-k slot


def _part(a: np.ndarray, axis: int, group: np.ndarray) -> np.ndarray:
    """The positions ``group`` (sorted, distinct) of ``a`` over ``axis``: ``a`` itself when they
    are all of them (no copy)."""
    return a if len(group) == a.shape[axis] else a.take(group, axis=axis)


def _sum(a: np.ndarray, axis: int) -> np.ndarray:
    return a.sum(axis=axis) if a.shape[axis] > 1 else a.squeeze(axis)


def _top(ranks: np.ndarray, axis: int, k: int) -> np.ndarray:
    """The ``k`` best ranks (the largest contributions) over ``axis``; the ranks run along the
    last axis."""
    if ranks.shape[axis] == 1:  # one cell: its own, already in order
        return ranks.squeeze(axis)
    r = np.moveaxis(ranks, axis, -2)
    return np.sort(r.reshape(*r.shape[:-2], -1), axis=-1)[..., :k]


@dataclass(frozen=True)
class SumCells:
    """What the flex function needs of every finest cell, for one summed column.

    Attributes
    ----------
    column : str
        The summed column.
    params : CellKeySumParams
        The flex function's parameters and numeric p-table.
    limbs : numpy.ndarray
        Finest cells x limbs: the exact sums (:func:`exact_limbs`); ``exponent`` their scale.
    keys : numpy.ndarray
        Per finest cell, the key sum (integers mod ``10**digits``) of the records counted in the
        cell key (with a non-zero value, unless ``use_zero_rkeys``).
    top : numpy.ndarray
        Finest cells x ``top_k`` (``type = "top_contr"``): the ranks of the largest contributions
        (:data:`_EMPTY` for none), a record's rank its place in the order of ``|x|`` descending,
        then record position (``cell_key_sums``' order), so the largest contributions of any
        union of cells are its smallest ranks; ``type = "range"``: finest cells x 2, the largest
        and the smallest value (-inf and inf in an empty cell).
    by_rank : numpy.ndarray
        The values in rank order (``type = "top_contr"``).
    supp_freq : int or None
        Cells of at most this many records are sensitive (``cell_key_sums``' ``supp_freq``).
    lookups : dict
        The p-tables prepared for :func:`~sdckit.tabular.cellkey_flex.perturb_cells`, by key
        decimals; shared by the cells reduced from these.
    """

    column: str
    params: CellKeySumParams
    lookup: NumericLookup
    limbs: np.ndarray
    exponent: int
    keys: np.ndarray
    top: np.ndarray
    by_rank: np.ndarray
    supp_freq: int | None = None
    lookups: dict[int, FlexLookup] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, column: str, x: np.ndarray, flat: np.ndarray, shape: tuple[int, ...], keys: np.ndarray,
              all_keys: np.ndarray, params: CellKeySumParams, digits: int,
              supp_freq: int | None = None) -> SumCells:
        """The cells of values ``x`` of records in finest cells ``flat`` (C order over ``shape``),
        with record ``keys`` in [0, 1); ``all_keys``: the finest cells' key sums of every record
        (the count cube's, used with ``use_zero_rkeys``)."""
        x = np.asarray(x, dtype=float)
        if not np.isfinite(x).all():
            raise DataError(f"Column {column!r} has a missing or non-numeric value at row "
                            f"{int(np.flatnonzero(~np.isfinite(x))[0])}: a summed column needs every value "
                            "(code 0 for none).")
        size = int(np.prod(shape, dtype=np.int64))
        limbs, exponent = exact_limbs(x, flat, size)
        if params.use_zero_rkeys:
            ksum = all_keys.reshape(-1)
        else:
            ksum = leaf_sums(flat, np.where(x != 0, keys, 0.0), size, digits)[1]
        k = params.top_k
        top = np.zeros((size, 0))
        by_rank = np.zeros(0)
        if params.type == "top_contr":
            order = np.lexsort((np.arange(len(x)), -np.abs(x)))
            by_rank = x[order]
            rank = np.empty(len(x), dtype=np.int64)
            rank[order] = np.arange(len(x))
            by_leaf = np.lexsort((rank, flat))
            leaf = flat[by_leaf]
            place = np.arange(len(leaf)) - np.searchsorted(leaf, leaf, side="left")
            keep = place < k
            top = np.full((size, k), _EMPTY, dtype=np.int64)
            top[leaf[keep], place[keep]] = rank[by_leaf[keep]]
        elif params.type == "range":
            top = np.stack([np.full(size, -np.inf), np.full(size, np.inf)], axis=-1)
            np.maximum.at(top[:, 0], flat, x)
            np.minimum.at(top[:, 1], flat, x)
        return cls(column, params, NumericLookup(params.table), limbs.reshape(*shape, -1), exponent,
                   ksum.reshape(shape), top.reshape(*shape, -1), by_rank, supp_freq)

    def reduce(self, axis: int, groups: Sequence[np.ndarray], modulus: int) -> SumCells:
        """The cells over ``axis`` merged into one per group of its positions (the axis then runs
        over the groups)."""
        def each(f: Callable[[np.ndarray], Any]) -> list[Any]:
            return [f(g) for g in groups]

        limbs = np.stack(each(lambda g: _sum(_part(self.limbs, axis, g), axis)), axis=axis)
        keys = np.stack(each(lambda g: _sum(_part(self.keys, axis, g), axis) % modulus), axis=axis)
        top = np.zeros((*limbs.shape[:-1], 0))  # mean and sum need no more than the sum
        if self.params.type == "top_contr":
            top = np.stack(each(lambda g: _top(_part(self.top, axis, g), axis, self.params.top_k)), axis=axis)
        elif self.params.type == "range":
            top = np.stack(each(lambda g: np.stack([self.top[..., 0].take(g, axis=axis).max(axis=axis),
                                                    self.top[..., 1].take(g, axis=axis).min(axis=axis)], axis=-1)),
                           axis=axis)
        return replace(self, limbs=limbs, keys=keys, top=top)

    def squeeze(self, axis: int) -> SumCells:
        """Without ``axis`` (of length 1)."""
        return replace(self, limbs=self.limbs.squeeze(axis), keys=self.keys.squeeze(axis), top=self.top.squeeze(axis))

    def transpose(self, order: Sequence[int]) -> SumCells:
        """The cell axes in ``order``."""
        extra = [*order, len(order)]
        return replace(self, limbs=self.limbs.transpose(extra), keys=self.keys.transpose(order),
                       top=self.top.transpose(extra))

    def perturbed(self, n: np.ndarray, digits: int) -> np.ndarray:
        """The published sums of the (reduced) cells, flattened in C order, whose record counts
        are ``n`` (same shape as the cells): each cell's exact sum plus cellKey's flex-function
        noise, rounded with ``round_to`` (:func:`~sdckit.tabular.cellkey_sums.perturb_cell`'s
        published value, the one ``cell_key_sums`` publishes)."""
        p = self.params
        n = np.asarray(n).ravel()
        ws = limbs_to_float(self.limbs.reshape(-1, self.limbs.shape[-1]), self.exponent)
        keys = self.keys.ravel()
        if p.type == "top_contr":
            ranks = self.top.reshape(-1, p.top_k)
            comps = np.where(ranks == _EMPTY, np.nan, self.by_rank[np.minimum(ranks, len(self.by_rank) - 1)])
        elif p.type == "range":
            t = self.top.reshape(-1, 2)
            comps = np.where(np.isfinite(t[:, :1]), t[:, :1] - t[:, 1:], 0.0)
        elif p.type == "mean":
            comps = np.divide(ws, n, out=np.zeros(len(ws)), where=n != 0)[:, None]
        else:
            comps = ws[:, None]
        kind = np.zeros(len(n), dtype=np.int64)  # KINDS: "all", or "even" (1) and "odd" (2)
        if p.even_odd:
            kind = np.where(n % 2 == 0, 1, 2)
        sensitive = n <= self.supp_freq if self.supp_freq is not None else np.zeros(len(n), dtype=bool)
        num, dec = scrambled_key_arrays(keys, digits, p.top_k, p.same_key)
        return perturb_cells(ws, comps, num, dec, kind, sensitive, p, self.flex_lookup(digits))

    def flex_lookup(self, digits: int) -> FlexLookup:
        """The p-tables prepared for keys of ``digits`` decimals (built once)."""
        if self.lookups.get(digits) is None:
            self.lookups[digits] = FlexLookup(self.lookup, digits)
        return self.lookups[digits]
