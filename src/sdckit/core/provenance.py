"""Provenance: the transparency manifest and data fingerprints (Kerckhoffs; DESIGN.md sections 2, 9).

Every release carries a manifest with sdckit's version, the schema, each method with all its
parameters and its report — everything except the seed — and fingerprints that tie it to its data.

A fingerprint of *confidential* data (the input, the data between two steps) is never an unkeyed
hash: an adversary who knows all records but one would hash each candidate value for the missing
one and recover it (issue 19 item 1). Such fingerprints are HMAC-SHA256 under a key the protector
keeps (:func:`new_fingerprint_key`, never in the manifest), or are not published at all. The
release itself is public, so its fingerprint is a plain SHA-256 anyone can check.

``created`` honours ``SOURCE_DATE_EPOCH`` (reproducible-builds.org), so that the same inputs, seed
and version give a byte-identical manifest.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sdckit.core.errors import ParameterError
from sdckit.core.fingerprint import frame_fingerprint
from sdckit.core.result import Result, plain
from sdckit.core.schema import Schema
from sdckit.core.version import __version__

MANIFEST_FORMAT = 2

#: What the manifest says of a fingerprint that is not published (no key was given).
UNPUBLISHED = "not published (no fingerprint key: an unkeyed hash of confidential data can be inverted)"


def new_fingerprint_key() -> str:
    """A fresh fingerprint key: 256 bits of OS entropy as 64 hex digits (keep it secret)."""
    return secrets.token_hex(32)


def parse_fingerprint_key(key: bytes | str) -> bytes:
    """The key's bytes: ``bytes`` as given, a ``str`` as hex (at least 32 digits)."""
    if isinstance(key, bytes | bytearray):
        raw = bytes(key)
    elif isinstance(key, str):
        try:
            raw = bytes.fromhex(key.strip().removeprefix("0x"))
        except ValueError:
            raise ParameterError("The fingerprint key must be hex digits (`sdckit seed` prints one).") from None
    else:
        raise ParameterError(f"The fingerprint key must be bytes or a hex string; got {type(key).__name__}.")
    if len(raw) < 16:
        raise ParameterError("The fingerprint key must carry at least 128 bits (32 hex digits).")
    return raw


def fingerprint(frame: pd.DataFrame, key: bytes | None = None) -> str:
    """A digest of a frame's column names and values (:mod:`sdckit.core.fingerprint`).

    Without ``key``: SHA-256, ``"sha256:<hex>"`` — only for public data (the release). With a
    ``key``: HMAC-SHA256, ``"hmac-sha256:<hex>"`` — for confidential data, so that nobody without
    the key can test a guess of the data against it. The same records give the same fingerprint
    whatever file format they were read from, whatever engine wrote them and however they were
    chunked; the index is not part of it.
    """
    return frame_fingerprint(frame, key)


def created_timestamp() -> str:
    """Now in UTC (ISO 8601, seconds), or ``SOURCE_DATE_EPOCH`` when it is set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        try:
            when = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC)
        except (ValueError, OverflowError, OSError):
            raise ParameterError(f"SOURCE_DATE_EPOCH must be an integer number of seconds; got {epoch!r}.") from None
    else:
        when = _dt.datetime.now(_dt.UTC)
    return when.isoformat(timespec="seconds")


@dataclass(frozen=True)
class Step(Result):
    """One applied method: what it was, what it did, on what (immutable provenance)."""

    method: dict[str, Any]
    input_fingerprint: str
    output_fingerprint: str
    records_in: int
    records_out: int
    info: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The method's manifest entry followed by the step's fingerprints, counts and info."""
        return plain({
            **self.method,
            "input_fingerprint": self.input_fingerprint,
            "output_fingerprint": self.output_fingerprint,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "info": self.info,
            "warnings": self.warnings,
        })


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
        "created": created_timestamp(),
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
    return json.dumps(plain(manifest), indent=2, ensure_ascii=False) + "\n"
