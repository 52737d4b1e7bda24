"""Benchmark: distance-based record linkage (KD-tree vs brute force), interval disclosure, pMSE
and the whole HTML report.

Run from the repository root:  PYTHONPATH=src python benchmarks/bench_risk_report.py [--n 100000]
Prints the median of 3 repeats for each step, the speed-up of the KD-tree linkage over a
brute-force O(n^2 m) scan measured on the same sample in the same run (and extrapolated
quadratically to n), and peak memory (tracemalloc) of the linkage.
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np
import pandas as pd

from _harness import median_seconds

from sdckit import AdditiveNoise, protect
from sdckit.datasets import load_casc
from sdckit.report import build_report, render_report
from sdckit.risk import distance_linkage, interval_disclosure
from sdckit.utility import pmse



def brute_force_rate(x: np.ndarray, y: np.ndarray) -> float:
    xs = (x - x.mean(0)) / x.std(0, ddof=1)
    ys = (y - y.mean(0)) / y.std(0, ddof=1)
    nearest = np.array([np.argmin(((xs - row) ** 2).sum(axis=1)) for row in ys])
    return float((nearest == np.arange(len(ys))).mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--sample", type=int, default=2_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    cov = np.full((args.m, args.m), 0.5) + 0.5 * np.eye(args.m)
    x = pd.DataFrame(rng.multivariate_normal(np.zeros(args.m), cov, args.n), columns=[f"X{j}" for j in range(args.m)])
    y = x + rng.normal(scale=0.3, size=x.shape)

    t_tree = median_seconds(lambda: distance_linkage(x, y))
    tracemalloc.start()
    distance_linkage(x, y)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    k = args.sample
    xs, ys = x.iloc[:k], y.iloc[:k]
    t_tree_small = median_seconds(lambda: distance_linkage(xs, ys))
    t_brute_small = median_seconds(lambda: brute_force_rate(xs.to_numpy(), ys.to_numpy()), repeats=1)
    same = abs(distance_linkage(xs, ys).rate - brute_force_rate(xs.to_numpy(), ys.to_numpy())) < 1e-12
    print(f"distance_linkage n={args.n:,} m={args.m}: {t_tree:.2f} s, peak {peak:.0f} MiB")
    print(f"  on {k:,} records: KD-tree {t_tree_small * 1e3:.1f} ms, brute force {t_brute_small * 1e3:.0f} ms, "
          f"speed-up {t_brute_small / t_tree_small:.0f}x (same rate: {same})")
    extrapolated = t_brute_small * (args.n / k) ** 2
    print(f"  brute force extrapolated to n={args.n:,} (quadratic): {extrapolated:.0f} s, "
          f"speed-up of the KD-tree {extrapolated / t_tree:.0f}x")
    print(f"interval_disclosure n={args.n:,}: {median_seconds(lambda: interval_disclosure(x, y)):.2f} s")
    print(f"pmse (logistic, squares and products) n={min(args.n, 20_000):,}: "
          f"{median_seconds(lambda: pmse(x.iloc[:20_000], y.iloc[:20_000]), repeats=1):.2f} s")

    casc = load_casc()
    release = protect(casc, [AdditiveNoise(alpha=0.1)], seed=1)
    t_report = median_seconds(lambda: render_report(build_report(casc, release.data, schema=release.schema,
                                                        manifest=release.manifest, seed=1)), repeats=1)
    print(f"report.html on CASC (1080 x 13, n_random=20,000): {t_report:.2f} s")


if __name__ == "__main__":
    main()
