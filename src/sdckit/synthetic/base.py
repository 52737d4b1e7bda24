"""What every synthesizer shares: the released columns, the number of records, the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.method import Method, Outcome
from sdckit.core.params import Interval, IsNone
from sdckit.core.schema import Role, Schema


@dataclass(frozen=True)
class Synthesizer(Method):
    """Base of the fully synthetic generators (seed 002 section 4.6.3, Rubin's principle).

    A synthesizer fits a model to the columns it targets and releases ``n`` records drawn
    from it (default: as many as the input). **Only the targeted columns are released**, all
    of them synthetic and drawn jointly; every other column is dropped and named in the
    report (``dropped_columns``, with a warning). Keeping an untargeted column would pair
    real values of record *i* with synthetic values, i.e. release real records with a few
    columns replaced — a partially synthetic release that relinks to the respondents; to
    release a column, target it (``columns=[...]``). The output has a fresh index
    ``0..n-1``: no record of the output corresponds to a record of the input.

    Subclasses implement :meth:`synthesize`. ``nan_policy="error"``: a model fitted to data
    with holes would need an imputation model of its own; impute first.
    """

    n: int | None = None
    constraints: ClassVar = {"n": [IsNone(), Interval(int, 1, None)]}
    roles: ClassVar = frozenset({Role.QUASI, Role.CONFIDENTIAL, Role.NON_CONFIDENTIAL})
    nan_policy: ClassVar[str] = "error"
    #: Fewest input records a model can be fitted to.
    min_records: ClassVar[int] = 2

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        if len(frame) < self.min_records:
            raise DataError(
                f"{type(self).__name__} needs at least {self.min_records} records to fit its "
                f"model; got {len(frame)}."
            )
        ordered = tuple(c for c in frame.columns if c in columns)
        size = self.n if self.n is not None else len(frame)
        data = self.synthesize(frame.loc[:, list(ordered)], schema, size, rng)
        data = data.loc[:, list(ordered)].set_axis(pd.RangeIndex(size))
        dropped = [c for c in frame.columns if c not in columns]
        info: dict[str, Any] = {"records_in": len(frame), "records_out": size, "dropped_columns": dropped}
        if dropped:
            info["warnings"] = [
                f"{type(self).__name__} released only the synthesized columns; dropped "
                f"{', '.join(map(repr, dropped))} (target them with columns=[...] to keep them)."
            ]
        return Outcome(data, schema.subset(ordered), info)

    def synthesize(
        self, data: pd.DataFrame, schema: Schema, size: int, rng: np.random.Generator
    ) -> pd.DataFrame:  # pragma: no cover - interface
        """``size`` synthetic records with the columns of ``data`` (complete, >= 2 records)."""
        raise NotImplementedError
