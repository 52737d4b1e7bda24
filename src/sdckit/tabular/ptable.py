"""Perturbation tables of the cell key method, as the R package ``ptable`` builds them (issue 30).

A perturbation table ("p-table") gives, for each original count ``i`` of a frequency table, the
probabilities ``p`` of the perturbed counts ``j = i + v``; the cell key method looks a cell's
perturbation ``v`` up by its cell key in the cumulative intervals ``[p_int_lb, p_int_ub)`` of the
row of its count. :func:`ptable` solves the problem ``ptable::create_cnt_ptable`` solves
(``pt_create_pTable`` with ``pt_optim_entropy``, sdcTools/ptable, read at commit dd96b89 of the
CRAN mirror, version 1.0.x): for each ``i = 1 .. ncat``, with ``ncat = D`` when ``js = 0`` and
``D + js + 1`` otherwise (the last row stands for every ``i >= ncat``),

* maximise the entropy ``-sum p log p`` over ``j = max(i - D, 0) .. i + D`` minus the blocked
  counts ``1 .. js`` (a perturbation never produces them);
* subject to ``sum p = 1``, ``sum p v = 0`` (unbiased), ``sum p v**2 <= V`` (``optim = 1``;
  ``= V`` with ``optim = 4``), ``1e-8 <= p <= 1``, ``p(v = 0) >= pstay`` when ``pstay`` is given,
  and with ``mono`` the probabilities non-decreasing from ``v = -D`` up to ``v = 0``;
* when the variance rounded to 3 decimals is not ``V`` (``pstay`` too large), lower ``pstay`` by
  0.05 and solve again, at most 20 times (ptable's loop);
* the cumulative sums rounded to 8 decimals are the intervals, and ``p`` is the difference of the
  rounded bounds (ptable's "IMPORTANT step").

The row ``i = 0`` is ``j = 0`` with probability 1: an empty cell stays empty.

ptable calls NLopt's SLSQP; this module calls SciPy's SLSQP (the same algorithm, Kraft 1988) to
a much tighter tolerance, so it finds the same optimum — ptable's own example table
(``pt_ex_cnts``) is reproduced to all 8 printed decimals (tests/test_tabular_cellkey.py).

References: Giessing, S. (2016), "Computational issues in the design of transition probabilities
and disclosure risk estimation for additive noise", PSD 2016, LNCS 9867, pp. 237-251; Fraser, B. and
Wooton, J. (2006), "A proposed method for confidentialising tabular output to protect against
differencing", Eurostat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.params import Boolean, Constraint, Interval, IsNone, Options, ParamRule, Satisfies, validated

#: Decimals of the p-table's intervals (ptable's ``ndigits``).
PTABLE_DIGITS = 8
#: The smallest probability a perturbation value gets (ptable's ``epsilon``).
EPSILON = 10.0 ** -PTABLE_DIGITS
COLUMNS = ["i", "j", "p", "v", "p_int_lb", "p_int_ub", "type"]


def per_row(*rules: Constraint) -> ParamRule:
    """The rule of a parameter given once for every row or as a list, one per row: ``rules``'
    alternatives, or a non-empty list of values each of which satisfies one of them."""
    def each(value: object) -> bool:
        return (isinstance(value, Sequence) and not isinstance(value, str | bytes) and len(value) > 0
                and all(any(r.is_satisfied_by(v) for r in rules) for v in value))

    return [*rules, Satisfies(each, "a list of such values, one per row")]


#: The rules of ptable's per-row parameters.
PSTAY_RULE = per_row(IsNone(), Interval(float, 0, 1, closed="neither"))
OPTIM_RULE = per_row(Options((1, 2, 3, 4)))
MONO_RULE = per_row(Boolean())
#: D, the maximum perturbation, and V, the perturbation variance.
D_RULE = Interval(int, 1, None)
V_RULE = Interval(float, 0, None, closed="neither", finite=True)


def _per_row(value: object, ncat: int, name: str) -> list:
    """A scalar or a sequence of ``ncat`` values (one per original count 1..ncat), as ptable takes."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return [value] * ncat
    if len(value) != ncat:
        raise ParameterError(f"'{name}' has {len(value)} values but needs one per original count 1..{ncat} "
                             f"({ncat} values), or a single value for all.")
    return list(value)


def _row_params(pstay: object, optim: object, mono: object, ncat: int) -> tuple[list, list, list]:
    """pstay, optim and mono, one per row (their values are checked by the functions' rules)."""
    return _per_row(pstay, ncat, "pstay"), _per_row(optim, ncat, "optim"), _per_row(mono, ncat, "mono")


def _solve_row(v: np.ndarray, variance: float, lower: np.ndarray, mono: bool, optim: int) -> np.ndarray:
    """The maximum-entropy probabilities of one row (ptable's ``pt_optim_entropy``)."""
    from scipy.optimize import minimize  # here: importing sdckit.tabular stays light

    n = len(v)
    v2 = v * v
    cons = [{"type": "eq", "fun": lambda x: np.array([x.sum() - 1.0, v @ x]),
             "jac": lambda x: np.vstack([np.ones(n), v])},
            {"type": "eq" if optim == 4 else "ineq", "fun": lambda x: np.array([variance - v2 @ x]),
             "jac": lambda x: -v2[None, :]}]
    zero = np.flatnonzero(v == 0)
    if mono and len(zero) and zero[0] > 0:
        k = int(zero[0])
        rise = np.zeros((k, n))
        rise[np.arange(k), np.arange(k)] = -1.0
        rise[np.arange(k), np.arange(1, k + 1)] = 1.0
        cons.append({"type": "ineq", "fun": lambda x: rise @ x, "jac": lambda x: rise})
    x0 = np.maximum(np.full(n, 1.0 / n), lower)
    res = minimize(lambda x: float(np.sum(x * np.log(x))), x0, jac=lambda x: np.log(x) + 1.0,
                   method="SLSQP", bounds=list(zip(lower, np.ones(n))), constraints=cons,
                   options={"ftol": 1e-16, "maxiter": 2000})
    return np.clip(res.x, lower, 1.0)


def _row(i: float, j: np.ndarray, V: float, stay: float | None, optim: int, mono: bool, blocked: bool,
         label: str) -> pd.DataFrame:
    """One row of a p-table (ptable's loop in ``pt_create_pTable``): the maximum-entropy
    probabilities of the targets ``j`` of the original value ``i``, pstay lowered by 0.05 while
    the variance rounded to 3 decimals is not ``V``, and the cumulative intervals (8 decimals)."""
    v = np.round(j - i, 4).astype(float)
    lower = np.full(len(v), EPSILON)
    if stay is not None:
        lower[v == 0] = max(float(stay), EPSILON)
    for attempt in range(20):
        if attempt:
            if lower[v == 0].size == 0 or lower[v == 0][0] <= EPSILON:
                break  # ptable re-solves the same problem here: the same answer
            lower[v == 0] = np.maximum(lower[v == 0] - 0.05, EPSILON)
        p = _solve_row(v, V, lower, mono, optim)
        if blocked or round(float(p @ (v * v)), 3) == V:
            break
    var = float(p @ (v * v))
    if (round(float(p.sum()), 10) != 1.0 or abs(float(p @ v)) > 1e-7 or var > V + 1e-7
            or (optim == 4 and abs(var - V) > 1e-7)):
        raise ParameterError(
            f"No perturbation table meets the constraints for {label}: "
            "try another V (usually enough), D, js or pstay, or mono=False.")
    upper = np.cumsum(p)
    return pd.DataFrame({"i": i, "j": j, "p": p, "v": v,
                         "p_int_lb": np.round(upper - p, PTABLE_DIGITS),
                         "p_int_ub": np.round(upper, PTABLE_DIGITS)})


@validated(D=D_RULE, V=V_RULE, js=Interval(int, 0, None), pstay=PSTAY_RULE, optim=OPTIM_RULE, mono=MONO_RULE)
def ptable(D: int, V: float, js: int = 0, pstay: float | Sequence[float] | None = None,
           optim: int | Sequence[int] = 1, mono: bool | Sequence[bool] = True) -> pd.DataFrame:
    """The perturbation table of ``ptable::create_cnt_ptable(D, V, js, pstay, optim, mono)``.

    Parameters
    ----------
    D
        Maximum perturbation (a positive int): ``|v| <= D``.
    V
        Variance of the perturbation (> 0).
    js
        Counts ``1 .. js`` are never produced (0: none blocked).
    pstay
        Probability that a count stays unchanged, one value or one per original count
        ``1 .. ncat``; None: the maximum-entropy value.
    optim
        1: the variance is at most ``V`` (ptable's default; 2 and 3 are the same problem); 4: equal
        to ``V``. One value or one per original count.
    mono
        Probabilities non-decreasing from ``v = -D`` to ``v = 0``; one value or one per count.

    Returns
    -------
    pandas.DataFrame
        ptable's ``pTable``: columns ``i, j, p, v, p_int_lb, p_int_ub, type`` (``type`` is
        ``"all"``), rows by ``i`` then ``j``; the last ``i`` stands for every larger count.

    Raises
    ------
    ParameterError
        A parameter is out of range, or no table meets the constraints (as ptable, which stops).
    """
    D, js, V = int(D), int(js), float(V)
    ncat = D if js == 0 else D + js + 1
    stays, optims, monos = _row_params(pstay, optim, mono, ncat)

    rows = [pd.DataFrame({"i": [0], "j": [0], "p": [1.0], "v": [0], "p_int_lb": [0.0], "p_int_ub": [1.0]})]
    label = f"D={D}, V={V}, js={js}, pstay={pstay}"
    for i in range(1, ncat + 1):
        j = np.arange(max(i - D, 0), i + D + 1)
        j = j[(j == 0) | (j > js)]
        rows.append(_row(i, j, V, stays[i - 1], int(optims[i - 1]), bool(monos[i - 1]), i <= js, label))
    out = pd.concat(rows, ignore_index=True)
    out["p"] = out["p_int_ub"] - out["p_int_lb"]
    out["type"] = "all"
    out[["i", "j", "v"]] = out[["i", "j", "v"]].astype(np.int64)
    return out[COLUMNS]


NUMERIC_TYPES = ("all", "even", "odd", "small_cells")


@validated(D=D_RULE, V=V_RULE, step=Interval(int, 1, None), optim=OPTIM_RULE, mono=MONO_RULE,
           type=Options(NUMERIC_TYPES))
def ptable_numeric(D: int, V: float, icat: Sequence[int], step: int = 2, optim: int | Sequence[int] = 1,
                   mono: bool | Sequence[bool] = True, type: str = "all") -> pd.DataFrame:
    """The perturbation table of ``ptable::create_num_ptable(D, V, icat, step, optim, mono, type)``.

    A p-table for magnitude tables (the cell key method's flex function, :func:`sdckit.tabular.
    cell_key_sums`): rows ``i = 0`` and every ``i`` of ``icat``; the perturbation values
    ``v`` run from ``max(i - D, 0) - i`` to ``D`` in steps of ``1 / step`` (rounded to 4
    decimals, as ptable), each row the maximum-entropy distribution with mean 0 and variance at
    most ``V`` (``= V`` with ``optim = 4``), as :func:`ptable` solves it (``pstay`` and ``js``
    do not apply: ptable ignores them for magnitude tables). A value ``a`` between two ``i`` is
    looked up in both rows and the two ``v`` interpolated linearly (cellKey). ptable's own
    tables (``pt_ex_nums``) are reproduced in ``i``, ``j`` and ``v`` and to 5e-7 in ``p`` and the
    bounds: ptable stops NLopt at ``xtol_rel = 1e-8``, short of the optimum SciPy reaches
    (tests/test_tabular_cellkey_r_sums.py).

    Parameters
    ----------
    D
        Maximum perturbation (a positive int).
    V
        Variance of the perturbation (> 0).
    icat
        The rows (interpolation points): integers from 1 to ``D`` that include 1 and ``D``.
    step
        Perturbation values per unit (``D * step < 50``).
    optim, mono
        As :func:`ptable`, one value or one per entry of ``icat``.
    type
        ``"all"``, ``"even"``, ``"odd"`` (cells with an even / odd number of contributors) or
        ``"small_cells"`` (cellKey's separation: cells below the separation point).

    Returns
    -------
    pandas.DataFrame
        Columns ``i, j, p, v, p_int_lb, p_int_ub, type``, rows by ``i`` then ``j``.
    """
    if D * step >= 50:
        raise ParameterError(f"'D' times 'step' must be below 50 (ptable's limit); got {D} x {step}: reduce either.")
    try:
        cats = sorted({int(c) for c in icat if float(c) == int(c)})
    except (TypeError, ValueError):
        cats = []
    if not cats or len(cats) != len(set(icat)) or 1 not in cats or D not in cats or max(cats) > D:
        raise ParameterError(f"'icat' must be integers from 1 to D={D} including 1 and D, e.g. [1, {D}]; got {icat!r}.")
    D, step, V = int(D), int(step), float(V)
    _, optims, monos = _row_params(None, optim, mono, len(cats))
    rows = [pd.DataFrame({"i": [0.0], "j": [0.0], "p": [1.0], "v": [0.0], "p_int_lb": [0.0], "p_int_ub": [1.0]})]
    label = f"D={D}, V={V}, icat={cats}, step={step}"
    for r, i in enumerate(cats):
        lo = max(i - D, 0)
        j = np.round(lo + np.arange(round((i + D - lo) * step) + 1) / step, 4)
        rows.append(_row(float(i), j, V, None, int(optims[r]), bool(monos[r]), False, label))
    out = pd.concat(rows, ignore_index=True)
    out["p"] = out["p_int_ub"] - out["p_int_lb"]
    out["type"] = type
    return out[COLUMNS]


def _filled(table: pd.DataFrame, rows: list[str], what: str) -> pd.DataFrame:
    """``table`` checked for its columns and sorted by ``rows`` then ``p_int_ub`` (the lookup
    order; ptable's ``modify_cnt_ptable`` splits a row's intervals out of ``v`` order), a missing
    ``p_int_lb`` the previous ``p_int_ub`` of the same row (0 for the first), a missing ``j``
    ``i + v``, a missing ``type`` ``"all"``."""
    missing = [c for c in ("i", "v", "p", "p_int_ub") if c not in table.columns]
    if missing:
        raise DataError(f"The p-table lacks the column(s) {missing}; it needs i, j, p, v, p_int_lb, p_int_ub "
                        f"(as {what} or read_ptable give).")
    t = table.copy()
    if "type" not in t.columns:
        t["type"] = "all"
    if "p_int_lb" not in t.columns:
        t["p_int_lb"] = np.nan
    t = t.sort_values([*rows, "p_int_ub"], kind="stable").reset_index(drop=True)
    first = ~t.duplicated(rows)
    t["p_int_lb"] = t["p_int_lb"].fillna(t["p_int_ub"].shift(1).where(~first, 0.0))
    if "j" not in t.columns:
        t["j"] = t["i"] + t["v"]
    return t


def _intervals_whole(t: pd.DataFrame, rows: list[str]) -> bool:
    """Each row's intervals ``[p_int_lb, p_int_ub)`` run from 0 to 1."""
    g = t.groupby(rows, sort=False)
    return bool(np.allclose(g["p_int_ub"].max().to_numpy(), 1.0, atol=1e-9)
                and np.allclose(g["p_int_lb"].min().to_numpy(), 0.0, atol=1e-9))


def check_ptable(table: pd.DataFrame) -> pd.DataFrame:
    """Validate a p-table for counts and return it sorted by ``i`` then ``p_int_ub`` (the
    lookup order; ptable's ``modify_cnt_ptable`` splits a row's intervals out of ``v`` order).

    Raises
    ------
    DataError
        A column is missing, a row's intervals do not start at 0 and end at 1, or an ``i`` between
        0 and the largest is missing.
    """
    t = _filled(table, ["i"], "ptable::create_cnt_ptable")
    counts = np.asarray(sorted(set(t["i"])), dtype=float)
    if not _intervals_whole(t, ["i"]) or not np.array_equal(counts, np.arange(len(counts))):
        raise DataError("The p-table is not a count p-table: each original count i = 0, 1, ..., max must have "
                        "intervals [p_int_lb, p_int_ub) from 0 to 1.")
    t[["i", "j", "v"]] = t[["i", "j", "v"]].astype(np.int64)
    return t[COLUMNS]


def check_numeric_ptable(table: pd.DataFrame) -> pd.DataFrame:
    """Validate a p-table for magnitudes (:func:`ptable_numeric`'s, or several of them, one per
    ``type``) and return it with float ``i, j, v``, by ``type`` (in the order they come), ``i``
    and ``p_int_ub``.

    Raises
    ------
    DataError
        A column is missing, a ``type`` is not one of ``all, even, odd, small_cells``, a type has
        no row ``i = 0``, or a row's intervals do not start at 0 and end at 1.
    """
    t = table.copy()
    t["type"] = t["type"].astype(str).str.strip() if "type" in t.columns else "all"
    bad = sorted(set(t["type"]) - set(NUMERIC_TYPES))
    if bad:
        raise DataError(f"The p-table has type {bad[0]!r}; a numeric p-table's types are {list(NUMERIC_TYPES)}.")
    order = {k: n for n, k in enumerate(dict.fromkeys(t["type"]))}
    t = _filled(t.assign(_kind=t["type"].map(order)), ["_kind", "i"], "ptable::create_num_ptable")
    no_zero = [k for k, g in t.groupby("type", sort=False) if 0 not in set(g["i"])]
    if no_zero or (t["i"] < 0).any() or not _intervals_whole(t, ["_kind", "i"]):
        raise DataError("The p-table is not a numeric p-table: each type's rows i (0 included) must have intervals "
                        f"[p_int_lb, p_int_ub) from 0 to 1{f'; type {no_zero[0]!r} has no row 0' if no_zero else ''}.")
    t[["i", "j", "v"]] = t[["i", "j", "v"]].astype(float)
    return t[COLUMNS]


#: What a p-table is for, as ptable's ``table`` slot names it: counts or magnitudes (sums).
PTABLE_KINDS = ("cnts", "nums")


def _kind_of(table: pd.DataFrame) -> str:
    """``"cnts"`` for a table that passes as a count p-table, of type ``"all"`` only or without
    ``type`` (what every count p-table is), else ``"nums"``."""
    if "type" not in table.columns or set(table["type"].astype(str).str.strip()) == {"all"}:
        try:
            check_ptable(table)
            return "cnts"
        except DataError:
            pass
    return "nums"


@validated(kind=[IsNone(), Options(PTABLE_KINDS)])
def read_ptable(path: str | Path, kind: str | None = None) -> pd.DataFrame:
    """Read a p-table written by ``ptable::pt_export`` (or :func:`write_ptable`): for counts or,
    with a ``type`` column, for magnitudes.

    The file is ``;``-separated with a header (``i;j;p;v;p_int_ub`` for tau-ARGUS, with
    ``p_int_lb`` for SAS; a numeric p-table adds ``type``: ``all``, or ``even`` and ``odd``; a
    ``,``-separated file with the same columns is read too); values may be padded with blanks, as
    R's ``format`` writes them. A missing ``p_int_lb`` is the previous row's ``p_int_ub`` within
    the same ``i`` (0 for the first).

    Parameters
    ----------
    path
        The file.
    kind
        ``"cnts"`` (a count p-table, :func:`ptable`'s), ``"nums"`` (a numeric p-table,
        :func:`ptable_numeric`'s: float ``i, j, v``, for :class:`~sdckit.tabular.CellKeySumParams`)
        or None: ``"nums"`` when the file has a ``type`` column and is not a count p-table.

    Raises
    ------
    DataError
        The file cannot be read or is not a p-table of that kind.
    """
    try:
        head = Path(path).read_text(encoding="utf-8").splitlines()[0]
        table = pd.read_csv(path, sep=";" if ";" in head else ",", skipinitialspace=True, dtype=str)
    except (OSError, UnicodeDecodeError, IndexError, pd.errors.ParserError) as exc:
        raise DataError(f"Cannot read the p-table {str(path)!r}: {exc}") from None
    table.columns = [c.strip() for c in table.columns]
    for col in table.columns:
        table[col] = table[col].str.strip()
        if col != "type":
            try:
                table[col] = pd.to_numeric(table[col])
            except ValueError:
                raise DataError(f"The p-table {str(path)!r} has a non-numeric value in column {col!r}.") from None
    kind = kind or ("cnts" if "type" not in table.columns else _kind_of(table))  # pt_export: type for nums only
    return check_numeric_ptable(table) if kind == "nums" else check_ptable(table)


def _r_format(values: np.ndarray, digits: int = PTABLE_DIGITS) -> list[str]:
    """R's ``format(x, digits = 8)`` of a column: every value shown to ``digits`` significant
    digits with the decimals common to the column, right-justified to a common width — in fixed
    notation unless scientific is narrower (R's ``formatReal`` with ``scipen = 0``: a column of
    probabilities down to 9.9999999e-09 is printed ``2.3932581e-01``)."""
    values = np.asarray(values, dtype=float)
    right, left, mantissa, big_exp, neg = 0, 1, 1, False, bool((values < 0).any())
    for x in values:
        if x != 0 and math.isfinite(x):
            m, e = f"{x:.{digits - 1}e}".split("e")
            sig = len(m.replace("-", "").replace(".", "").rstrip("0"))  # R's nsig
            right = max(right, sig - 1 - int(e))
            left = max(left, int(e) + 1)
            mantissa = max(mantissa, sig)
            big_exp = big_exp or abs(int(e)) >= 100
    right = min(right, 15)
    fixed_width = neg + left + right + (right > 0)
    sci_width = neg + (mantissa > 1) + (mantissa - 1) + 4 + (2 if big_exp else 1)
    if fixed_width <= sci_width:
        text = [f"{x:.{right}f}" for x in values]
    else:
        text = [f"{x:.{mantissa - 1}e}" for x in values]
    width = max(len(s) for s in text)
    return [s.rjust(width) for s in text]


@validated(sdctool=Options(("TauArgus", "SAS")), kind=[IsNone(), Options(PTABLE_KINDS)])
def write_ptable(table: pd.DataFrame, path: str | Path, sdctool: str = "SAS", kind: str | None = None) -> Path:
    """Write a p-table as ``ptable::pt_export`` does: ``;``-separated, R's 8-digit format.

    A count p-table: ``sdctool="TauArgus"`` writes ``i;j;p;v;p_int_ub`` (what tau-ARGUS reads),
    ``"SAS"`` adds ``p_int_lb`` before ``p_int_ub``. A numeric p-table (:func:`ptable_numeric`'s;
    ``kind="nums"``, or None: a table that is not a count p-table, or has a ``type`` other than
    ``"all"``) adds its ``type`` last; of several types (``even`` and ``odd``) it is always
    ``i;j;p;v;p_int_ub;type``, as pt_export writes two tables. Returns the path written.
    """
    nums = (kind or _kind_of(table)) == "nums"
    t = check_numeric_ptable(table) if nums else check_ptable(table)
    lower = sdctool == "SAS" and t["type"].nunique() == 1
    cols = ["i", "j", "p", "v", *(["p_int_lb"] if lower else []), "p_int_ub"]
    formatted = {c: _r_format(t[c].to_numpy()) for c in cols}
    if nums:
        cols.append("type")
        formatted["type"] = t["type"].tolist()
    lines = [";".join(cols)] + [";".join(formatted[c][r] for c in cols) for r in range(len(t))]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
