"""Imports point down the layers (DESIGN.md section 1; issue 12 section 6).

Read from the source with ``ast`` (no import needed): every ``sdckit.X`` a module imports, at
module level or inside a function, must be its own package or one of a lower layer, and method
families never import one another (they share algorithms through ``core``), with the one stated
exception: dp's (k,epsilon)-anonymity is built on anonymity's search (seed 004).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from import_graph import circles, module_graph, read_sources

import sdckit

SOURCE = Path(sdckit.__file__).resolve().parent

#: Layer of each top-level module or package of sdckit; a module may import only lower layers.
LAYER = {
    "core": 0,
    "io": 1, "methods": 1,
    "utility": 2, "permutation": 2, "masking": 2, "synthetic": 2, "engine": 2,
    "risk": 3, "anonymity": 3, "tabular": 3,
    "dp": 4,
    "pipeline": 5, "query": 5,
    "report": 6, "recipe_budget": 6,
    "recipe": 7,
    "compare": 8,
    "tune": 9,
    "datasets": 10, "app": 11, "cli": 12,
    "__init__": 13, "__main__": 14,
}
FAMILIES = {"masking", "synthetic", "anonymity", "dp", "tabular"}
ALLOWED_ACROSS_FAMILIES = {("dp", "anonymity")}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports() -> list[tuple[str, str, str]]:
    """(importing file, its package, imported package) for every sdckit import in the source."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE.parent).with_suffix("")
        own = _package(".".join(rel.parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sdckit":
                targets = [node.module] if node.module != "sdckit" else [f"sdckit.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "sdckit"]
            else:
                continue
            for target in targets:
                found.append((str(rel), own, _package(target)))
    return found


def _violations(imports: list[tuple[str, str, str]]) -> list[str]:
    bad = []
    for where, own, target in imports:
        if own == target or target == "__version__":
            continue
        if own not in LAYER or target not in LAYER:
            bad.append(f"{where}: {own} -> {target}: place the new package in LAYER")
        elif LAYER[target] >= LAYER[own] and own not in ("__init__", "__main__"):
            bad.append(f"{where}: {own} (layer {LAYER[own]}) imports {target} (layer {LAYER[target]})")
        elif own in FAMILIES and target in FAMILIES and (own, target) not in ALLOWED_ACROSS_FAMILIES:
            bad.append(f"{where}: family {own} reaches into family {target}")
    return bad


def test_every_import_points_down():
    assert _violations(_imports()) == []


def test_core_imports_nothing_above_it():
    assert [(w, t) for w, own, t in _imports() if own == "core" and t != "core"] == []


@pytest.mark.parametrize("edge, message", [
    (("src/sdckit/pipeline", "pipeline", "report"), "imports report"),
    (("src/sdckit/anonymity/microaggregation", "anonymity", "masking"), "reaches into family masking"),
    (("src/sdckit/core/provenance", "core", "report"), "imports report"),
    (("src/sdckit/newthing/x", "newthing", "core"), "place the new package"),
])
def test_the_check_finds_upward_imports(edge, message):
    """The two upward imports issue 12 found, and others, are caught: the test can fail."""
    (violation,) = _violations([edge])
    assert message in violation


# ----------------------------------------------------------------------------- issue 29 item 7
def _module_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Edges between sdckit modules and the private names imported from another module
    (``import_graph.module_graph``, shared with benchmarks/contract_figures.py)."""
    return module_graph(read_sources(SOURCE))


#: Circles and private imports not yet taken apart (issue 29 item 7: none left); the tests below
#: fail when a new one appears.
KNOWN_CIRCLES: set[frozenset[str]] = set()
KNOWN_PRIVATE: set[tuple[str, str]] = set()


def test_no_new_import_circle():
    assert circles(_module_graph()[0]) == KNOWN_CIRCLES


def test_no_private_name_imported_from_another_module():
    assert {(importer, name) for importer, _, name in _module_graph()[1]} == KNOWN_PRIVATE


def test_the_circle_check_finds_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == {frozenset({"a", "b", "c"})}
