"""One ``Result`` base and one JSON helper (issue 29 item 2).

Every result class the families export is a :class:`~sdckit.core.result.Result`: its ``to_dict()``
goes through ``json.dumps`` without ``default=`` and its ``summary()`` gives rows of strings.
:func:`~sdckit.core.result.plain` is checked on hand-worked values.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.method import Method
from sdckit.core.result import Result, plain

PACKAGES = ("risk", "utility", "dp", "permutation", "anonymity", "compare", "engine")


def _exported_results() -> list[type]:
    """The exported dataclasses that hold what a function computed: not methods, not the
    criteria, the mechanisms or the comparison's candidates (values a caller builds)."""
    from sdckit.anonymity.criteria import Criterion
    from sdckit.compare import Candidate
    from sdckit.dp.mechanisms import Mechanism

    found = []
    for package in PACKAGES:
        module = importlib.import_module(f"sdckit.{package}")
        for name in module.__all__:
            obj = getattr(module, name)
            if (isinstance(obj, type) and dataclasses.is_dataclass(obj)
                    and not issubclass(obj, Method | Criterion | Mechanism) and obj is not Candidate):
                found.append(obj)
    return found


def test_every_exported_result_class_is_a_result():
    classes = _exported_results()
    assert len(classes) >= 19  # risk 6, utility 1, dp 2, permutation 6, anonymity 2, compare 2, engine 1
    assert [c.__name__ for c in classes if not issubclass(c, Result)] == []


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    """One instance of every exported result class, computed on small data."""
    from sdckit import anonymity, dp, permutation, risk, utility
    from sdckit.compare.core import CandidateResult, Comparison
    from sdckit.engine.stream import StreamedRelease
    from sdckit.core.schema import Schema

    rng = np.random.default_rng(7)
    x = pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40)})
    y = x.copy()
    y["a"] = y["a"].to_numpy()[rng.permutation(40)]
    cat = pd.DataFrame({"sex": rng.choice(["f", "m"], 80), "zip": rng.choice(["1", "2", "3"], 80),
                        "w": rng.uniform(1, 20, 80), "dis": rng.choice(["p", "q"], 80)})
    candidate = CandidateResult("noise", ({"name": "noise"},), 0.3, 0.25, 0.4, 0.1, 0.05,
                                ({"p_value": 0.4, "hellinger": 0.3},))
    out = {
        "ClassRisk": risk.equivalence_classes(cat, ["sex", "zip"]),
        "DistanceLinkage": risk.distance_linkage(x, y),
        "GlobalRisk": risk.global_risk(cat, ["sex", "zip"], "w"),
        "IntervalDisclosure": risk.interval_disclosure(x, y),
        "PermutationRisk": risk.permutation_risk(x, y, n_random=200, n_null=5, random_state=1),
        "PopulationRisk": risk.population_risk(cat, ["sex", "zip"], sampling_fraction=0.1),
        "Propensity": utility.pmse(x, y, random_state=1),
        "ConfidenceSuppression": dp.confidence_suppression(x["a"].to_numpy(), y["a"].to_numpy(),
                                                           np.repeat(np.arange(8), 5), 1.0, 0.5, 2),
        "ErrorPrediction": dp.expected_relative_error(x["a"].to_numpy(), np.repeat(np.arange(8), 5), 1.0),
        "Assessment": permutation.assess(x, y, n_random=200, random_state=1),
        "Assignment": permutation.assign_linkage(x, y),
        "Linkage": permutation.intruder_linkage(x, y, random_state=1),
        "PermutedPrivacy": permutation.permuted_privacy(x, y, d=3, v=[0.1, 0.1]),
        "SubjectVerification": permutation.verify_subject(x.iloc[0].to_dict(), y, permutation=True,
                                                          n_random=200, random_state=1),
        "Verification": permutation.verify_linkage(x, y, n_random=200, random_state=1),
        "CheckReport": anonymity.check(cat, ["sex", "zip"], [anonymity.KAnonymity(2),
                                                            anonymity.DistinctLDiversity(2, "dis")]),
        "Partition": anonymity.Mondrian(k=5, quasi=["a", "b"]).partition(x, Schema.infer(x, quasi=["a", "b"])),
        "CandidateResult": candidate,
        "Comparison": Comparison((candidate,), 40, 1, {"null": "copula"}),
        "StreamedRelease": StreamedRelease(Path("out.csv"), Schema.infer(x), {"records": np.int64(40)}),
    }
    return out


def test_the_fixture_covers_every_exported_result_class(results):
    assert {c.__name__ for c in _exported_results()} == {type(r).__name__ for r in results.values()}


@pytest.mark.parametrize("name", ["ClassRisk", "DistanceLinkage", "GlobalRisk", "IntervalDisclosure",
                                  "PermutationRisk", "PopulationRisk", "Propensity", "ConfidenceSuppression",
                                  "ErrorPrediction", "Assessment", "Assignment", "Linkage", "PermutedPrivacy",
                                  "SubjectVerification", "Verification", "CheckReport", "Partition",
                                  "CandidateResult", "Comparison", "StreamedRelease"])
def test_to_dict_is_json_and_summary_gives_string_rows(results, name):
    result = results[name]
    assert isinstance(result, Result)
    d = result.to_dict()
    assert isinstance(d, dict) and d
    text = json.dumps(d, allow_nan=False)  # no default=, no NaN: plain did the work
    assert json.loads(text) == json.loads(json.dumps(plain(d)))
    rows = result.summary()
    assert rows and all(isinstance(row, tuple) and len(row) == len(result.summary_columns)
                        and all(isinstance(cell, str) for cell in row) for row in rows)


def test_plain_hand_worked():
    # numpy scalars and arrays, NaN and infinities, Fractions, paths, timestamps
    assert plain(np.int64(3)) == 3 and type(plain(np.int64(3))) is int
    assert plain(np.float32(0.5)) == 0.5 and type(plain(np.float32(0.5))) is float
    assert plain(np.bool_(True)) is True
    assert plain(np.array([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert plain([np.nan, math.inf, -math.inf, np.float64("nan"), 1.5]) == [None, None, None, None, 1.5]
    assert plain(Fraction(1, 3)) == "1/3"
    assert plain(Path("a") / "b.csv") == "a/b.csv"
    assert plain(pd.Timestamp("2024-02-29 12:00")) == "2024-02-29T12:00:00"
    # mappings keep integer keys (json.dumps writes them as text), other keys become text
    assert plain({1: np.int64(2), "x": (1, 2), 2.5: None}) == {1: 2, "x": [1, 2], "2.5": None}
    # a Series is a dict with text keys; a DataFrame a list of rows led by its index, "record"
    assert plain(pd.Series([0.1, np.nan], index=[3, 4])) == {"3": 0.1, "4": None}
    frame = pd.DataFrame({"a": [1, 2], "b": ["u", None]}, index=[10, 11])
    assert plain(frame) == [{"record": 10, "a": 1, "b": "u"}, {"record": 11, "a": 2, "b": None}]

    # nested dataclasses: a Result by its to_dict (fields with dict=False left out), another
    # dataclass with its class name, an object with to_manifest() by its manifest
    class Described:
        def to_manifest(self):
            return {"name": "described", "levels": np.int32(4)}

    @dataclass(frozen=True)
    class Inner:
        value: float

    @dataclass(frozen=True)
    class Outer(Result):
        inner: Inner
        count: int
        share: float
        described: object
        hidden: pd.DataFrame = field(default=None, metadata={"dict": False})

    outer = Outer(Inner(np.float64(math.nan)), np.int64(1234), 0.25, Described(), pd.DataFrame({"x": [1]}))
    d = outer.to_dict()
    assert d == {"inner": {"class": "Inner", "value": None}, "count": 1234, "share": 0.25,
                 "described": {"name": "described", "levels": 4}}
    assert plain({"r": outer}) == {"r": d}
    json.dumps(d, allow_nan=False)
    # the default summary: the scalar fields, formatted
    assert outer.summary() == [("count", "1,234"), ("share", "0.25")]


def test_cli_prints_any_result_through_one_function(tmp_path):
    from rich.console import Console

    from sdckit.cli import common

    @dataclass(frozen=True)
    class Figures(Result):
        records: int
        share: float
        label: str

    recorded = Console(record=True, width=80)
    old = common.console
    common.console = recorded
    try:
        common.print_result(Figures(1200, 0.125, "demo"), "figures", tmp_path / "f.json")
    finally:
        common.console = old
    shown = recorded.export_text()
    assert "figures" in shown and "1,200" in shown and "0.125" in shown and "demo" in shown
    assert json.loads((tmp_path / "f.json").read_text()) == {"records": 1200, "share": 0.125, "label": "demo"}
