"""Benchmark of sdckit.tabular at national scale (issue 14): a 4-D magnitude table of about 52k
cells (hierarchies of 2-3 levels) built from a 1e7-row Parquet file through DuckDB
(``Table.from_file``), protected by ``suppress(method="fast")`` (flows on each primary's
neighbourhood, then the whole-table audit) or ``suppress_modular`` (HiTaS-style decomposition); prints cells, primaries, secondaries, suppressed value share, the
build / suppression / audit times and the peak memory of the process.

Run: PYTHONPATH=src /usr/bin/time -v python benchmarks/bench_tabular_scale.py [--rows 10000000]
     [--method fast|modular] [--file /tmp/sdckit_scale.parquet]

The Parquet file is generated (seeded) when absent and kept for the next run.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdckit.tabular import MinFrequency, PPercent, Table, sensitivity, suppress
from sdckit.tabular.modular import suppress_modular

#: (name, groups, leaves per group): A 1+4+16=21 codes, B 1+3+12=16, C 1+2+10=13, D 1+2+9=12
#: -> 21 x 16 x 13 x 12 = 52,416 cells.
DIMS = (("A", 4, 4), ("B", 3, 4), ("C", 2, 5), ("D", 2, (5, 4)))


def hierarchies() -> dict[str, dict[str, str]]:
    out = {}
    for name, groups, per in DIMS:
        sizes = per if isinstance(per, tuple) else (per,) * groups
        h = {}
        leaf = 0
        for g, size in enumerate(sizes):
            h[f"{name}-{g}"] = "Total"
            for _ in range(size):
                h[f"{name}{leaf:02d}"] = f"{name}-{g}"
                leaf += 1
        out[name] = h
    return out


def leaves(name: str) -> list[str]:
    return sorted(c for c, p in hierarchies()[name].items() if p != "Total")


def generate(path: Path, rows: int, seed: int = 20261125, chunk: int = 1_000_000) -> None:
    """Records with skewed (Zipf-like) codes so that small cells occur, and a lognormal response."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    probs = {}
    for (name, _, _), s in zip(DIMS, (1.2, 1.3, 1.5, 1.7)):
        k = len(leaves(name))
        p = 1.0 / np.arange(1, k + 1) ** s
        probs[name] = (np.asarray(leaves(name)), p / p.sum())
    tmp = path.with_suffix(".tmp")
    writer = None
    done = 0
    while done < rows:
        n = min(chunk, rows - done)
        data = {name: codes[rng.choice(len(codes), size=n, p=p)] for name, (codes, p) in probs.items()}
        data["y"] = rng.lognormal(3.0, 1.2, n).round(2)
        table = pa.Table.from_pandas(pd.DataFrame(data), preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(tmp, table.schema)
        writer.write_table(table)
        done += n
    writer.close()
    tmp.rename(path)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def run(rows: int = 10_000_000, method: str = "fast", rules_name: str = "freq",
        file: str | None = None) -> None:
    """Generate (once), build, protect and print the figures of the scale case."""
    path = Path(file or f"/tmp/sdckit_scale_{rows}.parquet")
    if not path.exists():
        t0 = time.perf_counter()
        generate(path, rows)
        print(f"generated {rows:,} records in {time.perf_counter() - t0:.1f} s -> {path}", flush=True)
    t0 = time.perf_counter()
    table = Table.from_file(path, ["A", "B", "C", "D"], hierarchies(), response="y")
    t_build = time.perf_counter() - t0
    print(f"built {len(table.cells):,} cells ({int((~table.empty).sum()):,} non-empty) from {rows:,} "
          f"records (DuckDB) in {t_build:.1f} s; peak RSS {peak_rss_gb():.2f} GB", flush=True)
    rules = [MinFrequency(3)] if rules_name == "freq" else [MinFrequency(3), PPercent(10)]
    sens = sensitivity(table, rules)
    print(f"primaries {int(sens.primary.sum()):,} ({rules_name})", flush=True)
    timings: dict = {}
    t0 = time.perf_counter()
    if method == "modular":
        def progress(done, queued, suppressed):
            if done % 20 == 0:
                print(f"  ... {done} sub-tables solved, {queued} queued, {suppressed:,} cells suppressed, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)

        r = suppress_modular(table, rules, cost="value", timings=timings, progress=progress)
    else:
        r = suppress(table, rules, method="fast", cost="value")
    dt = time.perf_counter() - t0
    print(f"{method}: cells {len(table.cells):,}  primaries {r.primaries:,}  secondaries {r.secondaries:,}  "
          f"suppressed value share {r.suppressed_value_share:.4%}  build {t_build:.1f} s  "
          f"suppression {dt:.1f} s  audit {'safe' if r.audit.safe else 'UNSAFE'} "
          f"({r.audit.lp_solved} LPs)  peak RSS {peak_rss_gb():.2f} GB", flush=True)
    if timings:
        print("  " + ", ".join(f"{k} {v:.1f} s" if isinstance(v, float) else f"{k} {v}"
                               for k, v in timings.items()), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--file", default=None)
    ap.add_argument("--method", default="fast", choices=("fast", "modular"))
    ap.add_argument("--rules", default="freq", choices=("freq", "freq+p"))
    args = ap.parse_args()
    run(args.rows, args.method, args.rules, args.file)


if __name__ == "__main__":
    main()
