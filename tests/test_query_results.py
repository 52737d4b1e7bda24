"""The query service's values on the one ``Result`` base (issue 29 item 2).

Every class of :mod:`sdckit.query` with a JSON form is a :class:`~sdckit.core.result.Result`;
its ``to_dict()`` goes through ``json.dumps`` without ``default=`` and has the keys and values
it had before (hand-worked below: renamed keys, the secret seed left out, the canonical form of
a query that the stored answers are found by).
"""

from __future__ import annotations

import importlib
import inspect
import json
from fractions import Fraction
from pathlib import Path

import numpy as np

from sdckit.core.result import Result
from sdckit.query.analysts import Analyst
from sdckit.query.audit import Decision
from sdckit.query.ckmconfig import CkmConfig
from sdckit.query.config import ServiceConfig, TableConfig
from sdckit.query.cube import Cube
from sdckit.query.generate import Generated
from sdckit.query.noisy import plan
from sdckit.query.ranges import RangeIndex
from sdckit.query.sql import parse

MODULES = ("analysts", "audit.auditor", "audit.interval", "ckmconfig", "config", "cube", "generate", "joins", "keys", "noisy",
           "noisy_gaussian", "ranges", "restricted", "sql", "state", "tables")


def _table(**extra) -> TableConfig:
    return TableConfig("t", Path("/data/t.csv"), None, "pid", 2, {"v": (0.0, 10.0)}, {"r": ("a", "b")}, **extra)


def _config(table: TableConfig, seed: int | None = None) -> ServiceConfig:
    return ServiceConfig(Path("/srv/service.toml"), Path("/srv/state.db"), {"t": table}, seed=seed)


def test_every_class_with_a_json_form_is_a_result():
    found = []
    for name in MODULES:
        module = importlib.import_module(f"sdckit.query.{name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "to_dict" in dir(cls):
                found.append(cls)
    names = sorted(c.__name__ for c in found)
    assert names == ["Analyst", "CkmConfig", "Cube", "Decision", "Generated", "Join", "JoinedTable", "Plan",
                     "PublicTable", "Query", "RangeIndex", "Selection", "ServiceConfig", "TableConfig"]
    assert [c.__name__ for c in found if not issubclass(c, Result)] == []


def test_the_configuration_keeps_its_keys_and_never_shows_the_seed():
    ckm = CkmConfig(D=5, V=2.0, pstay=(0.5, 0.4), ptable_path=Path("/srv/p.csv"))
    config = _config(_table(mode="tables", ckm=ckm), seed=0xDEADBEEF)
    out = config.to_dict()
    assert json.loads(json.dumps(out)) == out
    assert out == {
        "path": "/srv/service.toml", "state": "/srv/state.db", "min_query_set": 5, "collusion": False, "cache": True,
        "seeded": True, "sync": "full", "p_percent": 10, "public_tables": {}, "memory_limit": None, "prebuild": [],
        "tables": {"t": {
            "name": "t", "path": "/data/t.csv", "table": None, "privacy_unit": "pid", "max_rows_per_unit": 2,
            "bounds": {"v": [0.0, 10.0]}, "domains": {"r": ["a", "b"]}, "bounds_from_data": False,
            "data_bounds": [], "dimensions": ["r"], "mode": "tables",
            "ckm": {"D": 5, "V": 2.0, "js": 0, "pstay": [0.5, 0.4], "ptable": "/srv/p.csv", "record_key": None,
                    "digits": 8, "min_count": None}, "keys_from_data": [], "max_rows_per_join_key": 1}}}
    assert str(0xDEADBEEF) not in json.dumps(out)


def test_a_query_keeps_its_canonical_form():
    """The stored answers and the ledger are keyed by it: any change would miss them."""
    config = _config(_table())
    query = parse("SELECT r, COUNT(*) AS n, SUM(v) FROM t WHERE v > 1 AND r IN ('a') GROUP BY r", config)
    assert json.dumps(query.to_dict(), sort_keys=True) == (
        '{"group_by": ["r"], "outputs": [["group", "r", "r"], ["count", null, "n"], ["sum", "v", "sum_v"]], '
        '"table": "t", "where": ["and", [["cmp", "v", ">", 1], ["in", "r", ["a"], false]]]}')


def test_a_plan_gives_its_epsilon_exactly_and_its_number_of_cells():
    config = _config(_table())
    p = plan(parse("SELECT r, COUNT(*) FROM t GROUP BY r", config), config.tables["t"], Fraction(1, 4))
    out = p.to_dict()
    assert json.loads(json.dumps(out)) == out
    assert list(out) == ["query", "epsilon", "k", "shares", "sensitivities", "count_scale", "sum_scales", "bounds",
                         "cells", "is_dp", "data_bounded", "midpoints", "square_caps", "other_scales"]
    assert out["epsilon"] == "0.25" and out["cells"] == 2 and out["k"] == 2 and out["is_dp"] is True
    assert out["query"] == p.query.to_dict() and out["shares"] == {"count": 0.25} and out["sum_scales"] == {}
    assert out["square_caps"] == {} and out["other_scales"] == {}  # no VAR_POP/STDDEV_POP asked


def test_an_analyst_gives_its_budget_in_its_definition():
    ann = Analyst("ann", "dp", Fraction(1), Fraction(1, 10**6), Fraction(1, 4), None, "approx", Fraction(0))
    assert ann.to_dict() == {
        "name": "ann", "mode": "dp", "tables": "all", "definition": "approx",
        "definition_text": "approximate (epsilon, delta)-DP, basic composition",
        "epsilon_total": 1.0, "epsilon_spent": 0.25, "epsilon_remaining": 0.75,
        "delta_total": 1e-6, "delta_spent": 0.0, "delta_remaining": 1e-6,
        "exact": {"epsilon_total": "1", "epsilon_spent": "0.25", "epsilon_remaining": "0.75",
                  "delta_total": "0.000001", "delta_spent": "0", "delta_remaining": "0.000001"}}
    bob = Analyst("bob", "restricted", None, None, Fraction(0), ("t",))
    assert bob.to_dict() == {"name": "bob", "mode": "restricted", "tables": ["t"], "epsilon_total": None,
                             "epsilon_spent": 0.0, "epsilon_remaining": None}


def test_the_small_values_are_their_fields_and_the_indexes_only_their_sizes():
    assert Generated("SELECT ?", (1, "a", 2.5)).to_dict() == {"sql": "SELECT ?", "params": [1, "a", 2.5]}
    assert Decision(False, "why").to_dict() == {"allowed": False, "reason": "why"}
    index = RangeIndex("v", np.arange(7.0), {"v": np.zeros(8), "w": np.zeros(8)})
    assert index.to_dict() == {"column": "v", "values": 7, "summed": ["v", "w"]}
    cube = Cube(_table(), {"r": None, "v": None}, np.array([3, 4]), {"v": np.array([1.0, 2.0])})
    assert cube.to_dict() == {"table": "t", "columns": ["r", "v"], "summed": ["v"], "rows": 2}
    for value in (index, cube, Decision(True)):
        json.dumps(value.to_dict())
