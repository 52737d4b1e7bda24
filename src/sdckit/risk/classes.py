"""Equivalence classes on categorical quasi-identifiers: sizes and sample uniqueness.

Records sharing the values of every quasi-identifier form an equivalence class (seed 003
section 2; seed 004 section II). A record alone in its class is a *sample unique* — the
records k-anonymity protects first. Missing values count as a value of their own (a
suppressed cell matches only other suppressed cells), a conservative choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from sdckit.core.arrays import class_labels
from sdckit.core.errors import DataError, SchemaError
from sdckit.core.result import Result, plain
from sdckit.core.schema import CATEGORICAL_KINDS, Role, Schema


@dataclass(frozen=True)
class ClassRisk(Result):
    """Equivalence-class sizes of a data set on its quasi-identifiers.

    Attributes
    ----------
    quasi : tuple of str
        The quasi-identifiers used.
    sizes : Series
        Size of each record's class (index of the data).
    labels : Series
        Each record's class number (0, 1, ... in order of first appearance).
    size_counts : Series
        Number of classes of each size (index: size, ascending).
    """

    quasi: tuple[str, ...]
    sizes: pd.Series
    labels: pd.Series

    @property
    def size_counts(self) -> pd.Series:
        counts = self.sizes.value_counts()  # records per size
        return (counts // counts.index).sort_index().rename("classes")

    @property
    def n_classes(self) -> int:
        return int(self.size_counts.sum())

    @property
    def uniques(self) -> int:
        """Records alone in their class (sample uniques)."""
        return int((self.sizes == 1).sum())

    @property
    def share_unique(self) -> float:
        return self.uniques / len(self.sizes)

    @property
    def k(self) -> int:
        """The smallest class size: the data set is k-anonymous for this k."""
        return int(self.sizes.min())

    def below(self, k: int) -> int:
        """Records in classes smaller than ``k``."""
        return int((self.sizes < k).sum())

    def to_dict(self) -> dict[str, object]:
        """Counts of the classes (never a record): sizes, uniques, k and classes per size."""
        return plain({
            "quasi": list(self.quasi), "records": len(self.sizes), "classes": self.n_classes,
            "uniques": self.uniques, "share_unique": self.share_unique, "k": self.k,
            "size_counts": {int(s): int(c) for s, c in self.size_counts.items()},
        })

    def summary(self) -> list[tuple[str, str]]:
        """Records, classes, sample uniques and k."""
        return [("quasi-identifiers", ", ".join(self.quasi)), ("records", f"{len(self.sizes):,}"),
                ("classes", f"{self.n_classes:,}"), ("sample uniques", f"{self.uniques:,}"),
                ("share unique", f"{self.share_unique:.4f}"), ("k (smallest class)", str(self.k))]


def categorical_quasi(schema: Schema) -> tuple[str, ...]:
    """The quasi-identifiers of ``schema`` whose kind is nominal or ordinal."""
    return tuple(c.name for c in schema.columns if c.role is Role.QUASI and c.kind in CATEGORICAL_KINDS)


def equivalence_classes(
    frame: pd.DataFrame, quasi: Sequence[str] | None = None, *, schema: Schema | None = None
) -> ClassRisk:
    """Class sizes of ``frame`` on ``quasi`` (default: the schema's categorical quasi-identifiers).

    Examples
    --------
    >>> f = pd.DataFrame({"sex": ["f", "f", "m", "m", "m"], "zip": ["1", "1", "1", "2", "2"]})
    >>> r = equivalence_classes(f, ["sex", "zip"])
    >>> r.sizes.tolist(), r.uniques, r.k
    ([2, 2, 1, 2, 2], 1, 1)
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"equivalence_classes expects a pandas DataFrame; got {type(frame).__name__}.")
    if len(frame) == 0:
        raise DataError("equivalence_classes got an empty data set (0 records).")
    if quasi is None:
        if schema is None:
            raise SchemaError("equivalence_classes needs the quasi-identifiers: pass quasi=[...] or a schema that declares them.")
        quasi = categorical_quasi(schema)
        if not quasi:
            raise SchemaError("The schema declares no nominal or ordinal quasi-identifier; pass quasi=[...] to choose columns.")
    quasi = [quasi] if isinstance(quasi, str) else list(quasi)
    if not quasi:
        raise SchemaError("equivalence_classes was given an empty list of quasi-identifiers; name at least one.")
    for name in quasi:
        if name not in frame.columns:
            raise SchemaError(f"Quasi-identifier {name!r} is not in the data; the columns are: {', '.join(map(str, frame.columns))}.")
    cls, class_sizes = class_labels(frame, quasi, sort=False)
    labels = pd.Series(cls, index=frame.index, name="class")
    sizes = pd.Series(class_sizes[cls], index=frame.index, name="class_size")
    return ClassRisk(tuple(quasi), sizes, labels)
