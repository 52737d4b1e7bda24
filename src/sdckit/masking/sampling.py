"""Sampling of records (seed 002 section 4.6.3, non-perturbative masking)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval
from sdckit.core.schema import Kind, Role, Schema


def sample_size(fraction: float, n: int) -> int:
    """Records a sample of ``fraction`` of ``n`` keeps: ``fraction * n`` rounded half up, >= 1."""
    return max(1, min(n, int(np.floor(fraction * n + 0.5))))


@register
@dataclass(frozen=True)
class Sampling(Method):
    """Release a simple random sample, without replacement, of the records.

    Exactly ``sample_size(fraction, n)`` records are kept — ``fraction * n`` rounded half up,
    at least one — chosen uniformly among all subsets of that size. The kept records keep
    their original index and their original order; their values are unchanged ("instead of
    publishing the original data file, only a sample of it is published", seed 002 section
    4.6.3: a sample unique is then often not a population unique).

    Parameters
    ----------
    fraction : float in (0, 1]
        The sampling fraction.
    columns : list of str, optional
        Not used to choose anything (whole records are sampled); names given are checked to
        exist.

    Notes
    -----
    ``nan_policy="pass"``: values, missing or not, are released as they are. The report gives
    the records in and out. Sampling protects categorical data better than continuous data:
    seed 002 warns that for continuous data sampling alone does not suffice.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "sampling".

    Examples
    --------
    >>> import pandas as pd
    >>> len(Sampling(fraction=0.25).apply(pd.DataFrame({"x": range(10)}), seed=1))
    3
    """

    fraction: float
    name: ClassVar[str] = "sampling"
    constraints: ClassVar = {"fraction": Interval(float, 0, 1, closed="right")}
    kinds: ClassVar = frozenset(Kind)
    roles: ClassVar = frozenset({Role.QUASI, Role.CONFIDENTIAL, Role.NON_CONFIDENTIAL})
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"fraction": 0.5}

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        n = len(frame)
        size = sample_size(self.fraction, n)
        keep = np.sort(rng.choice(n, size=size, replace=False))
        return Outcome(frame.iloc[keep], schema, {"records_in": n, "records_out": size})
