"""Benchmark of the tau-ARGUS readers (issue 13). Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_tauargus.py [--records 1000000] [--repeats 3]

Reads fixed-width microdata laid out by tests/data/tauargus/microdata/Tau_TestW.rda (14 variables,
100-character records): the 500 bundled records of tau_testW.asc repeated to ``--records``
records in a temporary file, and the bundled enterprise file (8,169 records, gzip). Prints the
median wall time, records per second and the peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from sdckit.io import tauargus

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "tauargus"


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rda = tauargus.read_rda(DATA / "microdata" / "Tau_TestW.rda")
    head = (DATA / "microdata" / "tau_testW_head.asc").read_bytes().splitlines(keepends=True)
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.asc"
        with big.open("wb") as out:
            for i in range(args.records):
                out.write(head[i % len(head)])
        seconds, frame = timed(lambda: tauargus.read_asc(big, rda), args.repeats)
        print(f"fixed-width {len(frame):,} records x {frame.shape[1]} variables: {seconds:.2f} s "
              f"(median of {args.repeats}), {len(frame) / seconds:,.0f} records/s")
    seconds, frame = timed(lambda: tauargus.read_asc(DATA / "enterprise" / "example_enterprise.asc.gz",
                                                     DATA / "enterprise" / "example_enterprise.rda"),
                           args.repeats)
    print(f"enterprise (gzip) {len(frame):,} records: {seconds * 1000:.0f} ms (median of {args.repeats})")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
