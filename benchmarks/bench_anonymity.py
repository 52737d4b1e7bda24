"""Benchmarks of sdckit's optimal full-domain k-anonymity against ARX (issue 18). From the
repository root:

    PYTHONPATH=src python benchmarks/bench_anonymity.py [--repeats 5] [--cases 1,2] [--mondrian] [--metrics]

Adult (30,162 records, ARX's 8 quasi-identifiers and hierarchies), replicated x10 and x100,
optimal search with ARX's Loss metric (the default, as in ARX) — the rows of issue 18's table. Each case runs in its own
process: the median wall time of ``repeats`` calls of ``FullDomainGeneralization.partition``
(search and release; reading the CSV not included) and the process's peak resident memory
(``ru_maxrss``: data, search and release together). The ARX figures are the issue's (ARX 3.9,
Flash, loss, Java 17, measured on the same 2-core machine; where the issue gives a range, its
fastest end). Goals: time ratio <= 1 on every row, memory ratio <= 0.5. ``cpu s`` is the
median CPU time of the same calls: on a machine shared with other work, wall time runs ahead
of it, and the gap says how much of a core the benchmark got.

``--mondrian`` adds the Mondrian case of issue 5 (1,000,000 records x 5 continuous columns).

``--metrics`` prints, for each of ARX's metrics (issue 28 item 3) on Adult x1, k=5, at MaxSup 0%
and 5%, the optimum node, its score, the candidates scored and the median time of
``FullDomainGeneralization.search`` (the search alone), beside ARX's node where it is known
(Loss at 5%, issue 28).

``--protect`` times ``sdckit.protect(frame, [FullDomainGeneralization(...)], seed=...)`` end to end
instead (issue 28 item 2: search, release, fingerprints and manifest), and ``--jitter`` moves each
copy's ages at random within their 5-year band (same hierarchy level 1), so that the copies are not
the same rows and the input is not k-anonymous already. ARX cannot be installed here (Maven Central
is not reachable), so the ARX columns are the issue's published figures; issue 28 states ARX's
``anonymize()`` at 0.4-1.2 s on Adult x100, about 3 s with its data encoding counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from _harness import median_seconds, peak_rss_mb, run_self

ADULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "adult"
QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]

#: ARX 3.9's optimum where it is known (issue 28): (metric, MaxSup) -> node, QI8 order.
ARX_NODES = {("loss", 0.05): [0, 3, 0, 0, 2, 1, 1, 0]}

#: (copies of Adult, k, MaxSup, ARX seconds, ARX peak GB) — issue 18's table.
CASES = [
    (1, 5, 0.0, 0.100, 0.79),
    (1, 5, 0.05, 0.367, 0.87),
    (10, 5, 0.0, 0.483, 0.81),
    (10, 5, 0.05, 0.516, 0.81),
    (100, 5, 0.0, 3.2, 3.1),
    (100, 500, 0.0, 3.5, 3.1),
]


def adult_copies(copies: int, jitter: bool):
    """Adult replicated ``copies`` times; with ``jitter``, every copy but the first has each age
    moved at random within its 5-year band (the ages hierarchy's level 1), so rows differ."""
    import numpy as np
    import pandas as pd

    adult = pd.read_csv(ADULT / "adult.csv.gz", sep=";")
    frame = adult if copies == 1 else adult.iloc[np.arange(copies * len(adult)) % len(adult)].reset_index(drop=True)
    if jitter and copies > 1:
        rng = np.random.default_rng(2026)
        age = pd.to_numeric(frame["age"]).to_numpy()
        moved = (age // 5) * 5 + rng.integers(0, 5, len(age))
        keep = np.arange(len(age)) < len(adult)  # the first copy is Adult itself
        frame["age"] = np.where(keep, age, moved).astype(frame["age"].dtype)
    return frame


def run_case(index: int, repeats: int, protect: bool = False, jitter: bool = False) -> dict:
    """One case in this process; returns its figures."""
    import sdckit
    from sdckit.anonymity import FullDomainGeneralization, Hierarchy

    copies, k, sup, _, _ = CASES[index]
    frame = adult_copies(copies, jitter)
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
    method = FullDomainGeneralization(k, hierarchies, max_suppression=sup)
    seed = sdckit.new_seed()
    times, cpu = [], []
    for _ in range(repeats + 1):  # the first call loads the compiled kernels: not counted
        part = release = None  # the previous release is freed before the next call
        start, start_cpu = time.perf_counter(), time.process_time()
        if protect:
            release = sdckit.protect(frame, [method], seed=seed)
        else:
            part = method.partition(frame)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    if protect:  # the node and counts of the release the pipeline made
        part = method.partition(frame)
    peak = peak_rss_mb() * 2**20 / 1e9
    return {"rows": len(frame), "median": statistics.median(times[1:]), "times": times[1:],
            "cpu": statistics.median(cpu[1:]), "peak_gb": peak,
            "node": list(part.info["node"].values()), "evaluated": part.info["evaluated_nodes"],
            "suppressed": part.info["suppressed"], "classes": part.info["classes"]}


def mondrian(repeats: int) -> None:
    import numpy as np
    import pandas as pd

    from sdckit.anonymity import Mondrian

    rng = np.random.default_rng(0)
    cont = pd.DataFrame(rng.uniform(0, 1000, size=(1_000_000, 5)), columns=[f"x{i}" for i in range(5)])
    method = Mondrian(5, tuple(cont.columns))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        part = method.partition(cont)
        times.append(time.perf_counter() - start)
    print(f"Mondrian {len(cont):,} rows x 5, k=5: {statistics.median(times):.3f} s  classes={part.n_classes} "
          f"loss={part.info['loss']:.4f}")


def metrics_table(repeats: int) -> None:
    """Each metric's optimum and search time on Adult x1, k=5, at 0% and 5% (in this process)."""
    from sdckit.anonymity import FullDomainGeneralization, Hierarchy
    from sdckit.anonymity.metrics import METRICS

    frame = adult_copies(1, False)
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
    FullDomainGeneralization(5, hierarchies).search(frame)  # loads the compiled kernels
    print(f"Adult x1, k=5, {len(QI8)} quasi-identifiers ({', '.join(QI8)})")
    print(f"{'metric':>14} {'MaxSup':>6} | {'node':<26} {'ARX node':<26} {'score':>14} {'scored':>6} {'s':>7}")
    for sup in (0.0, 0.05):
        for metric in METRICS:
            method = FullDomainGeneralization(5, hierarchies, max_suppression=sup, metric=metric)
            result = method.search(frame)
            seconds = median_seconds(lambda: method.search(frame), repeats)  # noqa: B023 (called at once)
            arx = ARX_NODES.get((metric, sup))
            print(f"{metric:>14} {sup:>6.0%} | {str(list(result.node)):<26} {str(arx) if arx else '-':<26} "
                  f"{result.metrics[metric]:>14.6g} {result.extra['scored']:>6} {seconds:>7.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default=",".join(str(i + 1) for i in range(len(CASES))),
                        help="comma-separated case numbers (1-6); empty for none (e.g. with --metrics)")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # internal: run one case, print JSON
    parser.add_argument("--mondrian", action="store_true")
    parser.add_argument("--metrics", action="store_true",
                        help="each ARX metric's optimum and time on Adult at 0%% and 5%% (issue 28)")
    parser.add_argument("--protect", action="store_true", help="time protect() end to end (issue 28)")
    parser.add_argument("--jitter", action="store_true", help="jitter the copies' ages within their 5-year band")
    parser.add_argument("--vs-arx", action="store_true",
                        help="run ARX beside sdckit when it is installed (it cannot be here: published figures)")
    args = parser.parse_args()
    if args.case is not None:
        print(json.dumps(run_case(args.case - 1, args.repeats, args.protect, args.jitter)))
        return
    if args.vs_arx:
        print("ARX is not installed on this machine (Maven Central is unreachable): its columns are the "
              "published figures of issues 18 and 28.")
    numbers = [int(c) for c in args.cases.split(",") if c.strip()]
    if numbers:
        print(f"timing: {'protect() end to end' if args.protect else 'FullDomainGeneralization.partition'}"
              f"{', ages jittered within their 5-year band' if args.jitter else ''}")
        print(f"{'rows':>10} {'k':>4} {'MaxSup':>6} | {'ARX s':>6} {'sdckit s':>8} {'ratio':>6} {'cpu s':>6} | "
              f"{'ARX GB':>6} {'sdckit GB':>9} {'ratio':>6} | node, evaluated nodes")
    for number in numbers:
        copies, k, sup, arx_s, arx_gb = CASES[number - 1]
        r = run_self(__file__, "--case", str(number), "--repeats", str(args.repeats),
                     *(["--protect"] if args.protect else []), *(["--jitter"] if args.jitter else []))
        print(f"{r['rows']:>10,} {k:>4} {sup:>6.0%} | {arx_s:>6.3f} {r['median']:>8.3f} {r['median'] / arx_s:>6.2f} {r['cpu']:>6.3f} | "
              f"{arx_gb:>6.2f} {r['peak_gb']:>9.2f} {r['peak_gb'] / arx_gb:>6.2f} | {r['node']}, {r['evaluated']}",
              flush=True)
    if args.mondrian:
        mondrian(args.repeats)
    if args.metrics:
        metrics_table(args.repeats)


if __name__ == "__main__":
    main()
