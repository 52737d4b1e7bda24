"""t-closeness when suppression removes the only record with a sensitive value (issue 27).

The ordered ground distance is ``|i - j| / (m - 1)`` over the attribute's ordered domain of ``m``
values. ``check()`` sees only the release, so without a declared domain (a schema's ordinal
order) the domain is the values the published table holds; the search must measure the kept
classes over that same domain, or it releases tables that ``check()`` rejects.

Hand-worked: s in {1, 2, 3}; class a = one record (s = 3), b = s 1, 1, 1, 2 and c = s 1, 2, 2, 2;
k = 2, one record may be suppressed, t = 0.22.

* The whole table: q = (4/9, 4/9, 1/9). a: r = (-4/9, -4/9, 8/9), cumulative -4/9, -8/9, 0 ->
  (12/9) / 2 = 2/3. b: r = p - q = (11/36, -7/36, -4/36), cumulative sums
  11/36, 4/36, 0 -> EMD = (15/36) / 2 = 0.2083 <= 0.22; c: cumulative -7/36, 4/36, 0 ->
  (11/36) / 2 = 0.1528. Only a violates (k), and suppressing it is within MaxSup.
* The published table (b and c) holds s = 1 and 2 only: q = (1/2, 1/2). b: r = (1/4, -1/4), EMD =
  (1/4) / (m - 1 = 1) = 0.25 > 0.22, and c the same. (Over the old domain {1, 2, 3} with the
  published q = (1/2, 1/2, 0): cumulative 1/4, 0, 0 -> (1/4) / 2 = 0.125, which passed.)

So level 0 with a suppressed is not a release that passes ``check()``: the search must take
level 1 (one class of all 9 records, EMD 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.anonymity import FullDomainGeneralization, Hierarchy, KAnonymity, TCloseness, check
from sdckit.core.errors import DataError
from sdckit.core.schema import Schema

T = TCloseness(0.22, "s", distance="ordered")
G = {"g": Hierarchy([["a", "*"], ["b", "*"], ["c", "*"]])}


def _data() -> pd.DataFrame:
    return pd.DataFrame({"g": ["a"] + ["b"] * 4 + ["c"] * 4, "s": [3, 1, 1, 1, 2, 1, 2, 2, 2]})


def test_check_measures_over_the_values_the_release_holds():
    release = _data()[lambda d: d["g"] != "a"]  # what the search released before the fix
    report = check(release, ["g"], [KAnonymity(2), T])
    assert report.classes[T.label()].tolist() == pytest.approx([0.25, 0.25])
    assert not report.satisfied
    whole = check(_data()[lambda d: d["g"] != "a"].assign(g="*"), ["g"], [T])
    assert whole.classes[T.label()].tolist() == pytest.approx([0.0])


def test_the_whole_table_measures_by_hand():
    report = check(_data(), ["g"], [T])
    assert report.classes[T.label()].tolist() == pytest.approx([2 / 3, 15 / 72, 11 / 72])


def test_the_search_measures_over_the_published_values():
    out = FullDomainGeneralization(2, G, max_suppression=0.15, criteria=(T,)).run(_data())
    assert out.info["node"] == {"g": 1} and out.info["suppressed"] == 0
    assert check(out.data, ["g"], [KAnonymity(2), T]).satisfied


def test_a_declared_order_is_the_domain_on_both_sides():
    """With the order declared (schema, ordinal 1 < 2 < 3), the domain stays {1, 2, 3} after the
    suppression: b and c are 0.125 away, level 0 with a suppressed is released, and check() with
    the same schema accepts it."""
    schema = Schema.infer(_data(), quasi=["g"], kinds={"s": "ordinal"}, orders={"s": [1, 2, 3]})
    out = FullDomainGeneralization(2, G, max_suppression=0.15, criteria=(T,)).run(_data(), schema=schema)
    assert out.info["node"] == {"g": 0} and out.info["suppressed"] == 1
    report = check(out.data, ["g"], [KAnonymity(2), T], schema=schema)
    assert report.satisfied and report.classes[T.label()].tolist() == pytest.approx([0.125, 0.125])


HIER = {"g": Hierarchy([[v, "ab" if v in "ab" else "cd", "*"] for v in "abcd"]),
        "h": Hierarchy([[v, "*"] for v in "xy"])}


@st.composite
def tables(draw):
    """Small tables where a rare sensitive value often sits alone in a small class."""
    n = draw(st.integers(8, 24))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    top = draw(st.integers(2, 5))
    s = rng.integers(0, top, n)
    s[rng.integers(0, n, draw(st.integers(0, 2)))] = top  # one or two records with the top value
    return pd.DataFrame({"g": rng.choice(list("abcd"), n), "h": rng.choice(list("xy"), n), "s": s})


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables(), st.sampled_from([0.1, 0.15, 0.2, 0.3]), st.sampled_from(["ordered", "equal"]),
       st.sampled_from([0.2, 0.4]))
def test_check_accepts_every_release(data, t, distance, max_suppression):
    criterion = TCloseness(t, "s", distance=distance)
    try:
        out = FullDomainGeneralization(2, HIER, max_suppression=max_suppression, criteria=(criterion,)).run(data)
    except DataError:  # no generalization satisfies the criteria
        return
    assert check(out.data, ["g", "h"], [KAnonymity(2), criterion]).satisfied
