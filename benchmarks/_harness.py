"""What the benchmark scripts share: the median time of repeated calls, the peak resident memory
of a process, running the script itself again in a child process (so that each measurement's
peak memory is its own) that prints its result as one JSON line last, and concurrent clients of
a service on loopback.

Imported by the scripts as ``from _harness import ...`` (``python benchmarks/bench_x.py`` puts
this folder on ``sys.path``).
"""

from __future__ import annotations

import http.client
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit


def median_seconds(fn: Callable[[], Any], repeats: int = 3) -> float:
    """The median wall time in seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident memory in MiB of this process (or of its finished children), from
    ``getrusage`` (``ru_maxrss`` is in KiB on Linux)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def run_self(script: str, *args: str) -> dict[str, Any]:
    """Run ``python script args...`` in a child process and return the JSON object on the last
    line of its standard output (the child's own peak memory is in it)."""
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: The HTTP clients :func:`concurrent_clients` can time requests with.
CLIENTS = ("stdlib", "httpx")


def concurrent_clients(url: str, key: str, clients: int, per_client: int,
                       request: Callable[[Any], tuple[str, str, dict[str, Any]]],
                       seconds: float | None = None, client: str = "stdlib") -> tuple[list[tuple[str, float]], float, int]:
    """``clients`` threads, each with its own HTTP connection (bearer ``key``) and generator (seeded
    by its number), each drawing ``request(rng) -> (label, path, json body)`` and timing its POST,
    ``per_client`` times (until ``seconds`` have passed, if given). Returns each POST's
    ``(label, seconds)``, the wall time and the number of answers other than 200.

    ``client``: "stdlib" (``http.client``, one kept-alive connection per thread: about 0.3 ms of
    CPU a request) or "httpx" (about 3 ms a request on this machine). The clients run on the same
    cores as the server, so a heavy client's own CPU is in every latency measured.
    """
    import numpy as np

    if client not in CLIENTS:
        raise ValueError(f"client must be one of {CLIENTS}, not {client!r}")
    latencies: list[tuple[str, float]] = []
    errors = [0]
    lock = threading.Lock()
    deadline = None if seconds is None else time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post_with(client_name: str) -> tuple[Callable[[str, dict[str, Any]], int], Callable[[], None]]:
        if client_name == "httpx":
            import httpx

            session = httpx.Client(base_url=url, headers=headers, timeout=120)
            return (lambda path, body: session.post(path, json=body).status_code), session.close
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

        def post(path: str, body: dict[str, Any]) -> int:
            connection.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            reply = connection.getresponse()
            reply.read()
            return reply.status
        return post, connection.close

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        mine = []
        post, close = post_with(client)
        try:
            for _ in range(per_client):
                if deadline is not None and time.monotonic() > deadline:
                    break
                label, path, body = request(rng)
                t0 = time.perf_counter()
                status = post(path, body)
                mine.append((label, time.perf_counter() - t0))
                if status != 200:
                    with lock:
                        errors[0] += 1
        finally:
            close()
        with lock:
            latencies.extend(mine)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - start, errors[0]
