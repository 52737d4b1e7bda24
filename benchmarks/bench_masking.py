"""Benchmark of the perturbative masking methods (issue 4).

MDAV microaggregation (k=5) on 100,000 x 5; rank swapping (p=15), additive, correlated and
multiplicative noise, and data shuffling (5 confidential + 5 non-confidential columns) on
1,000,000 x 10. Goals on 2 cores: MDAV under 30 s, the others under 5 s each.

Prints, per method, the median wall time of the repeats (after one warm-up run that also
compiles the numba kernels), the median CPU time of the process over the same runs (on a
machine shared with other work the wall time grows with the load while the CPU time of this
single-threaded code does not, so the CPU time is what an unloaded machine's wall time would
be), the load average, and the peak memory the run allocated, measured with tracemalloc in a
separate run (tracemalloc slows the code down, so it is not timed).

Run from the repository root::

    PYTHONPATH=src python benchmarks/bench_masking.py [--repeats 3] [--scale 1.0] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import tracemalloc

import numpy as np
import pandas as pd

from sdckit import Schema
from sdckit.masking import (
    AdditiveNoise,
    CorrelatedNoise,
    DataShuffling,
    Microaggregation,
    MultiplicativeNoise,
    RankSwapping,
)


def frame(n: int, m: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cov = 0.5 * np.eye(m) + 0.5
    data = np.exp(rng.multivariate_normal(np.zeros(m), cov, size=n))
    return pd.DataFrame(data, columns=[f"x{j}" for j in range(m)])


def measure(label, method, data, schema, repeats, goal):
    method.run(data, schema, 0)  # warm-up (numba compilation, caches)
    walls, cpus = [], []
    for r in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        method.run(data, schema, r + 1)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    tracemalloc.start()
    method.run(data, schema, 99)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    verdict = "ok" if min(wall, cpu) < goal else "OVER GOAL"
    print(
        f"{label:<44} wall median {wall:6.2f} s (min {min(walls):.2f})  cpu median {cpu:6.2f} s  "
        f"load {os.getloadavg()[0]:4.1f}  peak {peak / 2**20:7.1f} MiB  goal {goal:.0f} s: {verdict}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the data for a quick run")
    parser.add_argument("--only", nargs="*", help="run only the methods whose label contains one of these")
    args = parser.parse_args()

    n_small, n_big = int(100_000 * args.scale), int(1_000_000 * args.scale)
    small = frame(n_small, 5, 1)
    big = frame(n_big, 10, 2)
    print(f"data: MDAV {small.shape}, others {big.shape}; input {big.memory_usage().sum() / 2**20:.0f} MiB")
    print(f"{args.repeats} timed runs each after a warm-up; {os.cpu_count()} cores")

    def wanted(label: str) -> bool:
        return not args.only or any(word in label for word in args.only)

    if wanted("Microaggregation"):
        measure(f"Microaggregation(k=5) MDAV {n_small}x5", Microaggregation(k=5), small, None, args.repeats, 30)
    cols = list(big.columns)
    shuffle_schema = Schema.infer(big, confidential=cols[:5], non_confidential=cols[5:])
    for label, method, schema in [
        ("RankSwapping(p=15)", RankSwapping(p=15), None),
        ("AdditiveNoise(alpha=0.1)", AdditiveNoise(alpha=0.1), None),
        ("CorrelatedNoise(alpha=0.1)", CorrelatedNoise(alpha=0.1), None),
        ("CorrelatedNoise(0.1, preserve_cov.)", CorrelatedNoise(alpha=0.1, preserve_covariance=True), None),
        ("MultiplicativeNoise(a=0.1)", MultiplicativeNoise(a=0.1), None),
        ("MultiplicativeNoise(0.1, lognormal)", MultiplicativeNoise(a=0.1, distribution="lognormal"), None),
        ("DataShuffling() 5 conf. | 5 cond.", DataShuffling(), shuffle_schema),
    ]:
        if wanted(label):
            measure(f"{label} {n_big}x10", method, big, schema, args.repeats, 5)


if __name__ == "__main__":
    main()
