"""The Tables screen's form, read into what the library takes (issue 31, screen 5): a dimension's
hierarchy as typed, and the cell key method's parameters as a table recipe names them.

A hierarchy is typed in one of three ways, each turned into what a table recipe's
``[table.hierarchies]`` holds and then read by the recipe's own
:func:`sdckit.tabular.recipe.recipe_hierarchy` (the same code as ``sdckit table protect``):

* the path of a file, a tau-ARGUS ``.hrc`` or a CSV with ``child,parent`` columns — the full
  path, or relative to the folder of the data file the session opened (a recipe's ``"region.hrc"``);
* code lengths, numbers only (``2, 1``: a code's parents are its prefixes, tau-ARGUS's
  ``<HIERLEVELS>``; a recipe's ``{lengths = [2, 1]}``);
* a level mapping, one line per parent: ``PARENT: CHILD, CHILD, ...`` (a recipe's
  ``{parents = {CHILD = PARENT, ...}}``); top codes go under the grand total ``Total``.

The hierarchies are then built and checked by the library: :func:`~sdckit.tabular.dimensions.hierarchies_for`
(as :meth:`~sdckit.tabular.Table.from_microdata` builds them) and every record's code a leaf of
its hierarchy (:func:`~sdckit.tabular.dimensions.leaf_positions`), so a bad hierarchy is one line on
the form before any job starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sdckit.core.errors import ParameterError, SdcError
from sdckit.tabular.dimensions import hierarchies_for, leaf_positions
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.recipe import recipe_hierarchy

__all__ = ["BOOL_CHOICES", "CKM_COUNT_FIELDS", "CKM_SUM_FIELDS", "TOTAL", "cell_key_parameters", "dimension_trees",
           "hierarchy_field", "hierarchy_spec", "parameter_text"]

#: The grand total's code of every dimension (the recipe's default).
TOTAL = "Total"
#: Suffixes of a hierarchy file (what :func:`recipe_hierarchy` reads).
HIERARCHY_FILES = (".hrc", ".csv")
#: The cell key method's fields for counts: form field -> (parameter as the recipe names it, kind, default).
CKM_COUNT_FIELDS: dict[str, tuple[str, str, str]] = {
    "ckm_d": ("D", "int", "3"), "ckm_v": ("V", "float", "2"), "ckm_js": ("js", "int", "1")}
#: The cell key method's fields for sums (cellKey's flex function; ``ptable_numeric``'s D, V,
#: icat, step): form field -> (parameter, kind, default); an empty field takes cellKey's default.
CKM_SUM_FIELDS: dict[str, tuple[str, str, str]] = {
    "ckm_fp": ("fp", "float", ""), "ckm_icat": ("icat", "ints", ""), "ckm_step": ("step", "int", ""),
    "ckm_p_small": ("p_small", "float", ""), "ckm_p_large": ("p_large", "float", ""), "ckm_q": ("q", "float", ""),
    "ckm_epsilon": ("epsilon", "floats", ""), "ckm_type": ("type", "text", ""), "ckm_top_k": ("top_k", "int", ""),
    "ckm_mu_c": ("mu_c", "float", ""), "ckm_same_key": ("same_key", "bool", ""),
    "ckm_use_zero_rkeys": ("use_zero_rkeys", "bool", ""), "ckm_supp_freq": ("supp_freq", "int", "")}
#: The choices of a true/false parameter: "" is the method's default.
BOOL_CHOICES = {"": "default", "true": "true", "false": "false"}
_NUMBERS_ONLY = re.compile(r"[\d\s,]+")


def hierarchy_field(dimension: str) -> str:
    """The form field of ``dimension``'s hierarchy."""
    return f"hierarchy:{dimension}"


def _fail(dimension: str, message: str) -> ParameterError:
    return ParameterError(f"The hierarchy of {dimension!r}: " + " ".join(message.split()))


def hierarchy_spec(text: str, dimension: str, folder: Path | None) -> Any:
    """What a table recipe's ``[table.hierarchies]`` gives for the hierarchy typed as ``text``
    (see the module docstring): a file's full path, ``{"lengths": [...]}`` or ``{"parents":
    {child: parent}}``; None when empty. ``folder``: where a relative path is looked for (the
    data file's folder; None for an upload, whose hierarchy file needs its full path)."""
    text = text.strip()
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and lines[0].lower().endswith(HIERARCHY_FILES):
        path = Path(lines[0]).expanduser()
        if not path.is_absolute():
            if folder is None:
                raise _fail(dimension, f"give the full path of {lines[0]!r} (the data set was uploaded, it has no "
                            "folder).")
            path = folder / path
        if not path.is_file():
            raise _fail(dimension, f"no file at {str(path)!r}; give the path of a tau-ARGUS .hrc or a child,parent "
                        ".csv on this machine.")
        return str(path.resolve())
    if _NUMBERS_ONLY.fullmatch(text):
        return {"lengths": [int(w) for w in re.split(r"[\s,]+", text) if w]}
    parents: dict[str, str] = {}
    where: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        parent, colon, rest = line.partition(":")
        children = [c.strip() for c in rest.split(",") if c.strip()]
        if not colon or not parent.strip() or not children:
            raise _fail(dimension, f"line {number} ({line[:40]!r}) is not PARENT: CHILD, CHILD, ...; type a level "
                        "mapping, code lengths (e.g. 2, 1) or the path of an .hrc or .csv file.")
        for child in children:
            if child in where:
                raise _fail(dimension, f"code {child!r} has two parents (lines {where[child]} and {number}).")
            parents[child], where[child] = parent.strip(), number
    return {"parents": parents}


def dimension_trees(frame: pd.DataFrame, dimensions: Sequence[str], texts: Mapping[str, str],
                    folder: Path | None) -> tuple[DimensionHierarchy, ...]:
    """The hierarchy of each dimension, as typed in ``texts`` (a dimension without text is
    flat under :data:`TOTAL`), read by the table recipe's :func:`recipe_hierarchy` and built by
    :func:`hierarchies_for`; every record's code must be a leaf of its dimension's hierarchy.
    One-line :class:`ParameterError` naming the dimension for anything wrong."""
    given: dict[str, Any] = {}
    for d in dimensions:
        spec = hierarchy_spec(texts.get(d, ""), d, folder)
        if spec is None:
            continue
        codes = sorted(frame[d].dropna().astype(str).str.strip().unique())
        try:
            given[d] = recipe_hierarchy(spec, d, Path("."), codes, None)
        except SdcError as exc:
            raise _fail(d, str(exc)) from None
    trees: list[DimensionHierarchy] = []
    for d in dimensions:
        try:
            tree = hierarchies_for([d], {d: given[d]} if d in given else None, frame, TOTAL)[0]
            leaf_positions(d, sorted(frame[d].dropna().astype(str).str.strip().unique()), tree)
        except SdcError as exc:
            raise _fail(d, str(exc)) from None
        trees.append(tree)
    return tuple(trees)


def _value(text: str, kind: str, name: str) -> Any:
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind in ("ints", "floats"):
            return tuple((int if kind == "ints" else float)(x) for x in re.split(r"[\s,]+", text) if x)
    except ValueError:
        noun = {"int": "a whole number", "float": "a number", "ints": "whole numbers", "floats": "numbers"}[kind]
        raise ParameterError(f"The cell key method's {name} must be {noun} (a list separated by commas where "
                             f"several); got {text!r}.") from None
    if kind == "bool":
        if text not in BOOL_CHOICES:
            raise ParameterError(f"The cell key method's {name} must be true or false; got {text!r}.")
        return text == "true"
    return text


def cell_key_parameters(form: Mapping[str, str], sums: bool) -> dict[str, Any]:
    """The cell key method's parameters given on the form, as a table recipe's ``[cell_key]``
    names them: D and V always (the p-table's), js for counts, the flex function's for sums
    (``sums``: the table has a response); an empty field is not given (the method's default)."""
    fields = {**CKM_COUNT_FIELDS, **CKM_SUM_FIELDS} if sums else CKM_COUNT_FIELDS
    given: dict[str, Any] = {}
    for key, (name, kind, _) in fields.items():
        if sums and name == "js":  # the counts' p-table only
            continue
        text = form.get(key, "").strip()
        if text:
            given[name] = _value(text, kind, name)
        elif name in ("D", "V") or (name == "js" and not sums):
            raise ParameterError(f"Give the p-table's {name} for the cell key method.")
    if sums and "fp" not in given:
        raise ParameterError("Give fp, the flex function's point, for the cell key method on sums (e.g. 1000: "
                             "cells whose largest contribution is above it get relative noise).")
    return given


def parameter_text(value: Any) -> str:
    """A parameter as the form shows it again (lists comma-separated, booleans true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(parameter_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)
