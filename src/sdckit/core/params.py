"""Declared parameter rules and the one validator that checks them (DESIGN.md section 2).

A method class declares its rules once, in a ``constraints`` table mapping each parameter to
one rule or a list of alternatives. :func:`validate_params` checks them at construction and
raises :class:`ParameterError` with one template::

    The 'k' parameter of Microaggregation must be an int >= 2. Got 1 instead.

A public function declares its rules the same way with the :func:`validated` decorator (as
scikit-learn's ``validate_params``): they are checked before the function runs, in the same
template, and kept on it (``constraints``) for the common checks.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from sdckit.core.errors import ParameterError


class Constraint:
    """A rule a parameter value must satisfy, with a phrase that describes it."""

    def is_satisfied_by(self, value: Any) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """A real or integer number in an interval; ``None`` bounds are open-ended.

    ``closed`` is one of "both", "left", "right", "neither"; ``finite=True`` refuses the
    infinities an open-ended bound would let through (a base, a variance, a flex point).
    """

    kind: type  # int or float
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    finite: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if not isinstance(value, numbers.Integral):  # an int is never NaN nor infinite
            number = float(value)
            if math.isnan(number) or (self.finite and math.isinf(number)):
                return False
        lo_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        hi_ok = self.high is None or (
            value <= self.high if self.closed in ("both", "right") else value < self.high
        )
        return lo_ok and hi_ok

    def describe(self) -> str:
        name = "an int" if self.kind is int else ("a finite float" if self.finite else "a float")
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            return f"{name} in {'[' if left else '('}{self.low}, {self.high}{']' if right else ')'}"
        if self.low is not None:
            return f"{name} {'>=' if left else '>'} {self.low}"
        if self.high is not None:
            return f"{name} {'<=' if right else '<'} {self.high}"
        return name if self.kind is int else "a real number"


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values."""

    values: tuple[Any, ...]

    def is_satisfied_by(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.values)

    def describe(self) -> str:
        return "one of {" + ", ".join(repr(v) for v in self.values) + "}"


@dataclass(frozen=True)
class IsNone(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return value is None

    def describe(self) -> str:
        return "None"


@dataclass(frozen=True)
class Boolean(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "a bool"


@dataclass(frozen=True)
class StrList(Constraint):
    """A non-empty tuple of distinct strings (lists are turned into tuples on construction)."""

    def is_satisfied_by(self, value: Any) -> bool:
        return (
            isinstance(value, tuple)
            and len(value) > 0
            and all(isinstance(v, str) for v in value)
            and len(set(value)) == len(value)
        )

    def describe(self) -> str:
        return "a non-empty list of distinct column names"


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of a class (a Table, a parameter object), described by ``name`` or by the
    class's name with an article."""

    cls: type
    name: str | None = None

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.cls)

    def describe(self) -> str:
        if self.name is not None:
            return self.name
        word = self.cls.__name__
        return f"{'an' if word[0].upper() in 'AEIOU' else 'a'} {word}"


@dataclass(frozen=True)
class Satisfies(Constraint):
    """Any rule given as a predicate with its description."""

    predicate: Callable[[Any], bool]
    description: str

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return bool(self.predicate(value))
        except Exception:
            return False

    def describe(self) -> str:
        return self.description


#: A parameter rule: one constraint or a list of alternatives (named apart from the
#: sensitivity rules of :mod:`sdckit.tabular.rules`).
ParamRule = Constraint | Sequence[Constraint]


def describe_rule(rule: ParamRule) -> str:
    rules = [rule] if isinstance(rule, Constraint) else list(rule)
    phrases = [r.describe() for r in rules]
    if len(phrases) == 1:
        return phrases[0]
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def param_error(owner: str, name: str, value: Any, requirement: str) -> ParameterError:
    """The one template of a bad parameter: ``The 'name' parameter of Owner must be <requirement>.
    Got <value> instead.`` (the value by :func:`shown`)."""
    return ParameterError(f"The {name!r} parameter of {owner} must be {requirement}. Got {shown(value)} instead.")


def check_param(owner: str, name: str, value: Any, rule: ParamRule) -> None:
    """Raise :class:`ParameterError` unless ``value`` satisfies ``rule`` (or one alternative)."""
    rules = [rule] if isinstance(rule, Constraint) else list(rule)
    if not any(r.is_satisfied_by(value) for r in rules):
        raise param_error(owner, name, value, describe_rule(rule))


def shown(value: Any) -> str:
    """A value as a one-line message shows it: its ``repr``, or its type's name when the repr
    spans lines or is long (a DataFrame given for a Table)."""
    text = repr(value)
    return type(value).__name__ if "\n" in text or len(text) > 120 else text


def validate_params(owner: str, values: Mapping[str, Any], constraints: Mapping[str, ParamRule]) -> None:
    """Check every declared parameter of ``owner`` (a class name) against its rule."""
    for name, rule in constraints.items():
        check_param(owner, name, values[name], rule)


def validate_fields(value: Any, constraints: Mapping[str, ParamRule]) -> None:
    """What a frozen dataclass value whose fields are its parameters (a method, a table
    protection) checks on construction: lists in its fields become tuples (the value stays
    hashable), then every field with a rule is checked, naming the value's class."""
    fields = dataclasses.fields(value)
    for f in fields:
        if isinstance(getattr(value, f.name), list | tuple):
            object.__setattr__(value, f.name, to_tuple(getattr(value, f.name)))
    validate_params(type(value).__name__, {f.name: getattr(value, f.name) for f in fields}, constraints)


def to_tuple(value: Any) -> Any:
    """Lists (also nested) become tuples, so that frozen method values stay hashable."""
    if isinstance(value, list | tuple):
        return tuple(to_tuple(v) for v in value)
    return value


F = TypeVar("F", bound=Callable[..., Any])


def validated(**constraints: ParamRule) -> Callable[[F], F]:
    """Decorate a public function with its parameter rules: every call checks them (in the
    order given, before the function runs) and raises :class:`ParameterError` in the one
    template naming the function; the rules stay on the function as ``constraints`` and its
    check alone as ``check_parameters(*args, **kwargs)``. A rule for a parameter the function
    does not have is a mistake caught when the module is imported.

    >>> @validated(k=Interval(int, 1, None))
    ... def violations(frame, k): return k
    >>> violations(None, 0)
    Traceback (most recent call last):
    ...
    sdckit.core.errors.ParameterError: The 'k' parameter of violations must be an int >= 1. Got 0 instead.
    """
    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        unknown = [name for name in constraints if name not in signature.parameters]
        if unknown:
            raise TypeError(f"{func.__qualname__} has no parameter {unknown[0]!r} to give a rule to.")

        def check_parameters(*args: Any, **kwargs: Any) -> None:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, rule in constraints.items():
                check_param(func.__name__, name, bound.arguments[name], rule)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check_parameters(*args, **kwargs)
            return func(*args, **kwargs)

        wrapper.constraints = MappingProxyType(dict(constraints))  # type: ignore[attr-defined]
        wrapper.check_parameters = check_parameters  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
