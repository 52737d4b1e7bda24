"""Mondrian: k-anonymous output, classes below 2k on continuous data, ranges, loss."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, SchemaError
from sdckit.anonymity import DistinctLDiversity, Hierarchy, KAnonymity, Mondrian, check


def parse(label):
    if label.startswith("["):
        lo, hi = label[1:-1].rsplit("-", 1) if not label[1:].startswith("-") else label[1:-1].split("--")
        return float(lo), float(hi)
    return float(label), float(label)


@pytest.mark.parametrize("k", [2, 5, 10])
def test_continuous_classes_between_k_and_2k(k):
    rng = np.random.default_rng(k)
    frame = pd.DataFrame(rng.uniform(0, 100, size=(997, 3)).round(6) + 1000, columns=["a", "b", "c"])
    part = Mondrian(k, ("a", "b", "c")).partition(frame)
    sizes = part.sizes
    assert sizes.min() >= k and sizes.max() < 2 * k
    assert check(part.data, ["a", "b", "c"], [KAnonymity(k)]).satisfied
    # every released range holds the original value, and equals its class's min..max
    for col in "abc":
        bounds = np.array([parse(s) for s in part.data[col]])
        x = frame[col].to_numpy()
        assert np.all(bounds[:, 0] <= x + 1e-3) and np.all(x <= bounds[:, 1] + 1e-3)
    assert part.data.index.equals(frame.index)


def test_hand_example_ranges_and_numerical_precision():
    # x = 1, 2, 3, 4 with k = 2: lower median 2 -> {1, 2} and {3, 4}.
    # Numerical precision: each record's range 1 over the table's range 3 -> loss 1/3.
    frame = pd.DataFrame({"x": [4, 1, 3, 2]})
    part = Mondrian(2, ("x",)).partition(frame)
    assert part.data["x"].tolist() == ["[3-4]", "[1-2]", "[3-4]", "[1-2]"]
    assert part.info["loss"] == pytest.approx(1 / 3)
    assert part.classes[0] == part.classes[2] and part.classes[1] == part.classes[3]


def test_ties_never_split_equal_values():
    frame = pd.DataFrame({"x": [1, 1, 1, 1, 1, 2, 2, 3, 3, 3]})
    part = Mondrian(2, ("x",)).partition(frame)
    assert check(part.data, ["x"], [KAnonymity(2)]).satisfied
    # records with equal values always share a class
    assert part.data.groupby(frame["x"])["x"].nunique().max() == 1


def test_categorical_cut_along_the_hierarchy():
    h = Hierarchy.groups({"flu": "resp", "asthma": "resp", "cancer": "tumour", "leukemia": "tumour"})
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"d": rng.choice(["flu", "asthma", "cancer", "leukemia"], 200), "age": rng.integers(20, 80, 200)})
    part = Mondrian(5, ("d", "age"), hierarchies={"d": h}).partition(frame)
    assert check(part.data, ["d", "age"], [KAnonymity(5)]).satisfied
    parents = {"flu": "resp", "asthma": "resp", "cancer": "tumour", "leukemia": "tumour"}
    for orig, gen in zip(frame["d"], part.data["d"]):
        assert gen in (orig, parents[orig], "*")
    assert set(part.data["d"]) - {"*"}  # some region got below the root


def test_l_diversity_with_mondrian():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400), "s": rng.choice(list("xyzw"), 400, p=[.7, .1, .1, .1])})
    crit = DistinctLDiversity(3, "s")
    part = Mondrian(4, ("a", "b"), criteria=[crit]).partition(frame)
    assert check(part.data, ["a", "b"], [KAnonymity(4), crit]).satisfied


def test_ordinal_and_nominal_columns():
    order = ("primary", "secondary", "tertiary")
    frame = pd.DataFrame({"edu": pd.Categorical(["primary", "secondary", "tertiary"] * 10, categories=order, ordered=True),
                          "sex": ["F", "M"] * 15})
    part = Mondrian(3, ("edu", "sex")).partition(frame)
    assert check(part.data, ["edu", "sex"], [KAnonymity(3)]).satisfied
    assert set(part.data["edu"]) <= {"primary", "secondary", "tertiary", "[primary..secondary]",
                                     "[secondary..tertiary]", "[primary..tertiary]"}


def test_bad_inputs():
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "s": ["a", "a", "b"]})
    with pytest.raises(ParameterError, match="The 'k' parameter of Mondrian must be an int >= 2"):
        Mondrian(1, ("x",))
    with pytest.raises(ParameterError, match="'quasi' parameter of Mondrian"):
        Mondrian(2, ())
    with pytest.raises(ParameterError, match="'hierarchies' parameter of Mondrian"):
        Mondrian(2, ("x",), hierarchies={"x": 3})
    with pytest.raises(SchemaError, match="nope"):
        Mondrian(2, ("nope",)).partition(frame)
    with pytest.raises(DataError, match="whole table"):
        Mondrian(4, ("x",)).partition(frame)
    with pytest.raises(DataError, match="whole table"):
        Mondrian(2, ("x",), criteria=[DistinctLDiversity(3, "s")]).partition(frame)
    with pytest.raises(DataError, match="'x'"):
        Mondrian(2, ("x",)).apply(frame.assign(x=[1.0, np.nan, 3.0]))


def test_dates_come_out_as_iso_ranges():
    days = pd.to_datetime("2020-01-01") + pd.to_timedelta(np.arange(40) * 9, unit="D")
    frame = pd.DataFrame({"day": days})
    part = Mondrian(4, ("day",)).partition(frame)
    assert check(part.data, ["day"], [KAnonymity(4)]).satisfied
    first = part.data["day"].iloc[0]
    assert first.startswith("[2020-01-01-") and first.endswith("]")
