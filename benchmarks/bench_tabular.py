"""Benchmark of sdckit.tabular: cell suppression on tables built from sdcMicro's testdata and on
a synthetic 1e6-row 4-D table, both methods; prints cells, primaries, secondaries, suppressed
value share, time and the audit's verdict.

Run: PYTHONPATH=src python benchmarks/bench_tabular.py [--only NAME] [--time-limit S]
     [--synthetic-optimal S]

Data: /work/shared/data/sdcmicro/testdata.csv (sdcMicro 5.8.1, GPL-2) when present, else
tests/data/sdcmicro/testdata.csv.gz.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdckit.tabular import MinFrequency, Table, suppress

ROOT = Path(__file__).resolve().parents[1]
DATA = [Path("/work/shared/data/sdcmicro/testdata.csv"), ROOT / "tests/data/sdcmicro/testdata.csv.gz"]

# Hierarchies on testdata's codes (sdcTable's benchmark shapes: 2,592 cells for the 4-D table).
WATER = {"1": "W1", "2": "W1", "3": "W1", "4": "W2", "5": "W2", "6": "W3", "7": "W3", "9": "W3",
         "W1": "Total", "W2": "Total", "W3": "Total"}
RELAT = {"1": "R1", "2": "R1", "3": "R1", "4": "R2", "5": "R2", "6": "R2", "7": "R2", "8": "R2",
         "9": "R2", "R1": "Total", "R2": "Total"}


def testdata() -> pd.DataFrame:
    for p in DATA:
        if p.exists():
            return pd.read_csv(p)
    raise SystemExit("testdata.csv not found")


def synthetic(n: int = 1_000_000, seed: int = 20261125) -> tuple[pd.DataFrame, dict]:
    """A 4-D table from n records: A (12 leaves in 3 groups), B (10 leaves in 2 groups), C (8),
    D (8) -> 16 x 13 x 9 x 9 = 16,848 cells; skewed margins so that small cells occur."""
    rng = np.random.default_rng(seed)

    def zipf(k, s):
        p = 1.0 / np.arange(1, k + 1) ** s
        return p / p.sum()

    cols = {}
    for name, k, s in (("A", 12, 1.0), ("B", 10, 1.0), ("C", 8, 1.2), ("D", 8, 1.4)):
        cols[name] = rng.choice(k, size=n, p=zipf(k, s))
    frame = pd.DataFrame({k: np.char.add(k, np.char.zfill(v.astype(str), 2)) for k, v in cols.items()})
    frame["y"] = rng.lognormal(3.0, 1.0, n).round(2)
    hier = {
        "A": {**{f"A{i:02d}": f"A-{i // 4}" for i in range(12)}, **{f"A-{g}": "Total" for g in range(3)}},
        "B": {**{f"B{i:02d}": f"B-{i // 5}" for i in range(10)}, **{f"B-{g}": "Total" for g in range(2)}},
        "C": None, "D": None,
    }
    return frame, hier


def line(m: str, r, dt: float, best: float | None) -> str:
    """One result line; for fast, its cost above the best pattern known (optimal's) when known."""
    opt = ""
    if m == "optimal":
        opt = "proved optimal" if r.optimal else f"gap {r.gap:.2%}" if r.gap is not None else "no bound"
        if r.lower_bound is not None:
            opt += f" (lower bound {r.lower_bound:,.0f} incl. primaries)"
    elif best is not None and best > 0:
        opt = f"{r.secondary_cost / best - 1:+.1%} vs best known"
    return (f"  {m:8s} primaries {r.primaries:5d}  secondaries {r.secondaries:5d}  "
            f"cost {r.secondary_cost:14,.0f}  suppressed value share {r.suppressed_value_share:7.3%}  "
            f"time {dt:7.1f} s  audit {'safe' if r.audit.safe else 'UNSAFE'} ({r.audit.lp_solved} LPs)  {opt}")


def run(name: str, table: Table, rules, methods, time_limit: float | None, primary=None) -> None:
    print(f"\n== {name}: {len(table.cells):,} cells ({int((~table.empty).sum()):,} non-empty), "
          f"dimensions {' x '.join(table.dimensions)}", flush=True)
    best = None
    for m in methods:
        t0 = time.perf_counter()
        r = suppress(table, rules, primary=primary, method=m, cost="value",
                     time_limit=time_limit if m == "optimal" else None)
        dt = time.perf_counter() - t0
        if m == "optimal":
            best = r.secondary_cost
        elif best is not None:
            best = min(best, r.secondary_cost)
        print(line(m, r, dt, best), flush=True)


def linked_case(d: pd.DataFrame, args) -> None:
    """Linked tables (issue 14): tables from one source sharing margins, protected together by
    both methods (one model over the union of their cells), against the same tables protected one
    at a time and audited together (audit_linked). Prints cells, secondaries, suppressed value
    share, time and peak memory; every joint pattern must pass the joint audit."""
    import resource
    import tracemalloc

    from sdckit.tabular import audit_linked, link_tables

    if args.only and "linked" not in args.only:
        return
    rule = [MinFrequency(3)]
    hier = {"water": WATER, "relat": RELAT}
    sets = [("testdata: water x relat, urbrur x relat, urbrur x water",
             [Table.from_microdata(d, dims, {k: v for k, v in hier.items() if k in dims})
              for dims in (["water", "relat"], ["urbrur", "relat"], ["urbrur", "water"])])]
    n = min(args.rows, 20_000)  # few enough records for many small cells
    frame, shier = synthetic(n)
    sets.append((f"synthetic ({n:,} records): A x B x C, A x B x D, A x C x D, magnitude y",
                 [Table.from_microdata(frame, dims, {k: shier[k] for k in dims}, response="y")
                  for dims in (["A", "B", "C"], ["A", "B", "D"], ["A", "C", "D"])]))
    for name, tables in sets:
        if args.only and args.only.replace("linked", "").strip() not in name:
            continue
        linked = link_tables(tables)
        shared = int((linked.owners().sum(axis=1) > 1).sum())
        print(f"\n== linked {name}: {len(tables)} tables, {len(linked.cells):,} cells in all "
              f"({shared:,} shared, {int((~linked.empty).sum()):,} non-empty), MinFrequency(3)")
        # one table at a time, each alone safe: what do the releases give away together?
        alone = [suppress(t, rule, method="fast") for t in tables]
        a = audit_linked(linked, [r.cells["status"].to_numpy() for r in alone], rule)
        print(f"  table by table (fast, each audited alone: {'safe' if all(r.audit.safe for r in alone) else 'UNSAFE'}): "
              f"secondaries {sum(r.secondaries for r in alone):5d}; joint audit: "
              f"{'safe' if a.safe else f'UNSAFE, {a.unprotected} primaries exposed'}", flush=True)
        for m in ("optimal", "fast"):
            tracemalloc.start()
            t0 = time.perf_counter()
            r = suppress(tables, rule, method=m, cost="value", time_limit=args.time_limit if m == "optimal" else None)
            dt = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            opt = ("proved optimal" if r.optimal else f"gap {r.gap:.2%}" if r.gap is not None else "") if m == "optimal" else ""
            print(f"  {m:8s} primaries {r.primaries:5d}  secondaries {r.secondaries:5d}  "
                  f"suppressed value share {r.suppressed_value_share:7.3%}  time {dt:7.1f} s  "
                  f"peak memory {peak:6.1f} MiB traced ({rss:6.0f} MiB max RSS)  "
                  f"joint audit {'safe' if r.audit.safe else 'UNSAFE'} ({r.audit.lp_solved} LPs)  {opt}", flush=True)
            assert r.audit.safe


TABLES = Path("/work/shared/data/tables")
INSTANCES = [("tau_simple2d", ["Size", "Region"]), ("rtau_act_size", ["ACTIVITY", "SIZE"]),
             ("tau_ent_region_mun", ["region", "mun"]), ("tau_ent_act_product", ["act", "product"]),
             ("tau_ent_act_region", ["act", "region"])]


def published_instance(name: str, dims: list[str]) -> tuple[Table, list] | None:
    """A published cell-suppression instance (cells, hierarchies, primary cells as published)."""
    d = TABLES / name
    if not d.exists():
        return None
    hier = {}
    for dim in dims:
        h = pd.read_csv(d / f"hierarchy_{dim}.csv", dtype=str).dropna()
        hier[dim] = dict(zip(h["child"].str.strip(), h["parent"].str.strip()))
    cells = pd.read_csv(d / "cells.csv", dtype={k: str for k in dims})
    top = [c for c in ("top1", "top2") if c in cells.columns]
    table = Table.from_cells(cells, dims, hier, top=top, rtol=1e-6)
    prim = pd.read_csv(d / "primary.csv", dtype={k: str for k in dims})
    return table, [tuple(r) for r in prim[dims].itertuples(index=False)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--synthetic-optimal", type=float, default=None, metavar="SECONDS",
                    help="also run optimal on the synthetic table with this time limit (its best known pattern)")
    args = ap.parse_args()
    d = testdata().astype({c: str for c in ("urbrur", "roof", "water", "relat")})
    rule = [MinFrequency(3)]
    cases = [
        ("water x relat", ["water", "relat"], {"water": WATER, "relat": RELAT}, ("optimal", "fast")),
        ("urbrur x water x relat", ["urbrur", "water", "relat"], {"water": WATER, "relat": RELAT}, ("optimal", "fast")),
        ("urbrur x roof x water x relat", ["urbrur", "roof", "water", "relat"], {"water": WATER, "relat": RELAT},
         ("optimal", "fast")),
    ]
    for name, dims, hier, methods in cases:
        if args.only and args.only not in name:
            continue
        t0 = time.perf_counter()
        table = Table.from_microdata(d, dims, hier)
        print(f"(built in {time.perf_counter() - t0:.2f} s)", end="")
        run(f"testdata {name}, frequency table, MinFrequency(3)", table, rule, methods, args.time_limit)
    for name, dims in INSTANCES:
        if args.only and args.only not in name:
            continue
        got = published_instance(name, dims)
        if got is None:
            print(f"\n== {name}: not found, skipped")
            continue
        table, prim = got
        run(f"published instance {name}, {len(prim)} primary cells as published (level 10% of value)",
            table, None, ("optimal", "fast"), args.time_limit, primary=prim)
    linked_case(d, args)
    if not args.only or "synthetic" in args.only:
        frame, hier = synthetic(args.rows)
        t0 = time.perf_counter()
        table = Table.from_microdata(frame, ["A", "B", "C", "D"], hier, response="y")
        print(f"(built from {len(frame):,} rows in {time.perf_counter() - t0:.1f} s)", end="")
        methods = ("optimal", "fast") if args.synthetic_optimal else ("fast",)
        run("synthetic 4-D, magnitude table (y), MinFrequency(3)", table, rule, methods,
            args.synthetic_optimal or args.time_limit)
    if args.only == "scale":  # issue 14: run only on request (minutes)
        scale_case(args.rows if args.rows != 1_000_000 else 10_000_000)


def scale_case(rows: int = 10_000_000) -> None:
    """The national-scale case (issue 14): a 52k-cell 4-D table from a 1e7-row Parquet file,
    built by DuckDB and protected by ``suppress(method="fast")`` (benchmarks/bench_tabular_scale.py)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_tabular_scale import run as run_scale
    print("\n== scale: 4-D table from a file, Table.from_file + suppress(method='fast')")
    run_scale(rows)


if __name__ == "__main__":
    main()
