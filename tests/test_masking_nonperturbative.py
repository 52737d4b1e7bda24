"""Top/bottom coding, rounding, global recoding and sampling on hand-worked examples, with
every bad-input path (seed 002 section 4.6.3)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import DataError, ParameterError, Schema, SchemaError, protect
from sdckit.anonymity import Hierarchy
from sdckit.masking import GlobalRecoding, Rounding, Sampling, TopBottomCoding
from sdckit.masking.sampling import sample_size


# ----------------------------------------------------------------------------- top/bottom
def test_top_and_bottom_coding_to_the_thresholds():
    data = pd.DataFrame({"income": [10.0, 50.0, 90.0, 200.0, np.nan]})
    out = TopBottomCoding(top=100.0, bottom=20.0).run(data)
    # 10 < 20 -> 20; 200 > 100 -> 100; 50, 90 inside; NaN passes untouched
    assert out.data["income"].tolist()[:4] == [20.0, 50.0, 90.0, 100.0]
    assert math.isnan(out.data["income"].iloc[4])
    assert out.info["top_coded"] == {"income": 1} and out.info["bottom_coded"] == {"income": 1}


def test_values_at_the_threshold_are_not_coded_and_integers_stay_integers():
    data = pd.DataFrame({"age": np.array([15, 16, 80, 81, 99], dtype=np.int64)})
    out = TopBottomCoding(top=80.0, bottom=16.0).apply(data)
    assert out["age"].tolist() == [16, 16, 80, 80, 80]
    assert out["age"].dtype == np.int64


def test_mean_replacement_keeps_the_total():
    data = pd.DataFrame({"x": [1.0, 2.0, 150.0, 250.0]})
    out = TopBottomCoding(top=100.0, top_value="mean").apply(data)
    # the coded values 150 and 250 both become their mean 200; total 403 is unchanged
    assert out["x"].tolist() == [1.0, 2.0, 200.0, 200.0]
    assert out["x"].sum() == data["x"].sum()


def test_explicit_replacement_value():
    data = pd.DataFrame({"x": [1.0, 5.0, 9.0]})
    out = TopBottomCoding(bottom=2.0, bottom_value=0.0, top=8.0, top_value=99.0).apply(data)
    assert out["x"].tolist() == [0.0, 5.0, 99.0]


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({}, "top"),
        ({"top": 1.0, "bottom": 1.0}, "bottom"),
        ({"top": 1.0, "bottom": 5.0}, "bottom"),
        ({"bottom": 1.0, "top_value": 3.0}, "top_value"),
        ({"top": 1.0, "bottom_value": "mean"}, "bottom_value"),
        ({"top": float("nan")}, "top"),
        ({"top": 1.0, "top_value": "median"}, "top_value"),
    ],
)
def test_top_bottom_bad_parameters(params, name):
    with pytest.raises(ParameterError, match=rf"The '{name}' parameter of TopBottomCoding must be"):
        TopBottomCoding(**params)


def test_top_bottom_refuses_a_nominal_column():
    data = pd.DataFrame({"sex": ["F", "M"], "x": [1.0, 2.0]})
    with pytest.raises(SchemaError, match="'sex'"):
        TopBottomCoding(top=1.0, columns=["sex"]).apply(data)


# ----------------------------------------------------------------------------- rounding
def test_rounding_to_a_base_half_to_even():
    data = pd.DataFrame({"x": [21.0, 23.0, 27.0, 32.0, 22.5, 27.5, -3.0, np.nan]})
    out = Rounding(base=5.0).run(data)
    # 22.5/5 = 4.5 -> 4 (even) -> 20; 27.5/5 = 5.5 -> 6 -> 30; -3/5 = -0.6 -> -1 -> -5
    assert out.data["x"].tolist()[:7] == [20.0, 25.0, 25.0, 30.0, 20.0, 30.0, -5.0]
    assert math.isnan(out.data["x"].iloc[7])
    # changes 1, 2, 2, 2, 2.5, 2.5, 2 -> mean 14/7 = 2
    assert out.info["mean_absolute_change"]["x"] == pytest.approx(2.0)


def test_rounding_a_decimal_base_leaves_no_float_residue_and_keeps_integers():
    out = Rounding(base=0.1).apply(pd.DataFrame({"x": [0.26, 0.33, 1.04]}))
    assert out["x"].tolist() == [0.3, 0.3, 1.0]
    ints = Rounding(base=1000.0).apply(pd.DataFrame({"x": np.array([1499, 1501, 27_800])}))
    assert ints["x"].tolist() == [1000, 2000, 28_000] and ints["x"].dtype.kind == "i"


@pytest.mark.parametrize("base", [0.0, -5.0, float("inf"), True, "5"])
def test_rounding_bad_base(base):
    with pytest.raises(ParameterError, match=r"The 'base' parameter of Rounding must be a float in \(0, inf\)"):
        Rounding(base=base)


# ----------------------------------------------------------------------------- recoding
def test_recoding_into_explicit_intervals():
    data = pd.DataFrame({"age": [17, 18, 64.9, 65, 90, np.nan]})
    out = GlobalRecoding(bins=[0, 18, 65, float("inf")]).run(data)
    # left-closed intervals, the last one closed: 18 -> [18, 65), 65 -> [65, inf]
    assert out.data["age"].tolist()[:5] == ["[0, 18)", "[18, 65)", "[18, 65)", "[65, inf]", "[65, inf]"]
    assert pd.isna(out.data["age"].iloc[5])
    assert out.schema["age"].kind.value == "ordinal"
    assert out.schema["age"].order == ("[0, 18)", "[18, 65)", "[65, inf]")
    assert out.data["age"].cat.ordered
    assert out.info["categories_before"] == {"age": 5} and out.info["categories_after"] == {"age": 2 + 1}


def test_recoding_with_labels_and_equal_width_bins():
    data = pd.DataFrame({"x": [0.0, 10.0, 4.0, 6.0, 5.0]})
    out = GlobalRecoding(bins=2, labels=["low", "high"]).run(data)
    # breaks 0, 5, 10: 5 falls in the upper interval
    assert out.data["x"].tolist() == ["low", "high", "low", "high", "high"]
    assert any("maximum" in w for w in out.info["warnings"])


def test_default_labels_write_the_breaks_exactly():
    out = GlobalRecoding(bins=[1_000_000, 1_000_001, 2.5e6]).apply(pd.DataFrame({"x": [1_000_000.5, 2e6]}))
    assert out["x"].tolist() == ["[1000000, 1000001)", "[1000001, 2500000]"]


def test_equal_width_bins_on_a_constant_column():
    out = GlobalRecoding(bins=3).apply(pd.DataFrame({"x": [2.0, 2.0]}))
    assert out["x"].nunique() == 1


def test_recoding_categories_by_a_mapping():
    frame = pd.DataFrame({"zip": ["13053", "13068", "14850", "99999"], "code": [1, 2, 3, 1]})
    schema = Schema.infer(frame, quasi=["zip", "code"], kinds={"code": "nominal"})
    out = GlobalRecoding(mapping={"13053": "130**", "13068": "130**", "14850": "148**", "1": "one"}).run(
        frame, schema
    )
    # unmapped 99999 stays; the int code 1 matches the string key "1" (TOML recipes)
    assert out.data["zip"].tolist() == ["130**", "130**", "148**", "99999"]
    assert out.data["code"].tolist() == ["one", 2, 3, "one"]
    assert out.schema["zip"].kind.value == "nominal"


def test_recoding_an_ordinal_column_keeps_the_order_of_consecutive_groups():
    levels = ("none", "primary", "secondary", "tertiary")
    frame = pd.DataFrame({"edu": ["none", "tertiary", "primary", "secondary"]})
    schema = Schema.infer(frame, quasi=["edu"], kinds={"edu": "ordinal"}, orders={"edu": levels})
    out = GlobalRecoding(mapping={"none": "basic", "primary": "basic"}).run(frame, schema)
    assert out.schema["edu"].order == ("basic", "secondary", "tertiary")
    assert out.data["edu"].tolist() == ["basic", "tertiary", "basic", "secondary"]
    mixed = GlobalRecoding(mapping={"none": "A", "secondary": "A"}).run(frame, schema)
    assert mixed.schema["edu"].kind.value == "nominal" and mixed.schema["edu"].order is None
    assert any("non-consecutive" in w for w in mixed.info["warnings"])


def test_recoding_through_protect_records_the_new_schema():
    frame = pd.DataFrame({"age": [20, 35, 50], "income": [1.0, 2.0, 3.0]})
    release = protect(frame, [GlobalRecoding(bins=[0, 30, 100])], schema={"quasi": ["age"]}, seed=1)
    assert release.schema["age"].kind.value == "ordinal"
    assert release.data["income"].tolist() == [1.0, 2.0, 3.0]
    release.schema.validate(release.data)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({}, "bins"),
        ({"bins": 1}, "bins"),
        ({"bins": [0, 5, 5]}, "bins"),
        ({"bins": [3, 1]}, "bins"),
        ({"bins": [0, float("nan")]}, "bins"),
        ({"mapping": {}}, "mapping"),
        ({"mapping": {"a": "b"}, "labels": ["x"]}, "labels"),
        ({"bins": [0, 1, 2], "labels": ["x"]}, "labels"),
        ({"bins": 2, "labels": ["x", "x"]}, "labels"),
    ],
)
def test_recoding_bad_parameters(params, name):
    with pytest.raises(ParameterError, match=rf"The '{name}' parameter of GlobalRecoding must be"):
        GlobalRecoding(**params)


def test_recoding_refuses_values_outside_the_breaks():
    with pytest.raises(DataError, match=r"'age'.*row 1.*-inf and inf"):
        GlobalRecoding(bins=[0, 100]).apply(pd.DataFrame({"age": [5.0, 120.0]}))


def test_recoding_refuses_columns_its_parameters_do_not_cover():
    frame = pd.DataFrame({"age": [1.0, 2.0], "sex": ["F", "M"]})
    with pytest.raises(SchemaError, match=r"'sex'.*'mapping'"):
        GlobalRecoding(bins=2, columns=["age", "sex"]).apply(frame)
    with pytest.raises(SchemaError, match=r"'age'.*'bins'"):
        GlobalRecoding(mapping={"F": "x"}, columns=["age"]).apply(frame)
    with pytest.raises(SchemaError, match="no column to recode"):
        GlobalRecoding(mapping={"F": "x"}).apply(frame[["age"]])


def test_equal_width_bins_need_a_value():
    with pytest.raises(DataError, match="'x'"):
        GlobalRecoding(bins=2).apply(pd.DataFrame({"x": [np.nan, np.nan]}))


# ----------------------------------------------------------------------------- sampling
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), fraction=st.floats(0.001, 1.0), seed=st.integers(0, 2**16))
def test_sampling_keeps_the_exact_count_of_original_rows(n, fraction, seed):
    frame = pd.DataFrame({"x": np.arange(n) * 10, "y": [f"r{i}" for i in range(n)]}, index=np.arange(n) + 100)
    out = Sampling(fraction=fraction).run(frame, seed=seed)
    expected = max(1, min(n, math.floor(fraction * n + 0.5)))
    assert len(out.data) == expected == sample_size(fraction, n) == out.info["records_out"]
    assert out.data.index.is_unique and out.data.index.is_monotonic_increasing
    pd.testing.assert_frame_equal(out.data, frame.loc[out.data.index])


def test_sample_size_hand_worked():
    assert [sample_size(f, 10) for f in (0.25, 0.35, 0.01, 1.0)] == [3, 4, 1, 10]


def test_sampling_is_uniform_over_records():
    # each of 10 records is kept with probability 0.3; over 1000 draws the count is
    # Binomial(1000, 0.3): mean 300, sd 14.5 -> allow 4 sd = 58
    frame = pd.DataFrame({"x": np.arange(10.0)})
    schema = Schema.infer(frame)
    rng = np.random.default_rng(7)
    kept = np.zeros(10)
    method = Sampling(fraction=0.3)
    for _ in range(1000):
        kept[method.run(frame, schema, rng).data.index] += 1
    assert np.all(np.abs(kept - 300) <= 58)


@pytest.mark.parametrize("fraction", [0.0, 1.5, -0.1, float("nan")])
def test_sampling_bad_fraction(fraction):
    with pytest.raises(ParameterError, match=r"The 'fraction' parameter of Sampling must be a float in \(0, 1\]"):
        Sampling(fraction=fraction)


# ----------------------------------------------------------------------------- hierarchy levels
ZIPS = Hierarchy(
    [["13053", "1305*", "130**", "*"], ["13068", "1306*", "130**", "*"], ["14850", "1485*", "148**", "*"]]
)


def test_recoding_to_a_hierarchy_level():
    frame = pd.DataFrame({"zip": ["13053", "13068", "14850", None], "x": [1.0, 2.0, 3.0, 4.0]})
    out = GlobalRecoding(hierarchy=ZIPS, level=2, columns=["zip"]).run(frame)
    assert out.data["zip"].tolist()[:3] == ["130**", "130**", "148**"] and pd.isna(out.data["zip"].iloc[3])
    assert out.schema["zip"].kind.value == "nominal"
    assert out.info["categories_after"] == {"zip": 2}
    top = GlobalRecoding(hierarchy=ZIPS, level=3, columns=["zip"]).apply(frame)
    assert top["zip"].dropna().tolist() == ["*", "*", "*"]


def test_recoding_with_a_hierarchy_file():
    # tests/data/adult/adult_hierarchy_age.csv.gz (ARX): 1 -> 0-4 -> 0-9 -> 0-19 -> *
    path = str(Path(__file__).parent / "data" / "adult" / "adult_hierarchy_age.csv.gz")
    method = GlobalRecoding(hierarchy=path, level=2, columns=["age"])
    assert isinstance(method.hierarchy, Hierarchy)
    out = method.apply(pd.DataFrame({"age": [1, 3, 12]}))
    assert out["age"].tolist() == ["0-9", "0-9", "10-19"]


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"hierarchy": ZIPS, "level": 1, "bins": 3, "columns": ["zip"]}, "hierarchy"),
        ({"hierarchy": ZIPS, "level": 4, "columns": ["zip"]}, "level"),
        ({"hierarchy": ZIPS, "columns": ["zip"]}, "level"),
        ({"hierarchy": ZIPS, "level": 1}, "columns"),
        ({"bins": 3, "level": 1}, "level"),
        ({"hierarchy": "no/such/hierarchy.csv", "level": 1, "columns": ["zip"]}, "hierarchy"),
        ({"hierarchy": ZIPS, "level": -1, "columns": ["zip"]}, "level"),
    ],
)
def test_recoding_bad_hierarchy_parameters(params, name):
    with pytest.raises(ParameterError, match=rf"The '{name}' parameter of GlobalRecoding must be"):
        GlobalRecoding(**params)


def test_recoding_refuses_a_value_missing_from_the_hierarchy():
    with pytest.raises(DataError, match=r"'zip'.*row 1") as caught:  # the row, never the value
        GlobalRecoding(hierarchy=ZIPS, level=1, columns=["zip"]).apply(pd.DataFrame({"zip": ["13053", "99999"]}))
    assert "99999" not in str(caught.value)
