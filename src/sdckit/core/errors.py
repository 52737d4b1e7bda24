"""The one error hierarchy of sdckit (DESIGN.md section 2).

Every error a user can cause by bad input is an :class:`SdcError`. Messages name the
file, column, row or parameter at fault and say how to fix it. The CLI prints the message
on one line and exits with status 2.
"""

from __future__ import annotations

from typing import Any


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


class BudgetExceeded(SdcError):
    """A charge would take a privacy budget past its total; nothing was charged.

    Raised by the one privacy accountant (:class:`sdckit.dp.accountant.Accountant`) whatever holds
    the budget: the caller's memory, the command line's ledger file or the query service's state
    database. It is an :class:`SdcError` (the CLI prints one line and exits 2; the query service
    answers 403) but not a :class:`ParameterError` or :class:`ValueError`: every parameter may be
    right, and the same request may pass against another budget. ``remaining``,
    ``remaining_delta`` and (a rho-zCDP budget) ``remaining_rho`` are what was left of the budget
    when the charge was refused.
    """

    def __init__(self, message: str, remaining: Any = None, remaining_delta: Any = None,
                 remaining_rho: Any = None) -> None:
        super().__init__(message)
        self.remaining = remaining
        self.remaining_delta = remaining_delta
        self.remaining_rho = remaining_rho


class PrivacyWarning(UserWarning):
    """A privacy budget is declared with an unusually large epsilon (above 10), as OpenDP warns.

    A warning, not an error: such a budget may be the data protector's considered choice; raised
    once per call that declares the budget (DESIGN.md section 9, "Differential privacy").
    """
