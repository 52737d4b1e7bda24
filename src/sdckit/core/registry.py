"""Registries of value classes by the snake_case name a recipe uses: the microdata methods
(:mod:`sdckit.core.method`) and the table protections (:mod:`sdckit.tabular.protection`) are
registered, listed and refused twice by the one rule."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes by their ``name``; ``kind`` ("method", "protection") names them in the errors.

    Examples
    --------
    >>> protections = Registry("protection")
    >>> @protections.register
    ... class Noise:
    ...     name = "noise"
    >>> list(protections.registered())
    ['noise']
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, Any] = {}

    def register(self, cls: T) -> T:
        """Class decorator: register ``cls`` under its ``name`` (a snake_case name, unique)."""
        name = getattr(cls, "name", "")
        if not name or name != name.lower() or " " in name:
            raise TypeError(f"{cls.__name__}.name must be a snake_case name, got {name!r}")
        if name in self._classes and self._classes[name] is not cls:
            raise TypeError(f"{self.kind} name {name!r} is registered twice")
        self._classes[name] = cls
        return cls

    def registered(self) -> dict[str, T]:
        """The registered classes by name, in the order of registration (only those whose
        modules have been imported)."""
        return dict(self._classes)
