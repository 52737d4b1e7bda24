"""The memory budget (``--memory 2GB``) and when a file is streamed rather than read whole."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sdckit.core.errors import ParameterError
from sdckit.core.method import Method

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 2**10, "m": 1e6, "mb": 1e6, "mib": 2**20,
          "g": 1e9, "gb": 1e9, "gib": 2**30, "t": 1e12, "tb": 1e12, "tib": 2**40}

#: How many times its data's size a run in memory holds at its peak: the frame read, the copy
#: protect() works on and the method's output (a CSV's text is about the size of its values).
EXPANSION = 3.0
_FORMATS = ("parquet", "csv", "tsv")


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


def data_size(path: Path, fmt: str) -> int:
    """Bytes a file's records take as a pandas frame (text as Python strings), estimated from
    its first 65,536 records and its number of records (Parquet: from the metadata; CSV: from
    the file's size and the sample's share of it)."""
    sample_rows = 65_536
    if fmt == "parquet":
        import pyarrow.parquet as pq

        handle = pq.ParquetFile(path, pre_buffer=False)
        rows = handle.metadata.num_rows
        batch = next(handle.iter_batches(batch_size=sample_rows), None)
        if batch is None or rows == 0:
            return 0
        sample = batch.to_pandas()
    else:
        import pandas as pd

        size = Path(path).stat().st_size
        sample = pd.read_csv(path, sep="\t" if fmt == "tsv" else None, engine="python", nrows=sample_rows)
        if len(sample) == 0:
            return 0
        with open(path, "rb") as fh:
            head = b"".join(fh.readline() for _ in range(len(sample) + 1))
        rows = max(len(sample), int(size / max(len(head), 1) * len(sample)))
    return int(sample.memory_usage(deep=True, index=False).sum() / len(sample) * rows)


def should_stream(path: Path, fmt: str, methods: Sequence[Method], memory: int | None) -> bool:
    """Whether a run should stream by itself: every method is row-wise (or rank swapping) and a run in memory
    would need more than the budget ``memory`` (bytes): :data:`EXPANSION` times the data."""
    from sdckit.engine.plan import runs_on_file

    if memory is None or fmt not in _FORMATS or not all(m.streams or runs_on_file(m) for m in methods):
        return False
    return data_size(Path(path), fmt) * EXPANSION > memory
