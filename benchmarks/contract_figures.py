"""The figures of issue 29 ("one contract for every family") at a git revision, or side by side
at two: source files over 500 lines, hand-written ``def to_dict``, ``raise ParameterError(``
(hand-written validation messages), import circles, private names imported from another module,
and the classes (or type aliases) named ``Hierarchy`` or ``Rule``.

Read from git (``git cat-file``, as ``git show REV:path``): nothing is checked out or imported, so
any revision can be measured from any checkout. The import circles and private imports are
counted by ``tests/import_graph.py``, the code ``tests/test_layering.py`` runs::

    python benchmarks/contract_figures.py                 # HEAD
    python benchmarks/contract_figures.py 9c75a95         # one revision
    python benchmarks/contract_figures.py --before 9c75a95 --after HEAD
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from import_graph import circles, module_graph  # noqa: E402  (tests/ is not a package)

#: Where the library's source is in the repository, and the size a file should stay under.
PACKAGE = "src/sdckit"
LONG = 500
#: Class names issue 29 item 7 wants to mean one idea each.
AMBIGUOUS = ("Hierarchy", "Rule")


def git(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], input=data, capture_output=True, check=True).stdout


def sources_at(revision: str) -> dict[str, str]:
    """``{path below src/ ("sdckit/..."): text}`` of every ``.py`` of the package at ``revision``."""
    paths = [p for p in git("ls-tree", "-r", "--name-only", revision, "--", PACKAGE).decode().splitlines()
             if p.endswith(".py")]
    out = git("cat-file", "--batch", data="".join(f"{revision}:{p}\n" for p in paths).encode())
    sources, at = {}, 0
    for path in paths:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        sources[path.removeprefix("src/")] = out[header_end + 1:header_end + 1 + size].decode("utf-8")
        at = header_end + 1 + size + 1
    return sources


def defined_names(text: str) -> list[str]:
    """The names a module defines as a class (anywhere) or binds at module level (a type alias
    ``Rule = Constraint | ...``); an old name served by a module ``__getattr__`` is not one."""
    tree = ast.parse(text)
    names = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def figures(sources: dict[str, str]) -> dict[str, Any]:
    """The figures of one revision's source: each a number, or a list whose length is the number."""
    long_files = sorted(((len(text.splitlines()), path) for path, text in sources.items() if
                         len(text.splitlines()) > LONG), reverse=True)
    edges, private = module_graph(sources)
    defined = [f"{path}:{name}" for path, text in sources.items() for name in defined_names(text)
               if name in AMBIGUOUS]
    return {
        f"source files over {LONG} lines": [f"{path} ({n})" for n, path in long_files],
        "hand-written def to_dict": sum(len(re.findall(r"^\s*def to_dict\(", t, re.M)) for t in sources.values()),
        "raise ParameterError(": sum(t.count("raise ParameterError(") for t in sources.values()),
        "import circles": sorted(" <-> ".join(sorted(c)) for c in circles(edges)),
        "private names imported across modules": sorted({f"{m} <- {name}" for m, _, name in private}),
        f"{'/'.join(AMBIGUOUS)} defined (classes, aliases)": sorted(defined),
        "modules in src/sdckit": len(sources),
    }


def label(revision: str) -> str:
    return f"{revision} ({git('rev-parse', '--short', revision).decode().strip()})"


def report(revisions: list[str]) -> str:
    """The table of figures, one column a revision, then what each listed figure lists."""
    measured = [figures(sources_at(r)) for r in revisions]
    heads = [label(r) for r in revisions]
    rows = [[name, *(str(len(f[name]) if isinstance(f[name], list) else f[name]) for f in measured)]
            for name in measured[0]]
    widths = [max(len(x) for x in column) for column in zip(["figure", *heads], *rows)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(["figure", *heads], widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(row, widths)))
              for row in rows]
    for head, f in zip(heads, measured):
        for name, value in f.items():
            if isinstance(value, list) and value:
                lines += ["", f"{name} at {head}:", *(f"  {item}" for item in value)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", nargs="?", default="HEAD", help="the revision to measure (default HEAD)")
    parser.add_argument("--before", help="measure this revision beside --after (default HEAD)")
    parser.add_argument("--after", default="HEAD", help="with --before: the later revision (default HEAD)")
    args = parser.parse_args(argv)
    print(report([args.before, args.after] if args.before else [args.revision]))


if __name__ == "__main__":
    main()
