"""The memory budget (``--memory 2GB``) and when a file is streamed rather than read whole."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sdckit.core.errors import ParameterError
from sdckit.core.method import Method

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 2**10, "m": 1e6, "mb": 1e6, "mib": 2**20,
          "g": 1e9, "gb": 1e9, "gib": 2**30, "t": 1e12, "tb": 1e12, "tib": 2**40}

#: How many times its size on disk a file takes in memory once read (compressed Parquet columns
#: become numpy arrays and Python strings; a conservative factor).
EXPANSION = {"parquet": 5.0, "csv": 2.0, "tsv": 2.0}


def parse_memory(text: str | int | float) -> int:
    """Bytes in a memory budget such as ``"2GB"``, ``"512MiB"``, ``"1.5g"`` or a number of bytes.

    >>> parse_memory("2GB"), parse_memory("1KiB")
    (2000000000, 1024)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ParameterError(
                f"The 'memory' parameter must be a size such as 2GB, 512MB or 1.5GiB. Got {text!r} instead.")
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1e6:
        raise ParameterError(f"The 'memory' parameter must be at least 1MB. Got {text!r} instead.")
    return int(value)


def should_stream(path: Path, fmt: str, methods: Sequence[Method], memory: int | None) -> bool:
    """Whether a run should stream by itself: every method is row-wise and the file, once read,
    would take more than the budget ``memory`` (bytes)."""
    if memory is None or fmt not in EXPANSION or not all(m.streams for m in methods):
        return False
    return Path(path).stat().st_size * EXPANSION[fmt] > memory
