"""The contract of a table protection (DESIGN.md section 6), as :mod:`sdckit.core.method` is for
microdata methods.

A protection is a frozen dataclass whose fields are its parameters. The class declares, once:

* ``name`` — the name a table recipe's ``[protection] method`` uses, and its own section
  (``[suppression]``, ``[rounding]``, ...); the class is registered under it;
* ``constraints`` — a rule for each parameter (:mod:`sdckit.core.params`), checked at
  construction in the one template;
* ``secrets`` — fields never written anywhere (a seed), whose :meth:`Protection.provenance`
  says where they came from instead;
* ``path_params`` — fields holding file paths, which a recipe resolves from its own folder;
* ``needs_rules`` — whether it needs sensitivity rules (a ``rules`` field declares it takes them);
* ``example`` — valid parameters, so that the common checks run on every registered protection.

and implements :meth:`Protection.apply` (the existing function of the family runs) and, for the
command line and the recipe, :meth:`Protection.headline`, :meth:`Protection.figures` and
:meth:`Protection.verdict` of its result. The manifest is derived from the fields and cannot
forget one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sdckit.core.errors import ParameterError
from sdckit.core.params import ParamRule, Satisfies, param_error, validate_fields
from sdckit.core.registry import Registry
from sdckit.core.result import plain
from sdckit.core.tomlfile import check_keys, file_error, resolve_path_params
from sdckit.tabular.rules import PQ, Dominance, Manual, MinFrequency, PPercent
from sdckit.tabular.rules import Rule as SensitivityRule

_REGISTRY: Registry[type[Protection]] = Registry("protection")

#: The rule of a ``rules`` field: sensitivity rules (a list becomes a tuple), possibly none.
#: The sensitivity rules a recipe's ``[[rule]]`` names by ``type`` (a manifest by ``rule``), and
#: the keys each takes.
RULE_TYPES: dict[str, tuple[type[SensitivityRule], tuple[str, ...]]] = {
    "frequency": (MinFrequency, ("n", "share")), "dominance": (Dominance, ("n", "k")), "p": (PPercent, ("p",)),
    "pq": (PQ, ("p", "q")), "manual": (Manual, ("cells", "share"))}

RULES = Satisfies(lambda v: isinstance(v, tuple) and all(isinstance(r, SensitivityRule) for r in v),
                  "a list of sensitivity rules (sdckit.tabular.rules)")


@dataclass(frozen=True)
class Protection:
    """Base class of the table protections; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    constraints: ClassVar[Mapping[str, ParamRule]] = {}
    secrets: ClassVar[frozenset[str]] = frozenset()
    path_params: ClassVar[frozenset[str]] = frozenset()
    needs_rules: ClassVar[bool] = False
    example: ClassVar[Mapping[str, Any]] = {}
    #: What the report calls the released table ("protected table", "rounded table", ...).
    released: ClassVar[str] = "protected table"

    # ----------------------------------------------------------------- construction
    def __post_init__(self) -> None:
        validate_fields(self, self.constraints)
        self.check_parameters()

    def check_parameters(self) -> None:
        """Cross-parameter rules (a protection that ``needs_rules`` has some); override, call
        this one, and raise :class:`ParameterError` (via :meth:`param_error`)."""
        if self.needs_rules and not getattr(self, "rules", ()):
            raise self.param_error("rules", "a non-empty list of sensitivity rules (they decide the sensitive cells)")

    def param_error(self, name: str, requirement: str) -> ParameterError:
        """An error in the shared template for parameter ``name``."""
        return param_error(type(self).__name__, name, getattr(self, name), requirement)

    @classmethod
    def takes_rules(cls) -> bool:
        """Whether the protection uses sensitivity rules (it has a ``rules`` field)."""
        return any(f.name == "rules" for f in dataclasses.fields(cls))

    @classmethod
    def from_section(cls, section: Mapping[str, Any], rules: tuple[SensitivityRule, ...] = (),
                     base: Path = Path("."), source: str | Path | None = None) -> Protection:
        """The protection a recipe's section (``[suppression]``, ``[rounding]``, ...) gives, with
        the recipe's ``rules``: an unknown or missing key, or a value against its rule, is one
        line naming the section (and ``source``, the file)."""
        where = f"[{cls.name}]"
        if not isinstance(section, Mapping):
            raise _error(source, f"{where} must be a table of keys.")
        keys = [f.name for f in dataclasses.fields(cls) if f.name != "rules"]
        check_keys(section, keys, where, source)
        missing = [f.name for f in dataclasses.fields(cls) if f.name != "rules" and f.name not in section
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise _error(source, f"{where} needs {missing[0]!r}.")
        values = resolve_path_params(section, cls.path_params, base)
        if cls.takes_rules():
            values["rules"] = tuple(rules)
        try:
            return cls(**values)
        except ParameterError as exc:
            raise section_error(exc, where, source) from None

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Protection:
        """The protection :meth:`to_manifest` wrote (its secrets, never written, are not given)."""
        registry = protections()
        if manifest.get("name") not in registry:
            raise ParameterError(f"Unknown protection {manifest.get('name')!r}; the protections are: "
                                 f"{', '.join(registry)}.")
        params = dict(manifest.get("params", {}))
        if "rules" in params:
            params["rules"] = tuple(rule_from_dict(r) for r in params["rules"])
        return registry[manifest["name"]](**params)

    # ----------------------------------------------------------------- manifest
    def params(self) -> dict[str, Any]:
        """Every parameter but the secrets, JSON-friendly; the rules as they publish themselves."""
        return {f.name: [plain(r.to_dict()) for r in self.rules] if f.name == "rules" else plain(getattr(self, f.name))
                for f in dataclasses.fields(self) if f.name not in self.secrets}

    def provenance(self) -> dict[str, Any]:
        """What the manifest says of the secret fields instead of their values."""
        return {}

    def to_manifest(self) -> dict[str, Any]:
        """The protection as a manifest records it: registered name, class, parameters, and
        the provenance of its secrets."""
        d = {"name": self.name, "class": type(self).__name__, "params": self.params()}
        if self.provenance():
            d["provenance"] = self.provenance()
        return d

    # ----------------------------------------------------------------- application
    def apply(self, table: Any) -> Any:  # pragma: no cover - interface
        """Protect ``table`` (a :class:`~sdckit.tabular.table.Table`, or linked tables)."""
        raise NotImplementedError

    def headline(self, result: Any) -> str:  # pragma: no cover - interface
        """What the result is, in a few words (the title of the command line's figures)."""
        raise NotImplementedError

    def figures(self, result: Any) -> list[tuple[str, str]]:  # pragma: no cover - interface
        """The result's headline figures as ``(label, text)`` rows."""
        raise NotImplementedError

    def summary(self, result: Any) -> list[tuple[str, str]]:
        """:meth:`figures` and the time it took: the rows ``sdckit table protect`` prints."""
        return [*self.figures(result), ("time", f"{result.seconds:.2f} s")]

    def verdict(self, result: Any) -> tuple[bool, str]:  # pragma: no cover - interface
        """Whether the result leaves every sensitive cell protected, and the line that says so
        (``sdckit table protect`` prints it; ``--fail-unsafe`` exits 1 when it is False)."""
        raise NotImplementedError


def audit_verdict(total: int, unprotected: int, what: str) -> tuple[bool, str]:
    """The verdict of an audit of ``total`` sensitive cells (``what``) of which ``unprotected``
    are not protected."""
    if unprotected == 0:
        return True, f"safe: {total:,} of {total:,} {what} protected"
    return False, (f"UNSAFE: {unprotected:,} of {total:,} {what} unprotected (the interval an intruder "
                   "deduces from the release is narrower than their protection levels)")


def rule_from_dict(entry: Mapping[str, Any], where: str = "The rule", source: str | Path | None = None
                   ) -> SensitivityRule:
    """The sensitivity rule of a recipe's ``[[rule]]`` (``type = "frequency"``, ``n = 3``) or of
    a manifest (``{"rule": "frequency", "n": 3}``, :meth:`~sdckit.tabular.rules.Rule.to_dict`);
    ``where`` and ``source`` name it in the errors."""
    if not isinstance(entry, Mapping):
        raise _error(source, f"{where} must be a table of keys.")
    tag = "type" if "type" in entry else "rule"
    kind = {"p%": "p"}.get(str(entry.get(tag, "")).lower(), str(entry.get(tag, "")).lower())
    if kind not in RULE_TYPES:
        raise _error(source, f"{where} has type {entry.get(tag)!r}; use one of {', '.join(RULE_TYPES)}.")
    cls, keys = RULE_TYPES[kind]
    args = {k: v for k, v in entry.items() if k != tag}
    check_keys(args, set(keys), f"{where} ({kind})", source)
    if "cells" in args:
        args["cells"] = tuple(tuple(str(x) for x in c) for c in args["cells"])
    return cls(**args)


def section_error(exc: ParameterError, where: str, source: str | Path | None = None) -> ParameterError:
    """``exc`` (a value's parameter error) as the error of a file's section ``where``: ``"<file>:
    [rounding] the 'base' parameter of ControlledRounding must be ..."``."""
    text = str(exc)
    return _error(source, f"{where} {text[:1].lower()}{text[1:]}")


def _error(source: str | Path | None, message: str) -> ParameterError:
    return ParameterError(message) if source is None else file_error(source, message)


def register(cls: type[Protection]) -> type[Protection]:
    """Class decorator: register a protection under its ``name`` so that recipes can use it."""
    return _REGISTRY.register(cls)


def protections() -> dict[str, type[Protection]]:
    """The registered protections by name, in the order a recipe lists them."""
    return _REGISTRY.registered()
