"""cellKey's flex function over many cells at once: :func:`perturb_cells`, the vectorised
:func:`sdckit.tabular.cellkey_sums.perturb_cell` (issue 30 section 3).

The query service's table mode perturbs every cell of a requested sums table; one Python call of
:func:`~sdckit.tabular.cellkey_sums.perturb_cell` per cell cost ~80 microseconds, most of a
table's CPU. Here each of the ``top_k`` components is one numpy step over all cells. The result
is the same float, bit for bit, as ``perturb_cell``'s published value: the same IEEE operations
in the same order (``+ - * /`` and ``abs`` are exact in numpy as in Python), Python's own ``**``
for the flex function's power (numpy's ``power`` may differ in the last bit), Python's ``min`` and
``max`` semantics for the bounds (the first argument on ties, so ``0.0`` vs ``-0.0`` stay as
``perturb_cell`` has them), and the components' noise added left to right from ``0.0``, as
``numpy.nansum`` adds a few values. ``perturb_cell`` stays the reference (checked against cellKey
run in R); tests/test_tabular_cellkey_flex.py checks the two are equal on random cells.

Reference: Giessing, S. and Tent, R. (2019), "Concepts for generalising tools implementing the
cell key method to the case of continuous variables", UNECE SDC work session, The Hague.
"""

from __future__ import annotations

import numpy as np

from sdckit.tabular.cellkey_sums import CellKeySumParams, NumericLookup
from sdckit.tabular.ptable import PTABLE_DIGITS

#: The p-table kinds by code (``kind`` in :func:`perturb_cells`).
KINDS = ("all", "even", "odd", "small_cells")
SMALL = KINDS.index("small_cells")


def scrambled_key_arrays(key: np.ndarray, digits: int, top_k: int,
                         same_key: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~sdckit.tabular.cellkey_sums.scrambled_keys` of many integer cell keys (``key``
    the key sums mod ``10**digits``): numerators and decimals, each cells x ``top_k``."""
    key = np.asarray(key, dtype=np.int64)
    length = np.full(key.shape, digits, dtype=np.int64)  # decimals once trailing zeros are dropped
    num = key.copy()
    for _ in range(digits):
        strip = (num != 0) & (num % 10 == 0)
        num = np.where(strip, num // 10, num)
        length -= strip
    length = np.where(key == 0, 0, length)
    shift = np.zeros(key.shape, dtype=np.int64)  # rotations of the first component's key
    if not same_key:  # a lone decimal gets a 0 in front ("5" -> "05"), longer keys rotate once
        shift = np.where(length >= 2, 1, 0)
        length = np.where(length == 1, 2, length)
    nums, decs = [], []
    for j in range(top_k):
        r = np.where(length > 0, (shift + j) % np.maximum(length, 1), 0)
        low = 10 ** (length - r)
        nums.append(np.where(length > 0, (num % low) * 10 ** r + num // low, 0))
        decs.append(np.where(key == 0, 1, length))
    return np.stack(nums, axis=-1), np.stack(decs, axis=-1)


class FlexLookup:
    """:class:`~sdckit.tabular.cellkey_sums.NumericLookup` for arrays of rows and keys."""

    def __init__(self, look: NumericLookup, digits: int) -> None:
        self.scale = max(digits, PTABLE_DIGITS, 2)  # every key's decimals (digits, or 2 for "05")
        self.rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for code, kind in enumerate(KINDS):
            if kind in look.rows:
                poss = sorted(look.rows[kind])
                width = max(len(look.rows[kind][i][0]) for i in poss)
                ub = np.full((len(poss), width), np.iinfo(np.int64).max, dtype=np.int64)
                v = np.zeros((len(poss), width))
                for r, i in enumerate(poss):
                    u, vals = look.rows[kind][i]
                    ub[r, :len(u)] = np.asarray(u, dtype=np.int64) * 10 ** (self.scale - PTABLE_DIGITS)
                    v[r, :len(vals)] = vals
                    v[r, len(vals):] = vals[-1]
                self.rows[code] = (np.asarray(poss, dtype=float), ub, v)

    def _first(self, code: int, row: np.ndarray, k: np.ndarray) -> np.ndarray:
        _, ub, v = self.rows[code]
        place = np.empty(len(k), dtype=np.int64)
        for r in np.unique(row).tolist():  # the first upper bound above the key (bounds ascending)
            at = row == r
            place[at] = np.searchsorted(ub[r], k[at], side="right")
        return v[row, np.minimum(place, ub.shape[1] - 1)]

    def __call__(self, kind: np.ndarray, a: np.ndarray, num: np.ndarray, dec: np.ndarray) -> np.ndarray:
        """The perturbation values of rows ``a`` (interpolated) for the keys ``num / 10**dec``
        of p-tables ``kind`` (codes of :data:`KINDS`); 0 for key 0."""
        out = np.zeros(len(a))
        k = num * 10 ** (self.scale - dec)
        for code in np.unique(kind).tolist():
            at = np.flatnonzero((kind == code) & (num != 0))
            if not at.size:
                continue
            poss = self.rows[code][0]
            top = poss[-1]
            x = np.where(top < a[at], top, a[at])  # Python's min(a, top)
            hi = np.minimum(np.searchsorted(poss, x, side="left"), len(poss) - 1)
            exact = poss[hi] == x
            lo = np.where(exact, hi, hi - 1)
            v1 = self._first(code, hi, k[at])
            v0 = self._first(code, lo, k[at])
            a0, a1 = poss[lo], poss[hi]
            lam = np.divide(x - a0, a1 - a0, out=np.zeros(len(at)), where=~exact)
            out[at] = np.where(exact, v1, (1 - lam) * v0 + lam * v1)
        return out


def perturb_cells(cv: np.ndarray, x: np.ndarray, num: np.ndarray, dec: np.ndarray, kind: np.ndarray,
                  sensitive: np.ndarray, params: CellKeySumParams, look: FlexLookup) -> np.ndarray:
    """The published values of :func:`~sdckit.tabular.cellkey_sums.perturb_cell` for many cells:
    sums ``cv``; components ``x`` (cells x ``top_k``, NaN after a cell's last); the components'
    scrambled keys ``num``, ``dec`` (:func:`scrambled_key_arrays`); ``kind`` the p-table of each
    cell (codes of :data:`KINDS`); ``sensitive`` cells get ``mu_c``."""
    cv = np.asarray(cv, dtype=float)
    x = np.take_along_axis(x, np.argsort(np.isnan(x), axis=1, kind="stable"), axis=1)  # as perturb_cell's list
    p = params
    p_sm, zs = p.p if p.simple else p.p_small, p.zs
    mu = np.where(sensitive, p.mu_c, 0.0)
    active = (num[:, 0] != 0) & (cv != 0)
    xo = cv.copy()
    pert = np.zeros(len(cv))
    for j in range(x.shape[1]):
        xj = x[:, j]
        run = active & ~np.isnan(xj)
        if not run.any():
            break
        xj = np.where(run, xj, 1.0)
        ax = np.abs(xj)
        use = kind.copy()
        if p.simple:
            x_delta = xj * p_sm * p.epsilon[j]
        else:
            base = ((2 * p.fp) / (p.fp + ax)).tolist()
            power = np.array([b ** p.q for b in base])  # Python's pow: numpy's may differ in the last bit
            f1 = (p.p_small * ax - p.p_large * p.fp) / (p.p_large * p.fp)
            m = p.p_large * (1 + f1 * power)
            x_delta = np.where(ax < p.fp, xj * p_sm, xj * m * p.epsilon[j])
        small = ax < zs
        x_delta, use = np.where(small, 1.0, x_delta), np.where(small, SMALL, use)
        over = np.abs(xo) < np.abs(x_delta)
        x_delta = np.where(over, xo, x_delta)
        zero = np.zeros(len(cv), dtype=bool)
        scale = p_sm * p.epsilon[j]
        if scale:
            small = over & (np.abs(xo / scale) < zs)
            x_delta, use = np.where(small, 1.0, x_delta), np.where(small, SMALL, use)
            zero = small & (p.simple or j > 0)
        nz = x_delta != 0
        a = np.abs(np.divide(xo, x_delta, out=np.ones(len(cv)), where=nz))
        a = np.where(nz, a, np.inf)
        v = look(use, a, num[:, j], dec[:, j])
        sign_xo = np.where(xo >= 0, 1.0, -1.0)
        sign_v = np.where(v >= 0, 1.0, -1.0)
        x_hat = sign_xo * np.abs(x_delta) * sign_v * (mu + np.abs(v))
        bound = -xo
        bounded = np.where(sign_xo < 0, np.where(bound < x_hat, bound, x_hat), np.where(bound > x_hat, bound, x_hat))
        x_hat = np.where(sign_v < 0, bounded, x_hat)
        x_hat = np.where(zero, 0.0, x_hat)
        step = run & ~zero
        xo = np.where(step, xo + x_hat, xo)
        pert = np.where(run, pert + x_hat, pert)
    value = np.where(active, cv + pert, cv)
    if p.round_to is not None:
        value = np.array([p.published(v) for v in value.tolist()])
    return value
