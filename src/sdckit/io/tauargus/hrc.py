"""tau-ARGUS hierarchies: ``.hrc`` files and code-width levels (``<HIERLEVELS>``).

An ``.hrc`` file lists the codes of a hierarchical variable, one per line, in depth-first
order; each is preceded by its depth in copies of the lead string (``@`` by default): a top
code has none, its children one, theirs two. The grand total is not written. With
``<HIERLEVELS> 3 1 1`` instead, a code's parents are its leading characters: ``34100`` lies
under ``3410``, under ``341``, under the total. Sources: tau-ARGUS user's manual (version 4.2,
section 5.2 "Hierarchy files" and 4.4.1 on ``<HIERLEVELS>``).

Both give a plain ``{child: parent}`` mapping whose root is the total code the caller names
(``Total`` by default; the ``.rda``'s ``<TOTCODE>`` through :func:`hierarchy`), the form
``sdckit.tabular`` accepts wherever it expects a hierarchy. Codes are stripped of blanks, as
everywhere in sdckit's tau-ARGUS readers (tau-ARGUS pads codes on the left to the variable's
width, so ``" 1"`` and ``"1"`` are the same code).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate
from pathlib import Path

from sdckit.core.errors import DataError, ParameterError
from sdckit.io.tauargus._text import fail, numbered_lines, read_text
from sdckit.io.tauargus.rda import TauMetadata


def read_hrc(path: str | Path, leadstring: str = "@", total: str = "Total") -> dict[str, str]:
    """Read a tau-ARGUS hierarchy file into ``{child: parent}``.

    Parameters
    ----------
    path : str or Path
        The ``.hrc`` file.
    leadstring : str
        The indentation string (the ``.rda``'s ``<HIERLEADSTRING>``; default ``@``).
    total : str
        Code of the grand total, the parent of the top-level codes (``.hrc`` files omit it).

    Returns
    -------
    dict
        ``{code: parent code}`` in file order; top-level codes map to ``total``.

    Raises
    ------
    DataError
        Missing or empty file, or a line (named by number) that has no code after its lead
        strings, is more than one level deeper than the line before it, repeats a code listed
        earlier, or uses the total's code.
    """
    if not leadstring:
        raise ParameterError("The 'leadstring' parameter of read_hrc must be a non-empty string. "
                             "Got '' instead.")
    path, text = read_text(path, "tau-ARGUS hierarchy (.hrc)")
    parents: dict[str, str] = {}
    first_line: dict[str, int] = {}
    stack: list[str] = []  # stack[d] = the latest code at depth d
    for number, line in numbered_lines(text):
        depth, rest = 0, line
        while rest.startswith(leadstring):
            depth, rest = depth + 1, rest[len(leadstring):]
        code = rest.strip()
        if not code:
            raise fail(path, number, "has no code after its lead strings")
        if depth > len(stack):
            raise fail(path, number, f"is {depth - len(stack) + 1} levels deeper than the line "
                       "before it; a code can only be one level below its parent")
        if code == total:
            raise fail(path, number, "uses the total's code; the total is not written in an "
                       ".hrc file (or pass another total=)")
        if code in first_line:
            raise fail(path, number, f"repeats a code already listed at line {first_line[code]}; "
                       "every code may appear once (rename one of them)")
        del stack[depth:]
        parents[code] = stack[-1] if stack else total
        first_line[code] = number
        stack.append(code)
    return parents


def levels_hierarchy(codes: Iterable[str], levels: Iterable[int], total: str = "Total",
                     missing: Iterable[str] = ()) -> dict[str, str]:
    """The ``{child: parent}`` mapping that ``<HIERLEVELS>`` defines on ``codes``.

    A code is left-padded with blanks to the sum of ``levels`` (as tau-ARGUS pads codes); its
    ancestors are its first ``l1``, ``l1 + l2``, ... characters; the top ones lie under
    ``total``. Missing codes (``missing``) are placed directly under the total.

    Raises
    ------
    DataError
        A code longer than the levels allow, or one whose leading level is blank.
    """
    widths = [w for w in levels if w > 0]
    if not widths:
        raise ParameterError("The 'levels' parameter of levels_hierarchy must hold a positive "
                             "width. Got none instead.")
    width = sum(widths)
    cuts = list(accumulate(widths))
    skip = {m.strip() for m in missing}
    parents: dict[str, str] = {}
    for raw in dict.fromkeys(str(c) for c in codes):
        code = raw.strip()
        if code in skip:
            parents[code] = total
            continue
        if len(code) > width:
            raise DataError(f"A code is {len(code)} characters long but the <HIERLEVELS> allow "
                            f"{width}; check the levels.")
        padded = code.rjust(width)
        parent = total
        for cut in cuts:
            node = padded[:cut].strip()
            if not node:
                raise DataError(f"A code shorter than {width} characters leaves its first "
                                "<HIERLEVELS> level blank; check the levels.")
            if node != parent:
                parents.setdefault(node, parent)
            parent = node
    return parents


def hierarchy(rda: TauMetadata, name: str, codes: Iterable[str] | None = None,
              total: str | None = None) -> dict[str, str]:
    """The hierarchy the ``.rda`` gives variable ``name``, as ``{child: parent}``.

    ``<HIERCODELIST>`` files are read with the variable's ``<HIERLEADSTRING>``; with
    ``<HIERLEVELS>`` the ``codes`` (e.g. the variable's column of microdata) are needed. A
    variable without a hierarchy is flat: each code in ``codes`` under the total. ``total``
    defaults to the variable's ``<TOTCODE>`` (``Total``). The variable's missing codes that
    occur in ``codes`` lie directly under the total, where tau-ARGUS puts them (libtauargus
    ``TauArgus.cpp``, after reading the microdata: "add Missing1 and -2" at level 1).
    """
    var = rda.variable(name)
    total = var.totcode if total is None else total
    if var.hierarchy == "file":
        kw = var.keyword("<HIERCODELIST>") or var.keyword("<HIERARCHICAL>")
        if var.hiercodelist is None:
            raise fail(rda.path, kw.line if kw else var.line, f"variable {name!r} is "
                       "<HIERARCHICAL> but names no <HIERCODELIST> file")
        parents = read_hrc(rda.referenced_file(var.hiercodelist, kw.line if kw else None),
                           var.hierleadstring, total)
        present = set() if codes is None else {str(c).strip() for c in codes}
        for code in var.missing:  # tau-ARGUS puts missing codes directly under the total
            if code in present and code not in parents:
                parents[code] = total
        return parents
    if codes is None:
        raise ParameterError(f"The 'codes' parameter of hierarchy is needed for {name!r}: its "
                             "hierarchy is built from the codes present. Got None instead.")
    if var.hierarchy == "levels":
        try:
            return levels_hierarchy([c for c in codes if str(c).strip() != total], var.hierlevels, total,
                                    var.missing)
        except DataError as exc:
            raise DataError(f"Variable {name!r} of {str(rda.path)!r}: {exc}") from None
    # a table's cells (.tab) carry the total's code too: it is the root, not a child of itself
    return {c: total for c in dict.fromkeys(str(c).strip() for c in codes) if c != total}
