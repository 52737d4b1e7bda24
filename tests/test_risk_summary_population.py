"""The risk summary (CLI, JSON, report) carries the population models and l-diversity too (issue 16:
"all shown in the report and the CLI")."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sdckit.core.errors import ParameterError, SchemaError
from sdckit.core.schema import Schema
from sdckit.report.risk_section import risk_section
from sdckit.risk.population import population_risk
from sdckit.risk.summary import diversity_summary, risk_summary

FRAME = pd.DataFrame({"zip": ["1", "1", "1", "2", "2", "3", "3", "3"],
                      "disease": ["flu", "flu", "hiv", "flu", "flu", "a", "b", "c"],
                      "w": [2.0] * 8})


def test_diversity_summary_hand_worked():
    # classes: zip 1 -> {flu, flu, hiv}: distinct 2; zip 2 -> {flu, flu}: distinct 1;
    # zip 3 -> {a, b, c}: distinct 3, entropy l = 3; zip 2's entropy l = exp(0) = 1
    d = diversity_summary(FRAME, ["zip"], "disease", "wildcard", None)
    assert d == {"min_distinct_l": 1.0, "min_entropy_l": 1.0, "records_with_one_value": 2,
                 "records_below_2_distinct": 2, "records_below_3_distinct": 5}


def test_summary_holds_the_population_models_when_the_population_is_known():
    s = risk_summary(FRAME, ["zip"], "w", sensitive="disease").to_dict()
    assert s["population"] == population_risk(FRAME, ["zip"], weight="w").to_dict()
    assert s["population"]["population"] == 16.0          # sum of the weights
    assert s["l_diversity"]["disease"]["records_with_one_value"] == 2
    by_fraction = risk_summary(FRAME, ["zip"], sampling_fraction=0.5).to_dict()
    assert by_fraction["population"]["population"] == 16.0
    assert risk_summary(FRAME, ["zip"]).to_dict()["population"] is None


def test_bad_population_and_sensitive_are_refused():
    with pytest.raises(ParameterError, match="exactly one"):
        risk_summary(FRAME, ["zip"], sampling_fraction=0.5, population_size=100)
    with pytest.raises(SchemaError, match="'nope'"):
        risk_summary(FRAME, ["zip"], sensitive="nope")


def test_report_section_shows_them():
    schema = Schema.infer(FRAME, quasi=["zip"], confidential=["disease"], kinds={"zip": "nominal", "disease": "nominal"})
    section, data = risk_section(FRAME, schema, weight="w")
    labels = [label for label, _ in section.context["rows"]]
    assert any(label.startswith("prosecutor risk") for label in labels)
    assert any("attribute disclosure" in label for label in labels)
    assert data["l_diversity"]["disease"]["records_with_one_value"] == 2


def test_cli_prints_and_writes_them(tmp_path, cli):
    FRAME.to_csv(tmp_path / "f.csv", index=False)
    done = cli("risk", str(tmp_path / "f.csv"), "--keys", "zip", "--weight", "w", "--sensitive", "disease",
               "--no-suda", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert "prosecutor risk" in done.stdout and "one value of disease" in done.stdout
    assert json.loads((tmp_path / "r.json").read_text())["population"]["population"] == 16.0
    bad = cli("risk", str(tmp_path / "f.csv"), "--keys", "zip", "--sampling-fraction", "0.5",
              "--population-size", "100", "--no-suda")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
