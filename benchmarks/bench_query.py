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

Each supported query form on its own (issue 32): ``--per-aggregate`` times every form of
:data:`AGGREGATES` separately over HTTP and prints p50/p95, the server's CPU per query and its peak
RSS. The forms: COUNT, SUM, AVG, VAR_POP, STDDEV_POP, MEDIAN, QUANTILE_CONT, MIN, MAX, BOUNDS(col),
COUNT(DISTINCT) of a cube column and of a many-valued one, GROUP BY a domain, histograms (GROUP BY
``FLOOR(age / 10) * 10`` and ``WIDTH_BUCKET(income, ...)``), derived sums (``SUM(income / 1000)``,
``SUM(CASE ...)``), a JOIN with the public lookup table ``regions`` (region code -> name), a JOIN of
two private tables on the privacy unit (``census`` and ``visits``: 1 to 4 rows per person, of a
tenth of the persons), ``max_rows_per_unit`` and per-group bounds (``max_groups_per_unit``,
``max_rows_per_group``) on ``visits``, all from a pure epsilon analyst; COUNT, SUM, AVG, VAR_POP,
STDDEV_POP, GROUP BY a domain and per-group bounds again from a rho-zCDP analyst ("[zCDP]") and
from an (epsilon, delta) one ("[eps,delta]"; Gaussian noise, or the pure share's where that is
less noise), who alone may ask GROUP BY keys from the data (thresholded). Each query carries its
analyst's loss (:data:`LOSS`) and its form's body fields. One query of each form is sent first,
alone, and its time printed apart ("first query alone": the first use of an analyst's key runs
scrypt, of a mechanism its imports, and of a derived expression or a private join the one scan that
builds its structure; a form the service refuses is printed and skipped;
``tests/test_bench_query_forms.py`` checks that none is). The clients time with ``http.client``
(``--client httpx``: httpx, about 3 ms of CPU a request on the server's two cores).
The census table is written by DuckDB (bounded memory; ``--data DIR`` keeps and reuses it, and is
only read when it holds it); ``visits`` and ``regions`` are written beside the configuration in the
run's temporary folder. ``--memory-limit 3GB`` serves the tables from a DuckDB file with that
memory limit (``[service] memory_limit``), as 1e8 rows need; ``--only LABEL ...`` times some forms.

    python benchmarks/bench_query.py --per-aggregate --rows 1e6 --queries 160
    python benchmarks/bench_query.py --per-aggregate --rows 1e8 --queries 80 --memory-limit 3GB --data /tmp/sdckit-1e8
    python benchmarks/bench_query.py --per-aggregate --rows 1e6 --only MIN "COUNT [zCDP]" "JOIN private visits"

Accuracy against Tumult Analytics (issue 32): ``--vs tumult`` answers each query type of
:data:`ACCURACY` — COUNT(*), SUM, AVG, VAR_POP, STDDEV_POP of income (clamped to [0, 200000];
Tumult: ``count``, ``sum``, ``average``, ``variance``, ``stdev``), MEDIAN(income) (``median``),
COUNT(DISTINCT age) (``count_distinct``), a GROUP BY of the 4 public regions (``groupby(KeySet)``)
and a GROUP BY age with keys from the data (sdckit ``keys_from_data``, thresholded; Tumult
``get_groups(["age"])`` with (1/2, 1e-6), then ``groupby`` of the released KeySet with (1/2, 0)) — on the first
``--rows`` table (default 1e6 rows, one row per person, add/remove-one-person neighbours:
Tumult's ``AddOneRow``) ``--reps`` times (200) under each definition both answer it in: pure
epsilon-DP (epsilon 1 per query; Tumult ``PureDPBudget(1)``), rho-zCDP (rho 1/2 per query;
``RhoZCDPBudget(0.5)``) and (epsilon, delta)-DP (epsilon 1, delta 1e-6 per query;
``ApproxDPBudget(1, 1e-6)``). sdckit answers quantiles under pure epsilon only and keys from the
data under (epsilon, delta) only. It prints the median absolute errors (over repetitions, and the
released keys of a GROUP BY) and the median latency per query of each. sdckit's figures are
computed in process (the service's plan, data path and noise; no HTTP). Tumult is not a
dependency: it needs pyspark and Java and pins numpy < 2 and pandas < 2, so it lives in its own
environment (``python3 -m venv /work/tumult-venv && /work/tumult-venv/bin/pip install
tmlt.analytics``) and ``--tumult-python`` runs this script's Tumult part there, as a subprocess on
the same Parquet table, reading its JSON; without it, Tumult's part runs in process if
``tmlt.analytics`` imports, and sdckit alone is printed otherwise. Each line ends with the ratio
of the median errors (sdckit / Tumult) and its 95% bootstrap interval (repetitions resampled;
"sdckit worse" when the interval lies above 1), then the mean absolute errors and the interval
of their ratio (COUNTs have integer errors: medians of 0, 0.5 or 1 say little).

Tumult's part (:func:`tumult_errors`): one ``Session`` per definition, every repetition a
``Session.evaluate``; Spark local on 2 cores, adaptive execution off, the table cached. Spark's
fixed cost is 1-3 s per ``evaluate`` (about ten jobs, one writing the noisy answer to a table);
MEDIAN takes 20-40 s (``toPandas`` of the 1e6 values to the driver, Arrow on, then Tumult's
exponential mechanism with arbitrary-precision Gumbel noise on each of ~2e5 intervals). AVG, VAR
and STDDEV pass every row through a Python row map (tmlt.core's ``Map``, ``rdd.map``) read two
or three times per evaluate, unpersisted: 150-420 s each; :func:`memoize_tumult_maps` persists
that deterministic map's output once (the noise is still drawn per evaluate), which makes them
2-3 s. The query types run in rounds of ``--tumult-batch`` repetitions and the JSON
(``--tumult-part TABLE --out FILE``; per-repetition errors included) is written after each
round, so a stopped run keeps its repetitions and a rerun with the same ``--out`` continues;
``--tumult-only`` splits the types between processes and ``--tumult-results`` merges several
files (pooling the repetitions of a type run by several processes). ``--tumult-seconds`` stops each type after that long (the repetitions run are printed).

    python benchmarks/bench_query.py --vs tumult [--rows 1000000] [--reps 200]
        [--tumult-python /work/tumult-venv/bin/python] [--tumult-seconds 150]
    /work/tumult-venv/bin/python benchmarks/bench_query.py --tumult-part TABLE --reps 200 --out FILE
        [--tumult-only "AVG,VAR,STDDEV"]    # then: --vs tumult --tumult-results FILE [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import warnings
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))


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


def write_config(folder: Path, table: Path, sync: str = "full", keys_from_data: bool = False) -> Path:
    """The service's configuration; ``keys_from_data``: GROUP BY age takes its keys from the data."""
    config = folder / "service.toml"
    keys = 'keys_from_data = ["age"]\n' if keys_from_data else ""
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
{keys}[table.bounds]
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

    from _harness import concurrent_clients
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


#: Query types compared with Tumult Analytics (issue 32): sdckit's SQL and the definitions under
#: which both answer it (sdckit answers quantiles under pure epsilon-DP only; keys from the data,
#: thresholded, under (epsilon, delta)-DP only, as Tumult).
ACCURACY = {"COUNT": ("SELECT COUNT(*) FROM census", ("pure", "zcdp", "approx")),
            "SUM": ("SELECT SUM(income) FROM census", ("pure", "zcdp", "approx")),
            "AVG": ("SELECT AVG(income) FROM census", ("pure", "zcdp", "approx")),
            "VAR": ("SELECT VAR_POP(income) FROM census", ("pure", "zcdp", "approx")),
            "STDDEV": ("SELECT STDDEV_POP(income) FROM census", ("pure", "zcdp", "approx")),
            "COUNT DISTINCT": ("SELECT COUNT(DISTINCT age) FROM census", ("pure", "zcdp", "approx")),
            "GROUP BY public": ("SELECT region, COUNT(*) FROM census GROUP BY region", ("pure", "zcdp", "approx")),
            "GROUP BY data": ("SELECT age, COUNT(*) FROM census GROUP BY age", ("approx",)),
            "MEDIAN": ("SELECT MEDIAN(income) FROM census", ("pure",))}  # last: Tumult's is the slowest
#: The loss of one query in each definition (add/remove one person, one row per person).
DEFINITIONS = {"pure": "pure epsilon-DP, epsilon 1", "zcdp": "rho-zCDP, rho 1/2",
               "approx": "(epsilon, delta)-DP, epsilon 1, delta 1e-6"}
DELTA = 1e-6
BOUNDS = (0, 200_000)


def truths(frame: pd.DataFrame) -> dict[str, Any]:
    """The true answers of :data:`ACCURACY` (incomes clamped to :data:`BOUNDS`, population
    variance; a GROUP BY's as a dict key -> count). numpy and pandas only: the Tumult part runs
    this in its own environment."""
    clamped = frame["income"].clip(*BOUNDS).to_numpy(dtype=float)
    return {"COUNT": float(len(clamped)), "SUM": float(clamped.sum()), "AVG": float(clamped.mean()),
            "VAR": float(clamped.var()), "STDDEV": float(clamped.std()), "MEDIAN": float(np.median(clamped)),
            "COUNT DISTINCT": float(frame["age"].nunique()),
            "GROUP BY public": {str(k): float(v) for k, v in frame["region"].value_counts().items()},
            "GROUP BY data": {str(k): float(v) for k, v in frame["age"].value_counts().items()}}


def errors_of(answer: Any, truth: Any) -> tuple[list[float], float]:
    """Absolute errors of one answer (a number, or a dict key -> value over the released keys)
    and the share of the true keys it released (1 for a number)."""
    if not isinstance(truth, dict):
        return [abs(float(answer) - truth)], 1.0
    errors = [abs(float(v) - truth[k]) for k, v in answer.items() if k in truth]
    return errors, len(errors) / len(truth)


def summary(errors: list[list[float]], released: list[float], seconds: list[float]) -> dict[str, Any]:
    """Median absolute error (over every repetition and released key), mean share of keys
    released, median and first latency (ms), repetitions, and the raw figures per repetition
    (``errors``: one list per repetition, ``released``, ``seconds``) for :func:`ratio_interval`
    and to resume a run."""
    flat = [e for rep in errors for e in rep]
    return {"median_error": float(np.median(flat)) if flat else float("nan"),
            "released": float(np.mean(released)) if released else float("nan"),
            "latency_ms": 1000 * float(np.median(seconds)) if seconds else float("nan"),
            "first_ms": 1000 * seconds[0] if seconds else float("nan"), "reps": len(seconds),
            "errors": errors, "released_each": released, "seconds": seconds}


def ratio_interval(ours: dict[str, Any], theirs: dict[str, Any], level: float = 0.95, draws: int = 2000,
                   stat: Any = np.median) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the ratio of median (``stat``: e.g. ``np.mean``)
    absolute errors (sdckit / Tumult): repetitions resampled with replacement, independently
    for each (a GROUP BY's released keys stay together with their repetition); ``None`` without
    per-repetition errors (an older saved run) or when a resampled statistic of Tumult's is 0
    in more than 1% of the draws (integer errors, mostly 0: the means then compare)."""
    a, b = ours.get("errors"), theirs.get("errors")
    if not a or not b:
        return None
    rng = np.random.default_rng(0)

    def medians(reps: list[list[float]]) -> np.ndarray:
        lengths = {len(r) for r in reps}
        if len(lengths) == 1:  # the usual case: as many errors in each repetition (chunks: bounded memory)
            values = np.array(reps, dtype=float)
            chunk = max(1, 2_000_000 // values.size)
            return np.concatenate([stat(values[rng.integers(0, len(reps), (min(chunk, draws - i), len(reps)))]
                                             .reshape(min(chunk, draws - i), -1), axis=1)
                                   for i in range(0, draws, chunk)])
        return np.array([stat(np.concatenate([reps[i] for i in rng.integers(0, len(reps), len(reps))]))
                         for _ in range(draws)])

    num, den = medians(a), medians(b)
    if (den == 0).mean() > 0.01:
        return None
    ratios = num[den > 0] / den[den > 0]
    return float(np.quantile(ratios, (1 - level) / 2)), float(np.quantile(ratios, (1 + level) / 2))


def sdckit_errors(table: Path, reps: int) -> dict[str, dict[str, dict[str, Any]]]:
    """sdckit's :func:`summary` per definition and query type, in process: the service's plan,
    its data path (fast cells, or DuckDB's scan; histograms for quantiles) and its noise, no HTTP
    nor state database (the latency is that path's)."""
    from fractions import Fraction

    from sdckit.query import keys, noisy, noisy_gaussian
    from sdckit.query.config import load_config
    from sdckit.query.data import Database
    from sdckit.query.generate import aggregate_sql, histogram_sql, quantile_columns
    from sdckit.query.sql import parse

    config = write_config(table.parent, table, keys_from_data=True)
    db = Database(load_config(config))
    t = db.config.tables["census"]
    rng = np.random.default_rng()
    truth = truths(pd.read_parquet(table))
    loss = {"zcdp": {"rho": Fraction(1, 2)}, "approx": {"epsilon": Fraction(1), "delta": Fraction(DELTA)}}

    def answer(q: Any, d: str) -> dict[str, Any]:
        if t.keys_from_data(q.group_by):
            p = keys.plan(q, t, **loss["approx"])
            return keys.answer(p, t, db.aggregate(aggregate_sql(q, t, "dp", persons=True, rows=p.selection.k)), rng)
        p = noisy.plan(q, t, Fraction(1)) if d == "pure" else noisy_gaussian.plan(q, t, d, **loss[d])
        cells = db.fast_cells(q, len(p.cells), p.k)
        if cells is None:
            cells = noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp", rows=p.k)))
        if d != "pure":
            return noisy_gaussian.answer_cells(p, *cells, rng)
        hists = {c: db.aggregate(histogram_sql(q, t, c, p.k)) for c in quantile_columns(q)}
        return noisy.answer_cells(p, t, *cells, rng, hists)

    out: dict[str, dict[str, dict[str, Any]]] = {d: {} for d in DEFINITIONS}
    try:
        for what, (sql, definitions) in ACCURACY.items():
            q = parse(sql, db.config)
            for d in definitions:
                errors, released, seconds = [], [], []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    rows = answer(q, d)["rows"]
                    seconds.append(time.perf_counter() - t0)
                    value = {str(r[0]): r[1] for r in rows} if q.group_by else rows[0][0]
                    e, share = errors_of(value, truth[what])
                    errors.append(e)
                    released.append(share)
                out[d][what] = summary(errors, released, seconds)
    finally:
        db.close()
    return out


def memoize_tumult_maps() -> None:
    """Compute each of Tumult's row maps once and reuse it (Tumult's part only; see :func:`tumult_errors`).

    Tumult's AVG, VAR and STDDEV (tmlt.core's ``create_average_measurement`` and
    ``create_variance_measurement``, which ``create_standard_deviation_measurement`` builds on)
    first add the deviation of each row's value from the bounds' midpoint (and for VAR/STDDEV
    the square's deviation from the squares' midpoint) with a ``Map``: ``sdf.rdd.map`` of a
    Python function called on every row, with a check of the row against its domain, the rows
    pickled between the JVM and Python workers and the result rebuilt by ``createDataFrame``.
    It is not persisted, and the sum of deviations, the count (and the sum of squared
    deviations) each read it, so the 1e6 rows go through Python two or three times per
    ``evaluate``: 150-420 s under this machine's load, against about 3 s for SUM. That map is
    deterministic (a row's value minus constants fixed by the bounds: nothing random and
    nothing depending on the budget), so here its output DataFrame is persisted the first time
    and reused by later evaluates on the same input DataFrame with the same function (its
    code, its constants and its output domain): the rows each evaluate aggregates are the same
    as Tumult's own, and every evaluate still computes the sums and count from them and draws
    its noise as Tumult does. The first evaluate of each such query pays for the map once
    (its time is the ``first_ms`` of the results)."""
    from tmlt.core.transformations.spark_transformations.map import Map

    original = Map.__call__
    maps: dict[Any, Any] = {}

    def call(self: Any, sdf: Any) -> Any:
        f = self.row_transformer.trusted_f
        try:
            key = (sdf.semanticHash(), f.__code__, tuple(c.cell_contents for c in f.__closure__ or ()),
                   repr(self.output_domain))
            hash(key)
        except (TypeError, ValueError):  # a constant that cannot be a key: Tumult's map as it is
            return original(self, sdf)
        if key not in maps:
            maps[key] = original(self, sdf).persist()
        return maps[key]

    Map.__call__ = call


def tumult_errors(table: Path, reps: int, out: Path | None = None, seconds: float | None = None,
                  only: set[str] | None = None, batch: int = 10) -> dict[str, dict[str, dict[str, Any]]] | None:
    """Tumult Analytics' :func:`summary` per definition and query type, or ``None`` when it is
    not importable.

    Budgets: ``PureDPBudget(1)``, ``RhoZCDPBudget(0.5)``, ``ApproxDPBudget(1, 1e-6)`` per query
    (Tumult's defaults: Laplace/geometric noise under pure and approximate DP, Gaussian under
    zCDP; GROUP BY keys from the data by ``get_groups(["age"])`` with half the epsilon and all
    the delta, then the counts of the released keys with the other half and delta 0: the same
    (1, 1e-6) in all), ``AddOneRow`` (one row per person). One ``Session`` per definition with
    an infinite budget, every repetition a ``Session.evaluate`` of the query with the budget
    above, on the Parquet table read once and cached by Spark (income BIGINT as in the file:
    Tumult then uses integer midpoints and geometric / discrete Gaussian noise, its choice
    for integer columns). Spark runs locally on 2 cores with adaptive query execution off (it
    only re-plans shuffles, adding a job per query: about 1 s per evaluate instead of 2 here)
    and Arrow on for ``toPandas`` (Tumult's scalar MEDIAN collects the 1e6 incomes to the
    driver with ``toPandas`` and runs its exponential mechanism there, ``NoisyQuantile``:
    about 8 s without Arrow, 0.5 s with; the mechanism itself, Gumbel noise in arbitrary
    precision on each of the ~2e5 intervals between distinct values, takes 20-40 s), and :func:`memoize_tumult_maps` computes Tumult's per-row map for AVG, VAR and STDDEV once.

    The query types and definitions are run in rounds of ``batch`` repetitions each, so that
    all have some when the run is stopped; with ``out``, the results so far (with the
    repetitions done) are written there as JSON after each batch, and a run given the same
    ``out`` continues from them. With ``seconds``, each query type and definition stops
    repeating once that long has passed in it (fewer than ``reps``: the number is in the
    results)."""
    try:
        from pyspark.sql import SparkSession
        from tmlt.analytics import (AddOneRow, ApproxDPBudget, KeySet, PureDPBudget, QueryBuilder, RhoZCDPBudget,
                                    Session)
    except ImportError:
        return None
    warnings.filterwarnings("ignore")  # pyspark's pandas-UDF deprecation notes, once per evaluate
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # Spark's workers: this environment
    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")  # MEDIAN's toPandas of 1e6 values: 8 s -> 0.5 s
             .config("spark.driver.memory", "2g").config("spark.ui.enabled", "false")
             .config("spark.sql.warehouse.dir", str(table.parent / "spark-warehouse"))  # Tumult's temp tables: not the cwd
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    memoize_tumult_maps()
    sdf = spark.read.parquet(str(table)).cache()
    sdf.count()
    truth = truths(pd.read_parquet(table))
    lo, hi = BOUNDS
    queries = {"COUNT": lambda: QueryBuilder("census").count(),
               "SUM": lambda: QueryBuilder("census").sum("income", low=lo, high=hi),
               "AVG": lambda: QueryBuilder("census").average("income", low=lo, high=hi),
               "VAR": lambda: QueryBuilder("census").variance("income", low=lo, high=hi),
               "STDDEV": lambda: QueryBuilder("census").stdev("income", low=lo, high=hi),
               "MEDIAN": lambda: QueryBuilder("census").median("income", low=lo, high=hi),
               "COUNT DISTINCT": lambda: QueryBuilder("census").count_distinct(["age"]),
               "GROUP BY public": lambda: QueryBuilder("census").groupby(KeySet.from_dict({"region": REGIONS})).count(),
               "GROUP BY data": None}  # two evaluates: get_groups, then groupby(KeySet) of what it released
    budgets = {"pure": (PureDPBudget(float("inf")), PureDPBudget(1)),
               "zcdp": (RhoZCDPBudget(float("inf")), RhoZCDPBudget(0.5)),
               "approx": (ApproxDPBudget(float("inf"), 1), ApproxDPBudget(1, DELTA))}
    sessions = {d: Session.from_dataframe(privacy_budget=total, source_id="census", dataframe=sdf,
                                          protected_change=AddOneRow()) for d, (total, _) in budgets.items()}

    def once(what: str, d: str) -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        if what == "GROUP BY data":  # (1/2, 1e-6) to get_groups, (1/2, 0) to the counts (Laplace)
            keys = sessions[d].evaluate(QueryBuilder("census").get_groups(["age"]), ApproxDPBudget(0.5, DELTA))
            frame = sessions[d].evaluate(QueryBuilder("census").groupby(KeySet.from_dataframe(keys)).count(),
                                         ApproxDPBudget(0.5, 0)).toPandas()
        else:
            frame = sessions[d].evaluate(queries[what](), budgets[d][1]).toPandas()
        took = time.perf_counter() - t0
        value = ({str(k): v for k, v in zip(frame.iloc[:, 0], frame.iloc[:, 1])} if what.startswith("GROUP BY")
                 else frame.iloc[0, 0])
        e, share = errors_of(value, truth[what])
        return e, share, took

    pairs = [(what, d) for what, (_, definitions) in ACCURACY.items() if not only or what in only for d in definitions]
    saved = json.loads(out.read_text()) if out is not None and out.exists() else {}
    runs = {(what, d): {k: list(saved.get(d, {}).get(what, {}).get(k, [])) for k in ("errors", "released_each", "seconds")}
            for what, d in pairs}
    results: dict[str, dict[str, dict[str, Any]]] = {d: dict(saved.get(d, {})) for d in DEFINITIONS}
    spent = {pair: 0.0 for pair in pairs}
    while True:
        todo = [pair for pair in pairs if len(runs[pair]["seconds"]) < reps
                and (seconds is None or not runs[pair]["seconds"] or spent[pair] <= seconds)]
        if not todo:
            break
        for what, d in todo:
            run = runs[(what, d)]
            for _ in range(min(batch, reps - len(run["seconds"]))):
                if seconds is not None and run["seconds"] and spent[(what, d)] > seconds:
                    break
                e, share, took = once(what, d)
                spent[(what, d)] += took
                run["errors"].append(e)
                run["released_each"].append(share)
                run["seconds"].append(took)
            results[d][what] = summary(run["errors"], run["released_each"], run["seconds"])
            brief = {k: v for k, v in results[d][what].items() if k not in ("errors", "released_each", "seconds")}
            print(f"Tumult {d} {what}: {brief}", file=sys.stderr, flush=True)
            if out is not None:
                out.write_text(json.dumps(results))
    return results


def tumult_subprocess(python: str, table: Path, reps: int, out: Path,
                      seconds: float | None = None) -> dict[str, dict[str, dict[str, float]]] | None:
    """:func:`tumult_errors` run by another interpreter (``python``, an environment where
    ``tmlt.analytics`` imports: it pins numpy < 2 and pandas < 2) on the same Parquet table,
    through this script's ``--tumult-part``; its JSON, or ``None`` when it could not import Tumult."""
    done = subprocess.run([python, str(Path(__file__).resolve()), "--tumult-part", str(table), "--reps", str(reps),
                           "--out", str(out)] + (["--tumult-seconds", str(seconds)] if seconds else []), check=False)
    if done.returncode == 3:
        return None
    if done.returncode != 0:
        raise SystemExit(f"the Tumult part failed (exit {done.returncode}) under {python}")
    return json.loads(out.read_text())


def merge_runs(paths: list[Path]) -> dict[str, dict[str, dict[str, Any]]]:
    """Tumult's results saved in several files by ``--tumult-part --out`` (query types, or
    repetitions of one type, run by processes in parallel): a type and definition in several
    files has their repetitions pooled (:func:`summary` of them all, the first file's first)."""
    merged: dict[str, dict[str, dict[str, Any]]] = {d: {} for d in DEFINITIONS}
    for path in paths:
        for d, types in json.loads(path.read_text()).items():
            for what, s in types.items():
                old = merged.setdefault(d, {}).get(what)
                if old is not None and "errors" in old and "errors" in s:
                    s = summary(old["errors"] + s["errors"], old["released_each"] + s["released_each"],
                                old["seconds"] + s["seconds"])
                merged[d][what] = s
    return merged


def vs_tumult(rows: int, reps: int, tumult_python: str | None, tumult_reps: int | None,
              tumult_results: list[Path] | None, tumult_seconds: float | None = None) -> None:
    print(f"accuracy: {rows:,} rows (one per person, add/remove-one-person neighbours), income clamped to "
          f"[0, 200000], median absolute error over the repetitions (and the released keys of a GROUP BY); "
          f"latency: median per query in process (sdckit: plan, data, noise; Tumult: Session.evaluate + toPandas; "
          f"for AVG, VAR, STDDEV its row map computed once, the first evaluate's time in 'first'); ratio: "
          f"sdckit's median error / Tumult's, with a 95% bootstrap interval (repetitions resampled)")
    with tempfile.TemporaryDirectory() as tmp:
        table = make_table(Path(tmp), rows)
        ours = sdckit_errors(table, reps)
        if tumult_results:
            theirs: dict[str, dict[str, dict[str, Any]]] | None = merge_runs(tumult_results)
        elif tumult_python is not None:
            theirs = tumult_subprocess(tumult_python, table, tumult_reps or reps, Path(tmp) / "tumult.json",
                                       tumult_seconds)
        else:
            theirs = tumult_errors(table, tumult_reps or reps, seconds=tumult_seconds)
    if theirs is None:
        print("tmlt.analytics is not importable here (it needs pyspark and Java and pins numpy < 2, pandas < 2; "
              "not a dependency of sdckit; see --tumult-python): sdckit alone")
    for d, label in DEFINITIONS.items():
        for what in ACCURACY:
            if what not in ours[d]:
                continue
            a = ours[d][what]
            line = (f"{label:>42}  {what:>15}: sdckit {a['median_error']:14.4f} ({a['reps']} reps, "
                    f"{a['latency_ms']:7.1f} ms")
            line += f", keys released {a['released']:.3f})" if what == "GROUP BY data" else ")"
            b = (theirs or {}).get(d, {}).get(what)
            if b is not None:
                first = f", first {b['first_ms']:.0f} ms" if what in ("AVG", "VAR", "STDDEV") and "first_ms" in b else ""
                line += (f"   Tumult {b['median_error']:14.4f} ({b['reps']} reps, {b['latency_ms']:7.1f} ms{first}"
                         + (f", keys released {b['released']:.3f})" if what == "GROUP BY data" else ")"))
                if b["median_error"]:
                    line += f"   ratio {a['median_error'] / b['median_error']:.2f}"
                    interval = ratio_interval(a, b)
                    if interval is not None:
                        line += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
                        line += " sdckit worse" if interval[0] > 1 else ""
                means = ratio_interval(a, b, stat=np.mean)  # integer errors: medians of 0 or 1 say little
                if means is not None:
                    line += (f"   mean abs error {np.mean([e for r in a['errors'] for e in r]):.4g} vs "
                             f"{np.mean([e for r in b['errors'] for e in r]):.4g}, ratio [{means[0]:.2f}, {means[1]:.2f}]")
                    line += " sdckit worse" if means[0] > 1 else ""
            print(line, flush=True)


#: What each query of ``--per-aggregate`` spends, per analyst (one per budget definition): pure
#: epsilon, rho-zCDP (rho = epsilon^2 / 2 of the pure query; Gaussian noise) and (epsilon, delta)-DP
#: (Gaussian noise, or the pure epsilon share's where that is less noise, as at this delta; the only
#: definition that may ask GROUP BY keys from the data).
LOSS: dict[str, dict[str, float]] = {"pure": {"epsilon": 0.001}, "zcdp": {"rho": 5e-7},
                                     "approx": {"epsilon": 0.001, "delta": 1e-9}}

#: One query form per supported aggregate (``--per-aggregate``): label -> (analyst of :data:`LOSS`,
#: sql template, extra body fields). ``{a}``/``{b}`` are ages, ``{r}`` a region, ``{c}`` a clinic,
#: drawn per query.
#: ``census`` (:func:`make_table_duckdb`) has one row per person and GROUP BY age takes its keys
#: from the data; ``visits`` (:func:`make_visits_duckdb`) is a private table of the same persons,
#: up to 4 rows each; ``regions`` a public lookup of the region codes (:func:`per_aggregate_service`).
AGGREGATES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "COUNT": ("pure", "SELECT COUNT(*) FROM census WHERE age > {a} AND region = '{r}'", {}),
    "SUM": ("pure", "SELECT SUM(income) FROM census WHERE age BETWEEN {a} AND {b}", {}),
    "AVG": ("pure", "SELECT AVG(income) FROM census WHERE region IN ('{r}', 'N') OR age < {a}", {}),
    "VAR_POP": ("pure", "SELECT VAR_POP(income) FROM census WHERE age > {a}", {}),
    "STDDEV_POP": ("pure", "SELECT STDDEV_POP(income) FROM census WHERE age <= {b} AND region <> '{r}'", {}),
    "MEDIAN": ("pure", "SELECT MEDIAN(income) FROM census WHERE age >= {a}", {}),
    "QUANTILE_CONT": ("pure", "SELECT QUANTILE_CONT(income, 0.9) FROM census WHERE region = '{r}' AND age < {b}", {}),
    "MIN": ("pure", "SELECT MIN(income) FROM census WHERE age >= {a}", {}),
    "MAX": ("pure", "SELECT MAX(income) FROM census WHERE region = '{r}' AND age < {b}", {}),
    "BOUNDS": ("pure", "SELECT BOUNDS(income) FROM census WHERE age > {a}", {}),
    "COUNT DISTINCT age": ("pure", "SELECT COUNT(DISTINCT age) FROM census WHERE region = '{r}'", {}),
    "COUNT DISTINCT income": ("pure", "SELECT COUNT(DISTINCT income) FROM census WHERE region = '{r}'", {}),
    "GROUP BY region": ("pure", "SELECT region, COUNT(*), SUM(income) FROM census WHERE age >= {a} GROUP BY region",
                        {}),
    "histogram FLOOR(age/10)": ("pure", "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*) FROM census "
                                "WHERE region = '{r}' GROUP BY band", {}),
    "histogram WIDTH_BUCKET": ("pure", "SELECT WIDTH_BUCKET(income, 0, 200000, 10) AS bin, COUNT(*) FROM census "
                               "WHERE age > {a} GROUP BY bin", {}),
    "derived SUM(income/1000)": ("pure", "SELECT SUM(income / 1000) FROM census WHERE age BETWEEN {a} AND {b}", {}),
    "derived SUM(CASE)": ("pure", "SELECT region, SUM(CASE WHEN age >= 65 THEN income ELSE 0 END) FROM census "
                          "WHERE age > {a} GROUP BY region", {}),
    "JOIN public regions": ("pure", "SELECT region_name, COUNT(*), SUM(income) FROM census JOIN regions "
                            "ON census.region = regions.code WHERE age > {a} GROUP BY region_name", {}),
    "JOIN private visits": ("pure", "SELECT COUNT(*), SUM(cost) FROM census JOIN visits "
                            "ON census.person_id = visits.person_id WHERE age > {a}", {}),
    "visits max_rows_per_unit": ("pure", "SELECT SUM(cost) FROM visits WHERE clinic <> '{c}'",
                                 {"max_rows_per_unit": 2}),
    "GROUP BY per-group bounds": ("pure", "SELECT clinic, COUNT(*), SUM(cost) FROM visits WHERE cost > {a} "
                                  "GROUP BY clinic", {"max_groups_per_unit": 2, "max_rows_per_group": 1}),
}
#: The forms also timed under the other definitions (Gaussian noise): "label [zCDP]", "label [eps,delta]".
GAUSSIAN_FORMS = ("COUNT", "SUM", "AVG", "VAR_POP", "STDDEV_POP", "GROUP BY region", "GROUP BY per-group bounds")
AGGREGATES.update({f"{label} [{tag}]": (who, *AGGREGATES[label][1:])
                   for who, tag in (("zcdp", "zCDP"), ("approx", "eps,delta")) for label in GAUSSIAN_FORMS})
AGGREGATES["GROUP BY keys from data"] = ("approx", "SELECT age, COUNT(*) FROM census WHERE region = '{r}' "
                                         "GROUP BY age", {})
#: The clinics of ``visits`` (a declared domain).
CLINICS = ["north", "south", "east", "west"]


def make_table_duckdb(folder: Path, n: int) -> Path:
    """The benchmark's census table of ``n`` rows written by DuckDB (streamed, bounded memory;
    1e8 rows take about 1 GB of Parquet): the same columns as :func:`make_table`, values from hashes
    of the row number (fixed, reproducible; region and income from other bits than age, so that the
    400 (age, region) pairs all occur, each value uniform and independent). An existing file is reused."""
    # v2: region independent of age (v1 took both from a hash's low bits)
    return _write_parquet_once(folder / f"census_{n}_v2.parquet", f"""
        SELECT i AS person_id, CAST(hash(i, 1) % 100 AS INTEGER) AS age,
               CAST((hash(i, 2) >> 16) % 250000 AS BIGINT) AS income,
               ['N', 'S', 'E', 'W'][CAST((hash(i, 3) >> 32) % 4 AS INTEGER) + 1] AS region
        FROM range({int(n)}) t(i)""")


def make_visits_duckdb(folder: Path, n: int) -> Path:
    """The private table ``visits`` of :data:`AGGREGATES` for a census of ``n`` rows, written by
    DuckDB: the persons ``0 .. n/10 - 1`` of the census (its ``person_id``), 1 to 4 rows each
    (2.5 on average, in person order), a clinic of :data:`CLINICS` and a cost in [0, 600)
    (declared bounds [0, 500]) from hashes of the row (fixed, reproducible). An existing file is
    reused."""
    clinics = ", ".join(f"'{c}'" for c in CLINICS)
    return _write_parquet_once(folder / f"visits_{n}.parquet", f"""
        SELECT i AS person_id, [{clinics}][CAST(hash(4 * i + j, 5) % 4 AS INTEGER) + 1] AS clinic,
               CAST(hash(4 * i + j, 6) % 600 AS BIGINT) AS cost
        FROM range({max(1, int(n) // 10)}) t(i), range(4) r(j) WHERE j <= hash(i, 4) % 4
        ORDER BY i, j""")


def _write_parquet_once(path: Path, select: str) -> Path:
    """``path``, written by DuckDB from the statement ``select`` (streamed, bounded memory) unless
    it exists: into ``<path>.partial``, renamed when complete, so that an interrupted run never
    leaves a file that a later one would reuse."""
    from sdckit.core.duckdb_session import connect

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    con = connect(memory_limit=2 << 30, temp_directory=path.parent / "tmp", threads=2)
    try:
        partial = path.with_suffix(".partial")
        con.execute(f"COPY ({select}) TO '{partial}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)")
        partial.rename(path)
    finally:
        con.close()
    return path


def per_aggregate_service(folder: Path, table: Path, memory_limit: str | None = None) -> tuple[Path, dict[str, str]]:
    """The service of ``--per-aggregate`` in ``folder``: its configuration (``census`` at
    ``table``, GROUP BY age with keys from the data; the private table ``visits`` of the same
    persons, at most 4 rows each and 4 per join key; the public table ``regions``, a lookup of
    the region codes; ``visits`` and ``regions`` written in ``folder``, so that the data folder
    is only read; state sync "normal", no cache) and one analyst per definition of :data:`LOSS`,
    each with a budget no benchmark exhausts: ``(configuration, {definition: key})``."""
    from sdckit.query.state import State

    n = int(table.stem.split("_")[1])  # census_<n>[_v2]
    visits = make_visits_duckdb(folder, n)
    lookup = folder / "regions.csv"
    pd.DataFrame({"code": REGIONS, "region_name": ["North", "South", "East", "West"]}).to_csv(lookup, index=False)
    config = write_config(folder, table, "normal", keys_from_data=True)
    text = config.read_text().replace(f'path = "{table.name}"', f'path = "{table.resolve()}"')
    if memory_limit:
        text = text.replace("[service]\n", f'[service]\nmemory_limit = "{memory_limit}"\n')
    config.write_text(text + f"""[[table]]
name = "visits"
path = "{visits.name}"
privacy_unit = "person_id"
max_rows_per_unit = 4
max_rows_per_join_key = 4
[table.bounds]
cost = [0, 500]
[table.domains]
clinic = {json.dumps(CLINICS)}
[public_tables.regions]
path = "{lookup.name}"
""")
    state = State(folder / "state.db")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*unusually large.*")  # a benchmark's budget, not a policy
        keys = {"pure": state.add_analyst("bench", "dp", "1000000"),
                "zcdp": state.add_analyst("bench_zcdp", "dp", rho="1000000"),
                "approx": state.add_analyst("bench_approx", "dp", "1000000", "1/2")}
    return config, keys


def aggregate_request(label: str, rng: np.random.Generator) -> tuple[str, str, dict[str, Any]]:
    """One query of the form ``label`` of :data:`AGGREGATES`, its parameters drawn from ``rng``:
    ``(label, path, body)``; the body holds the SQL, the privacy loss of the form's analyst
    (:data:`LOSS`) and the form's extra fields."""
    who, template, extra = AGGREGATES[label]
    a, b = sorted(int(v) for v in rng.integers(0, 100, 2))
    sql = template.format(a=a, b=b, r=REGIONS[rng.integers(4)], c=CLINICS[rng.integers(4)])
    return label, "/v1/query", {"sql": sql, **LOSS[who], **extra}


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
                  memory_limit: str | None = None, client: str = "stdlib") -> None:
    """Each supported query form of :data:`AGGREGATES` timed on its own: ``queries`` dp queries
    from ``clients`` clients over HTTP, each sent by the analyst of the form's definition; p50/p95
    per form, the server's CPU per query, its start time and peak RSS."""
    import httpx
    from _harness import concurrent_clients
    from query_helpers import Server

    unknown = sorted(set(only or ()) - set(AGGREGATES))
    if unknown:
        raise SystemExit(f"--only: unknown form {unknown[0]!r}; the forms are: {', '.join(AGGREGATES)}")
    folder.mkdir(parents=True, exist_ok=True)
    table = make_table_duckdb(data, n)
    t0 = time.perf_counter()
    config, keys = per_aggregate_service(folder, table, memory_limit)
    written = time.perf_counter() - t0
    t0 = time.perf_counter()
    server = Server(config, start_timeout=3600)
    start = time.perf_counter() - t0
    print(f"rows {n:>11,}: visits and regions written in {written:.1f} s, server start {start:6.1f} s, "
          f"RSS after start {peak_rss(server.proc.pid):7.0f} MiB; load average {os.getloadavg()[0]:.1f}", flush=True)
    forms = [label for label in AGGREGATES if not only or label in only]
    width = max(map(len, forms))
    try:
        first: dict[str, float] = {}  # the first query of each form alone (a structure built on first use)
        with httpx.Client(base_url=server.url, timeout=3600) as http:  # warm-up, apart: see the docstring
            for label in list(forms):
                _, path, body = aggregate_request(label, np.random.default_rng(0))
                t0 = time.perf_counter()
                reply = http.post(path, json=body, headers={"Authorization": f"Bearer {keys[AGGREGATES[label][0]]}"})
                first[label] = 1000 * (time.perf_counter() - t0)
                if reply.status_code != 200:
                    print(f"rows {n:>11,}: {label:>{width}}: refused ({reply.status_code}: "
                          f"{reply.json().get('error')}), not timed", flush=True)
                    forms.remove(label)
        for label in forms:

            def request(rng: np.random.Generator, label: str = label) -> tuple[str, str, dict[str, Any]]:
                return aggregate_request(label, rng)

            cpu0 = cpu_seconds(server.proc.pid)
            latencies, elapsed, errors = concurrent_clients(server.url, keys[AGGREGATES[label][0]], clients,
                                                            max(1, queries // clients), request, client=client)
            ms = np.array([t for _, t in latencies]) * 1000
            cpu = 1000 * (cpu_seconds(server.proc.pid) - cpu0) / len(ms)
            print(f"rows {n:>11,}: {label:>{width}}: p50 {np.percentile(ms, 50):8.1f} ms, "
                  f"p95 {np.percentile(ms, 95):8.1f} ms,"
                  f" server CPU {cpu:6.1f} ms/query ({ms.size} queries, {len(ms) / elapsed:6.1f}/s, errors {errors}, load "
                  f"{os.getloadavg()[0]:.1f}; first query alone {first[label]:.0f} ms)", flush=True)
        print(f"rows {n:>11,}: server peak RSS {peak_rss(server.proc.pid):7.0f} MiB", flush=True)
    finally:
        server.stop()


def main() -> None:
    from _harness import CLIENTS

    parser = argparse.ArgumentParser()
    parser.add_argument("--vs", choices=["tumult"], help="compare accuracy with Tumult Analytics (issue 32)")
    parser.add_argument("--reps", type=int, default=200, help="repetitions per query (--vs)")
    parser.add_argument("--tumult-python", help="--vs: run Tumult's part under this interpreter (an environment "
                        "where tmlt.analytics imports), e.g. /work/tumult-venv/bin/python")
    parser.add_argument("--tumult-reps", type=int, help="--vs: Tumult's repetitions (default --reps; Spark is slow)")
    parser.add_argument("--tumult-seconds", type=float, help="--vs: stop Tumult's repetitions of a query type "
                        "after this many seconds (at least one; the number run is printed)")
    parser.add_argument("--tumult-results", type=Path, nargs="+", help="--vs: Tumult's results saved by "
                        "--tumult-part --out (same --rows; several files are merged), instead of running it")
    parser.add_argument("--tumult-part", type=Path, help=argparse.SUPPRESS)  # the subprocess: Tumult on this table
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tumult-only", help="--tumult-part: only these query types (comma-separated)")
    parser.add_argument("--tumult-batch", type=int, default=10, help="--tumult-part: repetitions per query type "
                        "and definition in each round (the results are saved after each)")
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
    parser.add_argument("--client", choices=CLIENTS, default="stdlib", help="--per-aggregate: the "
                        "HTTP client the timed clients use (stdlib: http.client, kept alive; httpx costs ~3 ms of CPU a "
                        "request on the server's cores)")
    parser.add_argument("--only", nargs="+", help="--per-aggregate: these aggregates only (labels of AGGREGATES)")
    parser.add_argument("--data", type=Path, help="--per-aggregate: folder of the generated Parquet files, "
                        "kept and reused (default: a temporary folder)")
    args = parser.parse_args()
    if args.per_aggregate:
        print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, {args.queries} queries per aggregate "
              f"from {args.clients} clients ({args.client})")
        for rows in args.rows:
            with tempfile.TemporaryDirectory() as tmp:
                per_aggregate(int(rows), Path(tmp), args.data or Path(tmp), args.queries, args.clients, args.only,
                              args.memory_limit, args.client)
        return
    if args.tumult_part:
        only = set(args.tumult_only.split(",")) if args.tumult_only else None
        if tumult_errors(args.tumult_part, args.reps, args.out, args.tumult_seconds, only,
                         args.tumult_batch) is None:
            sys.exit(3)
        return
    if args.vs:
        vs_tumult(int(args.rows[0]), args.reps, args.tumult_python, args.tumult_reps, args.tumult_results,
                  args.tumult_seconds)
        return
    from query_helpers import Server
    from sdckit.query.state import State
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
