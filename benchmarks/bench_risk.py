"""Benchmarks of the risk measures of issue 16. Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_risk.py [--repeats 3] [--quick]

Data: sdcMicro's testdata (4,580 records, tests/data/sdcmicro/testdata.csv.gz) replicated x10
(45,800) and x100 (458,000), and to 100,000 and 1,000,000 records for the goals; keys: 4
(urbrur, water, sex, age) and 8 (urbrur, roof, walls, water, electcon, relat, sex, age);
weight: sampling_weight. Replicated copies are identical, so they hold no sample unique and
SUDA2 has nothing to search; the "shuffled" rows permute each key column independently over
the replicated file (same marginals, many uniques: SUDA2's real work).

Goals: individual risk on 1e6 rows < 5 s; SUDA2 with 8 keys on 1e5 rows < 60 s.
Each case runs in a fresh process: the median wall time of the repeats and that process's
peak resident memory (ru_maxrss) are printed; the baseline line is the memory of a process
that only loaded the data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _harness import peak_rss_mb, run_self

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "sdcmicro" / "testdata.csv.gz"
KEYS = {4: ["urbrur", "water", "sex", "age"],
        8: ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age"]}


def data(rows: int, shuffled: bool) -> pd.DataFrame:
    base = pd.read_csv(DATA)
    frame = base.iloc[np.arange(rows) % len(base)].reset_index(drop=True)
    if shuffled:
        rng = np.random.default_rng(0)
        for k in KEYS[8]:
            frame[k] = rng.permutation(frame[k].to_numpy())
    return frame


def run_case(measure: str, rows: int, keys: int, shuffled: bool, repeats: int) -> dict:
    from sdckit.risk import individual_risk, suda2
    frame = data(rows, shuffled)
    if measure == "individual_risk":
        def work():
            return individual_risk(frame, KEYS[keys], "sampling_weight")
    elif measure == "suda2":
        def work():
            return suda2(frame, KEYS[keys])
    else:
        def work():
            return None
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - start)
    extra = {}
    if measure == "suda2":
        extra["records_with_msu"] = int((out["score"] > 0).sum())
    elif measure == "individual_risk":
        extra["uniques"] = int((out["fk"] == 1).sum())
    peak_mb = peak_rss_mb()
    return {"seconds": statistics.median(times), "peak_mb": peak_mb, **extra}


def in_child(measure: str, rows: int, keys: int, shuffled: bool, repeats: int) -> dict:
    return run_self(__file__, "--case", json.dumps([measure, rows, keys, shuffled, repeats]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="x10 only, and the goals")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(*json.loads(args.case))))
        return
    n = len(pd.read_csv(DATA))
    cases = []
    for copies in (10,) if args.quick else (10, 100):
        for keys in (4, 8):
            for shuffled in (False, True):
                cases.append(("individual_risk", copies * n, keys, shuffled, f"testdata x{copies}"))
                cases.append(("suda2", copies * n, keys, shuffled, f"testdata x{copies}"))
    goals = [("individual_risk", 1_000_000, 8, True, "goal < 5 s", 5.0),
             ("suda2", 100_000, 8, True, "goal < 60 s", 60.0)]
    base = in_child("load", 1_000_000, 8, True, 1)
    print(f"baseline (load 1e6 rows): peak {base['peak_mb']:.0f} MB")
    for measure, rows, keys, shuffled, label in cases:
        r = in_child(measure, rows, keys, shuffled, args.repeats)
        extra = ", ".join(f"{k}={v:,}" for k, v in r.items() if k not in ("seconds", "peak_mb"))
        print(f"{measure:16s} {label:15s} {rows:>9,} rows {keys} keys {'shuffled' if shuffled else 'replicated':10s}: "
              f"{r['seconds']:8.3f} s  peak {r['peak_mb']:6.0f} MB  ({extra})")
    for measure, rows, keys, shuffled, label, goal in goals:
        r = in_child(measure, rows, keys, shuffled, args.repeats)
        print(f"{measure:16s} {label:15s} {rows:>9,} rows {keys} keys shuffled  : {r['seconds']:8.3f} s  "
              f"peak {r['peak_mb']:6.0f} MB  ratio to goal {r['seconds'] / goal:.3f}")


if __name__ == "__main__":
    main()
