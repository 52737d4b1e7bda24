"""The release's manifest in the report: the transparency section (every method with every
parameter, never the seed) and the schema the manifest records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.schema import Schema
from sdckit.report.section import Section


def transparency_section(manifest: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> Section:
    """The manifest as the transparency section: every method with every parameter, no seed."""
    if manifest is None:
        return Section("transparency.html", "Transparency: how the release was made", "transparency",
                       {"manifest": None, "settings": dict(settings)},
                       note="No manifest was given: the methods and parameters that produced this release are not known to the report.")
    methods = []
    for m in manifest.get("methods", []):
        methods.append({
            "name": m.get("name"), "cls": m.get("class"),
            "params": [(k, display(v)) for k, v in (m.get("params") or {}).items()],
            "info": [(k, display(v)) for k, v in (m.get("info") or {}).items()],
            "warnings": list(m.get("warnings") or []),
            "records": f"{m.get('records_in', '?')} -> {m.get('records_out', '?')}",
        })
    schema_cols = (manifest.get("schema") or {}).get("columns", [])
    ctx = {
        "manifest": manifest,
        "methods": methods,
        "schema": [(c.get("name"), c.get("role") or "-", c.get("kind")) for c in schema_cols],
        "input": manifest.get("input", {}),
        "output": manifest.get("output", {}),
        "dropped": manifest.get("dropped_identifiers", []),
        "settings": dict(settings),
    }
    return Section("transparency.html", "Transparency: how the release was made", "transparency", ctx)


def display(value: Any) -> str:
    """A manifest value as the transparency section shows it (text, not JSON)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={display(v)}" for k, v in value.items()) or "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(display(v) for v in value) + "]"
    if value is None:
        return "none (default)"
    return str(value)


def schema_from_manifest(manifest: Mapping[str, Any], frame: pd.DataFrame) -> Schema | None:
    """The schema a manifest records, restricted to ``frame``'s columns (None if it has none).

    Roles and kinds come from the manifest; kinds of columns it does not list are inferred.
    """
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
