"""Targeted record swapping at census scale (issue 30 section 1): wall and CPU time and peak
memory of ``RecordSwapping`` on generated person files of 1e5, 1e6 and 1e7 persons, in memory
and on the DuckDB engine (the file read by DuckDB passes, the plan over households only).

Usage::

    python benchmarks/bench_recordswap.py [--persons 1e5 1e6 1e7] [--repeats 3]     # in memory
    python benchmarks/bench_recordswap.py --make 1e7 persons.parquet                # a file
    /usr/bin/time -v python benchmarks/bench_recordswap.py --file persons.parquet   # DuckDB engine

The data: ``sdckit.datasets.make_households`` (households of 1-6 persons, mean ~2.3, in 4
regions > 40 districts > 400 municipalities); risk variables age group (20) x nationality (10,
skewed); similarity: household size; k = 3, swap rate 5%. sdcMicro's ``recordSwap`` (R, C++) is
timed side by side when ``Rscript`` with sdcMicro is on the PATH; it is not installable on this
machine (no R), so sdckit is printed alone. Peak memory: ``/usr/bin/time -v`` around one mode.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from sdckit.datasets import make_households
from sdckit.masking import RecordSwapping

METHOD = RecordSwapping("hid", ["region", "district", "municipality"], ["hsize"], ["age_group", "nationality"],
                        k_anonymity=3, swaprate=0.05)


def row(persons: int, households: int, walls: list[float], cpus: list[float], info: dict) -> str:
    return (f"{persons:>10,} {households:>10,} {np.median(walls):>9.2f} {np.median(cpus):>7.2f} "
            f"{info['households_swapped']:>8,} {info['at_risk']:>8,} {info['at_risk_left']:>6,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persons", nargs="+", type=float, default=[1e5, 1e6])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--make", nargs=2, metavar=("PERSONS", "PATH"), help="write a person file and stop")
    parser.add_argument("--file", help="swap this Parquet/CSV file on the DuckDB engine")
    args = parser.parse_args()
    if args.make:
        make_households(int(float(args.make[0]) / 2.3)).to_parquet(args.make[1], index=False)
        return
    print(f"sdcMicro recordSwap: {'available' if shutil.which('Rscript') else 'not installed (no R): sdckit alone'}")
    print(f"{'persons':>10} {'households':>10} {'median s':>9} {'cpu s':>7} {'swapped':>8} {'at risk':>8} {'left':>6}")
    if args.file:
        from sdckit.engine import protect_file

        with tempfile.TemporaryDirectory() as folder:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            release = protect_file(args.file, Path(folder) / "out.parquet", [METHOD], seed=np.random.default_rng(0))
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        info = release.steps[0].info
        print(row(info["records"], info["households"], [wall], [cpu], info) + "   (DuckDB engine, one run)")
    else:
        for persons in args.persons:
            frame = make_households(int(persons / 2.3))
            METHOD.apply(frame.head(1000), seed=np.random.default_rng(0))  # compile the kernels first
            walls, cpus = [], []
            for r in range(args.repeats):
                cpu0, wall0 = time.process_time(), time.perf_counter()
                outcome = METHOD.run(frame, seed=np.random.default_rng(r))
                walls.append(time.perf_counter() - wall0)
                cpus.append(time.process_time() - cpu0)
            print(row(len(frame), outcome.info["households"], walls, cpus, outcome.info))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
