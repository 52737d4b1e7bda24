"""Controlled rounding and CTA on generated 3-D tables (issue 14): seconds and figures.

    PYTHONPATH=src python benchmarks/bench_tabular_rounding.py [--leaves 20 20 22] [--base 5]

Goal: controlled rounding of a ~10k-cell 3-D table in under 2 minutes. Measured (2 shared cores,
default 21x21x23 = 10,143 cells, base 5): 4-9 s at the default mip_gap=0.01 (proven gap 0.74%);
mip_gap=0 does not close that gap within 120 s; --audit of the 1,195 MinFrequency(3) cells
(2,390 LPs) about 2 minutes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from sdckit.tabular import MinFrequency, Table
from sdckit.tabular.rounding import round_table


def count_table(leaves: list[int], seed: int = 1) -> Table:
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.arange(k) for k in leaves], indexing="ij")
    cells = pd.DataFrame({f"d{j}": [f"c{x}" for x in g.ravel()] for j, g in enumerate(grids)})
    cells["value"] = rng.poisson(rng.gamma(1.0, 12.0, len(cells))).astype(float)
    cells["freq"] = cells["value"]
    frame = cells.loc[cells.index.repeat(cells["value"].astype(int)), [f"d{j}" for j in range(len(leaves))]]
    return Table.from_microdata(frame.reset_index(drop=True), [f"d{j}" for j in range(len(leaves))])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaves", type=int, nargs="+", default=[20, 20, 22])
    ap.add_argument("--base", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exact", action="store_true", help="also ask for the proven closest (mip_gap=0, 120 s)")
    ap.add_argument("--audit", action="store_true", help="also audit the MinFrequency(3) cells")
    ap.add_argument("--cta", action="store_true", help="also run adjust_table with MinFrequency(3)")
    ap.add_argument("--cta-time-limit", type=float, default=60.0)
    a = ap.parse_args()
    t = count_table(a.leaves, a.seed)
    print(f"table {t.shape} = {len(t.cells)} cells, base {a.base}")
    s = time.perf_counter()
    r = round_table(t, a.base)
    print(f"controlled rounding: {time.perf_counter() - s:.2f} s  {r.to_dict()}")
    if a.exact:
        s = time.perf_counter()
        r = round_table(t, a.base, mip_gap=0.0, time_limit=120)
        print(f"controlled rounding, mip_gap=0, time_limit=120: {time.perf_counter() - s:.2f} s  {r.to_dict()}")
    if a.audit:
        s = time.perf_counter()
        r = round_table(t, a.base, rules=MinFrequency(3))
        print(f"controlled rounding + audit of MinFrequency(3) cells: {time.perf_counter() - s:.2f} s  {r.to_dict()}")
    if a.cta:
        from sdckit.tabular.cta import adjust_table
        for method in ("fast", "milp"):
            s = time.perf_counter()
            c = adjust_table(t, MinFrequency(3), method=method, time_limit=a.cta_time_limit)
            print(f"CTA {method} (time_limit {a.cta_time_limit} s): {time.perf_counter() - s:.2f} s  {c.to_dict()}")


if __name__ == "__main__":
    main()
