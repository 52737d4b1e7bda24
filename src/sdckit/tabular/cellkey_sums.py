"""The cell key method for magnitude tables (sums): cellKey's flex function (issue 30 section 2).

A cell's sum is perturbed by noise scaled to the cell's largest contributions (or its mean,
range or sum) and looked up, like a count's, by the cell key in a p-table for magnitudes
(:func:`sdckit.tabular.ptable_numeric`). The method is the R package cellKey's
(sdcTools/cellKey, commit 80bb032, ``R/ck_params_nums.R`` and ``R/utils_numtabs.R``:
``ck_flexparams``, ``ck_params_nums``, ``.perturb_cell_flex``, ``.lookup_v_flex``,
``.scramble_ckeys``), read and re-implemented; per cell, for each of its ``top_k`` largest
(weighted) contributions ``x_j`` (in order of ``|x|``, then weight):

* the magnitude ``x_delta_j``: ``x_j * p_small`` when ``|x_j| < fp``, else ``x_j * m(|x_j|) *
  epsilon_j`` with the flex function ``m(x) = p_large (1 + (p_small x - p_large fp) /
  (p_large fp) * (2 fp / (fp + x))**q)``, which falls from ``p_small`` at ``fp`` towards
  ``p_large`` for large ``x``; with a p-table for small cells (``separation``), ``|x_j|`` below
  the separation point ``zs = sqrt(m1^2) / (sqrt(E) p_small)`` (``m1^2`` the variance of the
  small-cell table's last row, ``E = sum epsilon**2``) has ``x_delta = 1`` and the small-cell
  table; when ``|x_delta|`` exceeds the (running) cell value ``xo``, ``x_delta = xo``;
* the perturbation value ``v_j``: the p-table row ``a = |xo / x_delta|`` (capped at its largest
  ``i``; between two rows, the two values interpolated linearly), first interval whose upper
  bound exceeds the component's cell key; ``same_key = False`` rotates the key's decimals left
  by one for the first component and by one more for each next (``same_key = True``: from the
  second);
* ``x_hat_j = sign(xo) |x_delta_j| sign(v_j) (mu + |v_j|)`` (``mu = mu_c`` for sensitive cells),
  bounded so that the cell's sign never flips; ``xo += x_hat_j``.

cellKey's simple approach (``ck_simpleparams(p, epsilon)``: ``CellKeySumParams(p=...)``) takes
``x_delta_j = x_j p epsilon_j`` for every contribution instead of the flex function.

The cell's perturbed sum is its weighted sum plus ``sum x_hat_j`` (with ``round_to``, an office's
option cellKey does not have, rounded to the nearest multiple of it). A cell with sum 0 or cell key
0 is not perturbed. The cell key is the sum of the record keys mod 1 — of every record of the
cell (``use_zero_rkeys = True``) or only of those with a non-zero value — so the same cell gets
the same perturbation in every table. Checked against cellKey run in R on its vignette, its
test_numvars.R and sdcMicro's testdata (tests/test_tabular_cellkey_r_sums.py; the differences
kept on purpose are in DESIGN.md: each cell's own ``top_k`` contributions, rotations of the exact
cell key).

References: Giessing, S. and Tent, R. (2019), "Concepts for generalising tools implementing the
cell key method to the case of continuous variables", UNECE SDC work session, The Hague;
Eurostat SGA "Open source tools for perturbative confidentiality methods", deliverable D4.2.
"""

from __future__ import annotations

import math
from functools import cached_property
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import product
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import (Boolean, InstanceOf, Interval, IsNone, Options, ParamRule, Satisfies, check_param,
                                validate_params, validated)
from sdckit.core.result import plain
from sdckit.tabular.cellkey import DIGITS_RULE, TOTAL_RULE, cell_grid, leaf_sums, roll_up
from sdckit.tabular.ptable import NUMERIC_TYPES, PTABLE_DIGITS, check_numeric_ptable

TYPES = ("top_contr", "mean", "range", "sum")


def _epsilons(value: Any) -> list[float]:
    return [float(e) for e in np.atleast_1d(np.asarray(value, dtype=float))]


def _is_epsilon(value: Any) -> bool:
    """Descending numbers in [0, 1] starting with 1 (cellKey's ``ck_flexparams`` epsilon)."""
    eps = _epsilons(value)
    return bool(eps) and eps[0] == 1 and all(0 <= e <= 1 for e in eps) and not any(np.diff(eps) > 0)


def _as_ptab(ptab: Any) -> pd.DataFrame:
    """One frame of numeric p-tables with their ``type`` (a frame, or ``{type: frame}``)."""
    if isinstance(ptab, Mapping):
        bad = sorted(set(ptab) - set(NUMERIC_TYPES))
        if bad:
            raise ParameterError(f"'ptab' names {bad}; its keys must be among {list(NUMERIC_TYPES)}.")
        ptab = pd.concat([pd.DataFrame(t).assign(type=k) for k, t in ptab.items()], ignore_index=True)
    if not isinstance(ptab, pd.DataFrame):
        raise ParameterError("'ptab' must be a p-table from ptable_numeric (or {type: p-table}), "
                             "with columns i, j, p, v, p_int_lb, p_int_ub, type.")
    try:
        t = check_numeric_ptable(ptab)
    except DataError as exc:
        raise ParameterError(f"'ptab': {exc} (use ptable_numeric or read_ptable).") from None
    types = set(t["type"])
    if ("all" in types) == ("even" in types or "odd" in types) or ("even" in types) != ("odd" in types):
        raise ParameterError(f"'ptab' must hold a table of type 'all', or both 'even' and 'odd', and optionally "
                             f"'small_cells'; got types {sorted(types)}.")
    return t


@dataclass(frozen=True)
class CellKeySumParams:
    """Parameters of the flex function, as cellKey's ``ck_params_nums(type, top_k, ptab,
    mult_params = ck_flexparams(fp, p, epsilon, q), mu_c, same_key, use_zero_rkeys)`` names them.

    ``p_small`` and ``p_large`` are ``ck_flexparams``' ``p = c(p_small, p_large)``. Give ``p``
    instead of ``fp`` for cellKey's simple approach, ``mult_params = ck_simpleparams(p, epsilon)``:
    every contribution's noise is the share ``p`` of it (``p_small``, ``p_large`` and ``q`` are
    then unused). ``type``:
    ``"top_contr"`` (the ``top_k`` largest contributions), ``"mean"``, ``"range"`` or ``"sum"``
    of the cell (then ``top_k`` is 1). ``ptab``: a :func:`~sdckit.tabular.ptable_numeric` table,
    or ``{"all" | "even" and "odd", optionally "small_cells": table}``; ``separation`` (a
    small-cell table) and ``even_odd`` follow from it. Derived as cellKey: ``E = sum
    epsilon**2``, ``m_fixed_sq`` (the variance of the small-cell table's last row) and the
    separation point ``zs``. ``round_to`` (not cellKey's): the published sums are rounded to the
    nearest multiple of it (:meth:`published`); None publishes them unrounded, as cellKey.
    """

    ptab: Any
    fp: float | None = None
    p_small: float = 0.25
    p_large: float = 0.05
    q: float = 3.0
    epsilon: Sequence[float] = (1.0,)
    type: str = "top_contr"
    top_k: int | None = None
    mu_c: float = 0.0
    same_key: bool = True
    use_zero_rkeys: bool = False
    p: float | None = None
    round_to: float | None = None
    table: pd.DataFrame = field(init=False, repr=False)

    #: The parameter rules, checked on construction (:mod:`sdckit.core.params`); ``top_k`` is
    #: checked only with ``type="top_contr"`` (otherwise it is 1, as cellKey).
    constraints: ClassVar[dict[str, ParamRule]] = {
        "fp": [IsNone(), Interval(float, 0, None, closed="neither", finite=True)],
        "p": [IsNone(), Interval(float, 0, 1, closed="right")],
        "p_small": Interval(float, 0, 1), "p_large": Interval(float, 0, 1), "q": Interval(float, 1, None),
        "epsilon": Satisfies(_is_epsilon, "descending numbers in [0, 1] starting with 1"),
        "type": Options(TYPES), "mu_c": Interval(float, 0, None),
        "same_key": Boolean(), "use_zero_rkeys": Boolean(),
        "round_to": [IsNone(), Interval(float, 0, None, closed="neither", finite=True)]}
    #: The rule of ``top_k`` with ``type="top_contr"``: cellKey's 1 to 6 largest contributions.
    TOP_K_RULE: ClassVar[Interval] = Interval(int, 1, 6)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        validate_params(owner, {k: getattr(self, k) for k in self.constraints}, self.constraints)
        if (self.fp is None) == (self.p is None):
            raise ParameterError(f"{owner} needs either 'fp' (the flex function, cellKey's ck_flexparams) or 'p' "
                                 f"(cellKey's ck_simpleparams), not {'both' if self.p is not None else 'neither'}.")
        if self.p_large > self.p_small:
            raise ParameterError(f"The 'p_large' parameter of {owner} must be at most p_small={self.p_small} "
                                 f"(cellKey's p in descending order). Got {self.p_large!r} instead.")
        eps = _epsilons(self.epsilon)
        top_k = self.top_k
        if self.type == "top_contr":
            check_param(owner, "top_k", top_k, self.TOP_K_RULE)
        else:
            top_k = 1
        if len(eps) != top_k:
            raise ParameterError(f"'epsilon' has {len(eps)} values but top_k is {top_k}: give one per contribution.")
        table = _as_ptab(self.ptab)
        if "even" in set(table["type"]) and top_k > 1:
            raise ParameterError("Even/odd p-tables need top_k = 1 (as cellKey).")
        object.__setattr__(self, "top_k", int(top_k))
        object.__setattr__(self, "epsilon", tuple(eps))
        object.__setattr__(self, "table", table)

    @cached_property  # per cell in cell_key_sums' loop: computed once
    def separation(self) -> bool:
        """A p-table for small cells is given."""
        return "small_cells" in set(self.table["type"])

    @cached_property
    def even_odd(self) -> bool:
        """Separate p-tables for cells with an even and an odd number of contributors."""
        return "even" in set(self.table["type"])

    @property
    def simple(self) -> bool:
        """cellKey's simple approach (``ck_simpleparams``: ``p`` given) instead of the flex function."""
        return self.p is not None

    @cached_property
    def E(self) -> float:  # noqa: N802 - cellKey's name
        """``sum(epsilon**2)``."""
        return float(sum(e * e for e in self.epsilon))

    @cached_property
    def m_fixed_sq(self) -> float:
        """The variance of the small-cell p-table's last row (NaN without separation)."""
        if not self.separation:
            return float("nan")
        t = self.table[self.table["type"] == "small_cells"]
        last = t[t["i"] == t["i"].max()]
        return float(((last["i"] - last["j"]) ** 2 * last["p"]).sum())

    @cached_property
    def zs(self) -> float:
        """The separation point: contributions below it are perturbed like counts (0 without)."""
        p = self.p if self.simple else self.p_small
        return 0.0 if not self.separation else math.sqrt(self.m_fixed_sq) / (math.sqrt(self.E) * p)

    def published(self, value: float) -> float:
        """What is published of a perturbed sum: ``value``, or with ``round_to`` its nearest
        multiple of ``round_to`` (ties to the even multiple; shown to ``round_to``'s decimals, so
        ``round_to = 0.1`` gives 0.3, not 0.30000000000000004). A function of the perturbed sum
        only, so the same cell is still the same number in every table."""
        if self.round_to is None:
            return value
        step = float(self.round_to)
        decimals = max(0, -int(Decimal(repr(step)).as_tuple().exponent))
        return round(round(value / step) * step, decimals) + 0.0  # + 0.0: never -0.0

    def to_dict(self) -> dict[str, Any]:
        """The parameters (not the p-table's rows), e.g. for a manifest."""
        return plain({"type": self.type, "top_k": self.top_k, "fp": self.fp, "p": self.p, "p_small": self.p_small,
                "p_large": self.p_large, "q": self.q, "epsilon": list(self.epsilon), "mu_c": self.mu_c,
                "same_key": self.same_key, "use_zero_rkeys": self.use_zero_rkeys, "round_to": self.round_to,
                "separation": self.separation, "even_odd": self.even_odd, "zs": self.zs, "E": self.E})


def flex_m(x: float, p_small: float, p_large: float, fp: float, q: float) -> float:
    """The flex function (cellKey's ``.para_m``): ``p_small`` at ``x = fp``, falling towards
    ``p_large`` as ``x`` grows."""
    f1 = (p_small * x - p_large * fp) / (p_large * fp)
    return p_large * (1 + f1 * ((2 * fp) / (fp + x)) ** q)


def scrambled_keys(key: int, digits: int, top_k: int, same_key: bool) -> list[tuple[int, int]]:
    """The cell keys of the ``top_k`` components as (numerator, decimals): cellKey's
    ``.scramble_ckeys`` on the key's decimals as R prints an exact key (trailing zeros dropped):
    without ``same_key`` the first component's key moves the first decimal to the end (a lone
    decimal gets a 0 in front), every next one moves one more."""
    d = f"{key:0{digits}d}".rstrip("0") if key else ""
    keys = [d] if same_key else [(d[1:] or "0") + d[:1] if d else "0"]
    for _ in range(1, top_k):
        prev = keys[-1]
        keys.append(prev[1:] + prev[:1])
    return [(int(k) if k else 0, len(k)) for k in keys]


class NumericLookup:
    """Numeric p-tables prepared for cellKey's ``.lookup_v_flex``."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.rows: dict[str, dict[float, tuple[list[int], list[float]]]] = {}
        for kind, g in table.groupby("type", sort=False):
            rows = {}
            for i, r in g.groupby("i", sort=True):
                ub = np.rint(r["p_int_ub"].to_numpy(dtype=float) * 10.0 ** PTABLE_DIGITS).astype(np.int64)
                rows[float(i)] = ([int(u) for u in ub], [float(v) for v in r["v"]])
            self.rows[str(kind)] = rows

    def max_i(self, kind: str) -> float:
        return max(self.rows[kind])

    def _first(self, kind: str, i: float, key: tuple[int, int]) -> float:
        num, dec = key
        scale = max(dec, PTABLE_DIGITS)
        k = num * 10 ** (scale - dec)
        ub, v = self.rows[kind][i]
        for u, val in zip(ub, v):
            if k < u * 10 ** (scale - PTABLE_DIGITS):
                return val
        return v[-1]

    def __call__(self, kind: str, a: float, key: tuple[int, int]) -> float:
        """The perturbation value of row ``a`` (interpolated between rows) for the cell key."""
        if key[0] == 0:
            return 0.0
        poss = sorted(self.rows[kind])
        a = min(a, poss[-1])
        if a in self.rows[kind]:
            return self._first(kind, a, key)
        a0 = max(p for p in poss if p < a)
        a1 = min(p for p in poss if p > a)
        lam = (a - a0) / (a1 - a0)
        return (1 - lam) * self._first(kind, a0, key) + lam * self._first(kind, a1, key)


def perturb_cell(cv: float, x: Sequence[float], keys: list[tuple[int, int]], kind: str, sensitive: bool,
                 params: CellKeySumParams, look: NumericLookup) -> dict[str, Any]:
    """cellKey's ``.perturb_cell_flex`` (``.perturb_cell_simple`` when ``params.simple``) for one
    cell: the components' ``x_delta``, ``v`` and ``x_hat``, their sum ``pert`` and the published
    value ``cv + pert`` (:meth:`CellKeySumParams.published`: rounded with ``round_to``).

    The simple approach differs in two places: ``x_delta = x_j p epsilon_j`` for every
    contribution, and a component rescaled below the separation point gets no noise even when
    it is the first. A cell with sum 0 is not perturbed in either (cellKey's simple approach
    returns NA when its cell key is not 0)."""
    k = params.top_k
    out = {"x_delta": [float("nan")] * k, "v": [float("nan")] * k, "x_hat": [float("nan")] * k, "lookup": kind}
    if keys[0][0] == 0 or cv == 0:
        out.update(x_delta=[1.0] + [float("nan")] * (k - 1), x_hat=[0.0] + [float("nan")] * (k - 1),
                   v=[0.0] + [float("nan")] * (k - 1), pert=0.0, value=params.published(cv))
        return out
    p_sm, zs, mu = params.p if params.simple else params.p_small, params.zs, params.mu_c if sensitive else 0.0
    xo = cv
    for j, xj in enumerate(x):
        zero = False
        use = kind
        if abs(xj) < zs:
            x_delta, use = 1.0, "small_cells"
        elif params.simple:
            x_delta = xj * p_sm * params.epsilon[j]
        elif abs(xj) < params.fp:
            x_delta = xj * p_sm
        else:
            x_delta = xj * flex_m(abs(xj), p_sm, params.p_large, params.fp, params.q) * params.epsilon[j]
        if abs(xo) < abs(x_delta):
            x_delta = xo
            scale = p_sm * params.epsilon[j]
            if scale and abs(xo / scale) < zs:
                x_delta, use = 1.0, "small_cells"
                zero = params.simple or j > 0
        out["x_delta"][j] = x_delta
        out["lookup"] = use
        if zero:
            out["v"][j], out["x_hat"][j] = 0.0, 0.0
            continue
        a = abs(xo / x_delta) if x_delta else math.inf
        v = look(use, a, keys[j])
        sign_xo = 1.0 if xo >= 0 else -1.0
        sign_v = 1.0 if v >= 0 else -1.0
        x_hat = sign_xo * abs(x_delta) * sign_v * (mu + abs(v))
        if sign_v < 0:
            x_hat = min(x_hat, -xo) if sign_xo < 0 else max(x_hat, -xo)
        out["v"][j], out["x_hat"][j] = v, x_hat
        xo += x_hat
    out["pert"] = float(np.nansum(out["x_hat"]))
    out["value"] = params.published(cv + out["pert"])
    return out


def _roll_extreme(a: np.ndarray, rollups: list[np.ndarray], largest: bool) -> np.ndarray:
    """Max (or min) over each code's leaves, axis by axis; empty leaves hold -inf (+inf)."""
    for axis, up in enumerate(rollups):
        a = np.moveaxis(a, axis, 0)
        fill = -np.inf if largest else np.inf
        rows = [(a[up[c] == 1].max(axis=0) if largest else a[up[c] == 1].min(axis=0)) if up[c].any()
                else np.full(a.shape[1:], fill) for c in range(up.shape[0])]
        a = np.moveaxis(np.stack(rows), 0, axis)
    return a


@validated(params=InstanceOf(CellKeySumParams, "CellKeySumParams(ptab=..., fp=..., ...)"), total=TOTAL_RULE,
           digits=DIGITS_RULE, supp_freq=[IsNone(), Interval(int, 0, None)])
def cell_key_sums(frame: pd.DataFrame, dimensions: Sequence[str], record_key: str, value: str,
                  params: CellKeySumParams, total: str = "Total", digits: int = 8,
                  hierarchies: Mapping[str, Any] | None = None, weight: str | None = None,
                  supp_freq: int | None = None) -> pd.DataFrame:
    """The magnitude table of ``value`` over ``dimensions``, perturbed by cellKey's flex function.

    Parameters
    ----------
    frame, dimensions, record_key, total, digits, hierarchies
        As :func:`sdckit.tabular.cell_key_counts`.
    value
        The numeric column summed (missing values are refused: code them 0 if they contribute nothing).
    params
        :class:`CellKeySumParams`.
    weight
        Column of sampling weights: cells hold weighted sums and contributions ``value x weight``
        (cellKey's ``ws``); None: weight 1.
    supp_freq
        Cells with at most this many contributors (records) are sensitive: their noise gets
        ``params.mu_c`` more (cellKey's ``supp_freq(n, weighted = FALSE)``).

    Returns
    -------
    pandas.DataFrame
        One row per cell (margins included, the order of :func:`cell_key_counts`): the codes;
        ``n`` (records), ``sum`` (weighted sum), ``sum_pert`` (what is published: ``sum + pert``,
        rounded with ``params.round_to``), ``pert`` (the noise),
        ``cell_key``, ``sensitive``, ``lookup`` (the p-table of the last component); and for
        each component ``j = 1..top_k``: ``x_j`` (the magnitude scaled: the ``j``-th largest
        contribution, or the mean, range or sum), ``x_delta_j``, ``v_j`` (the looked-up,
        interpolated perturbation value) and ``x_hat_j`` (its noise). Only the codes and
        ``sum_pert`` are for publication.
    """
    digits = int(digits)
    missing = [c for c in [record_key, value, *([weight] if weight else [])] if c not in frame.columns]
    if missing:
        raise DataError(f"The records lack the column(s) {missing}.")
    dims = list(dimensions)
    flat, trees, rollups, shape = cell_grid(frame, dims, total, hierarchies)
    leaves = int(np.prod(shape, dtype=float))
    x = pd.to_numeric(frame[value], errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(x).all():
        raise DataError(f"The value column {value!r} has a missing or non-numeric entry at row "
                        f"{int(np.flatnonzero(~np.isfinite(x))[0])}: code it 0 if it contributes nothing.")
    w = np.ones(len(frame))
    if weight is not None:
        w = pd.to_numeric(frame[weight], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(w).all():
            raise DataError(f"The weight column {weight!r} has a missing or non-numeric entry at row "
                            f"{int(np.flatnonzero(~np.isfinite(w))[0])}.")
    raw = frame[record_key].to_numpy(dtype=float)
    keys = raw if params.use_zero_rkeys else np.where(x != 0, raw, 0.0)
    counts, sums = leaf_sums(flat, keys, leaves, digits)
    frollups = [u.astype(float) for u in rollups]
    n = roll_up(counts.reshape(shape), rollups).ravel()
    ck = roll_up(sums.reshape(shape), rollups, 10 ** digits).ravel()
    ws = roll_up(np.bincount(flat, weights=x * w, minlength=leaves).reshape(shape), frollups).ravel()
    wt = roll_up(np.bincount(flat, weights=w, minlength=leaves).reshape(shape), frollups).ravel()
    k = params.top_k
    sizes = [len(h) for h in trees]
    cells = int(np.prod(sizes))
    comps = np.full((cells, k), np.nan)
    if params.type == "top_contr":
        order = np.lexsort((np.arange(len(x)), -w, -np.abs(x), flat))
        leaf_sorted = flat[order]
        rank = np.arange(len(order)) - np.searchsorted(leaf_sorted, leaf_sorted, side="left")
        cand = order[rank < k]
        coords = np.unravel_index(flat[cand], shape)
        ups = [[np.flatnonzero(u[:, c]) for c in range(u.shape[1])] for u in rollups]
        strides = np.cumprod([1] + sizes[::-1])[:-1][::-1]
        cell_of, rec_of = [], []
        for r, rec in enumerate(cand):
            for combo in product(*(ups[d][coords[d][r]] for d in range(len(dims)))):
                cell_of.append(int(np.dot(combo, strides)))
                rec_of.append(rec)
        cell_of, rec_of = np.asarray(cell_of, dtype=np.int64), np.asarray(rec_of, dtype=np.int64)
        o = np.lexsort((rec_of, -w[rec_of], -np.abs(x[rec_of]), cell_of))
        c_sorted = cell_of[o]
        rk = np.arange(len(o)) - np.searchsorted(c_sorted, c_sorted, side="left")
        keep = rk < k
        comps[c_sorted[keep], rk[keep]] = (x * w)[rec_of[o][keep]]
    elif params.type == "mean":
        comps[:, 0] = np.divide(ws, wt, out=np.zeros(cells), where=wt != 0)
    elif params.type == "sum":
        comps[:, 0] = ws
    else:
        hi = np.full(leaves, -np.inf)
        lo = np.full(leaves, np.inf)
        np.maximum.at(hi, flat, x)
        np.minimum.at(lo, flat, x)
        hi = _roll_extreme(hi.reshape(shape), rollups, True).ravel()
        lo = _roll_extreme(lo.reshape(shape), rollups, False).ravel()
        comps[:, 0] = np.where(np.isfinite(hi), hi - lo, 0.0)
    look = NumericLookup(params.table)
    sensitive = n <= supp_freq if supp_freq is not None else np.zeros(cells, dtype=bool)
    res = {name: np.full((cells, k), np.nan) for name in ("x_delta", "v", "x_hat")}
    pert = np.zeros(cells)
    shown = np.zeros(cells)
    lookups = []
    for c in range(cells):
        kind = ("even" if n[c] % 2 == 0 else "odd") if params.even_odd else "all"
        xs = [v for v in comps[c] if not np.isnan(v)]
        r = perturb_cell(float(ws[c]), xs, scrambled_keys(int(ck[c]), digits, k, params.same_key), kind,
                         bool(sensitive[c]), params, look)
        for name in res:
            res[name][c] = r[name]
        pert[c], shown[c] = r["pert"], r["value"]
        lookups.append(r["lookup"])
    grid = pd.MultiIndex.from_product([list(h.codes) for h in trees], names=dims).to_frame(index=False)
    out = grid.assign(n=n, sum=ws, sum_pert=shown, pert=pert, cell_key=ck / float(10 ** digits),
                      sensitive=sensitive, lookup=lookups)
    for j in range(k):
        out[f"x_{j + 1}"] = comps[:, j]
        for name in ("x_delta", "v", "x_hat"):
            out[f"{name}_{j + 1}"] = res[name][:, j]
    out.attrs["parents"] = [tuple(h.parents) for h in trees]
    return out
