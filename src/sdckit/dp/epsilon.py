"""Privacy parameters read and written exactly: an epsilon or a delta as a
:class:`fractions.Fraction` from whatever a user gives (a float by its decimal repr, ``0.1`` is
``1/10``; a string such as ``"1/3"``), bounded so that parsing never builds a huge number, and
printed back without rounding (DESIGN.md section 9; the accountant's numbers, issue 19 item 14).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from sdckit.core.errors import ParameterError

#: The largest epsilon sdckit accepts anywhere (a budget, a spend, a method's or a query's): 10**6.
#: Far past any meaningful guarantee (e**20 already bounds nothing useful), it keeps every
#: exact sampler's grid inside a double and every number short enough to print.
MAX_EPSILON = Fraction(10**6)

#: A number given as text: a decimal (exponent at most 4 digits) or a fraction ``p/q``, at most
#: :data:`_MAX_TEXT` characters, so that parsing it never builds a huge integer.
_NUMBER_TEXT = re.compile(r"[+-]?(?:(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d{1,4})?|\d[\d_]*/\d[\d_]*)")
_MAX_TEXT = 100


def brief(value: Any) -> str:
    """A short form of ``value`` for a message: its repr, cut to 40 characters."""
    if isinstance(value, Fraction) and value.denominator == 1:
        value = value.numerator
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() of it may be refused
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_text(text: str) -> Fraction | None:
    text = text.strip()
    if len(text) > _MAX_TEXT or not _NUMBER_TEXT.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def exact(value: Any, owner: str, name: str, *, positive: bool = True, below_one: bool = False) -> Fraction:
    """``value`` as an exact :class:`~fractions.Fraction`, or :class:`ParameterError`.

    Accepts ints, floats (read by their shortest decimal repr: ``0.1`` is ``1/10``), strings
    such as ``"0.1"``, ``"1e-3"`` or ``"1/3"`` (at most 100 characters, exponents of at most
    4 digits), :class:`~decimal.Decimal` and :class:`~fractions.Fraction`. The number must be
    finite and > 0 (``positive``) or >= 0, and < 1 if ``below_one`` (a delta); any other number
    is an epsilon and must be at most :data:`MAX_EPSILON`. Messages show the value briefly.
    """
    rule = ("a number in [0, 1)" if below_one else
            "a finite number > 0" if positive else "a finite number >= 0")
    rule += " (int, float, Fraction, Decimal or a string such as '0.1' or '1/3')"
    number: Fraction | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, Fraction | int | np.integer):
        number = Fraction(int(value)) if isinstance(value, np.integer) else Fraction(value)
    elif isinstance(value, float | np.floating):
        number = Fraction(repr(float(value))) if math.isfinite(value) else None
    elif isinstance(value, Decimal):
        number = Fraction(value) if value.is_finite() and abs(value.adjusted()) <= 9999 else None
    elif isinstance(value, str):
        number = _parse_text(value)
    ok = number is not None and (number > 0 if positive else number >= 0) and (not below_one or number < 1)
    if not ok:
        raise ParameterError(f"The {name!r} parameter of {owner} must be {rule}. Got {brief(value)} instead.")
    if not below_one and number > MAX_EPSILON:
        raise ParameterError(
            f"The {name!r} parameter of {owner} is too large: {brief(value)}. sdckit accepts an epsilon of "
            f"at most {exact_text(MAX_EPSILON)} (10**6); a useful one is well below 10."
        )
    return number


def split_epsilon(epsilon: Any, parts: int) -> float:
    """``epsilon / parts`` as the largest float not above the exact quotient, so that ``parts``
    mechanisms at this epsilon never cost more than the decimal ``epsilon`` charged for them."""
    share = exact(epsilon, "split_epsilon", "epsilon") / parts
    value = float(share)
    return value if Fraction(value) <= share else math.nextafter(value, 0.0)


def exact_text(value: Fraction) -> str:
    """An exact, readable form: a decimal when it terminates (``"0.25"``), else ``"p/q"``."""
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator
    digits = str(scaled).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return sign + text
