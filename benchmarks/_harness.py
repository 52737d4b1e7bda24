"""What the benchmark scripts share: the median time of repeated calls, the peak resident memory
of a process, and running the script itself again in a child process (so that each measurement's
peak memory is its own) that prints its result as one JSON line last.

Imported by the scripts as ``from _harness import ...`` (``python benchmarks/bench_x.py`` puts
this folder on ``sys.path``).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def median_seconds(fn: Callable[[], Any], repeats: int = 3) -> float:
    """The median wall time in seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident memory in MiB of this process (or of its finished children), from
    ``getrusage`` (``ru_maxrss`` is in KiB on Linux)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def run_self(script: str, *args: str) -> dict[str, Any]:
    """Run ``python script args...`` in a child process and return the JSON object on the last
    line of its standard output (the child's own peak memory is in it)."""
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
