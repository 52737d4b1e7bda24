"""Benchmark and experiment of sdckit.dp (seed 004 section VII on Adult with a synthetic height).

Prints:
1. the exact sampler's throughput against numpy's textbook (attackable) Laplace, side by side;
2. (k,epsilon)-anonymity on Adult (30,162 records): run time (median of repeats) and peak
   memory for both k-anonymity algorithms;
3. seed 004's experiment: predicted (eq. 8) and measured relative error, linking risk and
   99%-confident suppression for several epsilon.

Run: PYTHONPATH=src python benchmarks/bench_dp.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _harness import median_seconds  # noqa: E402
from dp_adult import K_QUASI, adult_hierarchies, adult_with_height  # noqa: E402

from sdckit.dp import KEpsilonAnonymity, Laplace  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    n = 1_000_000
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    rng = np.random.default_rng(0)
    exact = median_seconds(lambda: mech.noise(n, rng), args.repeats)
    textbook = median_seconds(lambda: rng.laplace(0.0, 1.0, n), args.repeats)
    print(f"sampler, {n:,} draws: exact {exact:.3f} s, numpy textbook {textbook:.3f} s, "
          f"ratio {exact / textbook:.1f}x")

    frame, schema = adult_with_height()
    for algorithm, extra in (("fulldomain", {"hierarchies": adult_hierarchies(), "max_suppression": 0.05}),
                             ("mondrian", {})):
        m = KEpsilonAnonymity(k=5, epsilon=1.0, k_quasi=K_QUASI, epsilon_quasi=["height"],
                              algorithm=algorithm, alpha=0.99, **extra)
        seconds = median_seconds(lambda: m.run(frame, schema, 1), args.repeats)
        search = median_seconds(lambda: m.partition(frame, schema), args.repeats)
        tracemalloc.start()
        m.run(frame, schema, 1)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"KEpsilonAnonymity {algorithm}, Adult {len(frame):,} x 4 k-quasis + height, k=5: "
              f"{seconds:.3f} s (k-anonymity search alone {search:.3f} s), peak {peak / 2**20:.0f} MiB")

    print("\nseed 004 experiment (Adult + height, k=5, 30 runs per epsilon where measured):")
    print(f"{'algorithm':<11}{'epsilon':>8}{'predicted':>11}{'measured':>10}{'linking':>9}{'99%-supp':>10}")
    for algorithm, extra in (("fulldomain", {"hierarchies": adult_hierarchies(), "max_suppression": 0.05}),
                             ("mondrian", {})):
        for epsilon in (0.1, 1.0, 10.0):
            m = KEpsilonAnonymity(k=5, epsilon=epsilon, k_quasi=K_QUASI, epsilon_quasi=["height"],
                                  algorithm=algorithm, alpha=0.99, **extra)
            errors, risks, supp = [], [], []
            original = frame.set_index("rid")["height"]
            for seed in range(30):
                out = m.run(frame, schema, seed)
                x = original.loc[out.data["rid"]].to_numpy()
                errors.append(np.mean(np.abs(out.data["height"].to_numpy() - x) / x))
                risks.append(out.info["linking_risk"])
                supp.append(out.info["confidence_suppression"]["total"] / len(frame))
            print(f"{algorithm:<11}{epsilon:>8g}{out.info['expected_relative_error']['height']:>11.2%}"
                  f"{np.mean(errors):>10.2%}{np.mean(risks):>9.2%}{np.mean(supp):>10.2%}")


if __name__ == "__main__":
    main()
