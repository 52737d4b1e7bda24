"""The import graph of sdckit's source, from the text alone (``ast``; nothing is imported): edges
between modules, private names imported across modules, and import circles (issue 29 item 7).

Shared by ``tests/test_layering.py`` (the source on disk) and ``benchmarks/contract_figures.py``
(the source at any git revision), so that both count the same way::

    from import_graph import circles, module_graph, read_sources

    edges, private = module_graph(read_sources(Path("src/sdckit")))
    circles(edges)   # set of frozensets of module names
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path


def read_sources(package: Path) -> dict[str, str]:
    """``{path relative to the package's parent, as posix: text}`` of every ``.py`` under ``package``
    (``src/sdckit`` gives keys ``sdckit/core/lazy.py`` ...)."""
    return {path.relative_to(package.parent).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(package.rglob("*.py"))}


def module_graph(sources: Mapping[str, str]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Edges between modules and private imports of the source ``{relative path: text}``
    (:func:`read_sources`).

    Package ``__init__`` files are left out (they only re-export); every import counts, at module
    level or inside a function, except those under ``if TYPE_CHECKING`` (they never run).

    Returns
    -------
    edges : dict
        Each module (dotted name) -> the modules it imports.
    private : list of (importer, module, name)
        Every private name (one leading underscore) imported from another module.
    """
    modules = {}
    for path in sorted(sources):
        name = ".".join(Path(path).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        if Path(path).name == "__init__.py":
            continue
        tree = ast.parse(sources[path])
        typing_only = {id(n) for block in ast.walk(tree)  # ``if TYPE_CHECKING:`` imports never run
                       if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
                       for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sdckit")):
                continue
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                target = target if target in modules else node.module
                if target != name and target in modules and Path(modules[target]).name != "__init__.py":
                    edges[name].add(target)
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    private.append((name, node.module, alias.name))
    return edges, private


def circles(edges: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found
