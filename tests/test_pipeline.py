import json

import numpy as np
import pandas as pd
import pytest

from sdckit import AdditiveNoise, DataError, ParameterError, SchemaError, protect
from sdckit.core.provenance import fingerprint, manifest_json

SEED = 918273645  # distinctive, so that a leak into the manifest would be found


@pytest.fixture
def schema():
    return {"identifier": ["id"], "quasi": ["age"], "confidential": ["income"]}


def test_same_seed_same_output_other_seed_other_output(small_frame, schema):
    a = protect(small_frame, [AdditiveNoise(alpha=0.2)], schema=schema, seed=SEED)
    b = protect(small_frame, [AdditiveNoise(alpha=0.2)], schema=schema, seed=SEED)
    c = protect(small_frame, [AdditiveNoise(alpha=0.2)], schema=schema, seed=SEED + 1)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not np.allclose(a.data["income"], c.data["income"])


def test_input_is_never_modified(small_frame, schema):
    before = small_frame.copy()
    protect(small_frame, [AdditiveNoise(alpha=1.0), AdditiveNoise(alpha=1.0)], schema=schema, seed=1)
    pd.testing.assert_frame_equal(small_frame, before)


def test_identifiers_dropped_unless_kept(small_frame, schema):
    dropped = protect(small_frame, [AdditiveNoise(alpha=0.1)], schema=schema, seed=1)
    assert list(dropped.data.columns) == ["age", "income", "region"]
    assert dropped.manifest["dropped_identifiers"] == ["id"]
    kept = protect(small_frame, [AdditiveNoise(alpha=0.1)], schema=schema, seed=1, keep_identifiers=True)
    assert kept.data["id"].tolist() == small_frame["id"].tolist()
    assert kept.manifest["dropped_identifiers"] == []


def test_default_columns_follow_roles(small_frame, schema):
    release = protect(small_frame, [AdditiveNoise(alpha=0.1)], schema=schema, seed=1)
    # quasi 'age' and confidential 'income' are perturbed; 'region' is nominal, untouched
    assert not np.allclose(release.data["age"], small_frame["age"])
    assert release.data["region"].tolist() == small_frame["region"].tolist()
    only = protect(small_frame, [AdditiveNoise(alpha=0.1, columns=["income"])], schema=schema, seed=1)
    np.testing.assert_array_equal(only.data["age"], small_frame["age"])
    # without a schema every numeric column is perturbed
    bare = protect(small_frame, [AdditiveNoise(alpha=0.1)], seed=1)
    assert not np.allclose(bare.data["id"], small_frame["id"])


def test_manifest_content_and_no_seed(small_frame, schema):
    release = protect(
        small_frame, [AdditiveNoise(alpha=0.25, columns=["income"]), AdditiveNoise(alpha=0.5)],
        schema=schema, seed=SEED,
    )
    m = release.manifest
    assert m["sdckit_version"]
    assert m["input"]["fingerprint"].startswith("not published")  # no key: no input hash
    assert m["input"]["records"] == 50 and m["input"]["columns"] == 4
    assert [c["role"] for c in m["schema"]["columns"]] == ["identifier", "quasi", "confidential", None]
    assert [s["params"] for s in m["methods"]] == [
        {"alpha": 0.25, "columns": ["income"]},
        {"alpha": 0.5, "columns": None},
    ]
    assert [s["name"] for s in m["methods"]] == ["additive_noise", "additive_noise"]
    assert m["methods"][1]["input_fingerprint"] == m["methods"][0]["output_fingerprint"]
    assert m["output"]["fingerprint"] == fingerprint(release.data)
    assert "T" in m["created"]
    text = manifest_json(m)
    assert str(SEED) not in text

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)

    # Only where the seed came from and how strong it is (issue 12 section 1), never its value.
    assert {k for k in keys(json.loads(text)) if "seed" in k.lower()} == {"seed", "seed_strength"}
    assert json.loads(text)["seed"] == "given by the user"


def test_additive_noise_has_the_stated_variance():
    # e_j ~ N(0, alpha var(x_j)): with n = 20000 the sample variance of e is within 3% of
    # alpha var(x) (its relative sd is sqrt(2/n) = 1%), and its mean within 4 sd/sqrt(n)
    rng = np.random.default_rng(5)
    x = pd.DataFrame({"a": rng.normal(10, 2, 20_000), "b": rng.exponential(100, 20_000)})
    y = AdditiveNoise(alpha=0.3).apply(x, seed=np.random.default_rng(6))
    for col in x:
        e = y[col] - x[col]
        target = 0.3 * x[col].var(ddof=1)
        assert abs(e.var(ddof=1) / target - 1) < 0.03
        assert abs(e.mean()) < 4 * np.sqrt(target / len(e))


def test_fingerprint_is_content_based():
    a = pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    assert fingerprint(a) == fingerprint(a.copy().set_index(pd.Index([10, 11])))
    assert fingerprint(a) != fingerprint(a.assign(x=[1.0, 2.5]))
    assert fingerprint(a) != fingerprint(a.rename(columns={"s": "t"}))


def test_bad_calls(small_frame):
    with pytest.raises(DataError, match="empty"):
        protect(small_frame.iloc[:0], [AdditiveNoise(alpha=0.1)])
    with pytest.raises(DataError, match="DataFrame"):
        protect([[1.0]], [AdditiveNoise(alpha=0.1)])
    with pytest.raises(ParameterError, match=r"methods\[0\]"):
        protect(small_frame, ["additive_noise"])
    with pytest.raises(SchemaError, match="'salary'"):
        protect(small_frame, [AdditiveNoise(alpha=0.1, columns=["salary"])])
    with pytest.raises(SchemaError, match="'region'.*'nominal'"):
        protect(small_frame, [AdditiveNoise(alpha=0.1, columns=["region"])])
    with pytest.raises(SchemaError, match="identifier column 'id'"):
        protect(small_frame, [AdditiveNoise(alpha=0.1, columns=["id"])], schema={"identifier": ["id"]}, keep_identifiers=True)
    with pytest.raises(SchemaError, match="found no column"):
        protect(small_frame, [AdditiveNoise(alpha=0.1)], schema={"non_confidential": ["age", "income", "id"]})
    with pytest.raises(ParameterError, match="seed"):
        protect(small_frame, [AdditiveNoise(alpha=0.1)], seed=-3)


def test_missing_values_are_refused_with_row(small_frame):
    frame = small_frame.astype({"income": float})
    frame.loc[7, "income"] = np.nan
    with pytest.raises(DataError, match=r"column 'income' is missing in 1 record\(s\), first at row 7"):
        protect(frame, [AdditiveNoise(alpha=0.1)])
