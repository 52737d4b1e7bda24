"""The plan of a row-wise run: each step's method, key, columns, schema and statistics, and the
one function every engine applies to a logical chunk (:func:`run_chunk`).

A step's statistics are computed on the data *as that step sees it* — the output of the steps
before it — by re-running those steps on each chunk (exact: a chunk's random streams depend
only on the keys and its index), so a run makes one pass per step that needs statistics, plus
the final pass that writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.method import Method, Outcome, require_finite, require_no_nan, require_no_new_missing
from sdckit.core.rowwise import chunk_generator, merge_all, step_key
from sdckit.core.schema import Role, Schema

#: Called with (done, total, label) as an engine works.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class PlannedStep:
    """One row-wise step as every chunk runs it."""

    method: Method
    key: int = field(repr=False)
    columns: tuple[str, ...]
    schema: Schema
    statistics: Any = None


#: Methods the engines run as one whole-file step on DuckDB, by registered name: global-rank
#: methods on its external sort, household methods on its grouped passes.
WHOLE_FILE_METHODS = ("rank_swapping", "record_swapping")


def runs_on_file(method: Method) -> bool:
    """Whether ``method`` is one the engines run as a whole-file step on DuckDB (rank swapping
    on the external sort, record swapping by households) between streamed steps."""
    return method.name in WHOLE_FILE_METHODS and not getattr(method, "strata", None)


def require_streamable(methods: Sequence[Method], engine: str) -> None:
    """Refuse a method that cannot run by chunks or on an external sort, naming it and what it needs."""
    for i, method in enumerate(methods):
        if not method.streams and not runs_on_file(method):
            why = "it runs per stratum" if getattr(method, "strata", None) else f"it needs {method.needs!r}"
            raise ParameterError(
                f"methods[{i}] ({type(method).__name__}) cannot run on the {engine!r} engine's stream: "
                f"{why}, not rows alone. The streamed methods are the row-wise ones (noise, "
                "multiplicative noise, top/bottom coding, rounding, PRAM, global recoding, generalization to a "
                "node), rank "
                "swapping (on an external sort) and record swapping (by households); use engine='memory' for "
                "this recipe."
            )


def run_chunk(chunk: pd.DataFrame, index: int, steps: Sequence[PlannedStep]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Apply ``steps`` to logical chunk ``index`` with the checks :meth:`Method.run` makes;
    returns the chunk's output and each step's report."""
    infos = []
    for step in steps:
        method, owner = step.method, type(step.method).__name__
        if method.nan_policy == "error":
            require_no_nan(chunk, step.columns, owner)
        require_finite(chunk, step.columns, owner)
        result = method.transform_rows(chunk.copy(), step.columns, step.schema,
                                       chunk_generator(step.key, index), step.statistics)
        outcome = result if isinstance(result, Outcome) else Outcome(result, step.schema)
        if not method.suppresses:
            require_no_new_missing(chunk, outcome.data, owner)
        chunk = outcome.data
        infos.append(outcome.info)
    return chunk, infos


def chunk_statistics(chunk: pd.DataFrame, index: int, steps: Sequence[PlannedStep], method: Method,
                     columns: tuple[str, ...]) -> Any:
    """The partial statistics of ``method`` on logical chunk ``index`` after ``steps``."""
    data, _ = run_chunk(chunk, index, steps)
    if method.nan_policy == "error":
        require_no_nan(data, columns, type(method).__name__)
    require_finite(data, columns, type(method).__name__)
    return method.chunk_statistics(data, columns)


def prepare_schema(first: pd.DataFrame, schema: Schema | dict[str, Any] | None, keep_identifiers: bool
                   ) -> tuple[Schema, Schema, list[str]]:
    """The input schema (given, or inferred from the first logical chunk), the schema after the
    identifiers are dropped, and the dropped identifiers."""
    if schema is None:
        schema = Schema.infer(first)
    elif not isinstance(schema, Schema):
        schema = Schema.from_dict(schema, first)
    schema.validate(first)
    dropped = [] if keep_identifiers else list(schema.with_role(Role.IDENTIFIER))
    kept = [c for c in first.columns if c not in dropped]
    return schema, schema.subset(kept), dropped


def steps_reaching(steps: Sequence[PlannedStep], columns: Sequence[str]) -> list[PlannedStep]:
    """The steps (in order) whose output ``columns`` depend on: a row-wise step reads and writes
    only its own columns and draws from its own streams, so the others can be left out of a
    statistics pass (the same statistics, fewer steps and columns to read)."""
    needed, kept = set(columns), []
    for step in reversed(steps):
        if needed & set(step.columns):
            needed |= set(step.columns)
            kept.append(step)
    return kept[::-1]


def step_columns(steps: Sequence[PlannedStep], columns: Sequence[str]) -> list[str]:
    """Every column ``steps`` and ``columns`` touch (what a statistics pass must read)."""
    out = list(dict.fromkeys([*columns, *(c for s in steps for c in s.columns)]))
    return out


def build_plan(
    methods: Sequence[Method],
    schema: Schema,
    rng: np.random.Generator,
    first_chunk: pd.DataFrame,
    statistics_of: Callable[[list[PlannedStep], Method, tuple[str, ...]], Iterable[Any]],
    progress: Progress | None = None,
) -> list[PlannedStep]:
    """Plan the steps: draw each step's key from ``rng`` in order (as :meth:`Method.run` does),
    choose its columns on the schema it sees, and merge its statistics, which
    ``statistics_of(steps_before, method, columns)`` yields chunk by chunk in chunk order."""
    steps: list[PlannedStep] = []
    current = schema
    for i, method in enumerate(methods):
        key = step_key(rng)
        columns = method.target_columns(current)
        stats = None
        if method.needs_statistics():
            parts = statistics_of(steps_reaching(steps, columns), method, columns)
            stats = method.finish_statistics(merge_all(parts, method.merge_statistics))
        step = PlannedStep(method, key, columns, current, stats)
        # the schema the next step sees: the method's output schema on the first chunk
        result = method.transform_rows(run_chunk(first_chunk, 0, steps)[0].copy(), columns, current,
                                       chunk_generator(key, 0), stats)
        current = result.schema if isinstance(result, Outcome) else current
        steps.append(step)
        if progress is not None:
            progress(i + 1, len(methods), f"statistics of {type(method).__name__}")
    return steps
