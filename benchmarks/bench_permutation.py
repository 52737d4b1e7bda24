"""Benchmark of sdckit.permutation (issue 3): KD-tree distances vs a brute-force scan.

Data: n records of m = 5 correlated normal attributes (correlation 0.5), Y = X + noise of
10% of each attribute's variance.

* ``permutation_distances`` for all n = 200,000 records, and ``verify_linkage`` with
  200,000 random records (copula null, 50 null samples);
* the speed-up over a brute-force O(n^2 m) scan, timed on a sample of records in the same
  run (and checked to give the same distances);
* ``permuted_privacy``, ``permutation_distances`` and ``verify_linkage`` at n = 10^6.

Each measured call runs in a fresh child process; its peak resident memory (ru_maxrss) is
that of the whole child (Python, libraries, the generated data and the call), printed with
the child's peak before the call (after generating the data) in brackets. Times are the
median of ``--repeats`` runs.

Usage::

    PYTHONPATH=src python benchmarks/bench_permutation.py            # full run (~5 min)
    PYTHONPATH=src python benchmarks/bench_permutation.py --n 20000 --n-large 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pandas as pd

from _harness import peak_rss_mb, run_self

M = 5


def make_data(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    cov = np.full((M, M), 0.5) + 0.5 * np.eye(M)
    x = rng.multivariate_normal(np.zeros(M), cov, size=n)
    y = x + rng.normal(scale=np.sqrt(0.1), size=x.shape)
    cols = [f"x{j}" for j in range(M)]
    return pd.DataFrame(x, columns=cols), pd.DataFrame(y, columns=cols)


def one(name: str, n: int, n_random: int) -> dict:
    """Run one call in this (child) process; report its time and peak memory."""
    from sdckit.permutation import permutation_distances, permuted_privacy, verify_linkage

    x, y = make_data(n)
    base = peak_rss_mb()
    start = time.perf_counter()
    if name == "distances":
        permutation_distances(x, y, seed=1)
    elif name == "verify":
        verify_linkage(x, y, n_random=n_random, seed=1)
    elif name == "privacy":
        permuted_privacy(x, y, 1, [0.0] * M, seed=1)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mb": peak_rss_mb(), "data_mb": base}


def run_child(name: str, n: int, n_random: int, repeats: int) -> dict:
    results = []
    for _ in range(repeats):
        results.append(run_self(__file__, "--one", name, "--n", str(n), "--n-random", str(n_random)))
    return {"seconds": statistics.median(r["seconds"] for r in results),
            "peak_mb": max(r["peak_mb"] for r in results),
            "data_mb": max(r["data_mb"] for r in results)}


def brute_force_speedup(n: int, sample: int, kd_seconds: float) -> tuple[float, float, bool]:
    """Seconds per record of an O(n m) scan, extrapolated to n records; agreement check."""
    from sdckit.permutation import permutation_distances
    from sdckit.permutation.columns import rank_space

    x, y = make_data(n)
    space = rank_space(x, y, seed=1)
    r = space.ranks_in(space.y_sorted, space.x)
    idx = np.random.default_rng(0).choice(n, sample, replace=False)
    start = time.perf_counter()
    brute = np.array([np.abs(space.rank_y - r[i]).max(axis=1).min() for i in idx])
    per_record = (time.perf_counter() - start) / sample
    fast = permutation_distances(x, y, seed=1)["distance"].to_numpy()[idx]
    brute_total = per_record * n
    return brute_total, brute_total / kd_seconds, bool((brute == fast).all())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--n-large", type=int, default=1_000_000)
    parser.add_argument("--n-random", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--one", default=None)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.n, args.n_random or args.n)))
        return
    n, big = args.n, args.n_large
    print(f"sdckit.permutation benchmark: m = {M} correlated normals, Y = X + 10% noise")
    dist = run_child("distances", n, n, args.repeats)
    print(f"permutation_distances  n={n:>9,}: {dist['seconds']:7.2f} s  "
          f"peak {dist['peak_mb']:6.0f} MB ({dist['data_mb']:.0f} before)")
    brute_total, speedup, agree = brute_force_speedup(n, args.sample, dist["seconds"])
    print(f"brute-force O(n^2 m) scan (timed on {args.sample} records, extrapolated): "
          f"{brute_total:8.1f} s  -> KD-tree speed-up {speedup:,.0f}x  (same distances: {agree})")
    ver = run_child("verify", n, args.n_random or n, args.repeats)
    print(f"verify_linkage         n={n:>9,}, {args.n_random or n:,} random: "
          f"{ver['seconds']:7.2f} s  peak {ver['peak_mb']:6.0f} MB ({ver['data_mb']:.0f} before)")
    for name in ("privacy", "distances", "verify"):
        res = run_child(name, big, big, 1)
        label = {"privacy": "permuted_privacy", "distances": "permutation_distances",
                 "verify": "verify_linkage"}[name]
        print(f"{label:<22} n={big:>9,}: {res['seconds']:7.2f} s  peak {res['peak_mb']:6.0f} MB "
              f"({res['data_mb']:.0f} before)")


if __name__ == "__main__":
    main()
