"""The table recipe's cell key method: ``[protection] method = "cell_key"`` (issue 30 section 2).

::

    [table]
    input = "persons.csv"          # records
    dimensions = ["region", "sex"]
    # response = "income"          # a magnitude table (cellKey's flex function or simple approach); omit for counts
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
    # magnitude tables: ptable_numeric(D, V, icat, step) (or ptable = "nums.txt", a numeric
    # p-table in pt_export's format) and the flex function's parameters
    # icat = [1, 5]; step = 2; fp = 1000; p_small = 0.2; p_large = 0.03; q = 2
    # or, instead of fp, p_small, p_large and q, cellKey's simple approach: p = 0.1
    # epsilon = [1, 0.5, 0.3]; type = "top_contr"; top_k = 3; mu_c = 0; same_key = true
    # use_zero_rkeys = false; supp_freq = 3
    # round_to = 1                 # publish the sums rounded to a multiple of 1 (default: unrounded)

Writes the confidential cell file (codes, original and perturbed values, cell keys), the
published table (codes and the perturbed count or sum only) and a manifest without the seed or
the keys. The records are read whole (the keys are per record).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.provenance import UNPUBLISHED, created_timestamp, fingerprint
from sdckit.core.result import plain
from sdckit.core.version import __version__
from sdckit.io import read, write, write_text_atomic
from sdckit.tabular.protection import CellKeyTableResult, section_error


def run_cell_key_recipe(recipe: Any, hierarchy: Callable[..., Any]) -> tuple[CellKeyTableResult, dict[str, Path]]:
    """Perturb the recipe's table by its cell key method (``recipe.protection``, a
    :class:`~sdckit.tabular.protection.CellKey`) and write its files (see the module docstring).
    ``hierarchy`` builds a dimension's hierarchy from the recipe (the recipe module's
    ``recipe_hierarchy``)."""
    where = f"Recipe {recipe.path}"
    if recipe.linked or recipe.rules:
        raise ParameterError(f"{where}: the cell key method perturbs one [table] and takes no [[rule]] "
                             "(use supp_freq and mu_c in [cell_key] for sensitive sums).")
    spec = recipe.tables[0]
    frame = read(spec.input)
    for d in spec.dimensions:
        if d not in frame.columns:
            raise DataError(f"Dimension column {d!r} is not in {spec.input.name}.")
        frame[d] = frame[d].astype(str).str.strip()
    hier = {d: hierarchy(spec.hierarchies.get(d), d, spec.base, sorted(frame[d].unique()), None)
            for d in spec.dimensions}
    try:
        result = recipe.protection.apply(frame, spec.dimensions, spec.response, spec.weight, hier)
    except ParameterError as exc:
        raise section_error(exc, "[cell_key]", where) from None
    return _write(recipe, result)


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
    write_text_atomic(paths["manifest"], json.dumps(plain(manifest), indent=2) + "\n")
    return result, paths
