"""Every query form that ``benchmarks/bench_query.py --per-aggregate`` times (issue 32, its
``AGGREGATES``) is one the service answers: the real server (as the benchmark starts it) on a
tiny table written by the benchmark's own generators and configuration, one query of each form
from the form's analyst (pure epsilon, rho-zCDP or (epsilon, delta)), each answered 200 in that
definition and stating the contribution bounds the form sends. A form the configuration does not
support (a refusal timed as a latency) fails here, not silently in the benchmark's error count."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from query_helpers import Server

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    path = list(sys.path)
    spec = importlib.util.spec_from_file_location("bench_query_forms", BENCHMARKS / "bench_query.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path  # the script puts src/ and tests/ first
    return module


@pytest.fixture(scope="module")
def served(bench, tmp_path_factory):
    folder = tmp_path_factory.mktemp("forms")
    table = bench.make_table_duckdb(folder / "data", 2000)
    config, keys = bench.per_aggregate_service(folder / "run", table)
    server = Server(config)
    yield server, keys
    server.stop()


def _refusals(bench, url: str, keys: dict[str, str]) -> dict[str, str]:
    """One query of every form of ``AGGREGATES``: the forms not answered 200 in their analyst's
    definition with the bounds they sent, each with the status and the service's message."""
    out = {}
    rng = np.random.default_rng(5)
    with httpx.Client(base_url=url, timeout=60) as http:
        for label, (who, _, extra) in bench.AGGREGATES.items():
            _, path, body = bench.aggregate_request(label, rng)
            reply = http.post(path, json=body, headers={"Authorization": f"Bearer {keys[who]}"})
            answer = reply.json()
            if reply.status_code != 200:
                out[label] = f"{reply.status_code}: {answer.get('error')}"
            elif answer["definition"] != who or any(answer.get(f) != v for f, v in extra.items()):
                out[label] = f"answered as {answer['definition']} with {[answer.get(f) for f in extra]}"
    return out


def test_every_benchmarked_form_is_answered(bench, served):
    server, keys = served
    assert {who for who, _, _ in bench.AGGREGATES.values()} == set(bench.LOSS) == set(keys)
    # each supported form of the brief is there: MIN, MAX, BOUNDS, a histogram, a derived value,
    # both joins, per-group bounds, and the Gaussian definitions
    sql = " ".join(template for _, template, _ in bench.AGGREGATES.values())
    for needle in ("MIN(", "MAX(", "BOUNDS(", "FLOOR(", "SUM(income / 1000)", "JOIN regions", "JOIN visits"):
        assert needle in sql
    assert any("max_groups_per_unit" in extra for _, _, extra in bench.AGGREGATES.values())
    assert _refusals(bench, server.url, keys) == {}


def test_a_form_the_service_refuses_is_caught(bench, served, monkeypatch):
    """The check above is not vacuous: forms the configuration does not support are reported."""
    server, keys = served
    monkeypatch.setattr(bench, "AGGREGATES", {
        "keys from data, pure": ("pure", "SELECT age, COUNT(*) FROM census GROUP BY age", {}),
        "bounds without GROUP BY": ("zcdp", "SELECT SUM(cost) FROM visits", {"max_groups_per_unit": 2}),
        "undeclared public table": ("pure", "SELECT COUNT(*) FROM census JOIN zones ON census.region = zones.code", {}),
        "COUNT": bench.AGGREGATES["COUNT"]})
    refused = _refusals(bench, server.url, keys)
    assert sorted(refused) == ["bounds without GROUP BY", "keys from data, pure", "undeclared public table"]
    assert all(reason.startswith("400") for reason in refused.values())
