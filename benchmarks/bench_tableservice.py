"""Benchmark of the query service's table mode (issue 30 section 3): latency of POST /v1/table
over HTTP on loopback.

Writes ``--rows`` generated census records (Parquet: region 20 codes, sex 2, age group 20,
household size 8, marital status 5 — 32,000 finest cells — and no key column: the service draws
the keys), starts the real server (uvicorn, one process) on 127.0.0.1 and sends ``--requests``
random 3-dimensional tables (a third of them with a where filter on one more dimension) from
``--clients`` concurrent clients, stopping after ``--seconds`` at most. Prints start-up time, p50
and p99 latency, throughput and the server's CPU time per request (from /proc).

Goal: p50 < 50 ms for a 3-dimensional table at 1e6 records.

``--measure sum`` adds an income column (log-normal, cents) with ``[table.ckm.sums]`` (cellKey's
flex function, top_k 3) and asks for its perturbed sums instead of counts.

    python benchmarks/bench_tableservice.py [--rows 1000000] [--requests 800] [--clients 8] [--seconds 120]
                                            [--measure count|sum]
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from _harness import concurrent_clients  # noqa: E402
from bench_query import cpu_seconds  # noqa: E402
from query_helpers import Server, add_analyst  # noqa: E402

DOMAINS = {
    "region": [f"R{i:02d}" for i in range(20)],
    "sex": ["F", "M"],
    "age": [f"{5 * i}-{5 * i + 4}" for i in range(19)] + ["95+"],
    "hh": list(range(1, 9)),
    "marital": ["single", "married", "widowed", "divorced", "other"],
}


def make_table(folder: Path, n: int) -> Path:
    rng = np.random.default_rng(1)
    path = folder / f"census_{n}.parquet"
    frame = pd.DataFrame({d: np.asarray(v)[rng.integers(0, len(v), n)] for d, v in DOMAINS.items()})
    frame["income"] = np.round(rng.lognormal(10, 1, n), 2)
    frame.to_parquet(path)
    return path


SUMS = """[table.bounds]
income = [0, 1e9]
[table.ckm.sums]
D = 5
V = 3.0
fp = 1000
top_k = 3
epsilon = [1, 0.5, 0.3]
"""


def write_config(folder: Path, table: Path, measure: str = "count") -> Path:
    domains = "\n".join(f"{d} = {[*v]!r}".replace("'", '"') for d, v in DOMAINS.items())
    config = folder / "service.toml"
    config.write_text(f"""[service]
state = "state.db"
[[table]]
name = "census"
path = "{table.name}"
mode = "tables"
[table.domains]
{domains}
[table.ckm]
D = 3
V = 2.0
js = 1
{SUMS if measure == "sum" else ""}""")
    return config


def random_request(rng: np.random.Generator, measure: str = "count") -> dict:
    dims = [str(d) for d in rng.choice(list(DOMAINS), 4, replace=False)]
    body: dict = {"table": "census", "dimensions": dims[:3], "measure": "count" if measure == "count" else "sum:income"}
    if rng.random() < 1 / 3:
        codes = DOMAINS[dims[3]]
        body["where"] = {dims[3]: [codes[i] for i in sorted(set(rng.integers(0, len(codes), 3).tolist()))]}
    return body


def load(url: str, key: str, requests: int, clients: int, seconds: float,
         measure: str = "count") -> tuple[list[float], float, int]:
    """``requests`` random tables from ``clients`` concurrent clients (for at most ``seconds``):
    the seconds of each, the wall time and the refusals."""
    def request(rng: np.random.Generator) -> tuple[str, str, dict]:
        return "table", "/v1/table", random_request(rng, measure)

    latencies, wall, errors = concurrent_clients(url, key, clients, requests // clients, request, seconds)
    return [t for _, t in latencies], wall, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--measure", choices=["count", "sum"], default="count")
    args = parser.parse_args()
    for n in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            config = write_config(folder, make_table(folder, n), args.measure)
            key = add_analyst(config, "bench", "restricted")
            t0 = time.perf_counter()
            server = Server(config)
            started = time.perf_counter() - t0
            try:
                load(server.url, key, 4 * args.clients, args.clients, args.seconds, args.measure)  # warm-up
                cpu0 = cpu_seconds(server.proc.pid)
                latencies, wall, errors = load(server.url, key, args.requests, args.clients, args.seconds,
                                              args.measure)
                cpu = cpu_seconds(server.proc.pid) - cpu0
            finally:
                server.stop()
        ms = sorted(1000 * x for x in latencies)
        print(f"{n:>10,} records ({args.measure}): start-up {started:.1f} s; {len(ms)} tables, {args.clients} clients: "
              f"p50 {statistics.median(ms):.1f} ms, p99 {ms[int(0.99 * (len(ms) - 1))]:.1f} ms, "
              f"{len(ms) / wall:.0f} tables/s, server CPU {1000 * cpu / max(len(ms), 1):.1f} ms/table, "
              f"errors {errors}", flush=True)


if __name__ == "__main__":
    main()
