"""Error messages name a column and a row, never a confidential value (issue 12 section 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit import SdcError
from sdckit.anonymity import FullDomainGeneralization, Hierarchy
from sdckit.core.schema import Schema
from sdckit.masking import GlobalRecoding, Pram

SECRET = 4242.75  # a distinctive confidential value
SECRET_TEXT = "Zanzibar-77"


def _message(call) -> str:
    with pytest.raises(SdcError) as caught:
        call()
    return str(caught.value)


def test_global_recoding_outside_the_breaks():
    frame = pd.DataFrame({"income": [10.0, 20.0, SECRET, 30.0]})
    message = _message(lambda: GlobalRecoding(bins=[0, 100], columns=["income"]).run(frame))
    assert "'income'" in message and "row 2" in message
    assert "4242" not in message


def test_hierarchy_without_the_value():
    frame = pd.DataFrame({"city": ["a", "b", SECRET_TEXT, "a"], "x": [1, 2, 3, 4]})
    hierarchy = Hierarchy([["a", "*"], ["b", "*"]])
    message = _message(lambda: FullDomainGeneralization(2, {"city": hierarchy}).run(frame))
    assert "'city'" in message and "row 2" in message and SECRET_TEXT not in message


def test_pram_without_a_transition():
    frame = pd.DataFrame({"x": ["a", "b", SECRET_TEXT, "a"]})
    matrix = {"x": {"a": {"a": 0.9, "b": 0.1}, "b": {"a": 0.1, "b": 0.9}}}
    message = _message(lambda: Pram(matrix=matrix, columns=["x"]).run(frame))
    assert "'x'" in message and "row 2" in message and SECRET_TEXT not in message


def test_sensitive_value_outside_its_order():
    frame = pd.DataFrame({"q": ["x"] * 4, "s": ["low", "high", SECRET_TEXT, "low"]})
    message = _message(lambda: Schema.infer(frame, quasi=["q"], confidential=["s"], kinds={"s": "ordinal"},
                                            orders={"s": ("low", "high")}))
    assert "'s'" in message and "row 2" in message and SECRET_TEXT not in message
