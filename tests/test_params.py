import math

import pytest

from sdckit import AdditiveNoise, ParameterError
from sdckit.core.params import Interval, Options, check_param


def test_template_message():
    with pytest.raises(ParameterError) as err:
        AdditiveNoise(alpha=-1)
    assert str(err.value) == "The 'alpha' parameter of AdditiveNoise must be a float > 0. Got -1 instead."


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, math.nan, "0.1", None, True])
def test_alpha_rejects(bad):
    with pytest.raises(ParameterError, match="'alpha' parameter of AdditiveNoise"):
        AdditiveNoise(alpha=bad)


def test_columns_must_be_distinct_names():
    assert AdditiveNoise(alpha=0.1, columns=["a", "b"]).columns == ("a", "b")  # list -> tuple
    for bad in (["a", "a"], [], "a", [1]):
        with pytest.raises(ParameterError, match="'columns' parameter of AdditiveNoise"):
            AdditiveNoise(alpha=0.1, columns=bad)


def test_interval_and_options_describe_themselves():
    assert Interval(int, 2, None).describe() == "an int >= 2"
    assert Interval(float, 0, 1, closed="right").describe() == "a float in (0, 1]"
    with pytest.raises(ParameterError, match=r"The 'k' parameter of Microaggregation must be an int >= 2. Got 1 instead."):
        check_param("Microaggregation", "k", 1, Interval(int, 2, None))
    with pytest.raises(ParameterError, match=r"one of \{'mdav', 'univariate'\} or an int >= 2"):
        check_param("M", "method", "x", [Options(("mdav", "univariate")), Interval(int, 2, None)])
    check_param("M", "k", 2, Interval(int, 2, None))  # no error
    with pytest.raises(ParameterError):
        check_param("M", "k", 2.0, Interval(int, 2, None))  # a float is not an int


def test_methods_are_frozen_values():
    m = AdditiveNoise(alpha=0.1)
    assert m == AdditiveNoise(alpha=0.1) and hash(m) == hash(AdditiveNoise(alpha=0.1))
    with pytest.raises(Exception):
        m.alpha = 0.2  # type: ignore[misc]
    assert m.to_manifest() == {"name": "additive_noise", "class": "AdditiveNoise", "params": {"alpha": 0.1, "columns": None}}


def test_the_parameter_rule_is_named_apart_from_the_sensitivity_rule():
    """Issue 29 item 7: ``sdckit.core.params.ParamRule`` (one constraint or alternatives) and the
    tabular sensitivity ``Rule`` no longer share a name; no alias is left behind."""
    import sdckit.core.params as params
    from sdckit.tabular.rules import Rule

    assert not hasattr(params, "Rule")
    assert params.ParamRule is not Rule


def test_finite_intervals_instances_and_long_values_in_the_template():
    """Issue 29: ``Interval(..., finite=True)`` refuses the infinities an open-ended bound lets
    through; ``InstanceOf`` names its class; a value whose repr spans lines is shown by its type."""
    import numpy as np
    import pandas as pd

    from sdckit.core.params import InstanceOf

    positive = Interval(float, 0, None, closed="neither", finite=True)
    assert positive.describe() == "a finite float > 0"
    assert not positive.is_satisfied_by(float("inf")) and not positive.is_satisfied_by(np.float32("nan"))
    assert positive.is_satisfied_by(10**400) and Interval(float, 0, None).is_satisfied_by(float("inf"))
    assert InstanceOf(dict).describe() == "a dict" and InstanceOf(object).describe() == "an object"
    with pytest.raises(ParameterError, match=r"^The 'table' parameter of f must be a dict\. Got DataFrame instead\.$"):
        check_param("f", "table", pd.DataFrame({"a": range(40)}), InstanceOf(dict))
