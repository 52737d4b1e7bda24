"""k-anonymity by MDAV microaggregation of the quasi-identifiers (seed 003 section 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, Schema
from sdckit.anonymity import KAnonymity, MicroaggregationAnonymity, check


def test_release_is_k_anonymous_with_cluster_values():
    rng = np.random.default_rng(7)
    order = ("low", "mid", "high")
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, 60).astype(float),
        "sex": rng.choice(["F", "M"], 60),
        "edu": rng.choice(order, 60),
    })
    schema = Schema.infer(frame, quasi=["age", "sex", "edu"], kinds={"edu": "ordinal"}, orders={"edu": order})
    part = MicroaggregationAnonymity(4, ("age", "sex", "edu")).partition(frame, schema)
    sizes = part.sizes
    assert sizes.min() >= 4 and sizes.max() <= 7
    assert check(part.data, ["age", "sex", "edu"], [KAnonymity(4)]).satisfied
    for c in range(part.n_classes):
        members = part.classes == c
        assert part.data["age"][members].iloc[0] == pytest.approx(frame["age"][members].mean())
        counts = frame["sex"][members].value_counts()
        assert counts[part.data["sex"][members].iloc[0]] == counts.max()
        pos = sorted(order.index(v) for v in frame["edu"][members])
        assert part.data["edu"][members].iloc[0] == order[pos[(len(pos) - 1) // 2]]


def test_bad_inputs():
    frame = pd.DataFrame({"age": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="The 'k' parameter of MicroaggregationAnonymity"):
        MicroaggregationAnonymity(1, ("age",))
    with pytest.raises(ParameterError, match="'quasi' parameter"):
        MicroaggregationAnonymity(2, ())
    with pytest.raises(DataError, match="at least 5 records"):
        MicroaggregationAnonymity(5, ("age",)).partition(frame)
    with pytest.raises(Exception, match="nope"):
        MicroaggregationAnonymity(2, ("nope",)).partition(frame)


def test_classes_are_the_groups_of_identical_released_values():
    # Issue 19 item 13: with nominal quasi-identifiers several MDAV clusters receive the same
    # modes; they form one equivalence class of the release, not several.
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "region": rng.choice(["n", "s", "e"], n)})
    part = MicroaggregationAnonymity(3, ("sex", "region")).partition(frame)
    released = list(zip(part.data["sex"], part.data["region"]))
    distinct = sorted(set(released))
    assert part.n_classes == len(distinct) == part.info["classes"]
    assert part.info["clusters"] > part.info["classes"]  # clusters did collide
    # Brute force: two records share a class exactly when their released values are equal.
    for i in range(0, n, 7):
        for j in range(n):
            assert (part.classes[i] == part.classes[j]) == (released[i] == released[j])
    sizes = np.bincount(part.classes)
    assert part.info["smallest_class"] == sizes.min() >= 3
    assert sizes.sum() == n


@pytest.mark.parametrize("column", ["age", "sex"])
def test_partition_applies_the_missing_value_policy(column):
    # Issue 19 item 12: partition() called directly turned NaN into a category of its own.
    frame = pd.DataFrame({"age": [20.0, 30.0, 40.0, 50.0], "sex": ["F", "M", "F", "M"]})
    frame.loc[2, column] = np.nan
    with pytest.raises(DataError, match=rf"'{column}' is missing in 1 record\(s\), first at row 2"):
        MicroaggregationAnonymity(2, ("age", "sex")).partition(frame)
