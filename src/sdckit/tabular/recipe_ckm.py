"""The table recipe's cell key method: ``[protection] method = "cell_key"`` (issue 30 section 2).

::

    [table]
    input = "persons.csv"          # records
    dimensions = ["region", "sex"]
    # response = "income"          # a magnitude table (cellKey's flex function); omit for counts
    # weight = "w"

    [protection]
    method = "cell_key"

    [cell_key]
    record_key = "rkey"            # a column of record keys in [0, 1); or seed = "hex" (`sdckit seed`):
                                   # keys drawn from it in record order (keep it secret, never written)
    digits = 8                     # decimals of the keys
    D = 5                          # counts: ptable(D, V, js, pstay), or ptable = "ptable.txt" (pt_export)
    V = 3
    js = 2
    # magnitude tables: ptable_numeric(D, V, icat, step) and the flex function's parameters
    # icat = [1, 5]; step = 2; fp = 1000; p_small = 0.2; p_large = 0.03; q = 2
    # epsilon = [1, 0.5, 0.3]; type = "top_contr"; top_k = 3; mu_c = 0; same_key = true
    # use_zero_rkeys = false; supp_freq = 3

Writes the confidential cell file (codes, original and perturbed values, cell keys), the
published table (codes and the perturbed count or sum only) and a manifest without the seed or
the keys. The records are read whole (the keys are per record).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.provenance import UNPUBLISHED, created_timestamp, fingerprint
from sdckit.core.random import seed_provenance
from sdckit.core.version import __version__
from sdckit.io import read, write, write_text_atomic
from sdckit.tabular.cellkey import cell_key_counts, cell_key_measures, record_keys
from sdckit.tabular.cellkey_sums import TYPES, CellKeySumParams, cell_key_sums
from sdckit.tabular.ptable import ptable, ptable_numeric, read_ptable

#: The keys of ``[cell_key]`` (None: any value, checked below; a tuple: the choices).
CELL_KEY_KEYS: dict[str, tuple | None] = {
    "record_key": None, "seed": None, "allow_weak_seed": None, "digits": None, "ptable": None, "D": None,
    "V": None, "js": None, "pstay": None, "icat": None, "step": None, "fp": None, "p_small": None,
    "p_large": None, "q": None, "epsilon": None, "type": TYPES, "top_k": None, "mu_c": None,
    "same_key": (True, False), "use_zero_rkeys": (True, False), "supp_freq": None}
_SUM_KEYS = ("icat", "step", "fp", "p_small", "p_large", "q", "epsilon", "type", "top_k", "mu_c", "same_key",
             "use_zero_rkeys", "supp_freq")


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

    @property
    def verdict(self) -> str:
        return (f"cell key method: {self.measures['changed']:.1%} of the non-empty cells changed, each the same "
                "in every table from these record keys (no sensitivity rule applies)")

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "measure": self.measure, "cells": len(self.cells),
                "measures": self.measures, "parameters": self.parameters, "seconds": round(self.seconds, 3)}


def _num(sec: dict, key: str, default: Any = None) -> Any:
    val = sec.get(key, default)
    if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float))):
        raise ParameterError(f"[cell_key] {key} must be a number. Got {val!r} instead.")
    return val


def run_cell_key_recipe(recipe: Any, hierarchy: Callable[..., Any]) -> tuple[CellKeyTableResult, dict[str, Path]]:
    """Perturb the recipe's table by the cell key method and write its files (see the module
    docstring). ``hierarchy`` builds a dimension's hierarchy from the recipe (the recipe
    module's ``recipe_hierarchy``)."""
    t0 = time.perf_counter()
    sec = dict(recipe.options)
    where = f"Recipe {recipe.path}"
    if recipe.linked or recipe.rules:
        raise ParameterError(f"{where}: the cell key method perturbs one [table] and takes no [[rule]] "
                             "(use supp_freq and mu_c in [cell_key] for sensitive sums).")
    spec = recipe.tables[0]
    if ("record_key" in sec) == ("seed" in sec):
        raise ParameterError(f"{where}: [cell_key] needs either record_key (a column of record keys) or seed "
                             "(keys drawn from it, `sdckit seed` makes one), not both.")
    frame = read(spec.input)
    for d in spec.dimensions:
        if d not in frame.columns:
            raise DataError(f"Dimension column {d!r} is not in {spec.input.name}.")
        frame[d] = frame[d].astype(str).str.strip()
    digits = int(_num(sec, "digits", 8))
    key_col = sec.get("record_key", "_record_key")
    if "seed" in sec:
        frame[key_col] = record_keys(len(frame), sec["seed"], digits)
    hier = {d: hierarchy(spec.hierarchies.get(d), d, spec.base, sorted(frame[d].unique()), None)
            for d in spec.dimensions}
    dims = list(spec.dimensions)
    params = {k: v for k, v in sec.items() if k not in ("seed", "allow_weak_seed", "record_key")}
    params.update(seed_provenance(sec["seed"]) if "seed" in sec else {"record_keys": f"column {key_col!r}"})
    if spec.response is None:
        extra = [k for k in _SUM_KEYS if k in sec]
        if extra:
            raise ParameterError(f"{where}: [cell_key] {extra[0]} is for magnitude tables; give [table] response.")
        if "ptable" in sec:
            pt = read_ptable(spec.base / sec["ptable"])
        else:
            if "D" not in sec or "V" not in sec:
                raise ParameterError(f"{where}: [cell_key] needs D and V (ptable's parameters) or ptable = a file.")
            pt = ptable(sec["D"], _num(sec, "V"), js=sec.get("js", 0), pstay=_num(sec, "pstay"))
        cells = cell_key_counts(frame, dims, key_col, pt, digits=digits, hierarchies=hier, weight=spec.weight)
        m = cell_key_measures(cells, pt).to_dict()
        published = cells[dims + ["n_pert"] + (["weighted_pert"] if spec.weight else [])]
        return _write(recipe, CellKeyTableResult(cells, published, "count", m, params, time.perf_counter() - t0))
    if "D" not in sec or "V" not in sec or "fp" not in sec:
        raise ParameterError(f"{where}: [cell_key] for a magnitude table needs D, V (ptable_numeric's) and fp "
                             "(the flex point).")
    pt = ptable_numeric(sec["D"], _num(sec, "V"), sec.get("icat", [1, sec["D"]]), step=sec.get("step", 2))
    eps = sec.get("epsilon", [1.0] * (sec.get("top_k") or 1))
    try:
        p = CellKeySumParams(ptab=pt, fp=_num(sec, "fp"), p_small=_num(sec, "p_small", 0.25),
                             p_large=_num(sec, "p_large", 0.05), q=_num(sec, "q", 3.0), epsilon=tuple(eps),
                             type=sec.get("type", "top_contr"), top_k=sec.get("top_k", 1),
                             mu_c=_num(sec, "mu_c", 0.0), same_key=sec.get("same_key", True),
                             use_zero_rkeys=sec.get("use_zero_rkeys", False))
    except ParameterError as exc:
        raise ParameterError(f"{where}: [cell_key] {exc}") from None
    cells = cell_key_sums(frame, dims, key_col, spec.response, p, digits=digits, hierarchies=hier,
                          weight=spec.weight, supp_freq=sec.get("supp_freq"))
    nz = cells["sum"].to_numpy() != 0
    rel = np.abs(cells["pert"].to_numpy()[nz]) / np.abs(cells["sum"].to_numpy()[nz])
    m = {"cells": len(cells), "nonempty": int(nz.sum()),
         "changed": float((cells["pert"].to_numpy()[nz] != 0).mean()) if nz.any() else 0.0,
         "mean_rel": float(rel.mean()) if nz.any() else 0.0, "max_rel": float(rel.max()) if nz.any() else 0.0}
    params["derived"] = {k: v for k, v in p.to_dict().items() if k in ("separation", "even_odd", "zs", "E")}
    published = cells[dims + ["sum_pert"]]
    return _write(recipe, CellKeyTableResult(cells, published, "sum", m, params, time.perf_counter() - t0))


def _write(recipe: Any, result: CellKeyTableResult) -> tuple[CellKeyTableResult, dict[str, Path]]:
    out = recipe.out_dir
    out.mkdir(parents=True, exist_ok=True)
    cells_path = Path(recipe.cells_name)
    paths = {"cells": out / f"{cells_path.stem}{cells_path.suffix or '.csv'}", "published": out / "published.csv",
             "manifest": out / "manifest.json"}
    write(result.cells, paths["cells"])
    write(result.published, paths["published"])
    recipe_dict = {"protection": "cell_key", **{k: v for k, v in recipe.tables[0].to_dict().items() if k != "name"},
                   "cell_key": result.parameters}
    manifest = {"sdckit": __version__, "created": created_timestamp(), "kind": "table", "protection": "cell_key",
                "recipe": recipe_dict, "input_fingerprint": UNPUBLISHED,
                "published_fingerprint": fingerprint(result.published.astype(str)), "result": result.to_dict()}
    write_text_atomic(paths["manifest"], json.dumps(manifest, indent=2, default=str) + "\n")
    return result, paths
