"""Check any data set against privacy criteria, class by class (seed 003 Definition 2).

Works on data anonymized anywhere (sdckit, ARX, sdcMicro, by hand): the equivalence classes
are the groups of identical quasi-identifier values (missing values form their own group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.anonymity.criteria import (
    Criterion,
    RecursiveCLDiversity,
    TCloseness,
    as_criteria,
)
from sdckit.core.arrays import class_labels, first_rows
from sdckit.core.diversity import value_histogram
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.result import Result, plain
from sdckit.core.schema import Schema

#: Criteria whose measure must stay below a bound (the worst class has the largest value).
_UPPER = (RecursiveCLDiversity, TCloseness)


class CriteriaSummary(list):
    """The per-criterion dicts of :attr:`CheckReport.summary` (a list, as it has always been);
    calling it gives the rows of the :class:`~sdckit.core.result.Result` protocol, one per
    criterion: label, satisfied, violating classes, violating records, worst measure."""

    def __call__(self) -> list[tuple[str, ...]]:
        return [(s["criterion"], "yes" if s["satisfied"] else "NO", str(s["violating_classes"]),
                 str(s["violating_records"]), f"{s['worst']:g}") for s in self]


@dataclass(frozen=True)
class CheckReport(Result):
    """The verdict of :func:`check`.

    Attributes
    ----------
    classes : DataFrame
        One row per equivalence class: its quasi-identifier values, ``size``, and for each
        criterion its measure (``<label>``) and whether the class violates it
        (``<label> violated``).
    summary : list of dict
        Per criterion: ``criterion`` (label), ``satisfied``, ``violating_classes``,
        ``violating_records``, and the worst measure over the classes.
    """

    classes: pd.DataFrame
    summary: list[dict[str, Any]]

    summary_columns = ("criterion", "satisfied", "violating classes", "violating records", "worst class")

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", CriteriaSummary(self.summary))

    @property
    def satisfied(self) -> bool:
        return all(s["satisfied"] for s in self.summary)

    @property
    def violations(self) -> pd.DataFrame:
        """The classes that violate at least one criterion."""
        cols = [c for c in self.classes.columns if c.endswith(" violated")]
        return self.classes[self.classes[cols].any(axis=1)] if cols else self.classes.iloc[:0]

    def to_dict(self, max_classes: int = 1000) -> dict[str, Any]:
        """JSON-friendly form (the violating classes, at most ``max_classes`` of them)."""
        v = self.violations.head(max_classes)
        return plain({
            "satisfied": self.satisfied,
            "classes": len(self.classes),
            "records": self.classes["size"].sum(),
            "criteria": list(self.summary),
            "violating_classes": v.to_dict(orient="records"),
        })


def check(frame: pd.DataFrame, quasi: Sequence[str], criteria: Criterion | Sequence[Criterion],
          schema: Schema | None = None) -> CheckReport:
    """Report, for every equivalence class of ``frame`` over ``quasi``, each criterion's
    measure and whether the class violates it.

    Examples
    --------
    >>> import pandas as pd
    >>> from sdckit.anonymity import KAnonymity
    >>> data = pd.DataFrame({"zip": ["941**"] * 3 + ["9413*"], "disease": ["a", "b", "a", "c"]})
    >>> report = check(data, ["zip"], [KAnonymity(2)])
    >>> report.satisfied, report.summary[0]["violating_records"]
    (False, 1)
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"check expects a pandas DataFrame, got {type(frame).__name__}.")
    if len(frame) == 0:
        raise DataError("check got an empty data set (0 records).")
    quasi = [quasi] if isinstance(quasi, str) else list(quasi)
    if not quasi:
        raise ParameterError("The 'quasi' parameter of check must be a non-empty list of column names. Got [] instead.")
    criteria = as_criteria(criteria)
    if not isinstance(criteria, tuple) or not criteria or not all(isinstance(c, Criterion) for c in criteria):
        raise ParameterError(
            "The 'criteria' parameter of check must be a non-empty list of criteria. "
            f"Got {criteria!r} instead."
        )
    for name in quasi + [c.needs_sensitive for c in criteria if c.needs_sensitive]:
        if name not in frame.columns:
            raise DataError(f"Column {name!r} is not in the data; its columns are: {', '.join(map(str, frame.columns))}.")
    cls, sizes = class_labels(frame, quasi, sort=True)
    g = len(sizes)
    table = frame.iloc[first_rows(cls, g)][quasi].reset_index(drop=True)
    table["size"] = sizes
    summary = []
    for c in criteria:
        hist = overall = labels = None
        if c.needs_sensitive is not None:
            from sdckit.anonymity.lattice import sensitive_order  # numba: only for a sensitive column
            codes, labels = sensitive_order(frame[c.needs_sensitive], schema)
            m = len(labels)
            hist = value_histogram(cls, codes, g, m)
            overall = np.bincount(codes, minlength=m).astype(float)
        label = c.label()
        measure = c.measure(sizes, hist, overall, labels)
        bad = c.violates(sizes, hist, overall, labels)
        table[label] = measure
        table[f"{label} violated"] = bad
        worst = float(measure.max()) if isinstance(c, _UPPER) else float(measure.min())
        summary.append({
            "criterion": label,
            "satisfied": not bool(bad.any()),
            "violating_classes": int(bad.sum()),
            "violating_records": int(sizes[bad].sum()),
            "worst": worst,
        })
    return CheckReport(table, summary)
