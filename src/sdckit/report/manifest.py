"""The transparency manifest (Kerckhoffs; DESIGN.md section 2).

Every release carries a manifest with sdckit's version, a SHA-256 fingerprint of the input,
the schema, each method with all its parameters and its report — everything except the seed.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdckit import __version__
from sdckit.core.schema import Schema

MANIFEST_FORMAT = 1


def fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's column names, dtypes and values, as ``"sha256:<hex>"``.

    The same data gives the same fingerprint whatever file it was read from; the index is
    not part of it.
    """
    digest = hashlib.sha256()
    digest.update(f"{frame.shape[0]}x{frame.shape[1]}".encode())
    for name in frame.columns:
        series = frame[name]
        digest.update(b"\x00col\x00" + str(name).encode() + b"\x00" + str(series.dtype).encode())
        if pd.api.types.is_numeric_dtype(series.dtype) and not isinstance(
            series.dtype, pd.CategoricalDtype
        ):
            values = series.to_numpy(dtype=float, na_value=np.nan)
            digest.update(np.ascontiguousarray(values).tobytes())
        else:
            text = "\x1f".join("\x1e" if pd.isna(v) else str(v) for v in series.tolist())
            digest.update(text.encode("utf-8", "surrogatepass"))
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class Step:
    """One applied method: what it was, what it did, on what (immutable provenance)."""

    method: dict[str, Any]
    input_fingerprint: str
    output_fingerprint: str
    records_in: int
    records_out: int
    info: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.method,
            "input_fingerprint": self.input_fingerprint,
            "output_fingerprint": self.output_fingerprint,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "info": self.info,
            "warnings": list(self.warnings),
        }


def build_manifest(
    *,
    input_fingerprint: str,
    input_shape: tuple[int, int],
    schema: Schema,
    steps: Sequence[Step],
    output_fingerprint: str,
    output_shape: tuple[int, int],
    dropped_identifiers: Sequence[str],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the manifest dictionary (JSON-ready). It never contains the seed."""
    manifest: dict[str, Any] = {
        "manifest_format": MANIFEST_FORMAT,
        "sdckit_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "input": {
            "fingerprint": input_fingerprint,
            "records": input_shape[0],
            "columns": input_shape[1],
        },
        "schema": schema.to_dict(),
        "dropped_identifiers": list(dropped_identifiers),
        "methods": [s.to_dict() for s in steps],
        "output": {
            "fingerprint": output_fingerprint,
            "records": output_shape[0],
            "columns": output_shape[1],
        },
    }
    if extra:
        manifest.update(extra)
    return manifest


def manifest_json(manifest: dict[str, Any]) -> str:
    """The manifest as indented JSON text."""
    return json.dumps(manifest, indent=2, ensure_ascii=False, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, pd.Timestamp | _dt.date):
        return value.isoformat()
    return str(value)
