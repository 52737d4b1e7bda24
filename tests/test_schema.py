import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, Kind, Role, Schema, SchemaError


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "id": [1, 2, 3],
            "age": [30, 41, 52],
            "income": [2.5, 3.0, np.nan],
            "sex": ["f", "m", "f"],
            "employed": [True, False, True],
            "born": pd.to_datetime(["1990-01-02", "1985-03-04", "1970-05-06"]),
            "edu": pd.Categorical(["low", "high", "mid"], categories=["low", "mid", "high"], ordered=True),
        }
    )


def test_kinds_are_inferred_from_dtypes(frame):
    schema = Schema.infer(frame)
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {
        "id": Kind.NUMERIC, "age": Kind.NUMERIC, "income": Kind.NUMERIC, "sex": Kind.NOMINAL,
        "employed": Kind.NOMINAL, "born": Kind.DATE, "edu": Kind.ORDINAL,
    }
    assert schema["edu"].order == ("low", "mid", "high")
    assert not schema.roles_declared
    assert all(c.role is None for c in schema.columns)


def test_roles_and_overrides(frame):
    schema = Schema.infer(
        frame, identifier=["id"], quasi=["age", "sex"], confidential="income",
        kinds={"age": "ordinal", "sex": "ordinal"}, orders={"sex": ["m", "f"]},
    )
    assert schema["id"].role is Role.IDENTIFIER
    assert schema["income"].role is Role.CONFIDENTIAL
    assert schema["born"].role is None
    assert schema["age"].kind is Kind.ORDINAL and schema["age"].order is None  # numeric: natural order
    assert schema["sex"].order == ("m", "f")
    assert schema.with_role(Role.QUASI) == ("age", "sex")


def test_select_uses_roles_only_when_declared(frame):
    bare = Schema.infer(frame)
    assert bare.select({Role.CONFIDENTIAL}, {Kind.NUMERIC}) == ("id", "age", "income")
    declared = Schema.infer(frame, confidential=["income"], quasi=["sex"])
    assert declared.select({Role.CONFIDENTIAL, Role.QUASI}, {Kind.NUMERIC}) == ("income",)
    assert declared.select({Role.QUASI}, None) == ("sex",)


def test_from_dict_matches_infer(frame):
    a = Schema.from_dict({"quasi": ["age"], "kinds": {"sex": "nominal"}}, frame)
    b = Schema.infer(frame, quasi=["age"])
    assert a == b
    assert a.to_dict()["columns"][1] == {"name": "age", "kind": "numeric", "role": "quasi"}


@pytest.mark.parametrize(
    "kwargs, culprit",
    [
        ({"quasi": ["AGE"]}, "'AGE'"),
        ({"kinds": {"nope": "numeric"}}, "'nope'"),
        ({"orders": {"ghost": [1, 2]}}, "'ghost'"),
        ({"quasi": ["age"], "confidential": ["age"]}, "two roles"),
        ({"kinds": {"sex": "ordinal"}}, "explicit category order"),
        ({"kinds": {"sex": "numeric"}}, "row 0: 'f'"),
        ({"kinds": {"age": "date"}}, "'age' is declared a date"),
        ({"kinds": {"sex": "ordinal"}, "orders": {"sex": ["m"]}}, "a value at row 0"),
        ({"orders": {"sex": ["m", "f"]}}, "its kind is 'nominal'"),
        ({"kinds": {"age": "interval"}}, "Unknown kind 'interval'"),
        ({"quasi": [3]}, "column names"),
    ],
)
def test_schema_errors_name_the_culprit(frame, kwargs, culprit):
    with pytest.raises(SchemaError) as err:
        Schema.infer(frame, **kwargs)
    assert culprit in str(err.value)


def test_from_dict_refuses_unknown_keys(frame):
    with pytest.raises(SchemaError, match="'quasis'"):
        Schema.from_dict({"quasis": ["age"]}, frame)


def test_validate_reports_missing_columns(frame):
    schema = Schema.infer(frame)
    with pytest.raises(SchemaError, match="'sex'"):
        schema.validate(frame.drop(columns=["sex"]))


def test_getitem_unknown_column(frame):
    with pytest.raises(SchemaError, match="'zzz' is not in the data"):
        Schema.infer(frame)["zzz"]


def test_infer_needs_a_frame():
    with pytest.raises(DataError, match="DataFrame"):
        Schema.infer([[1, 2]])
