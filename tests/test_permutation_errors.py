"""Every bad input of sdckit.permutation gives a clear SdcError naming the culprit."""

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError, SchemaError
from sdckit.permutation import (
    assess,
    assign_linkage,
    decompose,
    intruder_linkage,
    permutation_distances,
    permuted_privacy,
    rank_correlation,
    rank_displacement,
    reverse_map,
    verify_linkage,
    verify_subject,
)
from sdckit.permutation.subject import parse_record

X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]})
Y = pd.DataFrame({"a": [1.5, 2.5, 0.5], "b": [2.0, 3.0, 1.0]})
PAIRWISE = [reverse_map, decompose, rank_correlation, permutation_distances, intruder_linkage,
            assign_linkage, verify_linkage, rank_displacement, assess,
            lambda x, y, *a, **k: permuted_privacy(x, y, 0, [0, 0], *a, **k)]


@pytest.mark.parametrize("func", PAIRWISE)
@pytest.mark.parametrize("which", ["original", "released"])
def test_missing_value_names_column_and_frame(func, which):
    bad = (X if which == "original" else Y).copy()
    bad.loc[1, "b"] = np.nan
    args = (bad, Y) if which == "original" else (X, bad)
    with pytest.raises(DataError, match=rf"{which} data.*'b'.*row 1"):
        func(*args)


@pytest.mark.parametrize("func", PAIRWISE)
def test_too_few_records(func):
    with pytest.raises(DataError, match="original data has 1 record"):
        func(X.iloc[:1], Y)
    with pytest.raises(DataError, match="released data has 0 record"):
        func(X, Y.iloc[:0])


@pytest.mark.parametrize("func", PAIRWISE)
def test_not_a_frame(func):
    with pytest.raises(DataError, match="must be a pandas DataFrame"):
        func(X.to_numpy(), Y)


@pytest.mark.parametrize("func", PAIRWISE)
def test_mismatched_columns(func):
    with pytest.raises(SchemaError, match="Column 'b' is not in the released data"):
        func(X, Y.rename(columns={"b": "c"}), columns=["a", "b"])
    with pytest.raises(SchemaError, match="no column that can be ranked"):
        func(X.rename(columns={"a": "p", "b": "q"}), Y)
    with pytest.raises(SchemaError, match="Column 'zz' is not in the original data"):
        func(X, Y, columns=["a", "zz"])


def test_duplicate_and_empty_column_lists():
    with pytest.raises(SchemaError, match="Column 'a' is named twice"):
        permutation_distances(X, Y, ["a", "a"])
    with pytest.raises(SchemaError, match="No columns"):
        permutation_distances(X, Y, [])


@pytest.mark.parametrize("func", PAIRWISE)
def test_nominal_column_without_order(func):
    x = X.assign(city=["x", "y", "z"])
    y = Y.assign(city=["z", "y", "x"])
    with pytest.raises(SchemaError, match="'city'.*nominal"):
        func(x, y, columns=["a", "city"])  # named explicitly: refused; by default it is left out


def test_ordinal_value_outside_order_and_bad_schema_type():
    x = X.assign(g=["lo", "hi", "lo"])
    y = Y.assign(g=["lo", "mid", "hi"])
    with pytest.raises(SchemaError, match="released data.*'g' holds 'mid'"):
        permutation_distances(x, y, schema={"g": ["lo", "hi"]})
    with pytest.raises(SchemaError, match="'schema' argument"):
        permutation_distances(X, Y, schema=["a"])


@pytest.mark.parametrize("kwargs, name", [
    ({"ties": "last"}, "ties"),
    ({"seed": -1}, "seed"),
])
def test_bad_common_parameters(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        permutation_distances(X, Y, **kwargs)


@pytest.mark.parametrize("d, v, match", [
    (-1, [0, 0], "'d' parameter of permuted_privacy must be an int >= 0. Got -1"),
    (1.5, [0, 0], "'d' parameter"),
    (1, [0], "'v' parameter of permuted_privacy must be a sequence of 2"),
    (1, [0, -1], r"'v\[b\]' parameter of permuted_privacy must be a float >= 0. Got -1"),
    (1, {"a": 0, "c": 1}, "unknown column 'c'"),
    (1, {"a": 0}, "no value for column 'b'"),
    (1, "ab", "'v' parameter"),
])
def test_bad_permuted_privacy_parameters(d, v, match):
    with pytest.raises(ParameterError, match=match):
        permuted_privacy(X, Y, d, v)


@pytest.mark.parametrize("kwargs, match", [
    ({"null": "uniform"}, "'null' parameter of {} must be one of"),
    ({"n_random": 1}, "'n_random' parameter of {} must be an int >= 2. Got 1"),
    ({"n_null": 0}, "'n_null' parameter"),
    ({"exhaustive_limit": -1}, "'exhaustive_limit' parameter"),
])
def test_bad_verify_parameters(kwargs, match):
    """Each function names itself in the one template (issue 29 item 3: assess used to say
    verify_linkage)."""
    with pytest.raises(ParameterError, match=match.format("verify_linkage")):
        verify_linkage(X, Y, **kwargs)
    with pytest.raises(ParameterError, match=match.format("assess")):
        assess(X, Y, **kwargs)


def test_every_public_function_with_options_declares_its_rules():
    """The public functions of the permutation paradigm check their options with the declared
    rules (sdckit.core.params.validated; issue 29 item 3), which tests/test_function_checks.py
    then tries at their bounds: every one with a ``ties`` option, and none refuses in its own words."""
    import inspect

    import sdckit.permutation as permutation

    with_options = [name for name in permutation.__all__ if inspect.isfunction(getattr(permutation, name))
                    and "ties" in inspect.signature(getattr(permutation, name)).parameters]
    assert len(with_options) == 11
    for name in with_options:
        function = getattr(permutation, name)
        assert "ties" in getattr(function, "constraints", {}), name
        with pytest.raises(ParameterError, match=f"The 'ties' parameter of {name} must be one of"):
            function.check_parameters(*((X, Y, 1, [0, 0]) if name == "permuted_privacy" else (X, Y)), ties="last")


def test_bad_truth_and_sizes():
    with pytest.raises(ParameterError, match="'truth' parameter must be an int array of 3"):
        intruder_linkage(X, Y, truth=[0, 1])
    with pytest.raises(ParameterError, match=r"'truth' parameter must hold positions in \[0, 2\]"):
        intruder_linkage(X, Y, truth=np.array([0, 1, 3]))
    y4 = pd.concat([Y, Y.iloc[:1]], ignore_index=True)
    with pytest.raises(DataError, match="give 'truth'"):
        intruder_linkage(X, y4)
    with pytest.raises(DataError, match="rank_correlation pairs original and released"):
        rank_correlation(X, y4)
    with pytest.raises(DataError, match="rank_displacement pairs"):
        rank_displacement(X, y4)
    with pytest.raises(DataError, match="assign_linkage pairs"):
        assign_linkage(X, y4)
    with pytest.raises(ParameterError, match="'k' parameter of assign_linkage must be an int >= 1"):
        assign_linkage(X, Y, k=0)


def test_bad_subject_records():
    with pytest.raises(SchemaError, match="Column 'zz' is not in the released data"):
        verify_subject({"zz": 1}, Y)
    with pytest.raises(SchemaError, match="Column 'b' has no value in the record"):
        verify_subject({"a": 1}, Y, ["a", "b"])
    with pytest.raises(DataError, match="non-empty mapping"):
        verify_subject({}, Y)
    with pytest.raises(DataError, match="Column 'a': the record's value 'abc' is not a valid"):
        verify_subject({"a": "abc"}, Y)
    cat = Y.assign(g=pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True))
    with pytest.raises(SchemaError, match="Column 'g': the record's value 'mid' is not one of"):
        verify_subject({"g": "mid"}, cat)
    with pytest.raises(DataError, match="record's value|missing"):
        verify_subject({"a": float("nan")}, Y)
    with pytest.raises(ParameterError, match="'permutation' parameter"):
        verify_subject({"a": 1}, Y, permutation="yes")


@pytest.mark.parametrize("text, match", [
    ("a", "Bad --record part 'a'"),
    ("a=", "Bad --record part 'a='"),
    ("=1", "Bad --record part '=1'"),
    ("a=1,,b=2", "Bad --record part ''"),
    ("a=1,a=2", "Column 'a' is given twice"),
])
def test_bad_record_strings(text, match):
    with pytest.raises(DataError, match=match):
        parse_record(text)


def test_good_record_string():
    assert parse_record(" a = 1 , b=x y") == {"a": "1", "b": "x y"}


@pytest.mark.parametrize("text", [",", "a,,b", " "])
def test_bad_columns_option(text):
    from sdckit.cli.assess import parse_columns

    with pytest.raises(DataError, match="Bad --columns"):
        parse_columns(text)


def test_progress_callback_and_json_friendly_result():
    import json

    calls = []
    x = pd.DataFrame({"a": np.arange(100.0), "b": np.ones(100)})  # b is constant
    y = x + 0.5
    result = assess(x, y, n_random=300, n_null=3, seed=0, ties="first",
                    progress=lambda done, total, label: calls.append((done, total, label)))
    labels = {label for _, _, label in calls}
    assert {"distances", "linking", "verification replicates"} <= labels
    assert all(done <= total for done, total, _ in calls)
    assert calls[-1][2] == "verification replicates" and calls[-1][0] == calls[-1][1]
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["rank_correlation"]["b"] is None  # undefined for a constant column
    assert data["linkage"]["records"][0]["matches"] == [0]


def test_default_columns_are_those_both_have_and_can_be_ranked():
    """Issue 12 section 5: the release dropped the identifier and a nominal column is present."""
    from sdckit.permutation.assess import assess

    original = X.assign(ID=range(len(X)), region=["n", "s"] * (len(X) // 2) + ["n"] * (len(X) % 2))
    released = Y.assign(region=original["region"].to_numpy())
    result = assess(original, released, seed=1, n_random=200)
    assert result.columns == ("a", "b")
    assert ("columns assessed", "a, b") in result.summary()
