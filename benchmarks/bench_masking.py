"""Benchmark of the perturbative masking methods (issue 4).

MDAV microaggregation (k=5) on 100,000 x 5; rank swapping (p=15), additive, correlated and
multiplicative noise, and data shuffling (5 confidential + 5 non-confidential columns) on
1,000,000 x 10. Goals on 2 cores: MDAV under 30 s, the others under 5 s each.

Prints, per method, the median wall time of the repeats (after one warm-up run that also
compiles the numba kernels) and the peak memory the run allocated, measured with tracemalloc
in a separate run (tracemalloc slows the code down, so it is not timed).

Run from the repository root::

    PYTHONPATH=src python benchmarks/bench_masking.py [--repeats 3] [--scale 1.0]
"""

from __future__ import annotations

import argparse
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
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        method.run(data, schema, r + 1)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    method.run(data, schema, 99)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    median = statistics.median(times)
    verdict = "ok" if median < goal else "OVER GOAL"
    print(
        f"{label:<40} median {median:7.2f} s  (min {min(times):.2f}, max {max(times):.2f}, "
        f"{repeats} runs)  peak {peak / 2**20:8.1f} MiB  goal {goal:.0f} s: {verdict}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the data for a quick run")
    args = parser.parse_args()

    n_small, n_big = int(100_000 * args.scale), int(1_000_000 * args.scale)
    small = frame(n_small, 5, 1)
    big = frame(n_big, 10, 2)
    print(f"data: MDAV {small.shape}, others {big.shape}; input {big.memory_usage().sum() / 2**20:.0f} MiB")
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
        measure(f"{label} {n_big}x10", method, big, schema, args.repeats, 5)


if __name__ == "__main__":
    main()
