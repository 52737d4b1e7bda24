"""Helpers of the query-service tests: small generated data, a configuration, and the real
server started on 127.0.0.1 on a free port in a subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

import sdckit

#: A strong test-only seed (the service refuses a weak one).
SEED = "0123456789abcdef0123456789abcdef"
N = 400
TARGET_AGE = 130  # the one record with age >= 121: a known unique


def make_data(folder: Path, n: int = N) -> pd.DataFrame:
    """``census.csv``: person_id, age (0-99, one record 130), income (0-250000, so that clamping
    to [0, 200000] matters), region (N/S/E/W), grp (0-199); ``other.csv``: a second table."""
    rng = np.random.default_rng(20261125)
    frame = pd.DataFrame({
        "person_id": np.arange(n),
        "age": rng.integers(0, 100, n),
        "income": rng.integers(0, 250_001, n),
        "region": rng.choice(list("NSEW"), n),
        "grp": rng.integers(0, 200, n),
    })
    frame.loc[0, ["age", "region"]] = [TARGET_AGE, "N"]
    frame.to_csv(folder / "census.csv", index=False)
    pd.DataFrame({"x": rng.integers(0, 10, 50)}).to_csv(folder / "other.csv", index=False)
    return frame


def write_config(folder: Path, *, seed: bool = False, cache: bool = True, k: int = 5,
                 collusion: bool = False) -> Path:
    service = ['state = "state.db"', f"cache = {str(cache).lower()}"]
    if seed:
        service.append(f'seed = "{SEED}"')
    text = "\n".join([
        "[service]", *service,
        "[restricted]", f"min_query_set = {k}", f"collusion = {str(collusion).lower()}",
        "[[table]]", 'name = "census"', 'path = "census.csv"', 'privacy_unit = "person_id"',
        'dimensions = ["age", "region", "grp"]',  # restricted mode: public; income is confidential
        "[table.bounds]", "income = [0, 200000]", "age = [0, 120]",
        "[table.domains]", 'region = ["N", "S", "E", "W"]', f"grp = {list(range(200))}",
        "[[table]]", 'name = "other"', 'path = "other.csv"',
        "[table.bounds]", "x = [0, 10]",
    ])
    path = folder / "service.toml"
    path.write_text(text + "\n", encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    e = dict(os.environ)
    root = str(Path(sdckit.__file__).resolve().parents[1])
    e["PYTHONPATH"] = root + os.pathsep + e.get("PYTHONPATH", "")
    return e


class Server:
    """The real service in a subprocess (``python -m sdckit.query.server``) on a free port."""

    def __init__(self, config: Path, command: list[str] | None = None, start_timeout: float = 90) -> None:
        self.config = config
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = command or [sys.executable, "-m", "sdckit.query.server", str(config)]
        self.proc = subprocess.Popen([*args, "--port", str(self.port)], env=env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + start_timeout  # a loaded 2-core machine can take long to import
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited: " + self.proc.stderr.read().decode()[-2000:])
            try:
                if httpx.get(self.url + "/v1/budget", timeout=1).status_code == 401:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start in {start_timeout:g} s")
            time.sleep(0.1)

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()
        self.proc.stderr.close()


def add_analyst(config: Path, name: str, mode: str, epsilon: str | None = None, tables: str | None = None) -> str:
    """``sdckit analyst add`` through the library call the CLI makes; returns the key."""
    from sdckit.query.config import load_config
    from sdckit.query.state import State

    state = State(load_config(config).state)
    return state.add_analyst(name, mode, epsilon, 0, tables.split(",") if tables else None)


def post(url: str, key: str | None, sql: str, epsilon: float | None = None, client: httpx.Client | None = None) -> httpx.Response:
    body: dict = {"sql": sql}
    if epsilon is not None:
        body["epsilon"] = epsilon
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return (client or httpx).post(url + "/v1/query", json=body, headers=headers, timeout=30)


# ------------------------------------------------------------------ brute-force audit oracle
def exact_rank(rows: list[list[int]]) -> int:
    """Rank over Q of an integer matrix (fraction-free Gaussian elimination in Python integers)."""
    a = [list(map(int, r)) for r in rows]
    rank, cols = 0, len(a[0]) if a else 0
    for c in range(cols):
        hit = next((i for i in range(rank, len(a)) if a[i][c]), None)
        if hit is None:
            continue
        a[rank], a[hit] = a[hit], a[rank]
        pr = a[rank]
        for i in range(rank + 1, len(a)):
            if a[i][c]:
                f, g = a[i][c], pr[c]
                a[i] = [g * x - f * y for x, y in zip(a[i], pr)]
        rank += 1
    return rank


def small_totals_learnt(k: int, before: list, after: list) -> bool:
    """Brute force over Q: does the row space of ``after`` (0/1 vectors over the records) hold a
    non-zero vector supported on fewer than ``k`` records that the row space of ``before`` does not?

    A vector of the row space supported inside a set T of records is one of R and of R^T, so
    dim(R & R^T) = rank(R) - rank(R without the columns T); ``after`` knows something new on T iff
    that dimension grew. Row-space vectors are constant on the atoms (records grouped by membership
    in every set), so T ranges over the unions of atoms of fewer than k records in all."""
    import itertools

    rows_after = [[int(x) for x in m] for m in after]
    rows_before = [[int(x) for x in m] for m in before]
    n = len(rows_after[0])
    signature: dict[tuple, list[int]] = {}
    for i in range(n):
        signature.setdefault(tuple(r[i] for r in rows_after), []).append(i)
    small = [a for a in signature.values() if len(a) < k]

    def dim_inside(rows: list[list[int]], t: set[int]) -> int:
        if not rows:
            return 0
        keep = [i for i in range(n) if i not in t]
        return exact_rank(rows) - exact_rank([[r[i] for i in keep] for r in rows]) if keep else exact_rank(rows)

    for size in range(1, k):
        for combo in itertools.combinations(small, size):
            t = set().union(*map(set, combo))
            if len(t) < k and dim_inside(rows_after, t) > dim_inside(rows_before, t):
                return True
    return False


def fast_paths_only(service) -> None:
    """Make every DuckDB scan of ``service`` fail (``AssertionError`` naming the SQL): what it
    answers then comes from the structures built at start-up (cube, moments, ranges, bins)."""
    def no_scan(generated):
        raise AssertionError(f"a scan: {generated.sql}")
    service.db.aggregate = no_scan


def scans_only(service) -> None:
    """Drop every structure built at start-up, so that ``service`` answers by scanning."""
    db = service.db
    for paths in (db.cubes, db.moments, db.ranges, db.magnitudes, db.ranked, db.private_joins, db.derived, db.row_stores):
        paths.clear()


#: The privacy loss each definition's analyst asks in :func:`seeded_answers`.
LOSSES = {"pure": {"epsilon": "1/2"}, "approx": {"epsilon": "1/2", "delta": "1e-6"}, "zcdp": {"rho": "1/8"}}


def seeded_answers(config: Path, requests: list[tuple[str, dict]], fast: bool) -> list:
    """The answers of a fresh service over ``config`` (its ``[service] seed`` set) to
    ``requests``, pairs ``(definition, body)`` each sent by an analyst of that definition ("pure",
    "approx" or "zcdp", budget 1000) with the loss of :data:`LOSSES` unless the body states one: with every
    scan forbidden (``fast``, :func:`fast_paths_only`) or every fast path off (:func:`scans_only`).
    Two such lists are equal when the fast paths give the scans' true answers (so the same seeded
    noise) and the same accounting."""
    import warnings

    from sdckit.query.service import Service

    service = Service(config)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # huge test budgets
            keys = {"pure": service.state.add_analyst("p", "dp", "1000"),
                    "approx": service.state.add_analyst("a", "dp", "1000", "1/2"),
                    "zcdp": service.state.add_analyst("z", "dp", None, 0, None, "1000")}
        (fast_paths_only if fast else scans_only)(service)
        return [service.query(keys[who], {**LOSSES[who], **body}) for who, body in requests]
    finally:
        service.close()
