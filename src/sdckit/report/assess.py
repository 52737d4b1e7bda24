"""One call from two data sets (and optionally a manifest) to ``report.html``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from sdckit.core.schema import Schema
from sdckit.report.model import Report, build_report
from sdckit.report.render import write_report


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
    n_null, alpha, interval_p, title, random_state, progress). Returns the report model, whose
    ``data`` holds the figures as JSON-ready values.
    """
    report = build_report(original, released, schema=schema, manifest=manifest, **settings)
    write_report(report, path, inputs)
    return report


def schema_from_manifest(manifest: Mapping[str, Any], frame: pd.DataFrame) -> Schema | None:
    """The schema a manifest records, restricted to ``frame``'s columns (None if it has none).

    Roles and kinds come from the manifest; kinds of columns it does not list are inferred.
    """
    from sdckit.core.errors import ParameterError

    entries = (manifest.get("schema") or {}).get("columns")
    if not entries:
        return None
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) and "name" in e for e in entries):
        raise ParameterError("The manifest's 'schema' is malformed: expected a list of columns with a 'name'.")
    known = {e["name"]: e for e in entries if e["name"] in frame.columns}
    roles: dict[str, list[str]] = {}
    for name, entry in known.items():
        if entry.get("role"):
            roles.setdefault(entry["role"], []).append(name)
    kinds = {n: e["kind"] for n, e in known.items() if e.get("kind")}
    orders = {n: e["order"] for n, e in known.items() if e.get("order") is not None and e.get("kind") == "ordinal"}
    return Schema.infer(frame, kinds=kinds, orders=orders, **{
        "identifier": roles.get("identifier", ()), "quasi": roles.get("quasi", ()),
        "confidential": roles.get("confidential", ()), "non_confidential": roles.get("non_confidential", ()),
    })
