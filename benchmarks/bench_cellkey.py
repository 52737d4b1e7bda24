"""Benchmark of the cell key method (issue 30 §5): a 4-D frequency table (16 x 12 x 10 x 9 codes,
with every margin 17 x 13 x 11 x 10 = 24,310 cells) from 1e6 and 1e7 records with record keys,
perturbed by ``cell_key_counts``; prints the time to draw the keys, the time to tabulate and
perturb, and the peak memory of the process.

Run: PYTHONPATH=src python benchmarks/bench_cellkey.py [--rows 1000000 10000000] [--strings]

The records are integer-coded columns (as a register's codes read from Parquet would be), or with
``--strings`` string codes ("A07"), which add pandas' factorisation of each column.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from sdckit.core.random import new_seed
from sdckit.tabular import cell_key_counts, cell_key_measures, ptable, record_keys

SIZES = {"A": 16, "B": 12, "C": 10, "D": 9}


def run(rows: int, pt: pd.DataFrame, strings: bool) -> None:
    rng = np.random.default_rng(rows)
    frame = pd.DataFrame({d: rng.integers(0, k, rows, dtype=np.int16) for d, k in SIZES.items()})
    if strings:
        for d, k in SIZES.items():
            frame[d] = pd.Categorical.from_codes(frame[d], [f"{d}{c:02d}" for c in range(k)]).astype(str)
    t0 = time.perf_counter()
    frame["rkey"] = record_keys(rows, new_seed())
    t1 = time.perf_counter()
    cells = cell_key_counts(frame, list(SIZES), "rkey", pt)
    t2 = time.perf_counter()
    m = cell_key_measures(cells, pt)
    t3 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{rows:>11,} records  {len(cells):>7,} cells  keys {t1 - t0:6.2f} s  table+CKM {t2 - t1:6.2f} s  "
          f"measures {t3 - t2:5.2f} s  changed {m.changed:.3f}  peak RSS {peak:,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--strings", action="store_true", help="string codes instead of integers")
    args = parser.parse_args()
    t0 = time.perf_counter()
    pt = ptable(5, 3, js=2, pstay=0.5)
    print(f"ptable(D=5, V=3, js=2, pstay=0.5): {len(pt)} rows in {time.perf_counter() - t0:.2f} s")
    for rows in args.rows:
        run(rows, pt, args.strings)


if __name__ == "__main__":
    main()
