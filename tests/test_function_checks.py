"""The common checks of public functions (issue 29 item 3), as tests/test_common_checks.py does for
methods: every public function of a family that declares parameter rules with
:func:`sdckit.core.params.validated` has a rule for each of its scalar options, accepts its own
defaults, refuses a value of the wrong type in the one template, and is tried at the boundaries
of every interval (a closed bound accepted, an open bound and a value just outside refused)."""

from __future__ import annotations

import importlib
import inspect
import math

import pytest

from sdckit.core.errors import ParameterError
from sdckit.core.params import Boolean, Interval, IsNone, Options, Satisfies

#: Packages whose public functions are validated by declared rules (more join as they are redone).
PACKAGES = ("sdckit.risk", "sdckit.utility", "sdckit.permutation")


def validated_functions() -> list[tuple[str, object]]:
    found = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and hasattr(obj, "constraints"):
                found.append((f"{package}.{name}", obj))
    return found


FUNCTIONS = validated_functions()


def alternatives(rule) -> list:
    return [rule] if not isinstance(rule, list | tuple) else list(rule)


def a_valid_value(rule, default=inspect.Parameter.empty):
    """A value the rule accepts (the parameter's default when the rule is a predicate)."""
    for r in alternatives(rule):
        if isinstance(r, Interval):
            low = r.low if r.low is not None else (r.high - 1 if r.high is not None else 0)
            value = low if r.closed in ("both", "left") else (low + (r.high if r.high is not None else low + 2)) / 2
            return int(math.ceil(value)) if r.kind is int else float(value)
        if isinstance(r, Options):
            return r.values[0]
        if isinstance(r, Boolean):
            return True
        if isinstance(r, IsNone):
            return None
    assert default is not inspect.Parameter.empty, f"no value known to satisfy {rule!r}"
    return default


def call_arguments(func) -> dict:
    """Arguments for ``check_parameters``: data parameters as None (never reached), rules' values."""
    out = {}
    for name, p in inspect.signature(func).parameters.items():
        if name in func.constraints:
            out[name] = a_valid_value(func.constraints[name], p.default)
        elif p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            out[name] = None
    return out


def test_some_functions_are_covered():
    assert len(FUNCTIONS) >= 15


@pytest.mark.parametrize(("name", "func"), FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_every_scalar_option_has_a_rule(name, func):
    """A parameter whose default is a number, a bool or a word is an option with a rule; column
    names and data (defaults None or none) are checked against the data by the function."""
    for param, p in inspect.signature(func).parameters.items():
        if isinstance(p.default, bool | int | float | str) and p.default is not None:
            assert param in func.constraints, f"{name}: option {param!r} has no parameter rule"


@pytest.mark.parametrize(("name", "func"), FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_the_defaults_satisfy_the_rules(name, func):
    signature = inspect.signature(func)
    required = {k for k, p in signature.parameters.items() if p.default is inspect.Parameter.empty}
    func.check_parameters(**{k: v for k, v in call_arguments(func).items() if k not in func.constraints or k in required})


@pytest.mark.parametrize(("name", "func"), FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_a_wrong_type_is_refused_in_the_template(name, func):
    owner = name.rsplit(".", 1)[1]
    for param, rule in func.constraints.items():
        if any(isinstance(r, Satisfies) for r in alternatives(rule)):
            bad = object()
        else:
            bad = "not a valid value"
        pattern = rf"The '{param}' parameter of {owner} must be .+\. Got .+ instead\."
        with pytest.raises(ParameterError, match=pattern):
            func.check_parameters(**{**call_arguments(func), param: bad})


@pytest.mark.parametrize(("name", "func"), FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_interval_boundaries_are_tried(name, func):
    """k = 1, a share of 0 or 1, ...: a closed bound passes, an open one and a step outside fail."""
    for param, rule in func.constraints.items():
        for r in alternatives(rule):
            if not isinstance(r, Interval):
                continue
            step = 1 if r.kind is int else 1e-9
            for bound, closed in ((r.low, r.closed in ("both", "left")), (r.high, r.closed in ("both", "right"))):
                if bound is None:
                    continue
                value = int(bound) if r.kind is int else float(bound)
                args = call_arguments(func)
                if closed:
                    func.check_parameters(**{**args, param: value})
                else:
                    with pytest.raises(ParameterError, match=f"'{param}' parameter"):
                        func.check_parameters(**{**args, param: value})
                outside = value - step if bound == r.low else value + step
                with pytest.raises(ParameterError, match=f"'{param}' parameter"):
                    func.check_parameters(**{**args, param: outside})


def test_a_rule_for_a_missing_parameter_is_caught_at_import():
    from sdckit.core.params import validated

    with pytest.raises(TypeError, match="no parameter 'kk'"):
        validated(kk=Interval(int, 1, None))(lambda frame, k: k)
