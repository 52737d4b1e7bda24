"""t-closeness with suppression is measured against the published table (issue 19 item 10).

Hand-worked: classes a (10 records, 0 of them 'yes'), b (20, 1 'yes') and c (30, 12 'yes').
The whole table has 13/60 = 0.217 'yes'; with t = 0.2 (equal distance: EMD = |p - P|), a is
0.217 away and violates, b (0.05) and c (0.4) do not. Suppressing a (10 of 60 records, within
20%) publishes b and c, whose share is 13/50 = 0.26: b is now 0.21 away and violates. The
release must be measured against that published table: a and b would both be suppressed (50%,
over the limit), so level 0 is not acceptable and the search generalizes g.
"""

from __future__ import annotations

import pandas as pd

from sdckit.anonymity import FullDomainGeneralization, Hierarchy, KAnonymity, TCloseness, check


def _data() -> pd.DataFrame:
    g = ["a"] * 10 + ["b"] * 20 + ["c"] * 30
    yes = [0] * 10 + [1] + [0] * 19 + [1] * 12 + [0] * 18
    return pd.DataFrame({"g": g, "disease": ["yes" if v else "no" for v in yes]})


HIERARCHY = {"g": Hierarchy([["a", "*"], ["b", "*"], ["c", "*"]])}
T = TCloseness(0.2, "disease")


def test_the_old_release_fails_t_closeness_against_itself():
    """What measuring against the table before suppression released: a suppressed, b and c
    kept at level 0 — and check() rejects it. The test can fail."""
    data = _data()
    old_release = data[data["g"] != "a"]
    assert not check(old_release, ["g"], [KAnonymity(2), T]).satisfied


def test_the_release_passes_t_closeness_against_itself():
    data = _data()
    method = FullDomainGeneralization(2, HIERARCHY, max_suppression=0.2, criteria=(T,))
    out = method.run(data)
    assert out.info["node"] == {"g": 1}  # level 0 would need 50% suppression
    assert check(out.data, ["g"], [KAnonymity(2), T]).satisfied


def test_without_the_chain_reaction_level_0_stays():
    """Control: with t = 0.212, a (0.217) still violates but b (0.21 from the published 0.26) passes, so suppressing a alone
    is enough and level 0 is chosen; the release passes check() too."""
    data = _data()
    t = TCloseness(0.212, "disease")
    out = FullDomainGeneralization(2, HIERARCHY, max_suppression=0.2, criteria=(t,)).run(data)
    assert out.info["node"] == {"g": 0} and set(out.data["g"]) == {"b", "c"}
    assert check(out.data, ["g"], [KAnonymity(2), t]).satisfied
