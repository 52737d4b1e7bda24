"""Aggregations on the engines (issue 17): frequency tables equal across engines and equal to a
count by hand; the full-domain search on a file's frequency table finds the records' node."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.anonymity import FullDomainGeneralization, Hierarchy
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.aggregate import frequency_table, records_at_risk
from sdckit.pipeline import search_file

ADULT = Path(__file__).parent / "data" / "adult"
QI = ["sex", "age", "race", "marital-status"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 5000
    frame = pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.choice(["x", "y", "z"], n),
                          "w": rng.uniform(1, 10, n)})
    frame.loc[rng.choice(n, 40, replace=False), "b"] = None
    folder = tmp_path_factory.mktemp("agg")
    frame.to_parquet(folder / "d.parquet", row_group_size=1000)
    frame.to_csv(folder / "d.csv", index=False)
    return frame, folder


def _by_hand(frame):
    counts = Counter(zip(frame["a"], frame["b"].fillna("<NA>")))
    weights = Counter()
    for a, b, w in zip(frame["a"], frame["b"].fillna("<NA>"), frame["w"]):
        weights[(a, b)] += w
    return counts, weights


def _as_counter(table):
    return {(a, "<NA>" if pd.isna(b) else b): (fk, wk) for a, b, fk, wk in table.itertuples(index=False)}


@pytest.mark.parametrize("engine, file", [("memory", "d.parquet"), ("duckdb", "d.parquet"), ("duckdb", "d.csv"),
                                          ("memory", None), ("duckdb", None)])
def test_frequency_tables_are_the_counts_by_hand(data, engine, file):
    frame, folder = data
    source = frame if file is None else folder / file
    table = frequency_table(source, ["a", "b"], weight="w", engine=engine)
    counts, weights = _by_hand(frame)
    got = _as_counter(table)
    assert {key: v[0] for key, v in got.items()} == dict(counts)
    for key, (_, wk) in got.items():
        assert wk == pytest.approx(weights[key], rel=1e-12)
    assert list(table.columns) == ["a", "b", "fk", "Fk"]


def test_dask_frequency_table_equals_duckdb(data, dask_client):
    frame, folder = data
    on_dask = frequency_table(folder / "d.parquet", ["a", "b"], engine="dask", client=dask_client)
    on_duckdb = frequency_table(folder / "d.parquet", ["a", "b"], engine="duckdb")
    pd.testing.assert_frame_equal(on_dask.astype({"a": "int64"}), on_duckdb.astype({"a": "int64"}))


def test_dask_frequency_table_of_a_csv_file_is_the_counts_by_hand(data, dask_client):
    frame, folder = data
    table = frequency_table(folder / "d.csv", ["a", "b"], weight="w", engine="dask", client=dask_client)
    counts, weights = _by_hand(frame)
    got = _as_counter(table)
    assert {key: v[0] for key, v in got.items()} == dict(counts)
    for key, (_, wk) in got.items():
        assert wk == pytest.approx(weights[key], rel=1e-12)


def test_records_at_risk_by_hand():
    table = pd.DataFrame({"q": [1, 2, 3, 4], "fk": [1, 1, 3, 10]})
    assert records_at_risk(table, 5) == {"records": 15, "classes": 4, "sample_uniques": 2, "records_below_k": 5}
    with pytest.raises(ParameterError, match="'k'"):
        records_at_risk(table, 0)


def test_a_missing_column_is_named(data):
    _, folder = data
    with pytest.raises(DataError, match="'nope'"):
        frequency_table(folder / "d.parquet", ["a", "nope"], engine="duckdb")


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    frame = pd.read_csv(ADULT / "adult.csv.gz", sep=";", usecols=QI)
    path = tmp_path_factory.mktemp("adult") / "adult.parquet"
    frame.to_parquet(path)
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI}
    return frame, path, hierarchies


@pytest.mark.parametrize("k, sup", [(5, 0.0), (50, 0.02)])
def test_search_on_the_file_finds_the_node_found_on_the_records(adult, k, sup):
    frame, path, hierarchies = adult
    expected = FullDomainGeneralization(k, hierarchies, max_suppression=sup).partition(frame).info["node"]
    result = search_file(path, hierarchies, k, max_suppression=sup, engine="duckdb")
    assert result.node == tuple(expected.values())
    assert result.extra["records"] == len(frame)


def test_search_file_checks_its_parameters(adult):
    _, path, hierarchies = adult
    with pytest.raises(ParameterError, match="'max_suppression'"):
        search_file(path, hierarchies, 5, max_suppression=1.5)
    with pytest.raises(ParameterError, match="'sex' must be a Hierarchy"):
        search_file(path, {"sex": "sex.csv"}, 5)


def test_cli_frequencies_counts_and_searches(cli, adult, tmp_path):
    frame, path, _ = adult
    specs = []
    for q in QI:
        specs += ["--hierarchy", f"{q}={ADULT / f'adult_hierarchy_{q}.csv.gz'}"]
    result = cli("frequencies", str(path), "--k", "5", *specs, "--json", str(tmp_path / "f.json"),
                 "--out", str(tmp_path / "t.parquet"))
    assert result.returncode == 0, result.stderr
    import json

    figures = json.loads((tmp_path / "f.json").read_text())
    sizes = frame.groupby(QI).size()
    assert figures["records"] == len(frame) and figures["classes"] == len(sizes)
    assert figures["records_below_k"] == int(sizes[sizes < 5].sum())
    expected = FullDomainGeneralization(5, {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI}
                                        ).partition(frame).info["node"]
    assert figures["search"]["node"] == dict(expected)
    assert pd.read_parquet(tmp_path / "t.parquet")["fk"].sum() == len(frame)


def test_cli_frequencies_names_a_bad_hierarchy_option(cli, adult):
    _, path, _ = adult
    result = cli("frequencies", str(path), "--hierarchy", "sex")
    assert result.returncode == 2 and "COLUMN=FILE" in result.stderr and "Traceback" not in result.stderr
