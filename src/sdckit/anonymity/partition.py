"""The result of an anonymization as equivalence classes (the interface of (k,epsilon)-anonymity).

Both :class:`~sdckit.anonymity.fulldomain.FullDomainGeneralization` and
:class:`~sdckit.anonymity.mondrian.Mondrian` expose ``partition(frame, schema) -> Partition``;
their own ``transform`` releases ``Partition.data``, and the (k,epsilon)-anonymity of seed 004
section IV builds on the classes to add noise per class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.result import Result


@dataclass(frozen=True)
class Partition(Result):
    """Equivalence classes of a generalized table.

    Attributes
    ----------
    data : DataFrame
        The generalized frame, suppressed records removed, the input's index kept (so
        ``frame.loc[partition.data.index]`` are the original records of the release).
    classes : ndarray of int
        Equivalence-class id (0 .. number of classes - 1) of each row of ``data``.
    info : dict
        The report for the manifest (node or cuts, suppressed records, classes, loss, ...).
    """

    data: pd.DataFrame = field(metadata={"dict": False})
    classes: np.ndarray = field(metadata={"dict": False})
    info: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> list[tuple[str, str]]:
        """Records released and equivalence classes."""
        return [("records", f"{len(self.data):,}"), ("equivalence classes", f"{self.n_classes:,}")]

    @property
    def sizes(self) -> np.ndarray:
        """Number of records in each class."""
        return np.bincount(self.classes) if len(self.classes) else np.zeros(0, dtype=np.int64)

    @property
    def n_classes(self) -> int:
        return int(self.classes.max()) + 1 if len(self.classes) else 0
