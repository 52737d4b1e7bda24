"""What a method returns to the pipeline (DESIGN.md section 2): its own module, so that the
method contract (:mod:`sdckit.core.method`) and the row-wise runner (:mod:`sdckit.core.rowwise`)
both use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sdckit.core.schema import Schema


@dataclass(frozen=True)
class Outcome:
    """What a method returns to the pipeline: the data, its schema and a report for the manifest."""

    data: pd.DataFrame
    schema: Schema
    info: dict[str, Any] = field(default_factory=dict)
