"""Configuration of the query service's table mode: ``mode = "tables"`` and ``[table.ckm]``
(issue 30 section 3; DESIGN.md section 7). Checked with the rest of ``service.toml``
(:func:`sdckit.query.config.load_config`); the p-table itself is built or read when the service
starts (:mod:`sdckit.query.tables`).

Example::

    [[table]]
    name = "census"
    path = "census.parquet"
    mode = "tables"             # served only as tables (POST /v1/table), every cell perturbed by
                                # the cell key method; never by SQL (POST /v1/query)
    [table.domains]             # the dimensions and their codes: the only ones a request may name
    region = ["N", "S", "E", "W"]
    sex = ["F", "M"]
    [table.ckm]
    D = 3                       # p-table of ptable::create_cnt_ptable(D, V, js, pstay) ...
    V = 2.0
    js = 1
    # pstay = 0.5
    # ptable = "ptable.csv"     # ... or read from ptable's file format (instead of D, V, js, pstay)
    # record_key = "rkey"       # a column of keys in [0, 1); default: drawn once from the
                                # service's seed (OS entropy) and kept beside the state database
    # digits = 8                # decimals of the record keys
    # min_count = 5             # perturbed counts 1 .. min_count-1 are suppressed (published as null)
    [table.bounds]              # the numeric columns a sum may name ("measure": "sum:income"); every
    income = [0, 1e7]           # record's value must be within (nothing is clipped)
    [table.ckm.sums]            # sums: cellKey's flex function (or its simple approach, p), as the
                                # table recipe's [cell_key] (D, V and fp or p required)
    D = 5                       # ptable_numeric(D, V, icat, step)
    V = 3.0
    fp = 1000                   # the flex point; p_small, p_large, q, epsilon, type, top_k, mu_c,
    # icat = [1, 5]             # same_key, use_zero_rkeys, supp_freq: cellKey's defaults if left out
    # p = 0.1                   # instead of fp (and p_small, p_large, q): cellKey's simple approach
    # round_to = 1              # publish the sums rounded to a multiple of 1 (default: unrounded)
    [table.hierarchies]         # margins at each level of a dimension: {child = parent} over its
    region = {N = "North", S = "South", E = "South", W = "North"}   # codes, or an .hrc file
    # region = "region.hrc"     # (relative to the configuration file)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.result import Result, plain
from sdckit.core.tomlfile import check_keys

if TYPE_CHECKING:  # loaded only for a table that declares them (pandas, scipy)
    from sdckit.tabular.hierarchy import DimensionHierarchy
    from sdckit.tabular.protection import CellKey

#: Table modes: ``"query"`` (SQL in the analyst's dp or restricted mode) and ``"tables"``.
MODES = ("query", "tables")
#: The code of a dimension's total (margin) in a table's answer.
TOTAL = "Total"
_CKM_KEYS = {"D", "V", "js", "pstay", "ptable", "record_key", "digits", "min_count", "sums"}



@dataclass(frozen=True)
class CkmConfig(Result):
    """The cell key method of one table served as tables.

    Attributes
    ----------
    D, V, js, pstay
        The p-table's parameters (:func:`sdckit.tabular.ptable`); ``None`` when ``ptable_path``
        is given.
    ptable_path : Path or None
        A p-table in ptable's file format (:func:`sdckit.tabular.read_ptable`), absolute.
    record_key : str or None
        Column of the data holding the record keys; ``None``: keys drawn once by the service.
    digits : int
        Decimals of the record keys (cellKey's default 8).
    min_count : int or None
        Perturbed counts from 1 to ``min_count - 1`` are suppressed.
    sums : CellKey or None
        ``[table.ckm.sums]``: the numeric p-table's and the flex function's (or the simple
        approach's) parameters, and ``round_to``
        (:meth:`sdckit.tabular.protection.CellKey.sum_params` solves them when the service
        starts); ``None``: sums are not served.
    hierarchies : tuple of (str, DimensionHierarchy)
        ``[table.hierarchies]``: the dimensions with a hierarchy over their codes (the domain's
        codes its leaves); the others are flat (their codes under ``"Total"``).
    """

    D: int | None = None
    V: float | None = None
    js: int = 0
    pstay: float | tuple[float, ...] | None = None
    ptable_path: Path | None = None
    record_key: str | None = None
    digits: int = 8
    min_count: int | None = None
    sums: CellKey | None = None
    hierarchies: tuple[tuple[str, DimensionHierarchy], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields, ``ptable_path`` as ``ptable``; ``sums`` (the keys given) and
        ``hierarchies`` (``{child: parent}`` each) only when configured."""
        out = {"D": self.D, "V": self.V, "js": self.js, "pstay": self.pstay, "ptable": self.ptable_path,
               "record_key": self.record_key, "digits": self.digits, "min_count": self.min_count}
        if self.sums is not None:
            out["sums"] = {k: v for k, v in self.sums.params().items() if k in sum_keys() and v is not None}
        if self.hierarchies:
            out["hierarchies"] = {d: h.to_parents() for d, h in self.hierarchies}
        return plain(out)


def _int(value: Any, low: int, high: int | None, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise ParameterError(f"{where}: must be an int from {low}" + (f" to {high}." if high is not None else " up."))
    return value


def _probability(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ParameterError(f"{where}: must be a probability strictly between 0 and 1 (or a list of them).")
    return float(value)


def parse_mode(raw: dict[str, Any], where: str, base: Path, domains: dict[str, tuple[Any, ...]],
               declared: set[str], unit: str | None,
               identifier: Callable[[Any, str], str]) -> tuple[str, CkmConfig | None]:
    """``(mode, ckm)`` of one ``[[table]]``: its ``mode`` key and, for ``"tables"``, its checked
    ``[table.ckm]`` (``declared``: the table's bounded and domain columns; ``unit``: its privacy
    unit; ``identifier``: the configuration's check of a column name)."""
    mode = raw.get("mode", "query")
    if mode not in MODES:
        raise ParameterError(f"{where} 'mode': must be \"query\" (SQL, the analyst's dp or restricted mode) "
                             "or \"tables\" (POST /v1/table, counts perturbed by the cell key method).")
    ckm_raw, table = raw.get("ckm"), where
    if mode == "query":
        for section in ("ckm", "hierarchies"):
            if raw.get(section) is not None:
                raise ParameterError(f"{where} [table.{section}]: is only for a table with mode = \"tables\".")
        return mode, None
    if ckm_raw is None or not isinstance(ckm_raw, dict):
        raise ParameterError(f"{where}: mode = \"tables\" needs [table.ckm] with the p-table (D, V and js, "
                             "or ptable = \"file\").")
    if not domains:
        raise ParameterError(f"{where}: mode = \"tables\" needs [table.domains]: the dimensions and their codes.")
    if raw.get("bounds_from_data"):
        raise ParameterError(f"{where} 'bounds_from_data': is not for a table with mode = \"tables\" (its answers "
                             "are counts over [table.domains]).")
    for column, values in domains.items():
        if TOTAL in values:
            raise ParameterError(f"{where} [table.domains].{column}: lists {TOTAL!r}, the code of every "
                                 "dimension's total in a table; rename that code.")
    where = f"{where} [table.ckm]"
    check_keys(ckm_raw, _CKM_KEYS, where)
    ptable_file = ckm_raw.get("ptable")
    if ptable_file is not None:
        given = sorted({"D", "V", "js", "pstay"} & set(ckm_raw))
        if given:
            raise ParameterError(f"{where}: give either 'ptable' (a file) or the p-table's parameters, not both "
                                 f"(found {given[0]!r}).")
        if not isinstance(ptable_file, str) or not ptable_file:
            raise ParameterError(f"{where} 'ptable': must be a file name (relative to the configuration file).")
        path = Path(ptable_file)
        ptable_path: Path | None = (path if path.is_absolute() else base / path).resolve()
        D, V, js, pstay = None, None, 0, None
    else:
        ptable_path = None
        if "D" not in ckm_raw or "V" not in ckm_raw:
            raise ParameterError(f"{where}: needs 'D' (largest perturbation) and 'V' (its variance), or "
                                 "'ptable' (a p-table file).")
        D = _int(ckm_raw["D"], 1, 100, f"{where} 'D'")
        V = ckm_raw["V"]
        if isinstance(V, bool) or not isinstance(V, int | float) or not math.isfinite(V) or V <= 0:
            raise ParameterError(f"{where} 'V': must be a number > 0 (the variance of the perturbation).")
        V = float(V)
        js = _int(ckm_raw.get("js", 0), 0, 100, f"{where} 'js'")
        pstay = ckm_raw.get("pstay")
        if isinstance(pstay, list):
            pstay = tuple(_probability(p, f"{where} 'pstay'") for p in pstay)
        elif pstay is not None:
            pstay = _probability(pstay, f"{where} 'pstay'")
    key = ckm_raw.get("record_key")
    if key is not None:
        key = identifier(key, f"{where} 'record_key'")
        if key in declared or key == unit:
            raise ParameterError(f"{where} 'record_key': must not be a declared column or the privacy unit: "
                                 "the record keys are secret and never a dimension.")
    digits = _int(ckm_raw.get("digits", 8), 5, 12, f"{where} 'digits'")
    min_count = ckm_raw.get("min_count")
    if min_count is not None:
        min_count = _int(min_count, 1, None, f"{where} 'min_count'")
    sums = ckm_raw.get("sums")
    if sums is not None:
        sums = _sums(sums, f"{where}.sums")
    hierarchies = _hierarchies(raw.get("hierarchies", {}), f"{table} [table.hierarchies]", base, domains)
    return mode, CkmConfig(D, V, js, pstay, ptable_path, key, digits, min_count, sums, hierarchies)


def sum_keys() -> tuple[str, ...]:
    """The keys of ``[table.ckm.sums]``: the table recipe's ``[cell_key]`` keys of a magnitude
    table (:class:`sdckit.tabular.protection.CellKey`: ``D``, ``V`` and its ``SUM_PARAMS``);
    ``D``, ``V`` and one of ``fp`` (the flex function) and ``p`` (the simple approach) are
    required."""
    from sdckit.tabular.protection.cell_key import SUM_PARAMS

    return ("D", "V", *SUM_PARAMS)


def _sums(raw: Any, where: str) -> CellKey:
    """The checked ``[table.ckm.sums]`` (the recipe's rules: :class:`~sdckit.tabular.protection.CellKey`)."""
    from sdckit.tabular.protection import CellKey

    if not isinstance(raw, dict):
        raise ParameterError(f"{where}: must be a table of the flex function's parameters (D, V, fp, ...) or the "
                             "simple approach's (D, V, p, ...).")
    check_keys(raw, sum_keys(), where)
    try:
        sums = CellKey(record_key="record_key", **raw)
        sums.check_sums()
        return sums
    except ParameterError as exc:
        raise ParameterError(f"{where}: {exc}") from None


def _hierarchies(raw: Any, where: str, base: Path, domains: dict[str, tuple[Any, ...]]
                 ) -> tuple[tuple[str, DimensionHierarchy], ...]:
    """The checked ``[table.hierarchies]``: per dimension a ``{child = parent}`` table or an
    ``.hrc`` file (relative to ``base``) whose leaves are exactly the dimension's codes."""
    if not isinstance(raw, dict):
        raise ParameterError(f"{where}: must be a table of dimension = {{child = parent}} or \"file.hrc\".")
    if not raw:
        return ()
    from sdckit.tabular.hierarchy import as_dimension_hierarchy

    out = []
    for column, value in raw.items():
        at = f"{where}.{column}"
        if column not in domains:
            raise ParameterError(f"{at}: names no dimension of the table; its dimensions are {list(domains)} "
                                 "([table.domains]).")
        if isinstance(value, str):
            path = Path(value)
            value = (path if path.is_absolute() else base / path).resolve()
            if not value.is_file():
                raise ParameterError(f"{at}: no such .hrc file {str(value)!r} (a path relative to the "
                                     "configuration file).")
        elif not isinstance(value, dict) or not value or not all(isinstance(p, str) for p in value.values()):
            raise ParameterError(f"{at}: must be {{child = \"parent\", ...}} over the dimension's codes, or an "
                                 ".hrc file name.")
        try:
            h = as_dimension_hierarchy(value, name=column, total=TOTAL)
        except (DataError, ParameterError, OSError) as exc:
            raise ParameterError(f"{at}: {exc}") from None
        codes = [str(c) for c in domains[column]]
        leaves, inner = set(h.leaves), set(h.codes) - set(h.leaves)
        clash = [c for c in codes if c in inner]
        missing = [c for c in codes if c not in leaves]
        extra = sorted(leaves - set(codes))
        if clash or missing or extra:
            what = (f"the code {clash[0]!r} is a subtotal of the hierarchy (records carry leaf codes)" if clash else
                    f"the code {missing[0]!r} of [table.domains] is not in the hierarchy" if missing else
                    f"the hierarchy's leaf {extra[0]!r} is not a code of [table.domains]")
            raise ParameterError(f"{at}: {what}; its leaves must be the dimension's codes.")
        if TOTAL in h.codes[1:]:
            raise ParameterError(f"{at}: uses {TOTAL!r} below the top; it is the code of the grand total.")
        out.append((column, h))
    return tuple(out)
