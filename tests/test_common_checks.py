"""What every registered method owes (DESIGN.md section 2, the scikit-learn 'common checks').

Parametrized over :func:`sdckit.methods.available`, so a new method is checked as soon as it is
registered. Each method class declares ``example``: valid parameters on :func:`common_frame`.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, Schema, protect
from sdckit.core.result import plain
from sdckit.methods import available

METHODS = sorted(available().items())
EDUCATION = ("primary", "secondary", "tertiary")


def common_frame(n: int = 80) -> tuple[pd.DataFrame, Schema]:
    """The frame every method's ``example`` is written for, with its schema.

    Columns: ``id`` (identifier), ``age`` (numeric int, quasi), ``zip`` (5-digit string,
    nominal quasi), ``sex`` and ``region`` (nominal quasi), ``education`` (ordinal quasi),
    ``income`` and ``wealth`` (numeric confidential), ``hours`` (numeric non-confidential),
    ``disease`` (nominal confidential).
    """
    rng = np.random.default_rng(12345)
    age = rng.integers(18, 90, n)
    income = np.round(20_000 + 400 * age + rng.normal(0, 8_000, n), 2)
    frame = pd.DataFrame(
        {
            "id": np.arange(1, n + 1),
            "age": age,
            "zip": rng.choice(["13053", "13068", "14850", "14853", "13055"], n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(["north", "south", "east", "west"], n),
            "education": rng.choice(EDUCATION, n),
            "income": income,
            "wealth": np.round(income * rng.uniform(0.5, 3.0, n), 2),
            "hours": rng.normal(38, 6, n).round(1),
            "disease": rng.choice(["flu", "cancer", "asthma", "none"], n),
        }
    )
    schema = Schema.infer(
        frame,
        identifier=["id"],
        quasi=["age", "zip", "sex", "region", "education"],
        confidential=["income", "wealth", "disease"],
        non_confidential=["hours"],
        kinds={"education": "ordinal"},
        orders={"education": EDUCATION},
    )
    return frame, schema


def build(cls):
    assert cls.example is not None, f"{cls.__name__} declares no 'example' parameters"
    return cls(**cls.example)


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_registered_name_is_snake_case(name, cls):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name) and cls.name == name


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_reproducible_under_a_seed(name, cls):
    frame, schema = common_frame()
    method = build(cls)
    first = protect(frame, [method], schema=schema, seed=11).data
    second = protect(frame, [method], schema=schema, seed=11).data
    pd.testing.assert_frame_equal(first, second)


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_input_frame_untouched(name, cls):
    frame, schema = common_frame()
    before = frame.copy(deep=True)
    build(cls).apply(frame.drop(columns="id"), schema.subset(frame.columns.drop("id")), 3)
    protect(frame, [build(cls)], schema=schema, seed=3)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_every_parameter_in_the_manifest(name, cls):
    frame, schema = common_frame()
    method = build(cls)
    entry = protect(frame, [method], schema=schema, seed=5).manifest["methods"][0]
    fields = {f.name for f in dataclasses.fields(cls) if f.compare}  # not the accountant
    assert entry["name"] == name
    assert set(entry["params"]) == fields
    for field in fields:
        assert entry["params"][field] == plain(getattr(method, field)), field
    assert "seed" not in entry["params"]


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_bad_parameters_rejected_with_the_template(name, cls):
    for param in cls.constraints:
        bad = {**cls.example, param: "not a valid value"}
        pattern = rf"The '{param}' parameter of {cls.__name__} must be .+\. Got .+ instead\."
        with pytest.raises(ParameterError, match=pattern):
            cls(**bad)


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_missing_values_handled_as_documented(name, cls):
    frame, schema = common_frame()
    method = build(cls)
    data = frame.drop(columns="id")
    sub = schema.subset(data.columns)
    column = method.target_columns(sub)[0]
    row = data.index[3]
    data = data.astype({column: object if not pd.api.types.is_numeric_dtype(data[column]) else float})
    data.loc[row, column] = np.nan
    assert cls.nan_policy in ("error", "pass")
    if cls.nan_policy == "error":
        with pytest.raises(DataError, match=re.escape(repr(column))):
            method.apply(data, sub, 1)
    else:
        out = method.apply(data, sub, 1)
        if row in out.index and column in out.columns:
            assert pd.isna(out.loc[row, column])


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_refuses_an_unknown_column(name, cls):
    frame, schema = common_frame()
    method = dataclasses.replace(build(cls), columns=("no_such_column",))
    with pytest.raises(Exception, match="no_such_column"):
        protect(frame, [method], schema=schema, seed=1)


# ----------------------------------------------------------------------------- issue 12 section 2
def _kind(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series.dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(series.dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return "date"
    return "text"


@pytest.mark.parametrize(("name", "cls"), METHODS)
def test_no_missing_value_appears_where_there_was_none(name, cls):
    """No method introduces NaN where the input had none, except the suppression methods, which
    say how many cells they suppressed; a value changes kind only where the schema says so."""
    frame, schema = common_frame()
    out = build(cls).run(frame, schema, 9)
    new_missing = {c: int(out.data[c].isna().sum()) for c in out.data if c in frame and out.data[c].isna().any()}
    if cls.suppresses:
        assert sum(new_missing.values()) == out.info.get("suppressed_total", sum(new_missing.values()))
    else:
        assert new_missing == {}
    for column in out.data:
        if column in frame and out.schema[column].kind == schema[column].kind:
            assert _kind(out.data[column]) == _kind(frame[column]), column


@pytest.mark.parametrize(("name", "cls"), METHODS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e308])
def test_infinite_or_overflowing_values_are_refused_naming_the_column(name, cls, bad):
    frame, schema = common_frame()
    targets = build(cls).target_columns(schema)
    numeric = [c for c in targets if pd.api.types.is_numeric_dtype(frame[c].dtype)]
    if not numeric:
        pytest.skip(f"{name} has no numeric target column in the common frame")
    column = numeric[0]
    frame[column] = frame[column].astype(float)
    frame.loc[[3, 7], column] = bad
    with pytest.raises(DataError, match=rf"column '{column}': 2 record\(s\)"):
        build(cls).run(frame, schema, 9)


def test_a_method_that_introduces_missing_values_is_stopped():
    """The guard behind the rule: a (deliberately broken) method's NaN never reaches a release."""
    from sdckit.masking import AdditiveNoise

    class Broken(AdditiveNoise):
        def transform(self, frame, columns, schema, rng):
            frame.loc[frame.index[:3], columns[0]] = np.nan
            return frame

    frame, schema = common_frame()
    with pytest.raises(DataError, match="produced 3 missing value"):
        Broken(alpha=0.1, columns=["income"]).run(frame, schema, 1)
