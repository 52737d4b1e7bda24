"""JSON-friendly form of the permutation results (frozen dataclasses with ``to_dict``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """``value`` made of dicts, lists, str, int, float, bool and None only (NaN -> None)."""
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, pd.DataFrame):
        frame = value.reset_index()
        frame.columns = ["record", *map(str, value.columns)]
        return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
    if isinstance(value, pd.Series):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


class Result:
    """Mixin of the permutation result dataclasses: ``to_dict()`` for ``--json`` output."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
