"""(k,epsilon)-anonymity: k-anonymity on some quasi-identifiers, per-class Laplace noise on the
others (seed 004 section IV, Algorithm 1).

The quasi-identifiers are split into *k-quasis*, generalized (and records suppressed) until every
equivalence class holds at least k records, and *epsilon-quasis*, numeric columns to which
Laplace noise is added class by class. An adversary who knows a person's k-quasis finds her
class; inside it, the noise makes her epsilon-quasis stochastically indistinguishable from the
class's others. Since the class is the adversary's population, the noise is scaled to the
class's diameter, not the data set's, which is what makes it much smaller than plain
differential privacy's (seed 004 section III-B). Records are shuffled at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.hierarchy import (
    HIERARCHY_MAPPING,
    Hierarchy,
    freeze_hierarchies,
)
from sdckit.anonymity.partition import Partition
from sdckit.core.errors import SchemaError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import (
    Boolean,
    Interval,
    IsNone,
    Options,
    StrList,
    check_param,
)
from sdckit.core.schema import Kind, Role, Schema
from sdckit.dp.accountant import ACCOUNTANT, BudgetAccountant, split_epsilon
from sdckit.dp.confidence import confidence_suppression
from sdckit.dp.measures import expected_relative_error, linking_risk, record_diameters
from sdckit.dp.mechanisms import CONFIDENCE, POSITIVE, dyadic_grid, grid_scale, laplace_randomise

#: Bits between the smallest noise scale and the public grid: the noise is exact on the grid,
#: and scales up to 2**33 times the smallest still fit the sampler's 2**53 integer steps.
GRID_BITS = 20


def public_grid(min_diameter: float, epsilon: float) -> float:
    """The one grid of a column's noise, from parameters only: the power of two at most
    ``2**-GRID_BITS`` times the smallest noise scale ``min_diameter / epsilon``."""
    return float(dyadic_grid(np.asarray(min_diameter / epsilon), GRID_BITS))

_EXAMPLE_ZIPS = ("13053", "13068", "14850", "14853", "13055")

#: What the manifest says about the model (Kerckhoffs: the user must know what was done).
PRIVACY_MODEL = (
    "(k,epsilon)-anonymity (seed 004 section IV): k-anonymity on the k-quasis, then Laplace "
    "noise of scale m * diameter(class) / epsilon on each of the m epsilon-quasis, the diameter "
    "being the range of the original values in the record's equivalence class. The scale is "
    "taken from the data by the model's definition, so the release is differentially private "
    "only within each class's range, as the paper states, not in the strict sense."
)


@register
@dataclass(frozen=True)
class KEpsilonAnonymity(Method):
    """(k,epsilon)-anonymity (seed 004 section IV).

    Parameters
    ----------
    k : int >= 2
        Every equivalence class of the k-quasis holds at least ``k`` records.
    epsilon : float > 0
        Privacy parameter of the noise on the epsilon-quasis, for the *record*: with m
        epsilon-quasis each gets ``epsilon / m`` (sequential composition; an equal split keeps
        each column's noise proportional to its own diameter whatever its unit). For one column
        the noise scale is exactly ``diameter(class) / epsilon``.
    k_quasi : list of str
        Quasi-identifiers made k-anonymous by generalization.
    epsilon_quasi : list of str
        Numeric quasi-identifiers that get per-class Laplace noise (not generalized).
    algorithm : {"fulldomain", "mondrian"}
        The k-anonymity search: optimal full-domain generalization with suppression
        (:class:`~sdckit.anonymity.FullDomainGeneralization`, needs ``hierarchies``), or
        Mondrian's multidimensional partitioning (:class:`~sdckit.anonymity.Mondrian`).
    hierarchies : mapping column -> Hierarchy or CSV path, optional
        Generalization hierarchies of the k-quasis (required for ``"fulldomain"``; optional for
        Mondrian's categorical columns).
    max_suppression : float in [0, 1)
        Share of records the full-domain search may suppress (seed 004 uses 5%).
    alpha : float in (0, 1), optional
        If given, enforce alpha-confident k-anonymity (seed 004 section V-C): suppress records
        whose alpha-confidence box holds fewer than ``k`` originals of their class, then classes
        left with fewer than ``k`` records (:func:`~sdckit.dp.confidence_suppression`).
    keep_outlying : bool
        With ``alpha``: keep records whose box holds no original at all (the paper's choice).
    min_diameter : float > 0
        The smallest diameter the noise is scaled to (default 1.0; give the unit of the
        epsilon-quasis' values): a class whose values span less, or are all equal, still gets
        ``Laplace(min_diameter / epsilon')`` noise, never none (issue 19 item 7).
    accountant : BudgetAccountant, optional
        The budget the caller holds for this data set: charged ``epsilon`` (the classes are
        disjoint: parallel composition) before any noise is drawn; the release is refused
        (:class:`~sdckit.dp.BudgetExceeded`) once it is spent. Without one each release gets a
        fresh budget (nothing then stops repeated releases from being averaged).
    columns : list of str, optional
        If given, must name exactly the k-quasis and epsilon-quasis.

    Notes
    -----
    Missing values in the k-quasis or epsilon-quasis are refused (``nan_policy="error"``).
    Epsilon-quasis come out as floats; generalized k-quasis as strings (kind nominal). Records
    are shuffled and the index is reset to 0..n-1 (keeping the input's index would undo the
    shuffle). The noise uses sdckit's exact sampler (:mod:`sdckit.dp.mechanisms`) on one public
    grid per column, a power of two fixed by ``min_diameter`` and ``epsilon`` alone: a grid that
    followed each class's diameter would publish the diameter in the released values' lowest
    bits (Mironov 2012; issue 19 item 7).

    The manifest records the k-anonymity search (node or cuts, suppressed records), the privacy
    model, the budget spent (parallel composition over the classes, sequential over the
    columns), the expected average relative error of each epsilon-quasi computed before the
    noise (eq. 8), the measured nearest-neighbour linking risk (section V-B) and, with
    ``alpha``, the records suppressed for confidence.

    References
    ----------
    Seed 004 (Holohan et al., "(k,epsilon)-Anonymity"), sections IV and V.
    """

    k: int
    epsilon: float
    k_quasi: tuple[str, ...]
    epsilon_quasi: tuple[str, ...]
    algorithm: str = "fulldomain"
    hierarchies: Mapping[str, Hierarchy | str] | None = None
    max_suppression: float = 0.0
    alpha: float | None = None
    keep_outlying: bool = True
    min_diameter: float = 1.0
    accountant: BudgetAccountant | None = field(default=None, kw_only=True, compare=False, repr=False)

    name: ClassVar[str] = "k_epsilon_anonymity"
    constraints: ClassVar = {
        "k": Interval(int, 2, None),
        "epsilon": POSITIVE,
        "k_quasi": StrList(),
        "epsilon_quasi": StrList(),
        "algorithm": Options(("fulldomain", "mondrian")),
        "hierarchies": [IsNone(), HIERARCHY_MAPPING],
        "max_suppression": Interval(float, 0, 1, closed="left"),
        "alpha": [IsNone(), CONFIDENCE],
        "keep_outlying": Boolean(),
        "min_diameter": POSITIVE,
        "accountant": ACCOUNTANT,
    }
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    path_params: ClassVar = frozenset({"hierarchies"})
    example: ClassVar = {
        "k": 3,
        "epsilon": 1.0,
        "k_quasi": ("age", "zip"),
        "epsilon_quasi": ("income",),
        "hierarchies": {
            "age": Hierarchy.intervals(range(0, 120), widths=(10, 20, 40)),
            "zip": Hierarchy.masking(_EXAMPLE_ZIPS),
        },
        "max_suppression": 0.05,
        "alpha": 0.9,
    }

    def __post_init__(self) -> None:
        object.__setattr__(self, "hierarchies", freeze_hierarchies(self.hierarchies))
        super().__post_init__()

    def check_parameters(self) -> None:
        both = sorted(set(self.k_quasi) & set(self.epsilon_quasi))
        if both:
            raise self.param_error("epsilon_quasi", f"disjoint from k_quasi (both hold {both})")
        if self.algorithm == "fulldomain":
            missing = [q for q in self.k_quasi if self.hierarchies is None or q not in self.hierarchies]
            if missing:
                raise self.param_error(
                    "hierarchies", f"a mapping with a hierarchy for every k-quasi when "
                    f"algorithm='fulldomain' (missing: {missing})"
                )
        elif self.max_suppression > 0:
            raise self.param_error("max_suppression", "0.0 with algorithm='mondrian' (Mondrian does not suppress)")

    # ------------------------------------------------------------------ columns
    def default_columns(self) -> tuple[str, ...]:
        return self.k_quasi + self.epsilon_quasi

    def target_columns(self, schema: Schema) -> tuple[str, ...]:
        names = super().target_columns(schema)
        if set(names) != set(self.k_quasi) | set(self.epsilon_quasi):
            raise self.param_error("columns", "None or exactly the k-quasis and epsilon-quasis")
        for name in self.epsilon_quasi:
            if schema[name].kind is not Kind.NUMERIC:
                raise SchemaError(
                    f"KEpsilonAnonymity adds noise to epsilon-quasi {name!r}, whose kind is "
                    f"{schema[name].kind.value!r}; epsilon-quasis must be numeric. Move it to k_quasi."
                )
        return self.k_quasi + self.epsilon_quasi

    # ------------------------------------------------------------------ work
    def anonymizer(self) -> Method:
        """The k-anonymity method of the k-quasis (its ``partition`` gives the classes)."""
        from sdckit import anonymity

        hierarchies = None
        if self.hierarchies is not None:
            hierarchies = {q: self.hierarchies[q] for q in self.k_quasi if q in self.hierarchies}
        if self.algorithm == "fulldomain":
            return anonymity.FullDomainGeneralization(
                k=self.k, hierarchies=hierarchies, max_suppression=self.max_suppression
            )
        return anonymity.Mondrian(k=self.k, quasi=self.k_quasi, hierarchies=hierarchies or None)

    def partition(self, frame: pd.DataFrame, schema: Schema) -> Partition:
        """Equivalence classes of the k-quasis (issue 5's searches)."""
        return self.anonymizer().partition(frame, schema)

    def predict_error(
        self, frame: pd.DataFrame, schema: Schema | None = None, epsilons: Any = None
    ) -> pd.DataFrame:
        """Expected average relative error of each epsilon-quasi (seed 004 eq. 8), before any
        noise is drawn, for ``epsilons`` (default: this method's epsilon).

        Runs only the k-anonymity search, so that epsilon can be chosen for a target utility.
        Returns one row per epsilon with columns ``epsilon``, ``records``, ``classes`` and one
        column per epsilon-quasi (``inf`` where the column holds a 0).
        """
        schema = schema if schema is not None else Schema.infer(frame)
        self.target_columns(schema)
        epsilons = [self.epsilon] if epsilons is None else list(epsilons)
        for value in epsilons:
            check_param("KEpsilonAnonymity.predict_error", "epsilons", value, POSITIVE)
        part = self.partition(frame, schema)
        x = part.data[list(self.epsilon_quasi)].to_numpy(dtype=float)
        m = len(self.epsilon_quasi)
        rows = []
        for value in epsilons:
            errors = self._column_errors(x, part.classes, value / m) if len(x) else dict.fromkeys(self.epsilon_quasi, 0.0)
            rows.append({"epsilon": value, "records": len(x), "classes": part.n_classes, **errors})
        return pd.DataFrame(rows)

    def _column_errors(self, x: np.ndarray, classes: np.ndarray, per_column: float) -> dict[str, float]:
        """Eq. 8 for each epsilon-quasi (columns of ``x``), each spending ``per_column``."""
        return {name: expected_relative_error(x[:, j], classes, per_column, self.min_diameter).total
                for j, name in enumerate(self.epsilon_quasi)}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        part = self.partition(frame, schema)
        data = part.data.copy()
        classes = np.asarray(part.classes)
        eps = list(self.epsilon_quasi)
        info: dict[str, Any] = {"k_anonymity": part.info, "privacy_model": PRIVACY_MODEL, "warnings": []}
        info["warnings"] += list(part.info.get("warnings", []))
        if len(data) == 0:
            info["warnings"].append("Every record was suppressed by the k-anonymity search.")
            return Outcome(data.reset_index(drop=True), self._schema_out(frame, data, schema), info)

        x = data[eps].to_numpy(dtype=float)
        m = len(eps)
        per_column = split_epsilon(self.epsilon, m)
        info["expected_relative_error"] = self._predicted_errors(x, classes, per_column, info)

        diameters = np.maximum(record_diameters(x, classes), self.min_diameter)
        grid = public_grid(self.min_diameter, per_column)
        for j in range(m):  # the noise can be drawn: checked before anything is charged
            grid_scale(diameters[:, j], per_column, grid)

        accountant = self.accountant if self.accountant is not None else BudgetAccountant(self.epsilon)
        with accountant.parallel("equivalence classes (disjoint records)") as group:
            for c in np.unique(classes):  # charged before any noise is drawn
                group.spend(self.epsilon, f"class {int(c)}")
        info["budget"] = accountant.to_manifest()

        info["grid"] = grid
        y = np.column_stack([
            laplace_randomise(x[:, j], diameters[:, j], per_column, rng, grid=grid) for j in range(m)
        ])
        for j, name in enumerate(eps):
            data[name] = y[:, j]
        info["linking_risk"] = linking_risk(x, y, classes)["risk"]

        if self.alpha is not None:
            cs = confidence_suppression(x, y, classes, self.epsilon, self.alpha, self.k, self.keep_outlying)
            data = data.loc[~cs.suppressed]
            info["confidence_suppression"] = {"alpha": self.alpha, **cs.to_dict()}
            if cs.total:
                info["warnings"].append(
                    f"{cs.total} record(s) were suppressed for {self.alpha:g}-confident "
                    f"{self.k}-anonymity ({cs.classes} whole class(es))."
                )
        info["records"] = len(data)
        shuffled = data.iloc[rng.permutation(len(data))].reset_index(drop=True)
        return Outcome(shuffled, self._schema_out(frame, part.data, schema), info)

    def _predicted_errors(
        self, x: np.ndarray, classes: np.ndarray, per_column: float, info: dict[str, Any]
    ) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, total in self._column_errors(x, classes, per_column).items():
            out[name] = total if np.isfinite(total) else None
            if not np.isfinite(total):
                info["warnings"].append(
                    f"Epsilon-quasi {name!r} holds the value 0, so its relative error is undefined."
                )
        return out

    def _schema_out(self, frame: pd.DataFrame, generalized: pd.DataFrame, schema: Schema) -> Schema:
        out = schema
        for name in self.k_quasi:
            if not generalized[name].equals(frame.loc[generalized.index, name]):
                out = out.replace_column(name, kind=Kind.NOMINAL, order=None)
        return out
