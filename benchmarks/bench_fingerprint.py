"""Fingerprint speed (issue 28 item 1): the canonical columnar fingerprint against the per-cell
``str()`` one it replaced, side by side on the same frame, plus the streamed fingerprint of the
same records as Parquet parts.

    PYTHONPATH=src python benchmarks/bench_fingerprint.py [--copies 100] [--repeats 3]

Prints, per variant, the median seconds over the repeats, the throughput in MB/s of the frame's
in-memory size (``memory_usage(deep=True)``) and the ratio old / new; last, the peak memory.
The goal is >= 500 MB/s on one core for the new fingerprint.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from _harness import median_seconds, peak_rss_mb

from sdckit.core.provenance import fingerprint
from sdckit.engine.sources import stream_fingerprint

ADULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "adult" / "adult.csv.gz"


def legacy_fingerprint(frame: pd.DataFrame) -> str:
    """The fingerprint as it was before issue 28 (per-cell ``str()`` and ``pd.isna``): the baseline."""
    digest = hashlib.sha256()
    digest.update(f"{frame.shape[0]}x{frame.shape[1]}".encode())
    for name in frame.columns:
        series = frame[name]
        digest.update(b"\x00col\x00" + str(name).encode() + b"\x00" + str(series.dtype).encode())
        if pd.api.types.is_numeric_dtype(series.dtype) and not isinstance(series.dtype, pd.CategoricalDtype):
            digest.update(np.ascontiguousarray(series.to_numpy(dtype=float, na_value=np.nan)).tobytes())
        else:
            text = "\x1f".join("\x1e" if pd.isna(v) else str(v) for v in series.tolist())
            digest.update(text.encode("utf-8", "surrogatepass"))
    return "sha256:" + digest.hexdigest()



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=100, help="copies of Adult (30,162 rows each)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-legacy", action="store_true", help="skip the slow baseline")
    args = parser.parse_args()

    adult = pd.read_csv(ADULT, sep=";")
    frame = adult.iloc[np.arange(args.copies * len(adult)) % len(adult)].reset_index(drop=True)
    megabytes = frame.memory_usage(deep=True, index=False).sum() / 1e6
    print(f"frame: {len(frame):,} rows x {frame.shape[1]} columns, {megabytes:,.0f} MB in memory")

    raw = np.random.default_rng(0).bytes(400_000_000)
    sha = median_seconds(lambda: hashlib.sha256(raw).digest(), args.repeats)
    del raw
    print(f"SHA-256 of 400 MB of raw bytes on this machine now: {400 / sha:,.0f} MB/s (the ceiling)")
    new = median_seconds(lambda: fingerprint(frame), args.repeats)
    print(f"canonical fingerprint: {new:.2f} s median, {megabytes / new:,.0f} MB/s")
    if not args.no_legacy:
        old = median_seconds(lambda: legacy_fingerprint(frame), 1)
        print(f"per-cell str() fingerprint (before): {old:.2f} s, {megabytes / old:,.0f} MB/s; "
              f"ratio before/after {old / new:.1f}x")
    with tempfile.TemporaryDirectory() as folder:
        parts = []
        for i, chunk in enumerate(np.array_split(np.arange(len(frame)), 4)):
            path = Path(folder) / f"part{i}.parquet"
            pq.write_table(pa.Table.from_pandas(frame.iloc[chunk], preserve_index=False), path)
            parts.append(path)
        names = {str(c): str(frame[c].dtype) for c in frame.columns}
        streamed = median_seconds(lambda: stream_fingerprint(parts, names), args.repeats)
        same = stream_fingerprint(parts, names) == fingerprint(frame)
        print(f"streamed from 4 Parquet parts: {streamed:.2f} s median ({megabytes / streamed:,.0f} MB/s "
              f"of frame size, reading included); same fingerprint as in memory: {same}")
    print(f"peak memory: {peak_rss_mb():,.0f} MiB")


if __name__ == "__main__":
    main()
