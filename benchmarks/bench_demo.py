"""Benchmark: `sdckit demo` end to end (issue 2's goal: under 10 s, HTML report included).

Run from the repository root:  PYTHONPATH=src python benchmarks/bench_demo.py [--repeats 3]
Prints the median wall time of the whole command (a fresh process each time, imports included)
and its peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "sdckit", "demo", "--out", os.path.join(folder, str(i))],
                           check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"sdckit demo: median {statistics.median(times):.2f} s over {args.repeats} runs "
          f"(goal < 10 s, ratio {statistics.median(times) / 10:.2f}); peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
