"""(k,epsilon)-anonymity (seed 004 sections IV-VI): the method end to end, on hand-built
partitions (a test double for the k-anonymity step) and on Adult with a synthetic height."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from dp_adult import K_QUASI, adult_hierarchies, adult_with_height

from sdckit import ParameterError, SchemaError, Schema, protect
from sdckit.anonymity import Hierarchy
from sdckit.anonymity.partition import Partition
from sdckit.dp import KEpsilonAnonymity, expected_relative_error, linking_risk
from sdckit.dp.measures import record_diameters
from sdckit.dp.mechanisms import laplace_randomise
from sdckit.methods import get_method

GROUP = Hierarchy.groups({"a": "*", "b": "*", "c": "*"})


def grouped_frame(n_per: int = 400) -> tuple[pd.DataFrame, Schema]:
    """Three groups g = a, b, c of n_per records; height and weight with known class ranges:
    a: height uniform on [160, 180] (diameter 20), weight on [50, 90] (40);
    b: height on [170, 174] (4), weight on [60, 61] (1); c: height 165 and weight 70 for all."""
    rng = np.random.default_rng(0)
    g = np.repeat(["a", "b", "c"], n_per)
    lo = {"a": (160, 50), "b": (170, 60), "c": (165, 70)}
    hi = {"a": (180, 90), "b": (174, 61), "c": (165, 70)}
    height = np.concatenate([np.r_[lo[v][0], hi[v][0], rng.uniform(lo[v][0], hi[v][0], n_per - 2)] for v in "abc"])
    weight = np.concatenate([np.r_[lo[v][1], hi[v][1], rng.uniform(lo[v][1], hi[v][1], n_per - 2)] for v in "abc"])
    frame = pd.DataFrame({"g": g, "height": height, "weight": weight, "rid": np.arange(3 * n_per)})
    schema = Schema.infer(frame, quasi=["g", "height", "weight"], non_confidential=["rid"])
    return frame, schema


def noise_by_group(frame: pd.DataFrame, out: pd.DataFrame, column: str) -> dict[str, np.ndarray]:
    original = frame.set_index("rid").loc[out["rid"]]
    noise = out[column].to_numpy() - original[column].to_numpy()
    return {v: noise[original["g"].to_numpy() == v] for v in "abc"}


def method(**changes):
    params = {"k": 2, "epsilon": 2.0, "k_quasi": ["g"], "epsilon_quasi": ["height"],
              "hierarchies": {"g": GROUP}}
    return KEpsilonAnonymity(**{**params, **changes})


# --------------------------------------------------------------------------- the noise per class
def test_one_epsilon_quasi_gets_scale_exactly_diameter_over_epsilon():
    frame, schema = grouped_frame()
    outcome = method().run(frame, schema, 1)
    noise = noise_by_group(frame, outcome.data, "height")
    # Level 0 is 2-anonymous: classes a, b, c. Scale = max(diameter, min_diameter 1) / epsilon:
    # a 20/2 = 10, b 4/2 = 2, c 1/2 (all equal: the floor, never no noise; issue 19 item 7).
    # E|Y| = scale; 400 draws: s.e. 5%, tolerance 4 s.e.
    assert np.abs(noise["a"]).mean() == pytest.approx(10.0, rel=0.2)
    assert np.abs(noise["b"]).mean() == pytest.approx(2.0, rel=0.2)
    assert np.abs(noise["c"]).mean() == pytest.approx(0.5, rel=0.2)
    assert outcome.info["k_anonymity"]["node"] == {"g": 0}
    # Every released height lies on one public grid, 2**-21: the power of two at most 2**-20
    # times the smallest scale min_diameter / epsilon = 1/2, whatever the class (Mironov 2012).
    assert outcome.info["grid"] == 2.0**-21
    assert np.all(np.fmod(outcome.data["height"].to_numpy(), 2.0**-21) == 0)


def test_several_epsilon_quasis_split_epsilon_equally():
    frame, schema = grouped_frame()
    out = method(epsilon_quasi=["height", "weight"]).run(frame, schema, 2)
    # m = 2: each column gets epsilon/2 = 1, scale = diameter: height a 20, weight a 40, weight b 1.
    height, weight = noise_by_group(frame, out.data, "height"), noise_by_group(frame, out.data, "weight")
    assert np.abs(height["a"]).mean() == pytest.approx(20.0, rel=0.2)
    assert np.abs(weight["a"]).mean() == pytest.approx(40.0, rel=0.2)
    assert np.abs(weight["b"]).mean() == pytest.approx(1.0, rel=0.2)
    assert out.info["budget"]["spent"] == "2"
    assert out.info["budget"]["spends"][0]["parts"] == 3


def test_records_are_shuffled_index_reset_and_other_columns_carried():
    frame, schema = grouped_frame(50)
    out = method().run(frame, schema, 3).data
    assert list(out.index) == list(range(len(frame)))
    assert not np.array_equal(out["rid"].to_numpy(), frame["rid"].to_numpy())
    assert sorted(out["rid"]) == list(frame["rid"])
    np.testing.assert_array_equal(frame.set_index("rid").loc[out["rid"], "g"], out["g"])


def test_manifest_reports_prediction_risk_and_model():
    frame, schema = grouped_frame()
    release = protect(frame, [method(alpha=0.99)], schema=schema, seed=4)
    info = release.manifest["methods"][0]["info"]
    predicted = expected_relative_error(frame["height"], frame["g"], 2.0, min_diameter=1.0).total
    assert info["expected_relative_error"]["height"] == pytest.approx(predicted)
    assert 0 <= info["linking_risk"] <= 1
    assert "not in the strict sense" in info["privacy_model"]
    assert info["confidence_suppression"]["alpha"] == 0.99
    assert info["records"] == len(release.data)


def test_a_test_double_partition_drives_the_noise(monkeypatch):
    # The noise step needs only partition(frame, schema) -> Partition(data, classes, info),
    # the documented interface of the k-anonymity searches.
    frame = pd.DataFrame({"q": list("xxyy"), "h": [1.0, 3.0, 10.0, 10.0], "rid": range(4)})
    schema = Schema.infer(frame, quasi=["q", "h"], non_confidential=["rid"])
    part = Partition(frame.iloc[[0, 1, 2, 3]], np.array([0, 0, 1, 1]), {"warnings": ["double"]})
    monkeypatch.setattr(KEpsilonAnonymity, "partition", lambda self, f, s: part)
    m = KEpsilonAnonymity(k=2, epsilon=1.0, k_quasi=["q"], epsilon_quasi=["h"], algorithm="mondrian")
    out = m.run(frame, schema, 0)
    assert out.info["warnings"] == ["double"]
    released = out.data.set_index("rid")["h"]
    assert released[2] != 10.0 and released[3] != 10.0  # class of equal values: noise all the same
    assert released[0] != 1.0 and released[1] != 3.0
    # Eq. 8 with the floor: class 0 scale 2, E|Y|/|x| = 2 and 2/3; class 1 scale 1: 1/10 each.
    assert out.info["expected_relative_error"]["h"] == pytest.approx((2 + 2 / 3 + 0.1 + 0.1) / 4)


# --------------------------------------------------------------------------- Adult (seed 004 VI)
@pytest.fixture(scope="module")
def adult():
    return adult_with_height()


def test_predicted_error_matches_30_seeded_runs_on_adult(adult):
    frame, schema = adult
    sample = frame.sample(6000, random_state=1)
    m = KEpsilonAnonymity(k=5, epsilon=2.0, k_quasi=K_QUASI, epsilon_quasi=["height"],
                          hierarchies=adult_hierarchies(), max_suppression=0.05)
    errors, predictions = [], []
    for seed in range(30):
        out = m.run(sample, schema, seed)
        original = sample.set_index("rid").loc[out.data["rid"], "height"].to_numpy()
        errors.append(np.mean(np.abs(out.data["height"].to_numpy() - original) / original))
        predictions.append(out.info["expected_relative_error"]["height"])
    assert len(set(predictions)) == 1  # computed before the noise: the same for every seed
    assert np.mean(errors) == pytest.approx(predictions[0], rel=0.10)


def test_linking_risk_falls_as_epsilon_falls_on_adult(adult):
    frame, schema = adult
    m = KEpsilonAnonymity(k=5, epsilon=10.0, k_quasi=K_QUASI, epsilon_quasi=["height"],
                          hierarchies=adult_hierarchies(), max_suppression=0.05)
    part = m.partition(frame, schema)
    x = part.data["height"].to_numpy()
    sens = record_diameters(x, part.classes)[:, 0]
    risks = []
    for epsilon in (10.0, 1.0, 0.1):
        y = laplace_randomise(x, sens, epsilon, np.random.default_rng(7))
        risks.append(linking_risk(x, y, part.classes)["risk"])
    assert risks[0] > risks[1] > risks[2]
    assert risks[0] > 2 * risks[2]
    # End to end, the method reports the same risk measure.
    assert dataclasses.replace(m, epsilon=0.1).run(frame, schema, 7).info["linking_risk"] < risks[0]


def test_per_class_noise_has_lower_error_than_whole_data_set_noise_on_adult(adult):
    frame, schema = adult
    m = KEpsilonAnonymity(k=20, epsilon=1.0, k_quasi=K_QUASI, epsilon_quasi=["height"], algorithm="mondrian")
    part = m.partition(frame, schema)
    x = part.data["height"].to_numpy()
    per_class = expected_relative_error(x, part.classes, 1.0).total
    whole = expected_relative_error(x, None, 1.0).total
    assert per_class < whole
    rng = np.random.default_rng(8)
    empirical_class = np.mean(np.abs(laplace_randomise(x, record_diameters(x, part.classes)[:, 0], 1.0, rng) - x) / x)
    empirical_whole = np.mean(np.abs(laplace_randomise(x, np.ptp(x), 1.0, rng) - x) / x)
    assert empirical_class < empirical_whole


def test_mondrian_release_is_k_anonymous_on_the_k_quasis(adult):
    frame, schema = adult
    out = KEpsilonAnonymity(k=10, epsilon=1.0, k_quasi=K_QUASI, epsilon_quasi=["height"],
                            algorithm="mondrian", alpha=0.99).run(frame, schema, 9)
    sizes = out.data.astype({q: str for q in K_QUASI}).groupby(list(K_QUASI)).size()
    assert sizes.min() >= 10
    assert out.schema["age"].kind.value == "nominal"


def test_predict_error_before_noise(adult):
    frame, schema = adult
    m = KEpsilonAnonymity(k=len(frame), epsilon=1.0, k_quasi=["age"], epsilon_quasi=["height"], algorithm="mondrian")
    table = m.predict_error(frame, schema, epsilons=[0.5, 2.0])
    # k = n: one class, the whole data set's diameter; eq. 8 is proportional to 1/epsilon.
    whole = expected_relative_error(frame["height"], None, 1.0).total
    assert table["height"].tolist() == pytest.approx([2 * whole, whole / 2])
    assert table["classes"].tolist() == [1, 1]
    with pytest.raises(ParameterError, match="'epsilons' parameter of KEpsilonAnonymity.predict_error"):
        m.predict_error(frame, schema, epsilons=[0.0])


# --------------------------------------------------------------------------- recipes
def test_recipe_builds_the_method_and_refuses_a_missing_epsilon(tmp_path):
    m = get_method("k_epsilon_anonymity", {
        "k": 5, "epsilon": 1.0, "k_quasi": ["age", "sex"], "epsilon_quasi": ["height"],
        "algorithm": "mondrian",
    })
    assert isinstance(m, KEpsilonAnonymity) and m.k_quasi == ("age", "sex")
    with pytest.raises(ParameterError, match="needs parameter.*'epsilon'"):
        get_method("k_epsilon_anonymity", {"k": 5, "k_quasi": ["age"], "epsilon_quasi": ["height"]})


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(("changes", "message"), [
    ({"epsilon": 0.0}, "'epsilon' parameter of KEpsilonAnonymity must be a finite float > 0"),
    ({"epsilon": -1.0}, "'epsilon' parameter"),
    ({"epsilon": math.inf}, "'epsilon' parameter"),
    ({"k": 1}, "'k' parameter of KEpsilonAnonymity must be an int >= 2"),
    ({"epsilon_quasi": ["g"]}, "'epsilon_quasi' parameter .* disjoint from k_quasi"),
    ({"hierarchies": None}, r"'hierarchies' parameter .*missing: \['g'\]"),
    ({"algorithm": "mondrian", "max_suppression": 0.05}, "'max_suppression' parameter .*Mondrian"),
    ({"algorithm": "ola"}, "'algorithm' parameter .* one of"),
    ({"alpha": 1.0}, "'alpha' parameter"),
    ({"epsilon_quasi": []}, "'epsilon_quasi' parameter"),
])
def test_bad_parameters_are_refused(changes, message):
    with pytest.raises(ParameterError, match=message):
        method(**changes)


def test_a_non_numeric_epsilon_quasi_is_refused():
    frame, schema = grouped_frame(10)
    frame["colour"] = "red"
    schema = Schema.infer(frame, quasi=["g", "colour"], non_confidential=["rid"])
    with pytest.raises(SchemaError, match="'colour'.*must be numeric"):
        method(epsilon_quasi=["colour"]).run(frame, schema, 0)


def test_columns_must_name_the_quasis():
    frame, schema = grouped_frame(10)
    with pytest.raises(ParameterError, match="'columns' parameter"):
        method(columns=["g"]).run(frame, schema, 0)
    with pytest.raises(SchemaError, match="nowhere"):
        method(epsilon_quasi=["nowhere"]).run(frame, schema, 0)


# --------------------------------------------------------------------------- issue 19 item 7
def _lowest_bit_exponent(values: np.ndarray) -> np.ndarray:
    """The exponent of each value's lowest set bit (the attack reads it off the release)."""
    mantissa, exponent = np.frexp(values)
    digits = (mantissa * 2.0**53).astype(np.int64)
    trailing = np.array([(int(d) & -int(d)).bit_length() - 1 for d in digits])
    return exponent - 53 + trailing


def test_the_lowest_bits_no_longer_reveal_each_class_diameter():
    """The attack: per class, the smallest lowest-set-bit exponent of the released values is the
    sampler's grid; on a grid scaled to the class it gives floor(log2(diameter)) away. Classes of
    diameters 20, 4 and 0 must all show the same grid."""
    frame, schema = grouped_frame()
    out = method().run(frame, schema, 11).data
    seen = {g: int(_lowest_bit_exponent(out.loc[out["g"] == g, "height"].to_numpy()).min()) for g in "abc"}
    assert len(set(seen.values())) == 1, seen
    # The attack works on a grid that follows the scale (the old construction): the test can fail.
    x = frame.loc[frame["g"] != "c", "height"].to_numpy()
    diam = np.where(frame.loc[frame["g"] != "c", "g"] == "a", 20.0, 4.0)
    old = laplace_randomise(x, diam, 2.0, np.random.default_rng(1))
    grids = {d: int(_lowest_bit_exponent(old[diam == d]).min()) for d in (20.0, 4.0)}
    assert grids[20.0] - grids[4.0] == 2  # floor(log2 20) - floor(log2 4) = 4 - 2


def test_min_diameter_is_a_checked_parameter():
    with pytest.raises(ParameterError, match="min_diameter"):
        method(min_diameter=0.0)
    with pytest.raises(ParameterError, match="min_diameter"):
        method(min_diameter=-1.0)


def test_the_callers_accountant_refuses_a_second_release():
    """Issue 19 item 8: one budget across releases of the same data, charged before the noise."""
    from sdckit.dp import BudgetAccountant, BudgetExceeded

    frame, schema = grouped_frame(50)
    acct = BudgetAccountant(3.0)
    first = method(accountant=acct).run(frame, schema, 1)
    assert acct.spent == 2 and first.info["budget"]["spent"] == "2"
    before = [dict(s) for s in acct.spends]
    with pytest.raises(BudgetExceeded):
        method(accountant=acct).run(frame, schema, 2)
    assert acct.spent == 2 and [dict(s) for s in acct.spends] == before
    assert method(accountant=acct) == method()  # the accountant is not a parameter
