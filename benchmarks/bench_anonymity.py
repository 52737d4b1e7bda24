"""Benchmarks of sdckit.anonymity (issue 5). Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_anonymity.py [--repeats 3] [--quick]

1. Adult (30,162 records, 8 quasi-identifiers with ARX's hierarchies), k=5, optimal
   full-domain search (goal: under 1 s on 2 cores; ARX's Flash: 0.03 s in its paper).
2. The same data replicated to 1,000,000 records (goal: under 30 s), with k=5 (every class
   then has 33 copies: the bottom node wins) and with k=165 (the search of k=5 on Adult).
3. Mondrian on 1,000,000 records x 5 continuous quasi-identifiers, k=5 (goal: under 20 s).
Prints the median wall time of the repeats and the peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdckit.anonymity import FullDomainGeneralization, Hierarchy, Mondrian

ADULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "adult"
QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="Adult only")
    args = parser.parse_args()
    adult = pd.read_csv(ADULT / "adult.csv.gz", sep=";")
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
    method = FullDomainGeneralization(5, hierarchies)
    for sup in (0.0, 0.05):
        m = FullDomainGeneralization(5, hierarchies, max_suppression=sup)
        t, part = timed(lambda: m.partition(adult), args.repeats)
        print(f"Adult {len(adult):>9,} rows, k=5, MaxSup={sup:.0%}: {t:7.3f} s  node={list(part.info['node'].values())} "
              f"evaluated={part.info['evaluated_nodes']}/{part.info['lattice_size']} classes={part.info['classes']} "
              f"suppressed={part.info['suppressed']}")
    if args.quick:
        return
    big = adult.iloc[np.arange(1_000_000) % len(adult)].reset_index(drop=True)
    t, part = timed(lambda: method.partition(big), args.repeats)
    print(f"Adult x33 {len(big):>9,} rows, k=5, MaxSup=0%: {t:7.3f} s  node={list(part.info['node'].values())} "
          f"evaluated={part.info['evaluated_nodes']}/{part.info['lattice_size']}")
    copies = 5 * (len(big) // len(adult))  # the same search as k=5 on Adult itself
    deep = FullDomainGeneralization(copies, hierarchies)
    t, part = timed(lambda: deep.partition(big), args.repeats)
    print(f"Adult x33 {len(big):>9,} rows, k={copies}, MaxSup=0%: {t:7.3f} s  node={list(part.info['node'].values())} "
          f"evaluated={part.info['evaluated_nodes']}/{part.info['lattice_size']}")
    rng = np.random.default_rng(0)
    cont = pd.DataFrame(rng.uniform(0, 1000, size=(1_000_000, 5)), columns=[f"x{i}" for i in range(5)])
    mondrian = Mondrian(5, tuple(cont.columns))
    t, part = timed(lambda: mondrian.partition(cont), args.repeats)
    print(f"Mondrian {len(cont):>9,} rows x 5, k=5: {t:7.3f} s  classes={part.n_classes} "
          f"sizes {part.sizes.min()}..{part.sizes.max()} loss={part.info['loss']:.4f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
