"""Full-domain generalization to a chosen node, record by record (seed 003 section 2; DESIGN.md
section 8).

The optimal node of a full-domain search needs only a frequency table
(:func:`sdckit.pipeline.search_file`: DuckDB ``GROUP BY`` on a file larger than memory); applying
it needs no statistic at all: each value becomes its ancestor at the node's level of its
hierarchy. :class:`GeneralizeToNode` is that step as a row-wise method, so the engines stream it
over Parquet row groups or CSV chunks with bounded memory and give the in-memory bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.hierarchy import HIERARCHY_MAPPING, Hierarchy, freeze_hierarchies
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Satisfies
from sdckit.core.schema import Kind, Role, Schema


def _is_node(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) > 0 and all(
        isinstance(k, str) and isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 0
        for k, v in value.items())


@register
@dataclass(frozen=True)
class GeneralizeToNode(Method):
    """Generalize every quasi-identifier to its level of a chosen node, suppressing nothing.

    Parameters
    ----------
    hierarchies : mapping column -> Hierarchy or CSV path
        The value-generalization hierarchies (ARX CSV layout), as
        :class:`~sdckit.anonymity.FullDomainGeneralization` takes them.
    node : mapping column -> int
        The level of each quasi-identifier (0 keeps the values), e.g. the ``node`` of
        ``search_file`` or ``search_frequencies`` as ``dict(zip(quasi, result.node))``.
    columns : list of str, optional
        Default: the node's columns.

    Notes
    -----
    A generalized column comes out as text (kind nominal) and a column at level 0 keeps its
    values, as :class:`~sdckit.anonymity.FullDomainGeneralization` releases them; unlike it,
    no record is suppressed, so the classes that still violate ``k`` stay (check the release
    with :func:`sdckit.anonymity.check`, or choose a node that needs no suppression). Missing
    values are refused (``nan_policy="error"``), a value missing from its hierarchy too (the
    error names the column). Row-wise (``needs="rows"``), without a first pass.

    References
    ----------
    Seed 003 (Ciriani et al., "k-Anonymity"), section 2 (generalization hierarchies,
    full-domain generalization).
    """

    hierarchies: Mapping[str, Hierarchy | str]
    node: Mapping[str, int]

    name: ClassVar[str] = "generalize_to_node"
    constraints: ClassVar = {
        "hierarchies": HIERARCHY_MAPPING,
        "node": Satisfies(_is_node, "a mapping from column names to levels (ints >= 0)"),
    }
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI})
    path_params: ClassVar = frozenset({"hierarchies"})
    needs: ClassVar[str] = "rows"
    example: ClassVar = {
        "hierarchies": {"zip": Hierarchy.masking(["13053", "13068", "14850", "14853", "13055"])},
        "node": {"zip": 2},
    }

    def __post_init__(self) -> None:
        object.__setattr__(self, "hierarchies", freeze_hierarchies(self.hierarchies))
        if isinstance(self.node, Mapping):
            object.__setattr__(self, "node", {k: int(v) if isinstance(v, np.integer) else v
                                              for k, v in self.node.items()})  # a copy of its own
        super().__post_init__()

    def __hash__(self) -> int:  # the node is a mapping, so hash the plain parameters
        return hash(repr(self.params()))

    def check_parameters(self) -> None:
        for name, level in self.node.items():
            if name not in self.hierarchies:
                raise self.param_error("node", f"a mapping of columns that have a hierarchy (column {name!r} has none)")
            height = self.hierarchies[name].height
            if level > height:
                raise self.param_error("node", f"a level in [0, {height}] for column {name!r}")

    def default_columns(self) -> tuple[str, ...]:
        return tuple(self.node)

    def target_columns(self, schema: Schema) -> tuple[str, ...]:
        chosen = super().target_columns(schema)
        for name in chosen:
            if name not in self.node:
                raise ParameterError(f"Column {name!r} has no level in 'node'; give GeneralizeToNode a level "
                                     "for every column it generalizes.")
        return chosen

    def transform_rows(self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                       rng: np.random.Generator, statistics: Any) -> Outcome:
        for name in columns:
            level = int(self.node[name])
            if level > 0:
                labels = self.hierarchies[name].generalize(chunk[name], level, column=name)
                chunk[name] = pd.Series(labels, index=chunk.index, dtype=object, copy=False)
                schema = schema.replace_column(name, kind=Kind.NOMINAL, order=None)
        return Outcome(chunk, schema, {"node": {name: int(self.node[name]) for name in columns}})

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        return infos[0]
