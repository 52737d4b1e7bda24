"""The comparison with Tumult Analytics in benchmarks/bench_query.py (issue 32): the bootstrap
interval of the ratio of median errors, and the per-repetition figures it reads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_query", ROOT / "benchmarks" / "bench_query.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def laplace_run(scale: float, reps: int, seed: int, keys: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    errors = [list(np.abs(rng.laplace(0, scale, keys))) for _ in range(reps)]
    return bench.summary(errors, [1.0] * reps, [0.001] * reps)


def test_summary_keeps_each_repetition() -> None:
    s = bench.summary([[1.0], [3.0], [2.0]], [1.0, 1.0, 0.5], [0.002, 0.001, 0.003])
    assert s["median_error"] == 2.0 and s["reps"] == 3 and s["first_ms"] == 2.0 and s["latency_ms"] == 2.0
    assert s["errors"] == [[1.0], [3.0], [2.0]] and abs(s["released"] - 2.5 / 3) < 1e-12


def test_ratio_interval_covers_one_for_the_same_law() -> None:
    # same scale: the 95% interval holds 1 in about 95% of pairs; 20 pairs, at most 4 misses
    misses = sum(not (lo <= 1 <= hi) for lo, hi in
                 (bench.ratio_interval(laplace_run(2.0, 200, 2 * i), laplace_run(2.0, 200, 2 * i + 1))
                  for i in range(20)))
    assert misses <= 4


def test_ratio_interval_excludes_one_for_double_the_noise() -> None:
    lo, hi = bench.ratio_interval(laplace_run(2.0, 200, 1), laplace_run(1.0, 200, 2))
    assert 1.4 < lo < 2 < hi < 2.9  # median |Laplace(b)| = b ln 2: the ratio is 2
    lo, hi = bench.ratio_interval(laplace_run(2.0, 200, 3, keys=4), laplace_run(1.0, 150, 4, keys=4))
    assert 1.4 < lo < 2 < hi < 2.9


def test_ratio_interval_needs_the_repetitions() -> None:
    old = {k: v for k, v in laplace_run(1.0, 10, 5).items() if k != "errors"}  # a run saved before
    assert bench.ratio_interval(laplace_run(1.0, 10, 6), old) is None
    zeros = bench.summary([[0.0]] * 50, [1.0] * 50, [0.001] * 50)  # e.g. COUNT's geometric noise, mostly 0
    assert bench.ratio_interval(laplace_run(1.0, 50, 7), zeros) is None


def test_ratio_interval_of_means_for_integer_errors() -> None:
    rng = np.random.default_rng(8)
    one = bench.summary([[float(abs(x))] for x in rng.geometric(0.6, 200) - rng.geometric(0.6, 200)],
                        [1.0] * 200, [0.001] * 200)
    two = bench.summary([[float(abs(x))] for x in rng.geometric(0.6, 200) - rng.geometric(0.6, 200)],
                        [1.0] * 200, [0.001] * 200)
    lo, hi = bench.ratio_interval(one, two, stat=np.mean)
    assert lo < 1 < hi and hi / lo < 2


def test_merge_runs_pools_repetitions(tmp_path: Path) -> None:
    import json
    one = {"pure": {"MEDIAN": bench.summary([[1.0], [2.0]], [1.0, 1.0], [3.0, 1.0])}, "zcdp": {}}
    two = {"pure": {"MEDIAN": bench.summary([[4.0]], [1.0], [2.0]), "SUM": bench.summary([[5.0]], [1.0], [1.0])}}
    (tmp_path / "a.json").write_text(json.dumps(one))
    (tmp_path / "b.json").write_text(json.dumps(two))
    merged = bench.merge_runs([tmp_path / "a.json", tmp_path / "b.json"])
    m = merged["pure"]["MEDIAN"]
    assert m["reps"] == 3 and m["errors"] == [[1.0], [2.0], [4.0]] and m["median_error"] == 2.0
    assert m["first_ms"] == 3000.0 and m["latency_ms"] == 2000.0
    assert merged["pure"]["SUM"]["reps"] == 1 and merged["zcdp"] == {} and merged["approx"] == {}
