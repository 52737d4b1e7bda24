"""Reading a TOML file (a recipe of any kind, the query service's configuration) with errors that
name the file: one reader, so that every kind of file fails the same way."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sdckit.core.errors import ParameterError


def read_toml(path: str | Path, what: str = "Recipe") -> tuple[dict[str, Any], Path]:
    """The parsed file and its path; ``what`` names the kind of file in the errors
    (e.g. ``"Recipe"``, ``"Table recipe"``, ``"Service configuration"``)."""
    source = Path(path)
    if not source.exists():
        raise ParameterError(f"{what} file not found: {str(source)!r} does not exist.")
    if source.is_dir():
        raise ParameterError(f"{str(source)!r} is a directory, not a {what.lower()} file.")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ParameterError(f"{what} {str(source)!r} is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"Malformed TOML in {what.lower()} {str(source)!r} (not valid TOML): {exc}.") from None
    return data, source


def file_error(source: str | Path, message: str) -> ParameterError:
    """An error in a file: ``"<file>: <message>"``."""
    return ParameterError(f"{source}: {message}")


def check_keys(table: Mapping[str, Any], allowed: Iterable[str], where: str, source: str | Path | None = None) -> None:
    """Refuse a key of ``table`` (a section of a TOML file) that is not in ``allowed``, in the one
    wording every kind of file uses: ``"<file>: [section] has unknown key 'k'; it takes a, b."``
    (``allowed`` listed in its own order, or sorted if it is a set)."""
    names = sorted(allowed) if isinstance(allowed, set | frozenset) else list(allowed)
    unknown = [key for key in table if key not in names]
    if unknown:
        message = f"{where} has unknown key {unknown[0]!r}; it takes {', '.join(names)}."
        raise ParameterError(message) if source is None else file_error(source, message)


def resolve_path_params(params: Mapping[str, Any], names: Iterable[str], base: Path) -> dict[str, Any]:
    """``params`` with the path parameters ``names`` made absolute from the file's folder ``base``.

    A path parameter holds a path string or a mapping whose string values are paths (e.g.
    ``hierarchies = { age = "age.csv" }``); other values (built objects) are left as they are.
    """
    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            return str((base / value).resolve())
        if isinstance(value, Mapping):
            return {k: resolve(v) for k, v in value.items()}
        return value

    names = frozenset(names)
    return {k: resolve(v) if k in names else v for k, v in params.items()}


def toml_value(value: Any) -> str:
    """``value`` written as one TOML value: strings, numbers, booleans, lists of them and
    mappings (an inline table, its keys quoted), as a recipe's method parameters hold them once
    plain; anything else is refused in one line. :func:`tomllib.loads` reads it back equal.

    Examples
    --------
    >>> toml_value({"master": "higher", "n": [1, 2.5, True]})
    '{ "master" = "higher", "n" = [1, 2.5, true] }'
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise ParameterError(f"A parameter value {type(value).__name__} cannot be saved in a recipe yet; "
                         "write the recipe by hand for this method.")
