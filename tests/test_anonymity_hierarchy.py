"""Hierarchies: ARX CSV round trip, builders, validation (seed 003 section 2, conditions C1-C2)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from sdckit import DataError, ParameterError
from sdckit.anonymity import FullDomainGeneralization, Hierarchy
from sdckit.core.result import plain as json_plain

ADULT = Path(__file__).parent / "data" / "adult"


def test_csv_round_trip(tmp_path):
    h = Hierarchy([["94142", "9414*", "941**"], ["94139", "9413*", "941**"]])
    path = tmp_path / "zip.csv"
    h.to_csv(path)
    assert path.read_text() == "94142;9414*;941**\n94139;9413*;941**\n"
    again = Hierarchy.from_csv(path)
    assert again == h and hash(again) == hash(h)
    assert again.height == 2 and again.level_sizes() == (2, 2, 1)


def test_reads_the_adult_hierarchies():
    age = Hierarchy.from_csv(ADULT / "adult_hierarchy_age.csv.gz")
    # ARX's age hierarchy: ages 1..100; value, 5-year, 10-year, 20-year, *.
    assert age.levels == 5 and len(age.values) == 100
    assert age.generalize(pd.Series([39]), 1).tolist() == ["35-39"]
    assert age.generalize(pd.Series([39.0]), 4).tolist() == ["*"]


def test_builders():
    ages = Hierarchy.intervals(range(0, 100), widths=(5, 10))
    assert ages.generalize([23], 1).tolist() == ["[20-24]"] and ages.generalize([23], 2).tolist() == ["[20-29]"]
    assert ages.height == 3  # '*' added on top
    zips = Hierarchy.masking(["94142", "94141", "94139"])
    assert [zips.generalize(["94142"], i)[0] for i in range(6)] == ["94142", "9414*", "941**", "94***", "9****", "*****"]
    days = Hierarchy.dates(pd.to_datetime(["2021-03-15", "2024-12-31"]))
    assert days.generalize(pd.Series(pd.to_datetime(["2021-03-15"])), 1).tolist() == ["2021-03"]
    assert days.generalize(pd.Series(pd.to_datetime(["2021-03-15"])), 3).tolist() == ["2020-2024"]
    edu = Hierarchy.ordered_groups(["primary", "lower", "upper", "bachelor"], sizes=(2, 4))
    assert edu.generalize(["upper"], 1).tolist() == ["[upper..bachelor]"]
    assert edu.generalize(["upper"], 2).tolist() == ["[primary..bachelor]"]
    groups = Hierarchy.groups({"flu": "infection", "cold": "infection", "cancer": "tumour"})
    assert groups.generalize(["cold"], 1).tolist() == ["infection"] and groups.height == 2


def test_builder_parameter_errors():
    with pytest.raises(ParameterError, match="'widths' parameter of Hierarchy.intervals"):
        Hierarchy.intervals(range(10), widths=(5, 7))
    with pytest.raises(DataError, match="one length"):
        Hierarchy.masking(["123", "1234"])
    with pytest.raises(ParameterError, match="'steps'"):
        Hierarchy.masking(["123"], steps=(2, 1))
    with pytest.raises(ParameterError, match="'sizes'"):
        Hierarchy.ordered_groups(["a", "b", "c"], sizes=(2, 3))
    with pytest.raises(ParameterError, match="'levels'"):
        Hierarchy.dates(["2020-01-01"], levels=("year", "month"))
    with pytest.raises(DataError, match="'g' at level 1 has no group in mapping 2"):
        Hierarchy.groups({"a": "g"}, {"h": "*"})
    with pytest.raises(DataError, match="needs numbers"):
        Hierarchy.intervals(["a"], widths=(2,))


def test_validation_errors_name_value_and_level(tmp_path):
    with pytest.raises(DataError, match=r"Value 'a' appears 2 times at level 0"):
        Hierarchy([["a", "g", "*"], ["b", "g", "*"], ["a", "h", "*"]])
    with pytest.raises(DataError, match=r"Level 2 .* value 'g' at level 1 generalizes to 'x', 'y'"):
        Hierarchy([["a", "g", "x"], ["b", "g", "y"]])
    with pytest.raises(DataError, match=r"top level 1 holds 2 values .*add_top=True"):
        Hierarchy([["a", "g"], ["b", "h"]])
    assert Hierarchy([["a", "g"], ["b", "h"]], add_top=True).height == 2
    with pytest.raises(DataError, match="Row 2 has 2 levels"):
        Hierarchy([["a", "g", "*"], ["b", "*"]])
    with pytest.raises(DataError, match="empty"):
        Hierarchy([])
    bad = tmp_path / "bad.csv"
    bad.write_text("a;g\nb;h\n")
    with pytest.raises(DataError, match="bad.csv"):
        Hierarchy.from_csv(bad)
    with pytest.raises(DataError, match="Cannot read hierarchy file"):
        Hierarchy.from_csv(tmp_path / "missing.csv")


def test_missing_data_value_is_named():
    h = Hierarchy([["a", "*"], ["b", "*"]])
    with pytest.raises(DataError, match=r"column 'x' has no row for a value of the data \(first at row 7, 2 record"):
        h.index_of(pd.Series(["a", "c", "c"], index=[5, 7, 9]), "x")
    with pytest.raises(ParameterError, match="'level'"):
        h.generalize(["a"], 3)


def test_gzip_and_paths_accepted_by_methods(tmp_path):
    path = tmp_path / "sex.csv.gz"
    path.write_bytes(gzip.compress(b"Male;*\nFemale;*\n"))
    method = FullDomainGeneralization(2, {"sex": str(path)})
    assert method.hierarchies["sex"].values == ("Male", "Female")


def test_manifest_shows_a_compact_hierarchy():
    h = Hierarchy.intervals(range(0, 30000), widths=(10, 100))
    plain = json_plain(FullDomainGeneralization(2, {"age": h}).params()["hierarchies"])
    assert plain["age"]["levels"] == 4 and plain["age"]["level_sizes"] == [30000, 3000, 300, 1]
    assert len(plain["age"]["sha256"]) == 64 and len(str(plain)) < 400
