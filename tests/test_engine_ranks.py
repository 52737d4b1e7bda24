"""Reverse mapping out of core by DuckDB's external sort (issue 17): equal to the in-memory
reverse mapping with ties broken by order of appearance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.ranks import reverse_map_file
from sdckit.permutation import reverse_map


def test_reverse_map_file_equals_reverse_map_with_ties_first(tmp_path):
    rng = np.random.default_rng(4)
    n = 5000
    x = pd.DataFrame({"a": rng.integers(0, 50, n).astype(float), "b": rng.normal(size=n), "c": rng.integers(0, 9, n)})
    y = pd.DataFrame({"a": x["a"] + rng.normal(0, 5, n), "b": np.round(x["b"] + rng.normal(0, 1, n), 1),
                      "c": rng.integers(0, 9, n)})
    x.to_parquet(tmp_path / "x.parquet", row_group_size=700)
    y.to_csv(tmp_path / "y.csv", index=False)
    out = reverse_map_file(tmp_path / "x.parquet", tmp_path / "y.csv", tmp_path / "z.parquet", ["a", "b", "c"],
                           memory=50_000_000)
    expected = reverse_map(x, y, ["a", "b", "c"], ties="first")
    got = pd.read_parquet(out)
    for name in "abc":
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy())


def test_a_hand_worked_reverse_mapping(tmp_path):
    pd.DataFrame({"a": [10.0, 20.0, 30.0]}).to_parquet(tmp_path / "x.parquet")
    pd.DataFrame({"a": [2.5, 0.1, 2.5]}).to_parquet(tmp_path / "y.parquet")  # a tie: first comes first
    out = reverse_map_file(tmp_path / "x.parquet", tmp_path / "y.parquet", tmp_path / "z.parquet", ["a"])
    assert pd.read_parquet(out)["a"].tolist() == [20.0, 10.0, 30.0]


def test_reverse_map_file_refusals(tmp_path):
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_parquet(tmp_path / "x.parquet")
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "short.parquet")
    pd.DataFrame({"a": [1.0, None, 2.0]}).to_parquet(tmp_path / "nan.parquet")
    args = (tmp_path / "x.parquet",)
    with pytest.raises(DataError, match="as many released records"):
        reverse_map_file(*args, tmp_path / "short.parquet", tmp_path / "z.parquet", ["a"])
    with pytest.raises(DataError, match="'a' is missing in 1"):
        reverse_map_file(*args, tmp_path / "nan.parquet", tmp_path / "z.parquet", ["a"])
    with pytest.raises(DataError, match="'q' is not in"):
        reverse_map_file(*args, tmp_path / "x.parquet", tmp_path / "z.parquet", ["q"])
    with pytest.raises(ParameterError, match="'ties'"):
        reverse_map_file(*args, tmp_path / "x.parquet", tmp_path / "z.parquet", ["a"], ties="random")
    assert not (tmp_path / "z.parquet").exists()
