"""Benchmark of the restricted mode's auditor (issue 15): ms per query after 1,000 answered queries.

A synthetic table of 10**6 records (age 17-90, sex, 50 regions with Zipf-like frequencies,
16 education levels, 14 occupations); queries are conjunctions of 1 to 3 predicates -- an age
range (BETWEEN), an IN-list on region, education or occupation, or sex = -- asked as COUNT
(40 %), SUM(income) (30 %), AVG(income) (= SUM + COUNT, 20 %) or COUNT ... GROUP BY sex (10 %),
with k = 10. Every query goes through ``check`` and, when allowed, ``record`` (as the server does)
until 1,000 have been answered, printing at every 200 answered the median per query (wall and CPU
time of this process) of the checks and of check + record over the queries asked since the last
such line; then 100 further queries are timed.

    PYTHONPATH=src python benchmarks/bench_auditor.py [--n 1000000] [--answered 1000] [--every 200]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from sdckit.query.audit.auditor import Auditor


def make_table(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    zipf = 1 / np.arange(1, 51)
    edu = np.r_[np.full(4, 0.15), np.full(12, 0.4 / 12)]
    return {
        "age": np.clip(rng.gamma(6, 6.5, n) + 17, 17, 90).astype(np.int16),
        "sex": rng.integers(0, 2, n).astype(np.int8),
        "region": rng.choice(50, n, p=zipf / zipf.sum()).astype(np.int8),
        "education": rng.choice(16, n, p=edu).astype(np.int8),
        "occupation": rng.integers(0, 14, n).astype(np.int8),
    }


def predicate(table: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    column = rng.choice(["age", "age", "sex", "region", "education", "occupation"])
    values = table[column]
    if column == "age":
        low = int(rng.integers(17, 80))
        return (values >= low) & (values <= low + int(rng.integers(1, 30)))
    if column == "sex":
        return values == rng.integers(0, 2)
    domain = {"region": 50, "education": 16, "occupation": 14}[column]
    return np.isin(values, rng.choice(domain, int(rng.integers(1, 8)), replace=False))


def query(table: dict[str, np.ndarray], rng: np.random.Generator) -> tuple[str, list[np.ndarray]]:
    where = predicate(table, rng)
    for _ in range(int(rng.integers(0, 3))):
        where &= predicate(table, rng)
    u = rng.random()
    if u < 0.4:
        return "count", [where]
    if u < 0.7:
        return "sum", [where]
    if u < 0.9:
        return "avg", [where]
    sex = table["sex"]
    return "group", [where & (sex == 0), where & (sex == 1)]


def ask(auditor: Auditor, kind: str, sets: list[np.ndarray]) -> tuple[bool, float, float]:
    """Check (and record when allowed) one query; return whether it was answered and the wall and
    CPU seconds of its checks alone."""
    calls = {"count": [("count", None)], "sum": [("sum", "income")], "avg": [("sum", "income"), ("count", None)],
             "group": [("count", None)]}[kind]
    t0, c0 = time.perf_counter(), time.process_time()
    allowed = all(auditor.check(sets, k, c).allowed for k, c in calls)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if allowed:
        for k, c in calls:
            auditor.record(sets, k, c)
    return allowed, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--answered", type=int, default=1000)
    parser.add_argument("--timed", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--every", type=int, default=200, help="print the medians at every this many answered")
    args = parser.parse_args()
    rng = np.random.default_rng(20261125)
    table = make_table(args.n, rng)
    auditor = Auditor(args.n, args.k)
    answered = refused = 0
    start = time.perf_counter()
    window: list[tuple[float, float, float, float]] = []  # check wall, check CPU, total wall, total CPU
    while answered < args.answered:
        kind, sets = query(table, rng)
        t0, c0 = time.perf_counter(), time.process_time()
        allowed, wall, cpu = ask(auditor, kind, sets)
        window.append((wall, cpu, time.perf_counter() - t0, time.process_time() - c0))
        answered += allowed
        refused += not allowed
        if allowed and answered % args.every == 0:
            ms = 1000 * np.median(np.array(window), axis=0)
            print(f"  {answered} answered, {refused} refused, {time.perf_counter() - start:.1f} s: per query over the "
                  f"last {len(window)}, check median {ms[0]:.1f} ms (CPU {ms[1]:.1f} ms), check + record median "
                  f"{ms[2]:.1f} ms (CPU {ms[3]:.1f} ms); load {os.getloadavg()[0]:.1f}", flush=True)
            window = []
    build = time.perf_counter() - start
    print(f"built: {answered} answered, {refused} refused in {build:.1f} s "
          f"({1000 * build / (answered + refused):.1f} ms per query including query generation)")
    for key, know in auditor._knowledge.items():
        print(f"  knowledge {key}: {know.atoms.count} atoms, rank {[e.rank for e in know.engines]}")
    checks, totals, cpu, allowed = [], [], [], 0
    for _ in range(args.timed):
        kind, sets = query(table, rng)
        c0, t0 = time.process_time(), time.perf_counter()
        k, c = ("sum", "income") if kind in ("sum", "avg") else ("count", None)
        decision = auditor.check(sets, k, c)
        t1 = time.perf_counter()
        if decision.allowed:
            auditor.record(sets, k, c)
            allowed += 1
        t2, c2 = time.perf_counter(), time.process_time()
        checks.append(t1 - t0)
        totals.append(t2 - t0)
        cpu.append(c2 - c0)
    checks_ms, totals_ms, cpu_ms = 1000 * np.array(checks), 1000 * np.array(totals), 1000 * np.array(cpu)
    print(f"after {answered} answered queries on n={args.n:,}, k={args.k}: {args.timed} queries "
          f"({allowed} allowed)")
    print(f"  check:          median {np.median(checks_ms):.1f} ms, p90 {np.percentile(checks_ms, 90):.1f} ms, "
          f"max {checks_ms.max():.1f} ms")
    print(f"  check + record: median {np.median(totals_ms):.1f} ms, p90 {np.percentile(totals_ms, 90):.1f} ms, "
          f"max {totals_ms.max():.1f} ms")
    print(f"  check + record, CPU time of this process: median {np.median(cpu_ms):.1f} ms, "
          f"p90 {np.percentile(cpu_ms, 90):.1f} ms, max {cpu_ms.max():.1f} ms")
    print(f"  machine load average (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB "
          "(table and query generation included)")


if __name__ == "__main__":
    main()
