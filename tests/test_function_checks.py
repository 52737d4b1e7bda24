"""The common checks of public functions (issue 29 item 3), as tests/test_common_checks.py does for
methods: every public function of a family that declares parameter rules with
:func:`sdckit.core.params.validated` has a rule for each of its scalar options, accepts its own
defaults, refuses a value of the wrong type in the one template, and is tried at the boundaries
of every interval (a closed bound accepted, an open bound and a value just outside refused).
The parameter classes of tabular (the sensitivity rules, the cell-key sum parameters) declare a
``constraints`` table the same way and pass the same checks on construction."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math

import pytest

from sdckit.core.errors import ParameterError
from sdckit.core.params import Boolean, InstanceOf, Interval, IsNone, Options, Satisfies

#: Packages whose public functions are validated by declared rules (more join as they are redone).
PACKAGES = ("sdckit.risk", "sdckit.utility", "sdckit.tabular", "sdckit.query", "sdckit.permutation")


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
        if isinstance(r, InstanceOf):  # an instance the check accepts; the function never runs
            return r.cls.__new__(r.cls)
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
    tabular = {n.rsplit(".", 1)[1] for n, _ in FUNCTIONS if n.startswith("sdckit.tabular.")}
    assert tabular >= {"round_table", "audit_rounding", "adjust_table", "ptable", "ptable_numeric", "write_ptable",
                       "record_keys", "cell_key_counts", "cell_key_sums", "cell_key_measures", "sensitivity"}


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


# ----------------------------------------------------------------- parameter classes of tabular
def _parameter_classes() -> list[type]:
    from sdckit.tabular import PQ, CellKeySumParams, Dominance, GroupDisclosure, Manual, MinFrequency, PPercent

    return [MinFrequency, Dominance, PQ, PPercent, Manual, GroupDisclosure, CellKeySumParams]


CLASSES = _parameter_classes()
#: Those whose every rule can be tried alone (CellKeySumParams needs a p-table and ties p_large to p_small).
RULE_CLASSES = CLASSES[:-1]


def _init_fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_class_declares_a_rule_for_each_scalar_option_and_only_for_its_fields(cls):
    """The constraint keys are fields of the class, and every scalar option has one."""
    fields = {f.name for f in dataclasses.fields(cls)}
    assert set(cls.constraints) <= fields, set(cls.constraints) - fields
    for name, f in _init_fields(cls).items():
        if isinstance(f.default, bool | int | float | str):
            assert name in cls.constraints, f"{cls.__name__}: option {name!r} has no parameter rule"


def _arguments(cls) -> dict:
    """The class's defaults, and a value its rule accepts for each required parameter."""
    out = {}
    for name, f in _init_fields(cls).items():
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            out[name] = a_valid_value(cls.constraints[name])
    return out


@pytest.mark.parametrize("cls", RULE_CLASSES, ids=lambda c: c.__name__)
def test_a_class_refuses_a_wrong_type_and_is_tried_at_its_bounds(cls):
    owner = cls.__name__
    for param, rule in cls.constraints.items():
        if param not in _init_fields(cls):
            continue  # PPercent's q is fixed at 100
        with pytest.raises(ParameterError, match=rf"The '{param}' parameter of {owner} must be .+\. Got .+ instead\."):
            cls(**{**_arguments(cls), param: "not a valid value"})
        for r in alternatives(rule):
            step = 1 if r.kind is int else 1e-9
            for bound, closed in ((r.low, r.closed in ("both", "left")), (r.high, r.closed in ("both", "right"))):
                if bound is None:
                    continue
                value = int(bound) if r.kind is int else float(bound)
                if closed:
                    cls(**{**_arguments(cls), param: value})
                else:
                    with pytest.raises(ParameterError, match=f"'{param}' parameter of {owner}"):
                        cls(**{**_arguments(cls), param: value})
                outside = value - step if bound == r.low else value + step
                with pytest.raises(ParameterError, match=f"'{param}' parameter of {owner}"):
                    cls(**{**_arguments(cls), param: outside})


def public_functions_with_options() -> list[tuple[str, object]]:
    """Every public function of PACKAGES with a scalar option (a default that is a number, a bool
    or a word): those the common checks above must cover."""
    found = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not inspect.isfunction(obj):
                continue
            params = inspect.signature(obj).parameters.values()
            if any(isinstance(p.default, bool | int | float | str) for p in params):
                found.append((f"{package}.{name}", obj))
    return found


def test_every_public_function_with_an_option_declares_its_rules():
    """The common checks run over *every* public function of the families redone (issue 29 item 3):
    one that takes an option but declares no rule would escape them."""
    missing = [name for name, func in public_functions_with_options() if not hasattr(func, "constraints")]
    assert missing == []
