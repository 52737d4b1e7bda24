"""Benchmark of the query service (issue 15): latency and throughput over HTTP on loopback, and
the restricted mode's auditor time per query after 1,000 answered queries.

For each size (default 1e6 and 1e7 generated rows) the script writes a Parquet table, starts
the real server (uvicorn, one process) on 127.0.0.1, and sends ``--queries`` dp queries (COUNT
and SUM with random WHERE clauses, a quarter of them with GROUP BY; caching off, so each is
computed and charged) from ``--clients`` concurrent clients, after ``--single`` queries from one
client. It prints p50/p99 latency, throughput and the server's CPU time per query (from /proc:
independent of the machine's load, unlike the latencies). Then, in process, it answers 1,000 random restricted queries through the auditor
and times the next ones (membership vectors from DuckDB + ``Auditor.check``).

Goals: COUNT/SUM p50 < 25 ms at 1e6 rows; auditor < 50 ms per query after 1,000 queries.

    python benchmarks/bench_query.py [--rows 1000000 10000000] [--queries 10000] [--clients 8]

Each supported aggregate on its own (issue 32): ``--per-aggregate`` times every form of
:data:`AGGREGATES` (COUNT, SUM, AVG, VAR_POP, STDDEV_POP, MEDIAN, QUANTILE_CONT, COUNT(DISTINCT) of a
cube column and of a many-valued one, GROUP BY a domain, GROUP BY keys from the data) separately
over HTTP and prints p50/p95, the server's CPU per query and its peak RSS. The table is written by
DuckDB (bounded memory; ``--data DIR`` keeps and reuses it); ``--memory-limit 3GB`` serves it from
a DuckDB file with that memory limit (``[service] memory_limit``), as 1e8 rows need.

    python benchmarks/bench_query.py --per-aggregate --rows 1e6 --queries 160
    python benchmarks/bench_query.py --per-aggregate --rows 1e8 --queries 80 --memory-limit 3GB --data /tmp/sdckit-1e8

Accuracy against Tumult Analytics (issue 32): ``--vs tumult`` answers COUNT(*), SUM(income),
AVG(income), VAR_POP(income) and STDDEV_POP(income) (Tumult: ``variance``, ``stdev``) (income clamped to [0, 200000]) on the first ``--rows`` table (default 1e6 rows, one row
per person, add/remove-one-person neighbours) ``--reps`` times (200) and prints the median absolute
errors, under pure epsilon-DP (epsilon 1 per query: sdckit's exact Laplace/geometric noise, the
budget split equally over a query's measurements) and rho-zCDP (rho 1/2 = epsilon**2 / 2 per query:
sdckit's discrete Gaussian), and Tumult's (``PureDPBudget(1)``, ``RhoZCDPBudget(0.5)``,
``AddOneRow``) beside them when ``tmlt.analytics`` is importable; sdckit alone otherwise. sdckit's
figures are computed in process from the true counts and sums (the noise the service adds; no
HTTP). Tumult is not a dependency: it needs pyspark and Java and pins numpy < 2 and pandas < 2
(``pip install --dry-run tmlt.analytics`` resolves to tmlt.analytics 0.21, pyspark 3.5, numpy
1.26.4, pandas 1.5.3), so it is installed, if at all, in a separate environment.

    python benchmarks/bench_query.py --vs tumult [--rows 1000000] [--reps 200]
"""

from __future__ import annotations

import argparse
import warnings
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from _harness import concurrent_clients  # noqa: E402
from query_helpers import Server  # noqa: E402
from sdckit.query.state import State  # noqa: E402

REGIONS = ["N", "S", "E", "W"]


def make_table(folder: Path, n: int) -> Path:
    rng = np.random.default_rng(1)
    path = folder / f"census_{n}.parquet"
    pd.DataFrame({
        "person_id": np.arange(n, dtype=np.int64),
        "age": rng.integers(0, 100, n).astype(np.int32),
        "income": rng.integers(0, 250_000, n).astype(np.int64),
        "region": rng.choice(REGIONS, n),
    }).to_parquet(path)
    return path


def write_config(folder: Path, table: Path, sync: str = "full") -> Path:
    config = folder / "service.toml"
    config.write_text(f"""[service]
state = "state.db"
cache = false
sync = "{sync}"
[restricted]
min_query_set = 5
[[table]]
name = "census"
path = "{table.name}"
privacy_unit = "person_id"
[table.bounds]
income = [0, 200000]
age = [0, 120]
[table.domains]
region = ["N", "S", "E", "W"]
""")
    return config


def random_query(rng: np.random.Generator) -> tuple[str, str]:
    """(kind, sql): three COUNT/SUM forms and one GROUP BY, equally often."""
    a, b = sorted(rng.integers(0, 100, 2))
    r = REGIONS[rng.integers(4)]
    kind = rng.integers(4)
    if kind == 0:
        return "count/sum", f"SELECT COUNT(*) FROM census WHERE age > {a} AND region = '{r}'"
    if kind == 1:
        return "count/sum", f"SELECT SUM(income) FROM census WHERE age BETWEEN {a} AND {b}"
    if kind == 2:
        return "count/sum", f"SELECT COUNT(*), SUM(income) FROM census WHERE region IN ('{r}', 'N') OR age < {a}"
    return "group by", f"SELECT region, COUNT(*) FROM census WHERE age >= {a} GROUP BY region"


def load(url: str, key: str, queries: int, clients: int) -> tuple[list[tuple[str, float]], float, int]:
    """``queries`` random queries from ``clients`` concurrent clients: (kind, seconds) of each,
    the wall time and the refusals."""
    def request(rng: np.random.Generator) -> tuple[str, str, dict]:
        kind, sql = random_query(rng)
        return kind, "/v1/query", {"sql": sql, "epsilon": 0.001}

    return concurrent_clients(url, key, clients, queries // clients, request)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), from /proc (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def audit_timing(config: Path, answered: int, timed: int) -> tuple[float, float, int, int]:
    """Mean ms per query (memberships + check) and of ``Auditor.check`` alone, after ``answered``
    random restricted queries."""
    from sdckit.query.service import Service
    from sdckit.query.restricted import audited_kinds
    from sdckit.query.sql import parse

    service = Service(config)
    restricted = service.restricted
    table = service.config.tables["census"]
    rng = np.random.default_rng(7)
    allowed = refused = 0
    total = check = 0.0
    for i in range(answered + timed):
        a, b = sorted(rng.integers(0, 100, 2))
        sql = f"SELECT SUM(income) FROM census WHERE age BETWEEN {a} AND {b} AND region <> '{REGIONS[i % 4]}'"
        query = parse(sql, service.config)
        t0 = time.perf_counter()
        members = restricted.memberships(query, table)
        t1 = time.perf_counter()
        auditor = restricted._auditor("bench", table)
        decisions = [auditor.check(members, kind, column) for kind, column in audited_kinds(query)]
        t2 = time.perf_counter()
        if all(d.allowed for d in decisions):
            for kind, column in audited_kinds(query):
                auditor.record(members, kind, column)
            allowed += 1
        else:
            refused += 1
        if i >= answered:
            total += t2 - t0
            check += t2 - t1
    return 1000 * total / timed, 1000 * check / timed, allowed, refused


ACCURACY_SQL = {"COUNT": "SELECT COUNT(*) FROM census", "SUM": "SELECT SUM(income) FROM census",
                "AVG": "SELECT AVG(income) FROM census", "VAR": "SELECT VAR_POP(income) FROM census",
                "STDDEV": "SELECT STDDEV_POP(income) FROM census"}


def truths(clamped: np.ndarray) -> dict[str, float]:
    """The true answers of :data:`ACCURACY_SQL` on the clamped incomes (population variance)."""
    return {"COUNT": float(len(clamped)), "SUM": float(clamped.sum()), "AVG": float(clamped.mean()),
            "VAR": float(clamped.var()), "STDDEV": float(clamped.std())}
DEFINITIONS = {"pure": "pure epsilon-DP, epsilon 1 per query", "zcdp": "rho-zCDP, rho 1/2 per query"}


def sdckit_errors(table: Path, reps: int) -> dict[str, dict[str, float]]:
    """Median absolute errors of sdckit's COUNT, SUM, AVG, VAR_POP, STDDEV_POP per definition (in process)."""
    from fractions import Fraction

    from sdckit.query import noisy, noisy_gaussian
    from sdckit.query.config import load_config
    from sdckit.query.data import Database
    from sdckit.query.generate import aggregate_sql
    from sdckit.query.sql import parse

    config = write_config(table.parent, table)
    db = Database(load_config(config))
    t = db.config.tables["census"]
    rng = np.random.default_rng()
    frame = pd.read_parquet(table, columns=["income"])
    clamped = frame["income"].clip(0, 200_000).to_numpy(dtype=float)
    truth = truths(clamped)
    out: dict[str, dict[str, float]] = {d: {} for d in DEFINITIONS}
    try:
        for what, sql in ACCURACY_SQL.items():
            q = parse(sql, db.config)
            plans = {"pure": noisy.plan(q, t, Fraction(1)),
                     "zcdp": noisy_gaussian.plan(q, t, "zcdp", rho=Fraction(1, 2))}
            counts, sums = noisy.exact_cells(plans["pure"], t, db.aggregate(aggregate_sql(q, t, "dp")))
            for d, p in plans.items():
                errors = []
                for _ in range(reps):
                    if d == "pure":
                        value = noisy.answer_cells(p, t, counts, sums, rng)["rows"][0][0]
                    else:
                        value = noisy_gaussian.answer_cells(p, counts, sums, rng)["rows"][0][0]
                    errors.append(abs(value - truth[what]))
                out[d][what] = float(np.median(errors))
    finally:
        db.close()
    return out


def tumult_errors(table: Path, reps: int) -> dict[str, dict[str, float]] | None:
    """Tumult Analytics' median absolute errors, or ``None`` when it is not importable."""
    try:
        from pyspark.sql import SparkSession
        from tmlt.analytics.privacy_budget import PureDPBudget, RhoZCDPBudget
        from tmlt.analytics.protected_change import AddOneRow
        from tmlt.analytics.query_builder import QueryBuilder
        from tmlt.analytics.session import Session
    except ImportError:
        return None
    spark = SparkSession.builder.getOrCreate()
    frame = pd.read_parquet(table)
    clamped = frame["income"].clip(0, 200_000).to_numpy(dtype=float)
    truth = truths(clamped)
    sdf = spark.createDataFrame(frame)
    queries = {"COUNT": QueryBuilder("census").count(),
               "SUM": QueryBuilder("census").sum("income", low=0, high=200_000),
               "AVG": QueryBuilder("census").average("income", low=0, high=200_000),
               "VAR": QueryBuilder("census").variance("income", low=0, high=200_000),
               "STDDEV": QueryBuilder("census").stdev("income", low=0, high=200_000)}
    out: dict[str, dict[str, float]] = {}
    for d, (total, each) in {"pure": (PureDPBudget(float("inf")), PureDPBudget(1)),
                             "zcdp": (RhoZCDPBudget(float("inf")), RhoZCDPBudget(0.5))}.items():
        session = Session.from_dataframe(privacy_budget=total, source_id="census", dataframe=sdf,
                                         protected_change=AddOneRow())
        out[d] = {}
        for what, query in queries.items():
            errors = [abs(float(session.evaluate(query, each).toPandas().iloc[0, 0]) - truth[what]) for _ in range(reps)]
            out[d][what] = float(np.median(errors))
    return out


def vs_tumult(rows: int, reps: int) -> None:
    print(f"accuracy: {rows:,} rows (one per person), income clamped to [0, 200000], {reps} repetitions, "
          "median absolute error")
    with tempfile.TemporaryDirectory() as tmp:
        table = make_table(Path(tmp), rows)
        ours = sdckit_errors(table, reps)
        theirs = tumult_errors(table, reps)
    if theirs is None:
        print("tmlt.analytics is not importable here (it needs pyspark and Java and pins numpy < 2, pandas < 2; "
              "not a dependency of sdckit): sdckit alone")
    for d, label in DEFINITIONS.items():
        for what in ACCURACY_SQL:
            line = f"{label:>38}  {what:>6}: sdckit {ours[d][what]:14.4f}"
            if theirs is not None:
                line += f"   Tumult {theirs[d][what]:14.4f}"
            print(line)


#: One query form per supported aggregate (``--per-aggregate``): label -> (analyst, sql template).
#: ``{a}``/``{b}`` are ages, ``{r}`` a region, drawn per query; "keys" is an (epsilon, delta) analyst.
AGGREGATES = {
    "COUNT": ("pure", "SELECT COUNT(*) FROM census WHERE age > {a} AND region = '{r}'"),
    "SUM": ("pure", "SELECT SUM(income) FROM census WHERE age BETWEEN {a} AND {b}"),
    "AVG": ("pure", "SELECT AVG(income) FROM census WHERE region IN ('{r}', 'N') OR age < {a}"),
    "VAR_POP": ("pure", "SELECT VAR_POP(income) FROM census WHERE age > {a}"),
    "STDDEV_POP": ("pure", "SELECT STDDEV_POP(income) FROM census WHERE age <= {b} AND region <> '{r}'"),
    "MEDIAN": ("pure", "SELECT MEDIAN(income) FROM census WHERE age >= {a}"),
    "QUANTILE_CONT": ("pure", "SELECT QUANTILE_CONT(income, 0.9) FROM census WHERE region = '{r}' AND age < {b}"),
    "COUNT DISTINCT age": ("pure", "SELECT COUNT(DISTINCT age) FROM census WHERE region = '{r}'"),
    "COUNT DISTINCT income": ("pure", "SELECT COUNT(DISTINCT income) FROM census WHERE region = '{r}'"),
    "GROUP BY region": ("pure", "SELECT region, COUNT(*), SUM(income) FROM census WHERE age >= {a} GROUP BY region"),
    "GROUP BY keys from data": ("keys", "SELECT age, COUNT(*) FROM census WHERE region = '{r}' GROUP BY age"),
}


def make_table_duckdb(folder: Path, n: int) -> Path:
    """The benchmark's census table of ``n`` rows written by DuckDB (streamed, bounded memory;
    1e8 rows take about 1 GB of Parquet): the same columns as :func:`make_table`, values from hashes
    of the row number (fixed, reproducible). An existing file is reused."""
    from sdckit.core.duckdb_session import connect

    path = folder / f"census_{n}.parquet"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    con = connect(memory_limit=2 << 30, temp_directory=folder / "tmp", threads=2)
    try:
        partial = path.with_suffix(".partial")
        con.execute(f"""COPY (SELECT i AS person_id, CAST(hash(i, 1) % 100 AS INTEGER) AS age,
                        CAST(hash(i, 2) % 250000 AS BIGINT) AS income,
                        ['N', 'S', 'E', 'W'][CAST(hash(i, 3) % 4 AS INTEGER) + 1] AS region
                        FROM range({int(n)}) t(i)) TO '{partial}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
        partial.rename(path)
    finally:
        con.close()
    return path


def peak_rss(pid: int) -> float:
    """Peak resident memory of process ``pid`` in MiB (VmHWM, /proc; Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def per_aggregate(n: int, folder: Path, data: Path, queries: int, clients: int, only: list[str] | None,
                  memory_limit: str | None = None) -> None:
    """Each supported aggregate timed on its own: ``queries`` dp queries from ``clients`` clients
    over HTTP; p50/p95 per aggregate, the server's start time and peak RSS."""
    folder.mkdir(parents=True, exist_ok=True)
    table = make_table_duckdb(data, n)
    config = write_config(folder, table, "normal")
    text = config.read_text().replace(f'path = "{table.name}"', f'path = "{table}"')
    text = text.replace("[table.bounds]", 'keys_from_data = ["age"]\n[table.bounds]')
    if memory_limit:
        text = text.replace("[service]\n", f'[service]\nmemory_limit = "{memory_limit}"\n')
    config.write_text(text)
    state = State(folder / "state.db")
    warnings.filterwarnings("ignore", message=".*unusually large.*")  # a benchmark's budget, not a policy
    keys = {"pure": state.add_analyst("bench", "dp", "1000000"),
            "keys": state.add_analyst("bench_keys", "dp", "1000000", "1/2")}
    t0 = time.perf_counter()
    server = Server(config, start_timeout=3600)
    start = time.perf_counter() - t0
    print(f"rows {n:>11,}: server start {start:6.1f} s, RSS after start {peak_rss(server.proc.pid):7.0f} MiB; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        for label, (who, template) in AGGREGATES.items():
            if only and label not in only:
                continue

            def request(rng: np.random.Generator, template: str = template, who: str = who) -> tuple[str, str, dict]:
                a, b = sorted(int(v) for v in rng.integers(0, 100, 2))
                body = {"sql": template.format(a=a, b=b, r=REGIONS[rng.integers(4)]), "epsilon": 0.001}
                if who == "keys":
                    body["delta"] = 1e-9
                return label, "/v1/query", body

            cpu0 = cpu_seconds(server.proc.pid)
            latencies, elapsed, errors = concurrent_clients(server.url, keys[who], clients, max(1, queries // clients),
                                                            request)
            ms = np.array([t for _, t in latencies]) * 1000
            cpu = 1000 * (cpu_seconds(server.proc.pid) - cpu0) / len(ms)
            print(f"rows {n:>11,}: {label:>24}: p50 {np.percentile(ms, 50):8.1f} ms, "
                  f"p95 {np.percentile(ms, 95):8.1f} ms,"
                  f" server CPU {cpu:6.1f} ms/query ({ms.size} queries, {len(ms) / elapsed:6.1f}/s, errors {errors}, load "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
        print(f"rows {n:>11,}: server peak RSS {peak_rss(server.proc.pid):7.0f} MiB", flush=True)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vs", choices=["tumult"], help="compare accuracy with Tumult Analytics (issue 32)")
    parser.add_argument("--reps", type=int, default=200, help="repetitions per query (--vs)")
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--audit-answered", type=int, default=1000)
    parser.add_argument("--audit-timed", type=int, default=50)
    parser.add_argument("--sync", choices=["full", "normal"], default="full")
    parser.add_argument("--no-audit", action="store_true", help="skip the restricted-mode timing")
    parser.add_argument("--single", type=int, default=200, help="queries from one client first (0: none)")
    parser.add_argument("--per-aggregate", action="store_true",
                        help="time each supported aggregate separately (p50/p95, server peak RSS)")
    parser.add_argument("--memory-limit", help='--per-aggregate: [service] memory_limit, e.g. "3GB" (the tables '
                        "then in a DuckDB file with bounded memory)")
    parser.add_argument("--only", nargs="+", help="--per-aggregate: these aggregates only (labels of AGGREGATES)")
    parser.add_argument("--data", type=Path, help="--per-aggregate: folder of the generated Parquet files, "
                        "kept and reused (default: a temporary folder)")
    args = parser.parse_args()
    if args.per_aggregate:
        print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, {args.queries} queries per aggregate "
              f"from {args.clients} clients")
        for rows in args.rows:
            with tempfile.TemporaryDirectory() as tmp:
                per_aggregate(int(rows), Path(tmp), args.data or Path(tmp), args.queries, args.clients, args.only,
                              args.memory_limit)
        return
    if args.vs:
        vs_tumult(int(args.rows[0]), args.reps)
        return
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, {args.queries} queries from "
          f"{args.clients} clients per size, state database sync = {args.sync}")
    for rows in args.rows:
        n = int(rows)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            t0 = time.perf_counter()
            table = make_table(folder, n)
            config = write_config(folder, table, args.sync)
            key = State(folder / "state.db").add_analyst("bench", "dp", str(args.queries))
            t1 = time.perf_counter()
            server = Server(config)
            t2 = time.perf_counter()
            try:
                if args.single:
                    single, _, _ = load(server.url, key, args.single, 1)
                    ms1 = np.array([t for _, t in single]) * 1000
                    print(f"rows {n:>11,}: one client, {len(ms1)} queries: p50 {np.percentile(ms1, 50):6.1f} ms, "
                          f"p99 {np.percentile(ms1, 99):6.1f} ms")
                cpu0 = cpu_seconds(server.proc.pid)
                latencies, elapsed, errors = load(server.url, key, args.queries, args.clients)
                cpu = cpu_seconds(server.proc.pid) - cpu0
            finally:
                server.stop()
            ms = np.array([t for _, t in latencies]) * 1000
            print(f"rows {n:>11,}: server CPU time {1000 * cpu / len(latencies):.2f} ms per query "
                  f"(load independent; the clients' own CPU not counted)")
            print(f"rows {n:>11,}: data {t1 - t0:5.1f} s, server start {t2 - t1:5.1f} s; all queries: "
                  f"p50 {np.percentile(ms, 50):6.1f} ms, p99 {np.percentile(ms, 99):6.1f} ms, "
                  f"mean {statistics.fmean(ms):6.1f} ms, throughput {len(ms) / elapsed:6.1f} queries/s, "
                  f"errors {errors}")
            for kind in ("count/sum", "group by"):
                part = np.array([t for k, t in latencies if k == kind]) * 1000
                print(f"rows {n:>11,}: {kind:>9}: p50 {np.percentile(part, 50):6.1f} ms, "
                      f"p99 {np.percentile(part, 99):6.1f} ms ({part.size} queries)")
            if n == int(args.rows[0]) and not args.no_audit:
                per, check, allowed, refused = audit_timing(config, args.audit_answered, args.audit_timed)
                print(f"rows {n:>11,}: restricted mode after {args.audit_answered} queries "
                      f"({allowed} answered, {refused} refused in all): {per:.1f} ms per query "
                      f"(memberships + audit), Auditor.check {check:.1f} ms")


if __name__ == "__main__":
    main()
