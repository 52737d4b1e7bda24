"""Full-domain generalization forms its classes on exactly the values it releases (issue 19 item 4).

The attack: distinct values that share a hierarchy key (int64 ids above 2**53 seen through a
float, sub-second timestamps cut to the second) fell into one class during the search while
being released raw — k = 1 in the published file. The oracle counts the released combinations
by brute force.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from sdckit.anonymity import FullDomainGeneralization, Hierarchy
from sdckit.core.errors import DataError
from sdckit.core.hierarchy import value_keys

BIG = 2**53


def released_k(frame: pd.DataFrame, columns: list[str]) -> int:
    counts = Counter(map(tuple, frame[columns].astype(object).itertuples(index=False)))
    return min(counts.values())


def test_int64_above_2_53_keep_distinct_keys():
    keys = value_keys(pd.Series([BIG, BIG + 1], dtype="int64"))
    assert list(keys) == [str(BIG), str(BIG + 1)]
    # the float route the old keys took merges them: the test can fail
    assert float(BIG) == float(BIG + 1)


def test_sub_second_timestamps_keep_distinct_keys():
    stamps = pd.Series(pd.to_datetime(["2024-05-01 10:00:00.1", "2024-05-01 10:00:00.7",
                                       "2024-05-01 10:00:00.000000001"]))
    keys = value_keys(stamps)
    assert len(set(keys)) == 3
    assert keys[2] == "2024-05-01T10:00:00.000000001"
    whole = value_keys(pd.Series(pd.to_datetime(["2024-05-01 10:00:01", "2024-05-02 11:00:00"])))
    assert list(whole) == ["2024-05-01T10:00:01", "2024-05-02T11:00:00"]


def test_the_release_of_large_ids_is_k_anonymous():
    ids = np.array([BIG, BIG + 1, BIG + 2, BIG + 3], dtype=np.int64)
    frame = pd.DataFrame({"id": np.repeat(ids, [1, 1, 2, 2]), "sex": ["F"] * 6})
    table = [[str(v), "big" if v < BIG + 2 else "bigger", "*"] for v in ids.tolist()]
    method = FullDomainGeneralization(2, {"id": Hierarchy(table), "sex": Hierarchy([["F", "*"]])})
    out = method.run(frame)
    assert released_k(out.data, ["id", "sex"]) >= 2
    assert out.info["node"]["id"] >= 1  # level 0 has two unique ids: it cannot be chosen


def test_timestamps_not_in_the_hierarchy_are_refused_not_merged():
    frame = pd.DataFrame({"t": pd.to_datetime(["2024-05-01 10:00:00.1", "2024-05-01 10:00:00.7"])})
    table = [["2024-05-01T10:00:00", "2024-05-01", "*"]]  # keyed to the second only
    with pytest.raises(DataError, match="t"):
        FullDomainGeneralization(2, {"t": Hierarchy(table)}).run(frame)
