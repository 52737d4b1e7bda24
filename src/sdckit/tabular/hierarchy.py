"""Hierarchies of a table's dimensions: leaves, subtotals and the grand total.

A dimension's codes form a tree: every code but the root (the grand total, whose code the user
gives, e.g. ``Total``) has one parent, and a parent's value is the sum of its children's (the
table's equations, DESIGN.md section 6). Built from a ``{child: parent}`` mapping, from code
lengths (a code's parents are its prefixes, as tau-ARGUS's ``<HIERLEVELS>``) or from a tau-ARGUS
``.hrc`` file (tau-ARGUS user's manual 4.2, section 5.2).

A :class:`DimensionHierarchy` is a table dimension's code tree; it is not the generalization
hierarchy of microdata recoding (:class:`sdckit.core.hierarchy.Hierarchy`: a value -> its coarser
levels, as ARX's). Until issue 29 both were called ``Hierarchy``; ``Hierarchy`` and
``as_hierarchy`` here and on ``sdckit.tabular`` still work for one release, with a
:class:`FutureWarning`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.lazy import renamed_attributes
from sdckit.core.params import Satisfies, validated
from sdckit.io.tauargus import levels_hierarchy, read_hrc


@dataclass(frozen=True)
class DimensionHierarchy:
    """A tree of codes; ``codes[0]`` is the root (grand total), the others in depth-first order.

    Attributes
    ----------
    codes : tuple of str
        Every code, root first, then depth-first (children in the order first given).
    parents : tuple of int
        ``parents[i]`` is the position of code ``i``'s parent in ``codes`` (-1 for the root).
    name : str or None
        The dimension's name, used in messages.
    """

    codes: tuple[str, ...]
    parents: tuple[int, ...]
    name: str | None = None
    _index: dict[str, int] = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {c: i for i, c in enumerate(self.codes)})

    # ---------------------------------------------------------------- builders
    @classmethod
    def from_parents(cls, parents: Mapping[Any, Any], name: str | None = None,
                     total: str | None = None) -> "DimensionHierarchy":
        """The hierarchy of a ``{child: parent}`` mapping.

        The root is the one parent that is nobody's child. When the mapping has several such
        top codes, ``total`` (the grand total's code) must be given and becomes their parent.

        Raises
        ------
        DataError
            A code that is its own ancestor (a cycle), or several roots and no ``total``.
        """
        where = f" of dimension {name!r}" if name else ""
        pairs = {str(c).strip(): str(p).strip() for c, p in parents.items()}
        if not pairs:
            raise DataError(f"The hierarchy{where} is empty; give at least one child -> parent pair.")
        roots = list(dict.fromkeys(p for p in pairs.values() if p not in pairs))
        if total is not None:
            total = str(total)
            if total in pairs:
                raise DataError(f"The hierarchy{where} gives the total {total!r} a parent; the "
                                "grand total is the root.")
            for r in roots:
                if r != total:
                    pairs[r] = total
            roots = [total]
        if not roots:
            raise DataError(f"The hierarchy{where} has no root (every code has a parent: a cycle).")
        if len(roots) > 1:
            raise DataError(f"The hierarchy{where} has {len(roots)} top codes "
                            f"({', '.join(map(repr, roots[:3]))}...); pass total= to place them under "
                            "a grand total.")
        children: dict[str, list[str]] = {}
        for c, p in pairs.items():
            children.setdefault(p, []).append(c)
        codes: list[str] = []
        parent_pos: list[int] = []
        stack: list[tuple[str, int]] = [(roots[0], -1)]
        while stack:
            code, par = stack.pop()
            codes.append(code)
            parent_pos.append(par)
            me = len(codes) - 1
            for ch in reversed(children.get(code, [])):
                stack.append((ch, me))
        if len(codes) != len(pairs) + 1:
            seen = set(codes)
            lost = next(c for c in pairs if c not in seen)
            raise DataError(f"The hierarchy{where} has a cycle through code {lost!r}.")
        return cls(tuple(codes), tuple(parent_pos), name)

    @classmethod
    def flat(cls, codes: Iterable[Any], total: str = "Total", name: str | None = None) -> "DimensionHierarchy":
        """Every code directly under the grand total ``total``."""
        leaves = [str(c).strip() for c in dict.fromkeys(codes)]
        if total in leaves:
            raise DataError(f"Dimension {name!r} has a code equal to the total's code {total!r}; "
                            "pass another total=.")
        return cls.from_parents({c: total for c in leaves}, name=name)

    @classmethod
    def from_lengths(cls, codes: Iterable[Any], lengths: Iterable[int], total: str = "Total",
                     name: str | None = None) -> "DimensionHierarchy":
        """Codes whose parents are their prefixes: ``lengths=[1, 1, 2]`` puts ``3410`` under
        ``341``, under ``34``, under ``3``, under ``total`` (tau-ARGUS ``<HIERLEVELS>``)."""
        lengths = list(lengths)
        if not lengths or any(int(w) <= 0 for w in lengths):
            raise ParameterError("The 'lengths' parameter of DimensionHierarchy.from_lengths must be "
                                 f"positive widths. Got {lengths} instead.")
        return cls.from_parents(levels_hierarchy([str(c) for c in codes], lengths, total=total),
                                name=name)

    @classmethod
    def from_prefixes(cls, codes: Iterable[Any], total: str = "Total",
                      name: str | None = None) -> "DimensionHierarchy":
        """Each code under the longest other code that is a proper prefix of it (else the total)."""
        items = sorted({str(c).strip() for c in codes}, key=lambda s: (len(s), s))
        known: set[str] = set()
        pairs: dict[str, str] = {}
        for code in items:
            parent = total
            for k in range(len(code) - 1, 0, -1):
                if code[:k] in known:
                    parent = code[:k]
                    break
            pairs[code] = parent
            known.add(code)
        return cls.from_parents(pairs, name=name)

    @classmethod
    def from_hrc(cls, path: str | Path, total: str = "Total", leadstring: str = "@",
                 name: str | None = None) -> "DimensionHierarchy":
        """A tau-ARGUS ``.hrc`` file (codes indented by ``leadstring``), under ``total``."""
        return cls.from_parents(read_hrc(path, leadstring=leadstring, total=total), name=name)

    # ---------------------------------------------------------------- queries
    @property
    def total(self) -> str:
        """The grand total's code (the root)."""
        return self.codes[0]

    def __len__(self) -> int:
        return len(self.codes)

    def __contains__(self, code: object) -> bool:
        return code in self._index

    def index(self, code: str) -> int:
        """Position of ``code`` in :attr:`codes`; DataError naming the code when unknown."""
        try:
            return self._index[code]
        except KeyError:
            where = f" of dimension {self.name!r}" if self.name else ""
            raise DataError(f"Code {code!r} is not in the hierarchy{where}.") from None

    def children(self, code: str) -> list[str]:
        """The codes directly below ``code`` (empty for a leaf)."""
        i = self.index(code)
        return [self.codes[j] for j, p in enumerate(self.parents) if p == i]

    def parent(self, code: str) -> str | None:
        """The code directly above ``code`` (None for the root)."""
        p = self.parents[self.index(code)]
        return None if p < 0 else self.codes[p]

    @property
    def leaves(self) -> tuple[str, ...]:
        """Codes without children (the cells data fall into)."""
        has = set(p for p in self.parents if p >= 0)
        return tuple(c for i, c in enumerate(self.codes) if i not in has)

    @property
    def subtotals(self) -> tuple[str, ...]:
        """Codes with children, other than the root."""
        has = set(p for p in self.parents if p >= 0)
        return tuple(c for i, c in enumerate(self.codes) if i in has and i != 0)

    def is_leaf_array(self) -> np.ndarray:
        """Boolean array over :attr:`codes`: True where the code is a leaf."""
        leaf = np.ones(len(self.codes), bool)
        par = np.asarray(self.parents)
        leaf[par[par >= 0]] = False
        return leaf

    def depths(self) -> np.ndarray:
        """Depth of each code (the root 0)."""
        d = np.zeros(len(self.codes), int)
        for i, p in enumerate(self.parents):
            if p >= 0:
                d[i] = d[p] + 1
        return d

    def subtree_sizes(self) -> np.ndarray:
        """Number of codes in each code's subtree, itself included. Codes are in depth-first
        order, so the subtree of code ``i`` is the run ``codes[i:i + size[i]]``."""
        size = np.ones(len(self.codes), int)
        for i in range(len(self.parents) - 1, 0, -1):
            size[self.parents[i]] += size[i]
        return size

    def ancestors(self, code: str) -> list[str]:
        """``code``, its parent, ..., the root."""
        out, i = [], self.index(code)
        while i >= 0:
            out.append(self.codes[i])
            i = self.parents[i]
        return out

    def to_parents(self) -> dict[str, str]:
        """The ``{child: parent}`` mapping."""
        return {c: self.codes[p] for c, p in zip(self.codes, self.parents) if p >= 0}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "total": self.total, "parents": self.to_parents()}


#: The rule of a total's code: a non-empty string.
TOTAL_RULE = Satisfies(lambda v: isinstance(v, str) and v.strip() != "", "a non-empty str (a code)")


@validated(total=TOTAL_RULE)
def as_dimension_hierarchy(value: Any, name: str | None = None, codes: Iterable[Any] | None = None,
                           total: str = "Total") -> DimensionHierarchy:
    """Accept a :class:`DimensionHierarchy`, a ``{child: parent}`` mapping, a path to an ``.hrc``
    file, or None (flat: each of ``codes`` under ``total``)."""
    if isinstance(value, DimensionHierarchy):
        return value if value.name == name or name is None else DimensionHierarchy(value.codes, value.parents, name)
    if isinstance(value, Mapping):
        top = {str(p).strip() for p in value.values()} - {str(c).strip() for c in value}
        return DimensionHierarchy.from_parents(value, name=name, total=total if len(top) > 1 else None)
    if isinstance(value, (str, Path)):
        return DimensionHierarchy.from_hrc(value, total=total, name=name)
    if value is None:
        if codes is None:
            raise ParameterError(f"Dimension {name!r} needs a hierarchy (or codes to make a flat one).")
        return DimensionHierarchy.flat(codes, total=total, name=name)
    raise ParameterError(f"The hierarchy of dimension {name!r} must be a DimensionHierarchy, a "
                         f"{{child: parent}} mapping or an .hrc path. Got {type(value).__name__} instead.")


#: The names of issue 29's rename, old -> new, kept for one release (:func:`sdckit.core.lazy.renamed_attributes`).
RENAMED = {"Hierarchy": "DimensionHierarchy", "as_hierarchy": "as_dimension_hierarchy"}

__getattr__ = renamed_attributes(__name__, RENAMED)
