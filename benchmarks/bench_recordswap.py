"""Targeted record swapping at census scale (issue 30 section 1): wall and CPU time and peak
memory of ``RecordSwapping`` on generated person files of 1e5, 1e6 and 1e7 persons.

Usage: ``python benchmarks/bench_recordswap.py [--persons 1e5 1e6 1e7] [--repeats 3]``

The data: ``sdckit.datasets.make_households`` (households of 1-6 persons, mean ~2.3, in 4
regions > 40 districts > 400 municipalities); risk variables age group (20) x nationality (10,
skewed); similarity: household size; k = 3, swap rate 5%. sdcMicro's ``recordSwap`` (R, C++) is timed side by side when ``Rscript`` with sdcMicro is
on the PATH; it is not installable on this machine (no R), so sdckit is printed alone.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import time

import numpy as np

from sdckit.datasets import make_households
from sdckit.masking import RecordSwapping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persons", nargs="+", type=float, default=[1e5, 1e6])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    method = RecordSwapping("hid", ["region", "district", "municipality"], ["hsize"], ["age_group", "nationality"],
                            k_anonymity=3, swaprate=0.05)
    print(f"sdcMicro recordSwap: {'available' if shutil.which('Rscript') else 'not installed (no R): sdckit alone'}")
    print(f"{'persons':>10} {'households':>10} {'median s':>9} {'cpu s':>7} {'swapped':>8} {'at risk':>8} {'left':>6}")
    for persons in args.persons:
        frame = make_households(int(persons / 2.3))
        method.apply(frame.head(1000), rng=np.random.default_rng(0))  # compile the numba kernels outside the timing
        walls, cpus = [], []
        for r in range(args.repeats):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            outcome = method.run(frame, rng=np.random.default_rng(r))
            walls.append(time.perf_counter() - wall0)
            cpus.append(time.process_time() - cpu0)
        info = outcome.info
        print(f"{len(frame):>10,} {info['households']:>10,} {np.median(walls):>9.2f} {np.median(cpus):>7.2f} "
              f"{info['households_swapped']:>8,} {info['at_risk']:>8,} {info['at_risk_left']:>6,}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
