"""The cell key method as a protection value (a table recipe's ``[protection] method =
"cell_key"``, :mod:`sdckit.tabular.recipe_ckm`): counts perturbed by a p-table
(:func:`~sdckit.tabular.cellkey.cell_key_counts`; Thompson, Broadfoot & Elazar 2013), sums by
cellKey's flex function or its simple approach (:func:`~sdckit.tabular.cellkey_sums.cell_key_sums`). It perturbs the
table of records (each record's key decides its cells' noise), so :meth:`CellKey.apply` takes the
records and the table's dimensions, not a built table."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.params import Boolean, Interval, IsNone, Options, Satisfies
from sdckit.core.random import check_recipe_seed, seed_provenance
from sdckit.core.result import summary_text
from sdckit.tabular.cellkey import cell_key_counts, cell_key_measures, record_keys
from sdckit.tabular.cellkey_sums import TYPES, CellKeySumParams, cell_key_sums
from sdckit.tabular.protection.base import Protection, register
from sdckit.tabular.ptable import ptable, ptable_numeric, read_ptable

_NUMBER = [IsNone(), Interval(float)]
_NUMBERS = [IsNone(), Satisfies(lambda v: isinstance(v, tuple) and len(v) > 0 and all(
    Interval(float).is_satisfied_by(x) for x in v), "a non-empty list of numbers")]
_SHARE = [IsNone(), Interval(float, 0, 1)]
_BOOL = [IsNone(), Boolean()]
#: The parameters only a magnitude table (a response) takes.
SUM_PARAMS = ("icat", "step", "fp", "p_small", "p_large", "q", "p", "epsilon", "type", "top_k", "mu_c", "same_key",
              "use_zero_rkeys", "supp_freq", "round_to")
#: The keys of cellKey's flex function (``ck_flexparams``), which its simple approach (``p``) does not take.
FLEX_PARAMS = ("fp", "p_small", "p_large", "q")
_SUM_RULES = CellKeySumParams.constraints


@dataclass(frozen=True)
class CellKeyTableResult:
    """A table perturbed by the cell key method (what ``sdckit table protect`` writes)."""

    cells: pd.DataFrame = field(repr=False)
    published: pd.DataFrame = field(repr=False)
    measure: str
    measures: dict[str, Any]
    parameters: dict[str, Any]
    seconds: float
    method: str = "cell_key"

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "measure": self.measure, "cells": len(self.cells),
                "measures": self.measures, "parameters": self.parameters, "seconds": round(self.seconds, 3)}


@register
@dataclass(frozen=True)
class CellKey(Protection):
    """The cell key method (Thompson, Broadfoot & Elazar 2013; cellKey's ``ck_setup``).

    Parameters
    ----------
    record_key, seed : str, optional
        Either the column of record keys in [0, 1), or a secret seed (`sdckit seed`) from which
        the keys are drawn in record order (never written: the manifest says where it came from).
    digits : int >= 1
        Decimals of the keys.
    ptable, D, V, js, pstay
        Counts: a p-table file (:func:`~sdckit.tabular.ptable.read_ptable`), or
        :func:`~sdckit.tabular.ptable.ptable`'s parameters. Magnitude tables: ``ptable`` is a
        numeric p-table file (ptable's ``pt_export`` of ``create_num_ptable``'s tables), instead
        of ``D``, ``V``, ``icat`` and ``step``.
    icat, step, fp, p_small, p_large, q, p, epsilon, type, top_k, mu_c, same_key, use_zero_rkeys, supp_freq
        Magnitude tables: :func:`~sdckit.tabular.ptable.ptable_numeric` (D, V, icat, step) and
        :class:`~sdckit.tabular.cellkey_sums.CellKeySumParams`: either the flex function (``fp``,
        with ``p_small``, ``p_large``, ``q``) or cellKey's simple approach (``p``), never both;
        None takes cellKey's default.
    round_to : float > 0, optional
        Magnitude tables: the published sums are rounded to the nearest multiple of it (after the
        perturbation; :meth:`~sdckit.tabular.cellkey_sums.CellKeySumParams.published`); None
        publishes them unrounded, as cellKey.
    """

    record_key: str | None = None
    seed: int | str | None = field(default=None, repr=False)  # never shown
    allow_weak_seed: bool = False
    digits: int = 8
    ptable: str | None = None
    D: int | None = None
    V: float | None = None
    js: int | None = None
    pstay: float | None = None
    icat: tuple[int, ...] | None = None
    step: int | None = None
    fp: float | None = None
    p_small: float | None = None
    p_large: float | None = None
    q: float | None = None
    p: float | None = None
    epsilon: tuple[float, ...] | None = None
    type: str | None = None
    top_k: int | None = None
    mu_c: float | None = None
    same_key: bool | None = None
    use_zero_rkeys: bool | None = None
    supp_freq: int | None = None
    round_to: float | None = None

    name: ClassVar[str] = "cell_key"
    released: ClassVar[str] = "perturbed table"
    constraints: ClassVar = {
        "record_key": [IsNone(), Satisfies(lambda v: isinstance(v, str) and v != "", "a column name")],
        "allow_weak_seed": Boolean(), "digits": Interval(int, 1, None),
        "ptable": [IsNone(), Satisfies(lambda v: isinstance(v, str) and v != "", "a file name")],
        "D": [IsNone(), Interval(int, 1, None)], "V": [IsNone(), Interval(float, 0, None, closed="neither")],
        "js": [IsNone(), Interval(int, 0, None)], "pstay": _NUMBER, "icat": _NUMBERS,
        "step": [IsNone(), Interval(int, 1, None)], "fp": _SUM_RULES["fp"], "p": _SUM_RULES["p"],
        "round_to": _SUM_RULES["round_to"], "p_small": _SHARE, "p_large": _SHARE,
        "q": [IsNone(), Interval(float, 1, None)], "epsilon": _NUMBERS,
        "type": [IsNone(), Options(TYPES)], "top_k": [IsNone(), Interval(int, 1, 6)],
        "mu_c": [IsNone(), Interval(float, 0, None)], "same_key": _BOOL, "use_zero_rkeys": _BOOL,
        "supp_freq": [IsNone(), Interval(int)]}
    secrets: ClassVar = frozenset({"seed", "allow_weak_seed"})
    path_params: ClassVar = frozenset({"ptable"})
    example: ClassVar = {"record_key": "rkey", "D": 3, "V": 2, "js": 1}

    def check_parameters(self) -> None:
        super().check_parameters()
        check_recipe_seed(self.seed, self.allow_weak_seed)  # never quotes the seed
        if (self.record_key is None) == (self.seed is None):
            raise ParameterError("The cell key method needs either record_key (a column of record keys) or seed "
                                 "(keys drawn from it, `sdckit seed` makes one), not both.")
        flex = [k for k in FLEX_PARAMS if getattr(self, k) is not None]
        if self.p is not None and flex:
            raise ParameterError("The cell key method for sums takes either the flex function "
                                 f"({', '.join(FLEX_PARAMS)}) or the simple approach (p), not both: found 'p' and "
                                 f"{flex[0]!r}.")

    def check_sums(self) -> None:
        """Refuse a magnitude table's parameters without the p-table (``D`` and ``V``, or a
        ``ptable`` file, not both) or an approach (``fp`` or ``p``)."""
        if self.ptable is not None:
            given = [k for k in ("D", "V", "icat", "step") if getattr(self, k) is not None]
            if given:
                raise ParameterError("The cell key method for a magnitude table takes either 'ptable' (a numeric "
                                     "p-table file) or ptable_numeric's D, V, icat, step, not both (found "
                                     f"{given[0]!r}).")
        for key in ("D", "V") if self.ptable is None else ():
            if getattr(self, key) is None:
                raise ParameterError(f"The cell key method for a magnitude table needs {key!r} (D and V of "
                                     "ptable_numeric) or 'ptable' (a numeric p-table file).")
        if self.fp is None and self.p is None:
            raise ParameterError("The cell key method for a magnitude table needs 'fp' (cellKey's flex function: its "
                                 "flex point) or 'p' (its simple approach: the noise's share of a contribution).")

    def provenance(self) -> dict[str, Any]:
        return seed_provenance(self.seed) if self.seed is not None else {"record_keys": f"column {self.record_key!r}"}

    def apply(self, records: pd.DataFrame, dimensions: list[str] | tuple[str, ...], response: str | None = None,
              weight: str | None = None, hierarchies: dict[str, Any] | None = None) -> CellKeyTableResult:
        """Perturb the table of ``records`` by ``dimensions`` (counts, or sums of ``response``;
        ``weight``ed): the cells with their original and perturbed values and cell keys, and the
        published table (codes and the perturbed count or sum only)."""
        t0 = time.perf_counter()
        dims = list(dimensions)
        frame = records
        key_col = self.record_key or "_record_key"
        if self.seed is not None:
            frame = records.copy()
            frame[key_col] = record_keys(len(frame), self.seed, self.digits)
        # the parameters given (None: not given, the method's default) and the keys' provenance
        params = {**{k: v for k, v in self.params().items() if v is not None and k != "record_key"},
                  **self.provenance()}
        if response is None:
            given = [k for k in SUM_PARAMS if getattr(self, k) is not None]
            if given:
                raise ParameterError(f"The cell key method's {given[0]!r} is for magnitude tables; give the table a "
                                     "response.")
            if self.ptable is not None:
                pt = read_ptable(self.ptable)
            elif self.D is None or self.V is None:
                raise ParameterError("The cell key method needs D and V (ptable's parameters) or ptable = a file.")
            else:
                pt = ptable(self.D, self.V, js=self.js or 0, pstay=self.pstay)
            cells = cell_key_counts(frame, dims, key_col, pt, digits=self.digits, hierarchies=hierarchies,
                                    weight=weight)
            m = cell_key_measures(cells, pt).to_dict()
            published = cells[dims + ["n_pert"] + (["weighted_pert"] if weight else [])]
            return CellKeyTableResult(cells, published, "count", m, params, time.perf_counter() - t0)
        p = self.sum_params()
        cells = cell_key_sums(frame, dims, key_col, response, p, digits=self.digits, hierarchies=hierarchies,
                              weight=weight, supp_freq=self.supp_freq)
        nz = cells["sum"].to_numpy() != 0
        # what the published sums show: the noise, or with round_to the rounded sum's change
        change = (cells["pert"] if self.round_to is None else cells["sum_pert"] - cells["sum"]).to_numpy()[nz]
        rel = np.abs(change) / np.abs(cells["sum"].to_numpy()[nz])
        m = {"cells": len(cells), "nonempty": int(nz.sum()),
             "changed": float((change != 0).mean()) if nz.any() else 0.0,
             "mean_rel": float(rel.mean()) if nz.any() else 0.0, "max_rel": float(rel.max()) if nz.any() else 0.0}
        params["derived"] = {k: v for k, v in p.to_dict().items() if k in ("separation", "even_odd", "zs", "E")}
        return CellKeyTableResult(cells, cells[dims + ["sum_pert"]], "sum", m, params, time.perf_counter() - t0)

    def sum_params(self) -> CellKeySumParams:
        """The parameters of a magnitude table (the flex function's, or the simple approach's):
        the p-table :func:`~sdckit.tabular.ptable.ptable_numeric` ``(D, V, icat, step)`` solved
        and every parameter not given at cellKey's default (also the query service's table mode's,
        for its ``[table.ckm.sums]``)."""
        self.check_sums()
        if self.ptable is not None:
            pt = read_ptable(self.ptable, kind="nums")
        else:
            pt = ptable_numeric(self.D, self.V, list(self.icat or (1, self.D)), step=self.step or 2)
        return CellKeySumParams(ptab=pt, fp=self.fp, p=self.p, round_to=self.round_to,
                                p_small=_or(self.p_small, 0.25), p_large=_or(self.p_large, 0.05), q=_or(self.q, 3.0),
                                epsilon=self.epsilon or (1.0,) * (self.top_k or 1), type=self.type or "top_contr",
                                top_k=self.top_k or 1, mu_c=_or(self.mu_c, 0.0), same_key=_or(self.same_key, True),
                                use_zero_rkeys=_or(self.use_zero_rkeys, False))

    def headline(self, result: CellKeyTableResult) -> str:
        return f"cell key method ({result.measure}s)"

    def figures(self, result: CellKeyTableResult) -> list[tuple[str, str]]:
        rows = [("cells", summary_text(len(result.cells))),
                ("non-empty cells changed", f"{result.measures['changed']:.1%}")]
        if result.measure == "count":
            return [*rows, ("mean absolute change", f"{result.measures['mean_abs']:.3g}")]
        return [*rows, ("mean relative change", f"{result.measures['mean_rel']:.3%}")]

    def verdict(self, result: CellKeyTableResult) -> tuple[bool, str]:
        """No sensitivity rule applies: the share of cells changed, each the same in every table."""
        return True, (f"cell key method: {result.measures['changed']:.1%} of the non-empty cells changed, each the "
                      "same in every table from these record keys (no sensitivity rule applies)")


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value
