"""Time the synthesizers (and local suppression) on 10^5 records.

    PYTHONPATH=src python benchmarks/bench_synthetic.py [--n 100000] [--repeats 3]

Prints, per method, the median wall time of ``--repeats`` runs and the peak memory traced
by tracemalloc in one extra run (numpy allocations are traced).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
import pandas as pd

from sdckit import Schema
from sdckit.masking import LocalSuppression
from sdckit.synthetic import CartSynthesizer, GaussianCopulaSynthesizer, MultivariateNormalSynthesizer


def make_frame(n: int, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """5 correlated numeric columns, an integer and two nominal columns, 4 skewed codes."""
    rng = np.random.default_rng(seed)
    cov = 0.5 * np.ones((5, 5)) + 0.5 * np.eye(5)
    x = rng.multivariate_normal(np.zeros(5), cov, size=n)
    frame = pd.DataFrame(x, columns=[f"x{j}" for j in range(5)])
    frame["age"] = rng.integers(18, 90, n)
    frame["region"] = rng.choice(["north", "south", "east", "west"], n)
    frame["sex"] = rng.choice(["F", "M"], n)
    # skewed (Zipf) categories: many rare combinations, the hard case for local suppression
    for name, size in (("z70", 70), ("z4", 4), ("z2", 2), ("z10", 10)):
        weights = 1 / np.arange(1, size + 1)
        frame[name] = rng.choice(size, n, p=weights / weights.sum())
    return frame, Schema.infer(frame, kinds={c: "nominal" for c in ("z70", "z4", "z2", "z10")})


def measure(label: str, run, repeats: int) -> None:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{label:<58} median {statistics.median(times):7.2f} s   peak {peak / 2**20:7.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    frame, schema = make_frame(args.n)
    numeric = [f"x{j}" for j in range(5)]
    print(f"{args.n} records; median of {args.repeats} runs")
    cases = [
        ("MultivariateNormalSynthesizer, 5 numeric", MultivariateNormalSynthesizer(columns=numeric)),
        ("GaussianCopulaSynthesizer, 5 numeric + int", GaussianCopulaSynthesizer(columns=[*numeric, "age"])),
        ("CartSynthesizer, 5 numeric", CartSynthesizer(columns=numeric)),
        ("CartSynthesizer, 5 numeric + int + 2 nominal", CartSynthesizer(columns=[*numeric, "age", "region", "sex"])),
        ("LocalSuppression k=5, (age, region, sex) uniform", LocalSuppression(k=5, columns=["age", "region", "sex"])),
        ("LocalSuppression k=5, 4 Zipf QIs (70x4x2x10)", LocalSuppression(k=5, columns=["z70", "z4", "z2", "z10"])),
    ]
    for i, (label, method) in enumerate(cases):
        measure(label, lambda m=method, i=i: m.apply(frame, schema, i), args.repeats)


if __name__ == "__main__":
    main()
