"""One call from two data sets (and optionally a manifest) to ``report.html``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from sdckit.core.schema import Schema
from sdckit.report.model import Report, build_report, schema_from_manifest
from sdckit.report.render import write_report

__all__ = ["assess_report", "schema_from_manifest"]


def assess_report(
    original: pd.DataFrame,
    released: pd.DataFrame,
    path: str | Path,
    *,
    schema: Schema | None = None,
    manifest: Mapping[str, Any] | None = None,
    inputs: tuple[Path, ...] = (),
    **settings: Any,
) -> Report:
    """Build the report of ``released`` against ``original`` and write it to ``path``.

    ``settings`` are those of :func:`~sdckit.report.build_report` (columns, null, n_random,
    n_null, alpha, interval_p, title, seed, progress). Returns the report model, whose
    ``data`` holds the figures as JSON-ready values.
    """
    report = build_report(original, released, schema=schema, manifest=manifest, **settings)
    write_report(report, path, inputs)
    return report
