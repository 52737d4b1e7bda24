"""Benchmark: the HTML report (``sdckit assess --html``) on large data (issue 12 section 3).

Run from the repository root:  PYTHONPATH=src python benchmarks/bench_report_scale.py [--n 1000000] [--m 13]
Each size runs in a subprocess, so that its peak resident memory is its own. Prints the wall
time of every step of the report and of the whole, and the peak RSS. On large data the report
samples where the measure allows it and says so with the standard error: distance-based linkage
(2,000 released records), the intruder's linkage, the verification and the data-set-level
distance (20,000 originals, at most 4 Monte-Carlo batches), pMSE (50,000 records of each file).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from _harness import peak_rss_mb, run_self


def report_steps(n: int, m: int) -> tuple[dict[str, float], float]:
    """The whole HTML report on ``n`` x ``m`` generated records (correlated columns) and a release
    with noise of 10% of the sd (linkable): seconds per step of the report, and in all."""
    import numpy as np
    import pandas as pd

    from sdckit.report import assess_report

    rng = np.random.default_rng(1)
    mix = 0.7 * np.eye(m) + 0.3
    x = pd.DataFrame(rng.standard_normal((n, m)) @ mix, columns=[f"c{j}" for j in range(m)])
    y = x + rng.standard_normal((n, m)) * 0.1          # noise of 10% of the sd: linkable
    steps: dict[str, float] = {}
    start = last = time.perf_counter()

    def progress(done: int, total: int, label: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps[label] = round(now - last, 1)
        last = now

    with tempfile.TemporaryDirectory() as tmp:
        assess_report(x, y, f"{tmp}/report.html", random_state=1, progress=progress)
    return steps, time.perf_counter() - start


def one(n: int, m: int) -> None:
    steps, wall = report_steps(n, m)
    peak = peak_rss_mb() / 1024
    print(json.dumps({"n": n, "m": m, "wall_s": round(wall, 1), "peak_gb": round(peak, 2), "steps_s": steps}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--m", type=int, default=13)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.n[0], args.m)
        return
    for n in args.n:
        row = run_self(__file__, "--one", "--n", str(n), "--m", str(args.m))
        print(f"n={row['n']:>9,} m={row['m']}: report {row['wall_s']:7.1f} s, peak RSS {row['peak_gb']:.2f} GB;"
              f" steps {row['steps_s']}")


if __name__ == "__main__":
    main()
