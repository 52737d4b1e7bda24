"""Privacy criteria as composable values: k-anonymity, l-diversity, t-closeness.

Every criterion judges equivalence classes from two vectorised inputs: the class sizes and,
when it names a ``sensitive`` attribute, the table of sensitive-value counts per class
(classes x distinct values, the values in the attribute's order). ``measure`` returns one
number per class, ``violates`` a boolean per class. A criterion declares whether it is
*monotone* — when it holds for a generalization with at most MaxSup records suppressed, it
holds for every coarser generalization — so that the lattice search may prune with it
(seed 003 section 4.1; ARX's Flash/OLA). ``monotone`` is the property with suppression;
``monotone_without_suppression`` the weaker one that holds when MaxSup is 0.

References: k-anonymity, seed 003 Definition 2; l-diversity, Machanavajjhala et al. (2007),
distinct/entropy/recursive (c,l); t-closeness with the Earth Mover's Distance, Li, Li and
Venkatasubramanian (2007), equal, ordered and hierarchical ground distances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sdckit.core.diversity import distinct_values, entropy_values
from sdckit.core.hierarchy import Hierarchy, as_hierarchy
from sdckit.core.params import Interval, Options, Satisfies, check_param, validate_params

_NAME = Satisfies(lambda v: isinstance(v, str) and v != "", "a column name")


@dataclass(frozen=True)
class Criterion:
    """Base class of privacy criteria; see the module docstring."""

    monotone: ClassVar[bool] = True
    monotone_without_suppression: ClassVar[bool] = True
    rules: ClassVar[dict[str, Any]] = {}

    def __post_init__(self) -> None:
        validate_params(type(self).__name__, {n: getattr(self, n) for n in self.rules}, self.rules)

    @property
    def needs_sensitive(self) -> str | None:
        """The sensitive attribute whose value counts per class this criterion reads."""
        return getattr(self, "sensitive", None)

    def measure(self, sizes: np.ndarray, hist: np.ndarray | None, overall: np.ndarray | None,
                labels: np.ndarray | None = None) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def violates(self, sizes: np.ndarray, hist: np.ndarray | None, overall: np.ndarray | None,
                 labels: np.ndarray | None = None) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def label(self) -> str:
        """A short name for reports, e.g. ``"k-anonymity (k=5)"``."""
        raise NotImplementedError  # pragma: no cover


@dataclass(frozen=True)
class KAnonymity(Criterion):
    """Every class holds at least ``k`` records (seed 003 Definition 2)."""

    k: int
    rules: ClassVar = {"k": Interval(int, 2, None)}

    def measure(self, sizes, hist=None, overall=None, labels=None):
        return sizes.astype(float)

    def violates(self, sizes, hist=None, overall=None, labels=None):
        return sizes < self.k

    def label(self) -> str:
        return f"k-anonymity (k={self.k})"


@dataclass(frozen=True)
class DistinctLDiversity(Criterion):
    """Every class holds at least ``l`` distinct values of ``sensitive``.

    Monotone also with suppression: a merged class fails only when both parts failed.
    """

    l: int  # noqa: E741 - the name of the literature
    sensitive: str
    rules: ClassVar = {"l": Interval(int, 2, None), "sensitive": _NAME}

    def measure(self, sizes, hist, overall=None, labels=None):
        return distinct_values(hist)

    def violates(self, sizes, hist, overall=None, labels=None):
        return self.measure(sizes, hist) < self.l

    def label(self) -> str:
        return f"distinct {self.l}-diversity of {self.sensitive!r}"


@dataclass(frozen=True)
class EntropyLDiversity(Criterion):
    """The entropy of ``sensitive`` in every class is at least ``log(l)``; ``measure`` is
    ``exp(entropy)``, the class's effective number of values.

    Monotone without suppression (entropy is concave); with suppression a merge can push a
    diverse class below the bound, so the search does not prune with it then.
    """

    l: float  # noqa: E741
    sensitive: str
    monotone: ClassVar[bool] = False
    rules: ClassVar = {"l": Interval(float, 1, None, closed="neither"), "sensitive": _NAME}

    def measure(self, sizes, hist, overall=None, labels=None):
        return entropy_values(hist)

    def violates(self, sizes, hist, overall=None, labels=None):
        return self.measure(sizes, hist) < self.l * (1 - 1e-12)

    def label(self) -> str:
        return f"entropy {self.l:g}-diversity of {self.sensitive!r}"


@dataclass(frozen=True)
class RecursiveCLDiversity(Criterion):
    """Recursive (c,l)-diversity: with the class's value counts sorted down
    ``r1 >= r2 >= ... >= rm``, ``r1 < c * (r_l + ... + r_m)``; ``measure`` is
    ``r1 / (r_l + ... + r_m)`` (infinite when fewer than ``l`` values occur)."""

    c: float
    l: int  # noqa: E741
    sensitive: str
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = False
    rules: ClassVar = {"c": Interval(float, 0, None, closed="neither"), "l": Interval(int, 2, None),
                       "sensitive": _NAME}

    def measure(self, sizes, hist, overall=None, labels=None):
        ordered = -np.sort(-hist, axis=1)
        tail = ordered[:, self.l - 1:].sum(axis=1) if ordered.shape[1] >= self.l else np.zeros(len(hist))
        with np.errstate(divide="ignore"):
            return np.where(tail > 0, ordered[:, 0] / np.maximum(tail, 1e-300), np.inf)

    def violates(self, sizes, hist, overall=None, labels=None):
        return ~(self.measure(sizes, hist) < self.c)

    def label(self) -> str:
        return f"recursive ({self.c:g},{self.l})-diversity of {self.sensitive!r}"


@dataclass(frozen=True)
class TCloseness(Criterion):
    """The Earth Mover's Distance between each class's distribution of ``sensitive`` and the
    whole table's is at most ``t`` (Li, Li, Venkatasubramanian 2007, section 4).

    Ground distances: ``"equal"`` (every pair 1: EMD = half the L1 distance), ``"ordered"``
    (values in their order, distance ``|i-j|/(m-1)``: EMD = ``sum_i |r_1+...+r_i| / (m-1)``)
    and ``"hierarchical"`` (distance = level of the lowest common ancestor / height in
    ``hierarchy``: EMD = ``sum_N height(N)/H * min(pos_extra(N), neg_extra(N))``). The whole
    table is the *published* one: with suppression, the searches measure each class against
    the distribution of the records they keep, so that the release passes
    :func:`~sdckit.anonymity.check` against itself (issue 19 item 10). The ordered distance's
    ``m`` values are the attribute's domain: its declared order (a schema's ordinal column)
    when there is one, else the values the measured table holds — for a search with
    suppression, the values published (issue 27). Monotone without suppression.
    """

    t: float
    sensitive: str
    distance: str = "equal"
    hierarchy: Hierarchy | None = None
    monotone: ClassVar[bool] = False
    rules: ClassVar = {"t": Interval(float, 0, 1, closed="right"), "sensitive": _NAME,
                       "distance": Options(("equal", "ordered", "hierarchical"))}

    #: Measured against the overall distribution (of the published records, with suppression).
    uses_overall: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if isinstance(self.hierarchy, str):  # a CSV path, e.g. from a recipe
            object.__setattr__(self, "hierarchy", as_hierarchy(self.hierarchy, self.sensitive))
        super().__post_init__()
        if (self.distance == "hierarchical") != isinstance(self.hierarchy, Hierarchy):
            check_param("TCloseness", "hierarchy", self.hierarchy, [Satisfies(
                lambda v: False,
                "a Hierarchy exactly when distance='hierarchical'" if self.distance == "hierarchical"
                else "None unless distance='hierarchical'")])

    def measure(self, sizes, hist, overall, labels=None):
        p = hist / np.maximum(hist.sum(axis=1, keepdims=True), 1)
        q = overall / overall.sum()
        r = p - q
        m = r.shape[1]
        if self.distance == "equal" or m < 2:
            return 0.5 * np.abs(r).sum(axis=1)
        if self.distance == "ordered":
            return np.abs(np.cumsum(r, axis=1)).sum(axis=1) / (m - 1)
        return _hierarchical_emd(r, labels, self.hierarchy, self.sensitive)

    def violates(self, sizes, hist, overall, labels=None):
        return self.measure(sizes, hist, overall, labels) > self.t + 1e-12

    def label(self) -> str:
        return f"{self.t:g}-closeness of {self.sensitive!r} ({self.distance} distance)"


def _hierarchical_emd(r: np.ndarray, labels: np.ndarray, hierarchy: Hierarchy, column: str) -> np.ndarray:
    """EMD under the hierarchical ground distance (Li et al. 2007, section 4.2), all classes at once."""
    rows = hierarchy.index_of(labels, column)
    height = hierarchy.height
    total = np.zeros(len(r))
    extra = r  # extra of each leaf (classes x leaves)
    codes = hierarchy.codes(0)[rows]
    for level in range(1, height + 1):
        parent = hierarchy.rollup(level - 1, level)[codes]
        n_par = int(parent.max()) + 1
        pos = np.zeros((len(r), n_par))
        neg = np.zeros((len(r), n_par))
        for j in range(extra.shape[1]):  # columns are few (distinct values of one level)
            pos[:, parent[j]] += np.maximum(extra[:, j], 0)
            neg[:, parent[j]] += np.maximum(-extra[:, j], 0)
        total += (level / height) * np.minimum(pos, neg).sum(axis=1)
        extra = pos - neg
        codes = np.arange(n_par)
    return total


def criteria_with_k(k: int, criteria: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
    """``KAnonymity(k)`` followed by the other criteria."""
    return (KAnonymity(k),) + tuple(c for c in criteria if c != KAnonymity(k))


#: Criteria by the names recipes use (``{criterion = "distinct_l_diversity", l = 3, sensitive = "disease"}``).
CRITERIA: dict[str, type[Criterion]] = {
    "k_anonymity": KAnonymity,
    "distinct_l_diversity": DistinctLDiversity,
    "entropy_l_diversity": EntropyLDiversity,
    "recursive_cl_diversity": RecursiveCLDiversity,
    "t_closeness": TCloseness,
}


def as_criteria(value: Any) -> Any:
    """Criteria given as values or as mappings with a ``criterion`` name (recipes) become a
    tuple of :class:`Criterion`; anything else is returned unchanged for the validator."""
    if isinstance(value, Criterion):
        value = (value,)
    if not isinstance(value, list | tuple):
        return value
    out = []
    for item in value:
        if isinstance(item, dict) and item.get("criterion") in CRITERIA:
            params = {k: v for k, v in item.items() if k != "criterion"}
            item = CRITERIA[item["criterion"]](**params)
        out.append(item)
    return tuple(out)


#: The parameter rule for ``criteria``.
CRITERIA_RULE = Satisfies(
    lambda v: isinstance(v, tuple) and all(isinstance(c, Criterion) for c in v),
    "a list of criteria (KAnonymity, DistinctLDiversity, EntropyLDiversity, "
    "RecursiveCLDiversity, TCloseness)",
)
