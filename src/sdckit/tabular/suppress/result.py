"""What secondary cell suppression returns: :class:`SuppressionResult`, a :class:`~sdckit.core.result.Result`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sdckit.core.result import Result
from sdckit.tabular.audit import AuditResult
from sdckit.tabular.rules import Sensitivity
from sdckit.tabular.table import Table

#: The status of a cell in a protected table.
STATUSES = ("safe", "primary", "secondary")

#: A field kept out of ``to_dict`` (the table, the per-cell frames).
_NOT_IN_DICT = {"dict": False}


@dataclass(frozen=True)
class SuppressionResult(Result):
    """A protected table.

    Attributes
    ----------
    cells : DataFrame
        The dimension codes, ``value``, ``freq`` and ``status`` (``safe``/``primary``/``secondary``).
    optimal : bool
        True when the MILP proved the pattern optimal (``method="optimal"`` only).
    gap : float or None
        Relative gap (cost - lower bound) / cost when a time limit stopped the MILP; 0 when optimal.
    """

    table: Table = field(repr=False, metadata=_NOT_IN_DICT)
    sensitivity: Sensitivity = field(repr=False, metadata=_NOT_IN_DICT)
    cells: pd.DataFrame = field(repr=False, metadata=_NOT_IN_DICT)
    method: str
    cost: str
    primaries: int
    secondaries: int
    suppressed_value_share: float
    secondary_cost: float
    optimal: bool
    gap: float | None
    lower_bound: float | None
    seconds: float
    rounds: int
    audit: AuditResult = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The fields (through :func:`~sdckit.core.result.plain`), with ``cells`` the number of
        cells and ``seconds`` to the millisecond."""
        d = super().to_dict()
        return {"method": d.pop("method"), "cost": d.pop("cost"), "cells": len(self.cells),
                **d, "seconds": round(self.seconds, 3)}
