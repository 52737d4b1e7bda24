"""The vectorised flex function (issue 30 section 3): :func:`sdckit.tabular.cellkey_flex.perturb_cells`
and :func:`scrambled_key_arrays` against the reference, cellKey's transliteration
:func:`sdckit.tabular.cellkey_sums.perturb_cell` / ``scrambled_keys`` (itself checked against
cellKey run in R), one cell at a time, on random cells for every variant of the parameters; and
the query service's table cube (finest cells merged per request) against
:func:`sdckit.tabular.cell_key_sums` on random tables and filters: equal to the last bit (integer
values, so both exact sums are the same float).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

from sdckit.query.tables import CellKeyCube
from sdckit.tabular import cell_key_sums, ptable, ptable_numeric
from sdckit.tabular.cellkey_flex import KINDS, FlexLookup, perturb_cells, scrambled_key_arrays
from sdckit.tabular.cellkey_sums import CellKeySumParams, NumericLookup, perturb_cell, scrambled_keys


def _same(a: float, b: float) -> bool:
    """Equal to the last bit, sign of zero included."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@functools.cache
def _pt(kind: str = "all") -> pd.DataFrame:
    return ptable_numeric(5, 3.0, [1, 5], step=2, type=kind)


@pytest.mark.parametrize("digits", [5, 8, 12])
@pytest.mark.parametrize("same_key", [True, False])
def test_scrambled_key_arrays_equal_scrambled_keys(digits, same_key):
    rng = np.random.default_rng(digits)
    keys = np.concatenate([rng.integers(0, 10**digits, 300), [0, 1, 5 * 10 ** (digits - 1), 10 ** (digits - 1),
                                                            10, 12 * 10 ** (digits - 3), 10**digits - 1]])
    num, dec = scrambled_key_arrays(keys, digits, 6, same_key)
    for i, key in enumerate(keys.tolist()):
        for j, (n, d) in enumerate(scrambled_keys(key, digits, 6, same_key)):
            assert num[i, j] == n and (n == 0 or dec[i, j] == d), (key, j)


VARIANTS = {
    "flex": {"fp": 500, "top_k": 3, "epsilon": (1.0, 0.6, 0.3)},
    "flex, rotated keys, mu_c": {"fp": 500, "top_k": 3, "epsilon": (1.0, 0.5, 0.2), "same_key": False, "mu_c": 1.5},
    "simple, rounded": {"p": 0.1, "top_k": 2, "epsilon": (1.0, 0.5), "round_to": 5},
    "separation": {"fp": 500, "top_k": 2, "epsilon": (1.0, 0.5), "small_cells": True},
    "simple, separation": {"p": 0.2, "top_k": 2, "epsilon": (1.0, 0.5), "small_cells": True},
    "even/odd": {"fp": 500, "top_k": 1, "even_odd": True, "mu_c": 2.0},
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_perturb_cells_equals_perturb_cell_bit_for_bit(variant):
    """Random cells (signs, zeros, components below the separation point, below and above fp,
    larger than the cell, missing ones, keys 0 and with trailing zeros): every published value
    is perturb_cell's, to the last bit."""
    kw = dict(VARIANTS[variant])
    ptab: object = _pt()
    if kw.pop("even_odd", False):
        ptab = {"even": _pt("even"), "odd": _pt("odd")}
    elif kw.pop("small_cells", False):
        ptab = {"all": _pt(), "small_cells": ptable_numeric(3, 1.0, [1, 3], step=2, type="small_cells")}
    params = CellKeySumParams(ptab=ptab, **kw)
    k, digits, cells = params.top_k, 8, 2000
    rng = np.random.default_rng(len(variant))
    x = rng.lognormal(5, 3, (cells, k)) * rng.choice([1.0, 1.0, 1.0, -1.0], (cells, k))
    tiny = rng.random((cells, k)) < 0.15
    x[tiny] = rng.uniform(-3, 3, int(tiny.sum()))  # below the separation point and fp
    x = np.take_along_axis(x, np.argsort(-np.abs(x), axis=1, kind="stable"), axis=1)  # perturb_cell's order
    gone = rng.integers(0, k + 1, cells)  # components after a cell's last: NaN
    x[np.arange(k)[None, :] >= np.maximum(gone, 1)[:, None]] = np.nan
    cv = np.nansum(x, axis=1) * rng.choice([1.0, 0.3, 1e-3, 0.0, -2.0], cells)
    keys = rng.integers(0, 10**digits, cells)
    keys[rng.random(cells) < 0.05] = 0
    keys[rng.random(cells) < 0.1] //= 10**4
    keys[rng.random(cells) < 0.1] *= 1000
    keys %= 10**digits
    n = rng.integers(1, 9, cells)
    sensitive = n <= 2
    kind = np.where(n % 2 == 0, KINDS.index("even"), KINDS.index("odd")) if params.even_odd else np.zeros(cells, int)
    num, dec = scrambled_key_arrays(keys, digits, k, params.same_key)
    look = NumericLookup(params.table)
    got = perturb_cells(cv, x, num, dec, kind, sensitive, params, FlexLookup(look, digits))
    for c in range(cells):
        xs = [v for v in x[c].tolist() if not math.isnan(v)]
        ref = perturb_cell(float(cv[c]), xs, scrambled_keys(int(keys[c]), digits, k, params.same_key),
                           KINDS[kind[c]], bool(sensitive[c]), params, look)
        assert _same(float(got[c]), ref["value"]), (c, got[c], ref["value"])


@pytest.mark.parametrize("seed", [1, 2])
def test_cube_equals_cell_key_sums_on_random_tables_and_filters(seed):
    """Random 1-3 dimensional tables, some filtered, of 400 records with integer incomes: the
    cube's every cell is cell_key_sums' sum_pert on the kept records, to the last bit."""
    rng = np.random.default_rng(seed)
    domains = {"a": ("a0", "a1", "a2"), "b": ("b0", "b1"), "c": ("c0", "c1", "c2", "c3"), "d": ("d0", "d1")}
    frame = pd.DataFrame({d: rng.choice(v, 400) for d, v in domains.items()})
    frame["income"] = (rng.lognormal(7, 2, 400).round() * (rng.random(400) < 0.85)).astype(float)
    frame["rkey"] = rng.integers(0, 10**8, 400) / 1e8
    params = CellKeySumParams(ptab=_pt(), fp=300, top_k=3, epsilon=(1.0, 0.5, 0.25), same_key=seed == 2)
    codes = {d: pd.Categorical(frame[d], categories=list(v)).codes for d, v in domains.items()}
    cube = CellKeyCube.build(domains, codes, frame["rkey"].to_numpy(), ptable(3, 2.0, js=1),
                             values={"income": (frame["income"].to_numpy(), params, None)})
    for _ in range(8):
        names = list(rng.permutation(list(domains)))
        dims = names[:int(rng.integers(1, 4))]
        where = None
        if rng.random() < 0.5:
            other = names[-1]
            where = {other: sorted(rng.choice(domains[other], 1 + int(rng.integers(0, len(domains[other]) - 1)),
                                              replace=False).tolist())}
        sub = frame if where is None else frame[frame[names[-1]].isin(where[names[-1]])]
        ref = cell_key_sums(sub, dims, "rkey", "income", params)
        ref = {tuple(r[:-1]): r[-1] for r in ref[[*dims, "sum_pert"]].itertuples(index=False)}
        rows = cube.answer(dims, where, "income")["rows"]
        assert len(rows) == len(ref)
        for *cell, value in rows:
            assert _same(value, ref[tuple(cell)]), (dims, where, cell)
