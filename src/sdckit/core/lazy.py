"""Lazy re-exports of a package's public names (PEP 562; issue 28 item 4, start-up).

A package's ``__init__`` that imported every submodule to re-export its names loaded all of
them, and their libraries (numba, scipy, DuckDB ...), for any one name. With
:func:`lazy_exports` it names where each public name lives instead; a name's module is imported
the first time the name is asked for (``from sdckit.dp import Laplace``, ``sdckit.dp.Laplace``),
and the value is kept on the package, so later access costs nothing::

    from sdckit.core.lazy import lazy_exports

    __all__ = ["BudgetAccountant", "Laplace"]
    __getattr__, __dir__ = lazy_exports(__name__, {
        "BudgetAccountant": "sdckit.dp.accountant",
        "Laplace": "sdckit.dp.mechanisms",
    })

A public name that is also a submodule's name (``sdckit.anonymity.check`` the function and
``sdckit.anonymity.check`` the module) stays the public name, as it was with the eager imports:
importing the submodule does not put the module in its place on the package.

A public name that was renamed keeps its old name for one release (``renamed={old: new}``, or
:func:`renamed_attributes` for a plain module): the old name gives the new name's object with a
:class:`FutureWarning`, and is not listed by ``dir``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


class _LazyPackage(ModuleType):
    """A package whose public names come from :func:`lazy_exports`: a submodule imported under a
    public name's spelling does not shadow that name."""

    _sdckit_exports: Mapping[str, str]

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_sdckit_exports", {})
        if name in exports and isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return  # the import system binding the submodule; the public name resolves on use
        super().__setattr__(name, value)


def renamed_attributes(module: str, names: Mapping[str, str]) -> Callable[..., Any]:
    """The module-level ``__getattr__`` (PEP 562) of ``module`` that keeps the old names of a rename
    for one release: each old name gives the new name's object, with a :class:`FutureWarning`.

    Parameters
    ----------
    module
        The module's ``__name__``.
    names
        Each old name -> its new name, an attribute of the module.

    Returns
    -------
    ``__getattr__(name, stacklevel=2)``; ``stacklevel`` is the warning's, raised for a function
    that calls it in turn.
    """
    def __getattr__(name: str, stacklevel: int = 2) -> Any:
        try:
            new = names[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        warnings.warn(f"{module}.{name} is now {module}.{new}; the old name goes in the next release.",
                      FutureWarning, stacklevel=stacklevel)
        return getattr(sys.modules[module], new)

    return __getattr__


def lazy_exports(package: str, exports: Mapping[str, str], renamed: Mapping[str, str] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (PEP 562).

    Parameters
    ----------
    package
        The package's ``__name__``; it must be importing (its module in ``sys.modules``).
    exports
        Each public name -> the module that defines it, or ``"module:attribute"`` when the
        name differs there.
    renamed
        Old public names -> their new names (in ``exports``), kept for one release with a
        :class:`FutureWarning` on each use (:func:`renamed_attributes`); never cached on the
        package, so that every use warns.

    Returns
    -------
    The two functions, to be bound as the package's ``__getattr__`` and ``__dir__``.
    """
    module = sys.modules[package]
    module.__class__ = _LazyPackage
    module._sdckit_exports = dict(exports)
    old_name = renamed_attributes(package, renamed or {})

    def __getattr__(name: str) -> Any:
        try:
            target = exports[name]
        except KeyError:
            return old_name(name, stacklevel=3)
        where, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(where), attribute or name)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(exports))

    return __getattr__, __dir__
