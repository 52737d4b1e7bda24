"""Local suppression under the strict rule, a suppressed cell being '*' (issue 19 item 3).

The attack: an intruder who knows his target's true quasi-identifiers looks for the released
records that could be her — under Samarati and Sweeney's definition, those with exactly her
released pattern. The oracle below counts them by brute force, independently of sdckit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.anonymity import KAnonymity, check
from sdckit.core.errors import DataError, ParameterError
from sdckit.masking import LocalSuppression


def strict_oracle(frame: pd.DataFrame) -> list[int]:
    """For every record, the records whose released pattern equals its own ('*' for missing)."""
    rows = [tuple("*" if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)]
    return [sum(other == row for other in rows) for row in rows]


def wildcard_oracle(frame: pd.DataFrame) -> list[int]:
    rows = list(frame.itertuples(index=False))
    return [sum(all(pd.isna(a) or pd.isna(b) or a == b for a, b in zip(r, s)) for s in rows) for r in rows]


# The table of the attack: three (F, 1), and one (M, 1) whose sex alone makes her unique.
ATTACK = pd.DataFrame({"sex": ["F", "F", "F", "M"], "zip": ["1", "1", "1", "1"]})


def test_the_wildcard_release_leaves_the_target_alone_under_the_strict_rule():
    """Today's behaviour (the wildcard rule) fails Samarati/Sweeney's k: the test can fail."""
    out = LocalSuppression(k=2, missing="wildcard").run(ATTACK)
    assert min(wildcard_oracle(out.data)) >= 2
    assert min(strict_oracle(out.data)) == 1  # the suppressed M is the only (*, 1): found
    assert out.info["k_strict"] == 1 and out.info["k_wildcard"] >= 2


def test_the_default_strict_release_hides_the_target_among_k():
    out = LocalSuppression(k=2).run(ATTACK)
    assert min(strict_oracle(out.data)) >= 2
    assert out.info["k_strict"] == min(strict_oracle(out.data)) == out.info["min_class_count"]
    assert out.info["k_wildcard"] == min(wildcard_oracle(out.data))
    # Hand-worked optimum: the M record's sex plus one F record's sex (the F class keeps 2).
    assert out.info["suppressed_total"] == 2 and out.data["zip"].notna().all()
    # sdckit's own check agrees (a missing cell is a category of its own there).
    assert check(out.data.fillna("*"), ["sex", "zip"], KAnonymity(2)).satisfied


def test_hand_worked_example_three_columns():
    data = pd.DataFrame({"a": ["x", "x", "x", "x", "y"], "b": ["1", "1", "2", "2", "2"], "c": ["p"] * 5})
    out = LocalSuppression(k=2).run(data)
    # (y, 2) joins (x, 2) by suppressing a: [(x,1)x2, (x,2)x2, (*,2)x1] -> (*,2) alone, so a
    # twin of (x,2) must move along: (x,2)x1 and (*,2)x2 then breaks (x,2)... the greedy takes
    # the whole twin class instead: (x,1)x2, (*,2)x3. Three cells, all in column a.
    assert strict_oracle(out.data) == [2, 2, 3, 3, 3]
    assert out.info["suppressed"] == {"a": 3, "b": 0, "c": 0}


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(1, 25), m=st.integers(1, 4), k=st.integers(1, 5))
def test_output_is_k_anonymous_under_the_strict_rule(data, n, m, k):
    values = data.draw(st.lists(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=m, max_size=m),
                                min_size=n, max_size=n))
    frame = pd.DataFrame(values, columns=[f"q{j}" for j in range(m)], dtype=object)
    if n < k:
        with pytest.raises(DataError, match=f"k={k}"):
            LocalSuppression(k=k).run(frame)
        return
    out = LocalSuppression(k=k).run(frame)
    counts = strict_oracle(out.data)
    assert min(counts) >= k and out.info["k_strict"] == min(counts)
    assert out.info["k_wildcard"] == min(wildcard_oracle(out.data))
    before, after = frame.isna().to_numpy(), out.data.isna().to_numpy()
    assert np.all(after >= before)  # nothing is un-suppressed
    unchanged = ~after
    assert (out.data.to_numpy()[unchanged] == frame.to_numpy()[unchanged]).all()
    assert out.info["suppressed_total"] == int((after & ~before).sum())


@pytest.mark.parametrize("bad", ["any", "", None, 1])
def test_bad_missing_rule_is_refused(bad):
    with pytest.raises(ParameterError, match="missing"):
        LocalSuppression(k=2, missing=bad)
