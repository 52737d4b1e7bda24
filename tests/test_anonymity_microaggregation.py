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
