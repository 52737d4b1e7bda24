"""Sensitivity rules: which cells are primary (unsafe) and how much protection each needs.

Each rule is a frozen value; rules combine with ``|`` or in a list (a cell is primary when any
rule says so; its protection levels are the largest those rules ask). Definitions follow
Hundepool et al. (2012), *Statistical Disclosure Control*, Wiley, ch. 4.2 (sensitivity rules)
and 4.3 (protection levels), and the tau-ARGUS 4.2 manual (section 4.2); DESIGN.md section 6
writes them out. With x1 >= x2 >= ... the largest contributions and X the cell total:

- ``MinFrequency(n, share)``: primary when 0 < contributors < n; levels = share x |X|.
- ``Dominance(n, k)``: primary when x1 + ... + xn > k/100 X; levels = 100/k (x1+...+xn) - X.
- ``PPercent(p)``: primary when X - x1 - x2 < p/100 x1; levels = p/100 x1 - (X - x1 - x2).
- ``PQ(p, q)``: primary when p/100 x1 > q/100 (X - x1 - x2); levels = p/100 x1 - q/100 (X - x1 - x2).
- ``Manual(cells, share)``: the cells listed; levels = share x |X|.
- ``GroupDisclosure(attributes, share)``: a cell holding all the contributors of its parent
  along an attribute dimension (a group all of whose members share the attribute); levels =
  share x |X|.

Empty cells (no contributor, structural zeros) are never primary. Upper and lower levels are
equal (symmetric protection, as tau-ARGUS); the lower level is capped at what the intruder's
lower bound allows (X when values are non-negative; Fischetti & Salazar 2001, section 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdckit.core.errors import ParameterError
from sdckit.core.params import Interval, IsNone, ParamRule, validate_params, validated
from sdckit.tabular.precision import LEVEL_FLOOR, value_scale

if TYPE_CHECKING:
    from sdckit.tabular.table import Table


@dataclass(frozen=True)
class Sensitivity:
    """What the rules say of each cell: ``primary`` mask, ``upper``/``lower`` protection levels
    (0 where not primary) and ``reason`` (the first rule's name that flags each cell, or '')."""

    primary: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    reason: np.ndarray


#: A protection share of the cell value: above 0, at most 1.
SHARE = Interval(float, 0, 1, closed="right")
#: A number of largest contributions or of contributors: an int >= 1.
COUNT = Interval(int, 1, None)


class Rule:
    """Base of the sensitivity rules; ``rule | other`` combines them.

    A rule declares its parameters' rules once in :attr:`constraints` (as the methods do,
    :mod:`sdckit.core.params`); they are checked when the rule is built, with the one message
    template (``The 'n' parameter of MinFrequency must be an int >= 1. Got 0 instead.``).
    """

    name = "rule"
    #: The parameter rule of each numeric parameter, checked on construction.
    constraints: ClassVar[Mapping[str, ParamRule]] = {}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, {k: getattr(self, k) for k in self.constraints}, self.constraints)

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        """(primary mask, protection level) over ``table.cells``."""
        raise NotImplementedError

    def __or__(self, other: "Rule") -> "RuleSet":
        return RuleSet(tuple(_flatten([self, other])))

    def to_dict(self) -> dict[str, Any]:
        d = {"rule": self.name}
        d.update({k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()})
        return d


def _flatten(rules: Iterable[Any]) -> list[Rule]:
    out: list[Rule] = []
    for r in rules:
        if isinstance(r, RuleSet):
            out.extend(r.rules)
        elif isinstance(r, Rule):
            out.append(r)
        else:
            raise ParameterError(f"A sensitivity rule must be a Rule (MinFrequency, Dominance, PPercent, "
                                 f"PQ, Manual). Got {type(r).__name__} instead.")
    return out


def _top(table: "Table", n: int, rule: str) -> np.ndarray:
    have = table.n_top
    if have < n:
        raise ParameterError(f"The rule {rule} needs the {n} largest contributions of each cell; the "
                             f"table carries {have} (build it with top={n}, or give top columns).")
    return table.cells[[f"top{j + 1}" for j in range(n)]].to_numpy(float)


@dataclass(frozen=True)
class MinFrequency(Rule):
    """Threshold rule: a cell with fewer than ``n`` contributors (but at least one) is primary.

    Its protection level is ``share`` x |cell value| (tau-ARGUS's "frequency safety range",
    Hundepool et al. 2012, section 4.2.1 and 4.3)."""

    n: int
    share: float = 0.1
    name = "frequency"
    constraints = {"n": COUNT, "share": SHARE}

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        c = table.cells["contributors"].to_numpy()
        prim = (c > 0) & (c < self.n)
        return prim, self.share * np.abs(table.cells["value"].to_numpy(float))


@dataclass(frozen=True)
class Dominance(Rule):
    """(n, k)-dominance: primary when the ``n`` largest contributions exceed ``k`` percent of the
    cell total. Level ``100/k (x1+...+xn) - X`` (Hundepool et al. 2012, section 4.3.2)."""

    n: int
    k: float
    name = "dominance"
    constraints = {"n": COUNT, "k": Interval(float, 0, 100, closed="right")}

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        s = _top(table, int(self.n), "Dominance").sum(axis=1)
        X = table.cells["value"].to_numpy(float)
        level = 100.0 / self.k * s - X
        return (s > self.k / 100.0 * X) & (X != 0), level


@dataclass(frozen=True)
class PQ(Rule):
    """Prior-posterior (p, q) rule: an intruder who knows every contribution within ``q``
    percent must not estimate x1 within ``p`` percent. Primary when ``p x1 > q (X - x1 - x2)``;
    level ``p/100 x1 - q/100 (X - x1 - x2)`` (Hundepool et al. 2012, sections 4.2.3, 4.3.2)."""

    p: float
    q: float = 100.0
    name = "pq"
    constraints = {"p": Interval(float, 0, None, closed="neither"), "q": Interval(float, 0, 100, closed="right")}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.p >= self.q:  # a rule between two parameters: its own message
            raise ParameterError(f"The 'p' parameter of {type(self).__name__} must be below q={self.q}. Got {self.p!r} instead.")

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        t = _top(table, 2, type(self).__name__)
        X = table.cells["value"].to_numpy(float)
        rest = X - t[:, 0] - t[:, 1]
        level = self.p / 100.0 * t[:, 0] - self.q / 100.0 * rest
        return (level > 0) & (table.cells["contributors"].to_numpy() > 0), level


@dataclass(frozen=True)
class PPercent(PQ):
    """p% rule: the second-largest contributor must not estimate x1 within ``p`` percent.
    Primary when ``X - x1 - x2 < p/100 x1``; level ``p/100 x1 - (X - x1 - x2)`` (the (p, q)
    rule with q = 100; Hundepool et al. 2012, sections 4.2.2, 4.3.2)."""

    q: float = field(default=100.0, init=False)
    name = "p%"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.name, "p": self.p}


@dataclass(frozen=True)
class Manual(Rule):
    """Cells declared primary by hand (tuples of codes or ``{dimension: code}``); level
    ``share`` x |value|."""

    cells: tuple = ()
    share: float = 0.1
    name = "manual"
    constraints = {"share": SHARE}

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", tuple(tuple(c.items()) if isinstance(c, dict) else tuple(c)
                                                 if not isinstance(c, str) else (c,) for c in self.cells))
        super().__post_init__()

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        keys = [dict(c) if c and isinstance(c[0], tuple) else c for c in self.cells]
        prim = np.zeros(len(table.cells), bool)
        prim[table.locate(keys)] = True
        return prim & ~table.empty, self.share * np.abs(table.cells["value"].to_numpy(float))


@dataclass(frozen=True)
class GroupDisclosure(Rule):
    """Group disclosure in a frequency table: a cell holding *all* the contributors of its
    parent along an attribute dimension (the other codes fixed) tells that every member of that
    group has the cell's attribute — e.g. all the employees of one municipality in one income
    class (Hundepool et al. 2012, *Statistical Disclosure Control*, §5.2 "group disclosure";
    tau-ARGUS 4.2 manual §4.2, zero cells in frequency tables). Such a cell is primary when
    ``contributors(cell) == contributors(parent) > 0`` along one of ``attributes`` (default:
    every dimension) and the parent has at least two children (with one child the cell *is* its
    parent). Level ``share`` x |X|.

    What suppression protects is the cell's count: its siblings are empty cells, structural
    zeros that stay published (DESIGN.md §6.s), so an intruder still sees that no other code of
    the group is used; when that fact itself is sensitive, recode the attribute (combine codes)
    before tabulating.
    """

    attributes: tuple = ()
    share: float = 0.1
    name = "group"
    constraints = {"share": SHARE}

    def __post_init__(self) -> None:
        attrs = self.attributes
        if attrs is None:
            attrs = ()
        if isinstance(attrs, str):
            attrs = (attrs,)
        object.__setattr__(self, "attributes", tuple(attrs))
        super().__post_init__()

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        dims = list(table.dimensions)
        for a in self.attributes:
            if a not in dims:
                raise ParameterError(f"The 'attributes' parameter of GroupDisclosure names {a!r}, which is "
                                     f"not a dimension of the table ({', '.join(dims)}).")
        use = [dims.index(a) for a in self.attributes] if self.attributes else range(len(dims))
        c = table.cells["contributors"].to_numpy()
        pos = table.code_index()
        prim = np.zeros(len(c), bool)
        for k in use:
            par = np.asarray(table.hierarchies[k].parents)
            nkids = np.bincount(par[par >= 0], minlength=len(par))
            pk = par[pos[:, k]]
            has = (pk >= 0)
            has[has] = nkids[pk[has]] >= 2
            ppos = pos[has].copy()
            ppos[:, k] = pk[has]
            parent = np.ravel_multi_index(ppos.T, table.shape)
            idx = np.flatnonzero(has)
            prim[idx] |= (c[idx] > 0) & (c[idx] == c[parent])
        return prim, self.share * np.abs(table.cells["value"].to_numpy(float))


@dataclass(frozen=True)
class RuleSet(Rule):
    """Several rules: primary when any says so; levels the largest among the rules that flag."""

    rules: tuple[Rule, ...] = ()
    name = "rules"

    def evaluate(self, table: "Table") -> tuple[np.ndarray, np.ndarray]:
        s = sensitivity(table, self.rules)
        return s.primary, s.upper

    def to_dict(self) -> dict[str, Any]:
        return {"rule": "any", "rules": [r.to_dict() for r in self.rules]}


def as_rules(rules: Any) -> tuple[Rule, ...]:
    """A rule, a RuleSet, a list of rules, or None (no rule) as a tuple of rules."""
    if rules is None:
        return ()
    if isinstance(rules, Rule):
        return tuple(_flatten([rules]))
    if isinstance(rules, Sequence):
        return tuple(_flatten(rules))
    raise ParameterError(f"The 'rules' parameter must be a Rule or a list of rules. Got {type(rules).__name__} instead.")


@validated(floor=[IsNone(), Interval(float, 0, None, finite=True)])
def sensitivity(table: "Table", rules: Any, primary: Any = None, floor: float | None = None) -> Sensitivity:
    """Primary cells and protection levels of ``table`` under ``rules`` plus cells ``primary``
    (a boolean mask or a list of cell keys; level 10% of |value| unless a rule gives more).
    With ``table.missing_is_safe`` (:meth:`Table.with_missing`), no rule flags a cell whose code
    in some dimension is a declared missing code (tau-ARGUS's "missing is safe").

    Every primary cell needs an interval of positive width, wider than the audit's tolerance: a
    level below ``floor`` (0 included) is raised to it (default 1e-9 x the largest |value|,
    "sliding protection"; :mod:`sdckit.tabular.precision`). The lower level is capped at the
    cell's value when values cannot be negative (the intruder knows x >= 0). Empty cells are never
    primary.
    """
    n = len(table.cells)
    prim = np.zeros(n, bool)
    level = np.zeros(n)
    reason = np.full(n, "", dtype=object)
    # tau-ARGUS's "missing is safe": no rule flags a cell with a declared missing code
    ruled = ~table.empty & ~table.missing_mask() if table.missing_is_safe else ~table.empty
    given = table.apriori
    if given is not None:  # a cell with a given status is decided by it, not by the rules
        ruled &= given.status == ""
    for r in as_rules(rules):
        p, lv = r.evaluate(table)
        p = np.asarray(p, bool) & ruled
        level = np.where(p, np.maximum(level, lv), level)
        reason[p & ~prim] = r.name
        prim |= p
    if primary is not None:
        idx = table.locate(primary)
        extra = np.zeros(n, bool)
        extra[idx] = True
        if (extra & table.empty).any():
            i = int(np.flatnonzero(extra & table.empty)[0])
            raise ParameterError(f"Cell {table.cell_name(i)} given as primary is empty (a structural zero): "
                                 "it cannot be protected by suppression.")
        value = np.abs(table.cells["value"].to_numpy(float))
        level = np.where(extra & ~prim, 0.1 * value, level)
        reason[extra & ~prim] = "given"
        prim |= extra
    value = table.cells["value"].to_numpy(float)
    if given is not None:
        unsafe = given.status == "unsafe"
        level = np.where(unsafe & ~prim, 0.1 * np.abs(value), level)
        reason[unsafe & ~prim] = "status"
        prim |= unsafe
        clash = prim & table.protected
        if clash.any():
            raise ParameterError(f"Cell {table.cell_name(int(np.flatnonzero(clash)[0]))} is given as primary but "
                                 "has the status 'protected' (never suppressed).")
    floor = LEVEL_FLOOR * value_scale(value) if floor is None else floor
    upper = np.where(prim, np.maximum(level, floor), 0.0)
    lower = upper.copy()
    if given is not None:  # the given protection levels replace the rules' (tau-ARGUS's LOWERPL/UPPERPL)
        unsafe = given.status == "unsafe"
        upper = np.where(unsafe & ~np.isnan(given.upper), np.maximum(np.nan_to_num(given.upper), floor), upper)
        lower = np.where(unsafe & ~np.isnan(given.lower), np.maximum(np.nan_to_num(given.lower), floor), lower)
    if not table.negative:
        lower = np.where(prim, np.minimum(lower, np.maximum(value, 0.0)), 0.0)
    return Sensitivity(prim, upper, lower, reason)
