"""What every computed result shares (issue 29 item 2): one JSON helper and one ``Result`` base.

:func:`plain` turns any value a result or a manifest holds into dicts, lists, str, int, float,
bool and None, so that ``json.dumps`` needs no ``default=``. :class:`Result` is the mixin of the
frozen result dataclasses: ``to_dict()`` is derived from the fields through :func:`plain`
(a field declared with ``field(metadata={"dict": False})`` is left out) and ``summary()`` gives
the ``(label, text)`` rows the CLI and the report show. A class overrides ``to_dict`` only where
its published JSON differs from its fields (renamed or derived keys), and ``summary`` to keep its
own wording.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import sys
from collections.abc import Mapping
from fractions import Fraction
from pathlib import PurePath
from typing import Any, ClassVar

# numpy and pandas are looked up in sys.modules, not imported: a value of theirs exists only once
# they are loaded, and the light commands (a verdict, a query's answer) must not load them.


def _numpy_scalar(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds; anything else unchanged."""
    np = sys.modules.get("numpy")
    return value.item() if np is not None and isinstance(value, np.generic) else value


def plain(value: Any) -> Any:
    """``value`` made of dicts, lists, str, int, float, bool and None only.

    * a :class:`Result` becomes its ``to_dict()``; an object with ``to_manifest()`` (a method,
      a hierarchy) its manifest; another dataclass ``{"class": name, **fields}``;
    * a DataFrame becomes a list of row dicts whose first key ``record`` is the index; a Series
      a dict with string keys; a mapping a dict whose keys are strings or integers (which
      ``json.dumps`` writes as strings); tuples, lists, sets and arrays lists;
    * numpy scalars become Python ones; NaN and infinities None;
    * timestamps and dates ISO 8601 text; a Fraction its exact text (``"1/3"``); a path its text;
      an enum its value; anything else its ``str``.

    Examples
    --------
    >>> import numpy as np
    >>> plain({"a": np.float64("nan"), 2: (np.int64(3), Fraction(1, 3))})
    {'a': None, '2': [3, '1/3']}
    """
    kind = type(value)  # the common leaves first (exactly these types: a subclass takes the long way)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, Result):
        return value.to_dict()
    value = _numpy_scalar(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(value, pd.DataFrame):
        frame = value.reset_index()
        frame.columns = ["record", *map(str, value.columns)]
        return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
    if pd is not None and isinstance(value, pd.Series):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {_key(k): plain(v) for k, v in value.items()}
    np = sys.modules.get("numpy")
    if isinstance(value, list | tuple | set | frozenset) or (np is not None and isinstance(value, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime.date | datetime.time):  # pd.Timestamp is a datetime
        return value.isoformat()
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, PurePath):
        return str(value)
    if callable(getattr(value, "to_manifest", None)) and not isinstance(value, type):
        return plain(value.to_manifest())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"class": type(value).__name__,
                **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    return str(value)


def _key(key: Any) -> str | int:
    """A mapping's key as JSON takes it: an integer stays one, anything else is its text."""
    key = plain(key)
    return key if isinstance(key, int | str) and not isinstance(key, bool) else str(key)


def summary_text(value: Any) -> str:
    """A scalar as a summary row shows it: counts with thousands separators, other numbers to six
    significant digits, booleans as yes / no, None as a dash."""
    value = _numpy_scalar(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _in_dict(f: dataclasses.Field) -> bool:
    return f.metadata.get("dict", True)


class Result:
    """Mixin of the frozen dataclasses that hold what a function computed.

    ``to_dict()`` is the JSON form (``--json`` of the CLI, the report's data): every field
    through :func:`plain`, except those declared ``field(metadata={"dict": False})``.
    ``summary()`` is the headline as rows of strings, by default ``(label, text)`` for each
    scalar field; :attr:`summary_columns` names the columns of the rows.
    """

    #: Column headings of the rows :meth:`summary` returns.
    summary_columns: ClassVar[tuple[str, ...]] = ("measure", "value")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-friendly form: every field through :func:`plain`."""
        return {f.name: plain(getattr(self, f.name))
                for f in dataclasses.fields(self) if _in_dict(f)}  # type: ignore[arg-type]

    def summary(self) -> list[tuple[str, ...]]:
        """The headline figures as ``(label, text)`` rows: the scalar fields, formatted."""
        rows = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = _numpy_scalar(getattr(self, f.name))
            if _in_dict(f) and (value is None or isinstance(value, bool | int | float | str)):
                rows.append((f.name.replace("_", " "), summary_text(value)))
        return rows
