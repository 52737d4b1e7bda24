"""The one error hierarchy of sdckit (DESIGN.md section 2).

Every error a user can cause by bad input is an :class:`SdcError`. Messages name the
file, column, row or parameter at fault and say how to fix it. The CLI prints the message
on one line and exits with status 2.
"""

from __future__ import annotations


class SdcError(Exception):
    """Base class of every error sdckit raises for bad input or an impossible request."""


class SchemaError(SdcError):
    """A column's role, kind or category order is wrong or does not fit the data."""


class DataError(SdcError):
    """The data cannot be read or does not meet what a method needs (empty, NaN, wrong type)."""


class ParameterError(SdcError, ValueError):
    """A method, recipe or function parameter is outside its allowed range."""


class SecurityWarning(UserWarning):
    """A call weakens the release's protection (e.g. a seed an attacker can guess).

    Raised once per call as a warning, not an error, so that tests and teaching examples may still
    use small seeds; DESIGN.md section 9 ("the seed is a secret").
    """
