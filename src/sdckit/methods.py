"""The catalogue of registered methods, for recipes and the CLI.

Importing a method package registers its methods; this module imports them all, so that
:func:`get_method` and :func:`available` see every method sdckit has.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from sdckit.core.method import Method, method_from_params, registered

#: Packages whose import registers methods. A new method package adds its name here.
METHOD_PACKAGES = ("sdckit.masking", "sdckit.synthetic", "sdckit.anonymity", "sdckit.dp")


def available() -> dict[str, type[Method]]:
    """Every registered method by its recipe name."""
    for package in METHOD_PACKAGES:
        importlib.import_module(package)
    return registered()


def get_method(name: str, params: Mapping[str, Any] | None = None) -> Method:
    """Build the method a recipe names, e.g. ``get_method("additive_noise", {"alpha": 0.1})``."""
    return method_from_params(name, dict(params or {}), available())
