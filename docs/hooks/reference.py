"""MkDocs hook: the Reference pages, written at build time from the code (issue 33).

Nothing under ``reference/`` (but its index) is kept in the repository: each build writes

* ``reference/api/<package>.md`` — one ``::: module.Object`` block (mkdocstrings) per name of the
  package's ``__all__``, pointing at the module that defines it (``sdckit`` and ``sdckit.report``
  resolve their names lazily, which static analysis cannot follow);
* ``reference/methods.md`` — every method of the registry (:func:`sdckit.methods.available`): its
  recipe name, class, the kinds and roles of the columns it takes, each parameter with its default
  and its rule (:func:`sdckit.core.method.parameter_rules`, described by
  :func:`sdckit.core.params.describe_rule`) and the class's recipe example;
* ``reference/cli.md`` — ``sdckit --help`` and the help of every command and sub-command, from the
  lazy command table :data:`sdckit.cli.app.COMMANDS`.

It is a plain MkDocs hook (``hooks:`` in mkdocs.yml, MkDocs >= 1.6) rather than the
``mkdocs-gen-files`` plugin: one dependency fewer, and these functions are plain code that
``tests/test_docs.py`` calls too.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:  # the checked-out code is the one documented
    sys.path.insert(0, str(ROOT / "src"))

#: The public packages, each with a page reference/api/<short name>.md.
PACKAGES = ("sdckit", "sdckit.masking", "sdckit.anonymity", "sdckit.synthetic", "sdckit.dp", "sdckit.risk",
            "sdckit.utility", "sdckit.permutation", "sdckit.tabular", "sdckit.query", "sdckit.report")


def page_name(package: str) -> str:
    return package.rsplit(".", 1)[-1]


def target(obj: Any) -> str | None:
    """The dotted path of the module object ``obj`` is defined as, for mkdocstrings."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return f"{obj.__module__}.{obj.__qualname__}"
    return None


def documented() -> dict[str, str]:
    """Each documented object's dotted path -> the page that shows it (path under docs/).

    An object is shown once: on its family's page, or on the ``sdckit`` page when no family
    exports it (the top-level package re-exports the families' main names and links to them)."""
    out: dict[str, str] = {}
    for package in (*PACKAGES[1:], PACKAGES[0]):
        module = importlib.import_module(package)
        for name in module.__all__:
            path = target(getattr(module, name))
            if path is not None:
                out.setdefault(path, f"reference/api/{page_name(package)}.md")
    return out


def api_page(package: str) -> str:
    """The API page of ``package``: its docstring, then every name of ``__all__``."""
    module = importlib.import_module(package)
    here = f"reference/api/{page_name(package)}.md"
    owners = documented()
    lines = [f"# `{package}`", "",
             "Generated from the code at build time: the package's docstring, then every public name",
             "(its `__all__`), each documented where it is defined.", "",
             f"::: {package}", "    options:", "      show_root_heading: false", "      members: false", ""]
    constants, elsewhere = [], []
    for name in sorted(module.__all__, key=str.lower):
        obj = getattr(module, name)
        path = target(obj)
        if path is None:
            constants.append((name, obj))
        elif owners[path] != here:
            elsewhere.append(f"| `{package}.{name}` | [`{path}`]({Path(owners[path]).name}#{path}) |")
        else:
            lines += [f"::: {path}", ""]
    if elsewhere:
        lines += ["## Documented with their family", "", "| name | documented as |", "| --- | --- |",
                  *elsewhere, ""]
    if constants:
        lines += ["## Constants", "", "| name | value |", "| --- | --- |"]
        for name, obj in constants:
            value = ", ".join(f"`{k}`" for k in obj) if isinstance(obj, dict) else f"`{obj!r}`"
            lines.append(f"| `{name}` | {value} |")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str | None:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, bool | int | float | str) or (
            isinstance(value, list) and all(isinstance(v, bool | int | float | str) for v in value)):
        return json.dumps(value)
    return None


def methods_page() -> str:
    """Every registered method, from the registry and its parameter rules."""
    from sdckit.core.method import parameter_rules
    from sdckit.core.params import describe_rule
    from sdckit.methods import available

    shown = documented()
    methods = sorted(available().items())
    lines = ["# Methods", "",
             "Every method a recipe can name (`[[method]] name = \"...\"`), generated at build time from",
             "sdckit's method registry: its class, the columns it takes, and each parameter with its default",
             "and the rule it is checked against when the method is built (a value outside it raises",
             "`ParameterError` naming the parameter). `columns` (every method) defaults to the columns",
             "whose role and kind the method takes.", "",
             "| recipe name | class | what it does |", "| --- | --- | --- |"]
    for name, cls in methods:
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
        lines.append(f"| [`{name}`](#{name}) | `{cls.__name__}` | {summary} |")
    lines.append("")
    for name, cls in methods:
        path = target(cls)
        page = shown.get(path)
        link = f"[`{cls.__name__}`](api/{Path(page).name}#{path})" if page else f"`{path}`"
        kinds = ", ".join(sorted(k.value for k in cls.kinds))
        roles = ", ".join(sorted(r.value for r in cls.roles))
        lines += [f"## `{name}` {{#{name}}}", "",
                  f"Class {link}, defined in `{cls.__module__}`. Takes {kinds} columns of role {roles}.", "",
                  "| parameter | default | rule |", "| --- | --- | --- |"]
        rules = parameter_rules(cls)
        for f in dataclasses.fields(cls):
            if not f.compare:  # e.g. the accountant the caller holds: not a parameter
                continue
            if f.default is not dataclasses.MISSING:
                default = f"`{f.default!r}`"
            elif f.default_factory is not dataclasses.MISSING:
                default = f"`{f.default_factory()!r}`"
            else:
                default = "required"
            rule = describe_rule(rules[f.name]) if f.name in rules else "any value the method accepts"
            lines.append(f"| `{f.name}` | {default} | {rule.replace('|', chr(92) + '|')} |")
        example = {k: _toml_value(v) for k, v in (cls.example or {}).items()}
        if example and all(v is not None for v in example.values()):
            lines += ["", "In a recipe:", "", "```toml", "[[method]]", f'name = "{name}"',
                      *(f"{k} = {v}" for k, v in example.items()), "```"]
        lines.append("")
    return "\n".join(lines)


def _help(args: list[str]) -> str:
    from typer.testing import CliRunner

    from sdckit.cli.app import app

    env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = CliRunner().invoke(app, [*args, "--help"], prog_name="sdckit", env=env)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if result.exit_code != 0:
        raise RuntimeError(f"sdckit {' '.join(args)} --help exited {result.exit_code}: {result.output}")
    return result.output.rstrip() + "\n"


def cli_commands() -> list[list[str]]:
    """Every command and sub-command, as argument lists (``[]`` is ``sdckit`` itself)."""
    from sdckit.cli.app import COMMANDS, load_command

    out: list[list[str]] = [[]]
    for name in sorted(COMMANDS):
        out.append([name])
        command = load_command(name)
        out += [[name, sub] for sub in getattr(command, "commands", {})]  # a group: its commands
    return out


def cli_page() -> str:
    """``--help`` of ``sdckit`` and of every command, in the order of the command table."""
    lines = ["# Command line", "",
             "Generated at build time from the `sdckit` command itself: the output of `--help` for the",
             "command and each of its commands and sub-commands. Bad input prints one line on stderr and",
             "exits with status 2.", ""]
    for args in cli_commands():
        title = " ".join(["sdckit", *args])
        anchor = "-".join(["sdckit", *args])
        lines += [f"## `{title}` {{#{anchor}}}", "", "```text", _help(args).rstrip(), "```", ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Every generated page: its path under docs/ -> its Markdown."""
    out = {f"reference/api/{page_name(p)}.md": api_page(p) for p in PACKAGES}
    out["reference/methods.md"] = methods_page()
    out["reference/cli.md"] = cli_page()
    return out


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files
