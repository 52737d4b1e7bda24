"""Full-domain generalization with tuple suppression (seed 003's AG_TS, sections 2 and 4.1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.anonymity.criteria import CRITERIA_RULE, Criterion, as_criteria, criteria_with_k
from sdckit.core.hierarchy import (
    HIERARCHY_MAPPING,
    Hierarchy,
    freeze_hierarchies,
)
from sdckit.anonymity.frequencies import evaluator_for
from sdckit.anonymity.lattice import Evaluator, encode
from sdckit.anonymity.rollup import dense_ids
from sdckit.anonymity.metrics import DEFAULT_METRIC, METRICS
from sdckit.anonymity.partition import Partition
from sdckit.anonymity.search import ALGORITHMS, SearchResult
from sdckit.core.errors import ParameterError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, Options
from sdckit.core.schema import Kind, Role, Schema

_COMMON_ZIPS = ("13053", "13068", "14850", "14853", "13055")


def suppression_allowed(max_suppression: float, n: int) -> int:
    """MaxSup as a number of records: ``floor(max_suppression * n)``."""
    return int(np.floor(max_suppression * n + 1e-9))


@register
@dataclass(frozen=True)
class FullDomainGeneralization(Method):
    """k-anonymity (and l-diversity, t-closeness) by full-domain generalization and tuple
    suppression: every value of a quasi-identifier is generalized to the same level of its
    hierarchy, and the records of classes that still violate a criterion are removed, at most
    ``max_suppression`` of them (seed 003, Definitions 4-5; the AG_TS model of section 3).

    Parameters
    ----------
    k : int >= 2
        Every released equivalence class holds at least ``k`` records.
    hierarchies : mapping column -> Hierarchy or CSV path
        The quasi-identifiers and their value-generalization hierarchies (ARX CSV layout).
    max_suppression : float in [0, 1)
        MaxSup as a share of the records (``floor(max_suppression * n)`` records).
    criteria : list of criteria
        Further criteria (:class:`DistinctLDiversity`, :class:`TCloseness`, ...); in a
        recipe, tables such as ``{criterion = "distinct_l_diversity", l = 2, sensitive = "disease"}``.
    metric : {"loss", "precision", "height", "discernibility", "aecs", "entropy"}, default "loss"
        ARX's information-loss metric, by ARX's name, that chooses the release among the
        satisfying generalizations (:mod:`.metrics`). The default is ARX's default, its *Loss*;
        ``"precision"`` is what sdckit called ``"loss"`` before issue 28.
    algorithm : {"optimal", "samarati", "exhaustive"}
        The lattice search (:mod:`.search`): ARX's optimum, the satisfying node with the best
        metric, found with pruning (a k-minimal node when the metric is monotone: no
        suppression allowed, or ``"height"``); Samarati's binary search on heights; or every
        node.
    columns : list of str, optional
        Restrict the quasi-identifiers to these columns of ``hierarchies``.

    Notes
    -----
    Missing values in a quasi-identifier or sensitive column are refused
    (``nan_policy="error"``). Generalized columns come out as strings (kind nominal);
    columns left at level 0 keep their values. The manifest records the chosen node (level
    per attribute), suppressed records, classes and every metric.

    References
    ----------
    Seed 003 (Ciriani et al., "k-Anonymity"), sections 2 and 4.1; seed 004 section III-A
    (categorical precision); Prasser et al., "Flexible data anonymization using ARX" (2016)
    for the metrics and the optimum.
    """

    k: int
    hierarchies: Mapping[str, Hierarchy | str]
    max_suppression: float = 0.0
    criteria: tuple[Criterion, ...] = field(default=())
    metric: str = DEFAULT_METRIC
    algorithm: str = "optimal"

    name: ClassVar[str] = "full_domain_generalization"
    constraints: ClassVar = {
        "k": Interval(int, 2, None),
        "hierarchies": HIERARCHY_MAPPING,
        "max_suppression": Interval(float, 0, 1, closed="left"),
        "criteria": CRITERIA_RULE,
        "metric": Options(METRICS),
        "algorithm": Options(tuple(ALGORITHMS)),
    }
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    path_params: ClassVar = frozenset({"hierarchies"})
    example: ClassVar = {
        "k": 3,
        "hierarchies": {
            "age": Hierarchy.intervals(range(0, 120), widths=(10, 20, 40)),
            "zip": Hierarchy.masking(_COMMON_ZIPS),
        },
        "max_suppression": 0.05,
    }

    def __post_init__(self) -> None:
        object.__setattr__(self, "hierarchies", freeze_hierarchies(self.hierarchies))
        object.__setattr__(self, "criteria", as_criteria(self.criteria))
        super().__post_init__()

    def default_columns(self) -> tuple[str, ...]:
        return tuple(self.hierarchies)

    def target_columns(self, schema: Schema) -> tuple[str, ...]:
        quasi = super().target_columns(schema)
        for name in quasi:
            if name not in self.hierarchies:
                raise ParameterError(
                    f"Column {name!r} has no hierarchy; give FullDomainGeneralization a hierarchy "
                    "for every quasi-identifier."
                )
        return quasi

    # ------------------------------------------------------------------ work
    def _evaluator(self, frame: pd.DataFrame, quasi: tuple[str, ...], schema: Schema | None) -> Evaluator:
        criteria = criteria_with_k(self.k, self.criteria)
        enc = encode(frame, {q: self.hierarchies[q] for q in quasi}, criteria, schema)
        return evaluator_for(enc, self.k, self.criteria, suppression_allowed(self.max_suppression, len(frame)))

    def search(self, frame: pd.DataFrame, schema: Schema | None = None,
               progress: Callable[[int, int, str], None] | None = None) -> SearchResult:
        """Search the lattice of ``frame``'s quasi-identifiers; see :mod:`.search`."""
        schema, quasi = self.prepare(frame, schema)  # the method's checks and missing-value policy
        ev = self._evaluator(frame, quasi, schema)
        return ALGORITHMS[self.algorithm](ev, self.metric, progress)

    def partition(self, frame: pd.DataFrame, schema: Schema | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> Partition:
        """The generalized, suppressed release and its equivalence classes."""
        schema, quasi = self.prepare(frame, schema)  # the method's checks and missing-value policy
        ev = self._evaluator(frame, quasi, schema)
        result = ALGORITHMS[self.algorithm](ev, self.metric, progress)
        node = result.node
        enc = ev.enc
        codes, cls, _, violating = ev.bottom_classes(node)  # per bottom-table row
        kept_rows = ~violating.any(axis=1)[cls]
        kept = kept_rows[enc.records]
        generalized = [name for j, name in enumerate(quasi) if node[j] > 0]
        rest = frame.drop(columns=generalized)  # copy-on-write: the caller's frame is never touched
        records = enc.records
        if not kept.all():
            where = np.flatnonzero(kept)
            rest = rest.iloc[where]
            records = records[where]
        columns = {}
        for j, name in enumerate(quasi):
            if node[j] > 0:
                row_labels = enc.hierarchies[j].labels(node[j])[codes[j]]
                columns[name] = pd.Series(row_labels[records], index=rest.index, dtype=object, copy=False)
        data = rest.assign(**columns)[list(frame.columns)] if columns else rest.copy(deep=False)
        classes = dense_ids(cls[records])
        info: dict[str, Any] = {
            "algorithm": self.algorithm,
            "node": {q: int(level) for q, level in zip(quasi, node)},
            "heights": {q: int(h) for q, h in zip(quasi, enc.heights)},
            "suppressed": int((~kept).sum()),
            "suppression_allowed": ev.allowed,
            "classes": int(classes.max()) + 1 if len(classes) else 0,
            "metric": self.metric,
            "metric_value": result.metrics[self.metric],
            "metrics": {m: result.metrics[m] for m in METRICS},
            "k_minimal_nodes": [list(v) for v in result.minimal],
            "evaluated_nodes": result.evaluated,
            "lattice_size": result.lattice_size,
            "warnings": [],
        }
        if info["suppressed"]:
            info["warnings"].append(f"{info['suppressed']} record(s) were suppressed (removed from the release).")
        return Partition(data, classes, info)

    def transform(self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                  rng: np.random.Generator) -> Outcome:
        part = self.partition(frame, schema)
        out_schema = schema
        for name, level in part.info["node"].items():
            if level > 0 and name in schema:
                out_schema = out_schema.replace_column(name, kind=Kind.NOMINAL, order=None)
        return Outcome(part.data, out_schema, part.info)
