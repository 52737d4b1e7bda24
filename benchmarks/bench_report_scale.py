"""Benchmark: the HTML report (``sdckit assess --html``) and the permutation assessment on large data
(issue 12 section 3, issue 28 item 6).

Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_report_scale.py [--rows 1e6 1e7] [--m 5] [--assess]

Each size runs in a subprocess, so that its peak resident memory is its own. The input is
generated with numpy (correlated normal columns; the release adds noise of 10% of the sd, so it
is linkable) and written to Parquet a million rows at a time (cheap, bounded memory). Then the
report reads both files and runs; for every stage (generate, read, each step of the report,
render) it prints the wall time, the CPU time (all threads) and the peak RSS *of that stage*
(Linux: the high-water mark is reset before each stage through ``/proc/self/clear_refs``;
elsewhere, or with ``--whole-peak``, the process's peak so far; the whole run's peak is the
largest of the stages'). ``--assess`` adds, in its own subprocess, the permutation
assessment of the two files in bounded memory: ``permutation.PAIRS`` record pairs drawn by the
assessment's generator and read from the Parquet files column by column (never both full frames),
then ``permutation.assess`` on them with a sample of 20,000 originals (what
``assess(x, y, records=..., seed=...)`` computes on the frames).

On large data the report samples where the measure allows it and says so: the permutation
paradigm on 1,000,000 record pairs (the sub-release; ``report.model.PERMUTATION_RECORDS``) and,
within them, 20,000 originals linked and verified; distance-based linkage on 2,000 released
records (standard error stated); pMSE on 50,000 records of each file. The rest is exact.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK = 1_000_000
#: Record pairs of the bounded-memory permutation assessment (``--assess``).
PAIRS = 1_000_000


#: Reset the high-water mark before each stage (off with ``--whole-peak``: then each stage's peak is
#: the process's so far, and ``/usr/bin/time -v`` sees the whole run's, which a reset hides from it).
RESET = True


def _reset_peak() -> bool:
    """Reset the process's RSS high-water mark (Linux); False where that is not possible."""
    if not RESET:
        return False
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Stages:
    """Wall time, CPU time and peak RSS of each stage, in order."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, float]] = {}
        self.start()

    def start(self) -> None:
        _reset_peak()
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def done(self, label: str) -> None:
        self.rows[label] = {"wall_s": round(time.perf_counter() - self.wall, 1),
                            "cpu_s": round(time.process_time() - self.cpu, 1), "peak_mb": round(_peak_mb())}
        print(f"    ... {label}: {self.rows[label]}", file=sys.stderr, flush=True)  # a long run shows its pace
        self.start()


def generate(folder: Path, n: int, m: int) -> tuple[Path, Path]:
    """``n`` x ``m`` correlated normal records and a release with noise of 10% of the sd, written to
    Parquet a million rows at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    mix = 0.7 * np.eye(m) + 0.3
    names = [f"c{j}" for j in range(m)]
    paths = folder / "original.parquet", folder / "released.parquet"
    writers = [None, None]
    for start in range(0, n, CHUNK):
        x = rng.standard_normal((min(CHUNK, n - start), m)) @ mix
        y = x + rng.standard_normal(x.shape) * 0.1
        for i, values in enumerate((x, y)):
            table = pa.table({name: values[:, j] for j, name in enumerate(names)})
            if writers[i] is None:
                writers[i] = pq.ParquetWriter(paths[i], table.schema)
            writers[i].write_table(table)
    for writer in writers:
        writer.close()
    return paths


def report_case(n: int, m: int) -> dict:
    import pandas as pd

    from sdckit.report import build_report
    from sdckit.report.render import write_report

    stages = Stages()
    with tempfile.TemporaryDirectory() as tmp:
        x_path, y_path = generate(Path(tmp), n, m)
        stages.done("generate")
        x, y = pd.read_parquet(x_path), pd.read_parquet(y_path)
        stages.done("read")
        report = build_report(x, y, seed=1, progress=lambda done, total, label: stages.done(label))
        write_report(report, Path(tmp) / "report.html")
        stages.done("render")
    perm = report.data.get("permutation", {})
    return {"case": "report", "n": n, "m": m, "stages": stages.rows,
            "permutation_records": report.data.get("permutation_records"), "p_value": perm.get("p_value"),
            "verdict": perm.get("verdict"), "replicates": perm.get("replicates")}


def read_rows(path: Path, rows, names) -> "pd.DataFrame":
    """Rows ``rows`` (sorted positions) of a Parquet file, read one column at a time."""
    import pandas as pd
    import pyarrow.parquet as pq

    handle = pq.ParquetFile(path, pre_buffer=False)
    return pd.DataFrame({name: handle.read(columns=[name]).column(0).take(rows).to_numpy() for name in names})


def assess_case(n: int, m: int) -> dict:
    import pyarrow.parquet as pq

    from sdckit.core.random import as_generator
    from sdckit.permutation.assess import assess
    from sdckit.permutation.sample import sample_rows

    stages = Stages()
    with tempfile.TemporaryDirectory() as tmp:
        x_path, y_path = generate(Path(tmp), n, m)
        stages.done("generate")
        rng = as_generator(1, secret=False)
        rows = sample_rows(n, min(PAIRS, n), rng) if n > PAIRS else None
        names = pq.ParquetFile(x_path).schema_arrow.names
        if rows is None:
            import pandas as pd
            x, y = pd.read_parquet(x_path), pd.read_parquet(y_path)
        else:
            x, y = read_rows(x_path, rows, names), read_rows(y_path, rows, names)
        stages.done("read sampled pairs")
        result = assess(x, y, sample=20_000, seed=rng)
        stages.done("assess")
    v = result.verification
    return {"case": "assess", "n": n, "m": m, "stages": stages.rows, "pairs": len(x), "p_value": v.p_value,
            "p_value_se": v.p_value_se, "verdict": v.verdict, "replicates": v.replicates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", "--n", type=float, nargs="+", default=[1e5, 1e6], help="records (1e7 allowed)")
    parser.add_argument("--m", type=int, default=13)
    parser.add_argument("--assess", action="store_true", help="also the permutation assessment in bounded memory")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument("--whole-peak", action="store_true",
                        help="do not reset the peak RSS per stage (for /usr/bin/time -v)")
    parser.add_argument("--one", choices=("report", "assess"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        global RESET
        RESET = not args.whole_peak
        case = report_case if args.one == "report" else assess_case
        print(json.dumps(case(int(args.rows[0]), args.m)))
        return
    cases = ([] if args.no_report else ["report"]) + (["assess"] if args.assess else [])
    for n in args.rows:
        for case in cases:
            # a child per case, so that its peak memory is its own; its stage lines pass through
            flags = ["--whole-peak"] if args.whole_peak else []
            out = subprocess.run([sys.executable, __file__, "--one", case, "--rows", str(int(n)), "--m", str(args.m),
                                  *flags],
                                 stdout=subprocess.PIPE, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            stages = row.pop("stages")
            wall = sum(s["wall_s"] for s in stages.values())
            cpu = sum(s["cpu_s"] for s in stages.values())
            peak = max(s["peak_mb"] for s in stages.values())
            print(f"{case} n={int(n):>10,} m={args.m}: {wall:7.1f} s wall, {cpu:7.1f} s CPU, peak RSS "
                  f"{peak / 1024:.2f} GB; {json.dumps({k: v for k, v in row.items() if k not in ('n', 'm', 'case')})}")
            for label, s in stages.items():
                print(f"    {label:<28} {s['wall_s']:7.1f} s wall {s['cpu_s']:7.1f} s CPU  peak {s['peak_mb'] / 1024:5.2f} GB")


if __name__ == "__main__":
    main()
