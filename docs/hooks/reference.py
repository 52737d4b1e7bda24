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
  lazy command table :data:`sdckit.cli.app.COMMANDS`;
* ``reference/recipes.md`` — every key of the microdata recipe, the table recipe (each registered
  protection's section: :func:`sdckit.tabular.protection.protections`, its fields and their
  ``constraints``) and the query service's configuration. The keys each section accepts are the
  ones the loader itself accepts: the hook gives it an unknown key and reads the one-line refusal
  (``"... has unknown key '...'; it takes a, b."``), so a key added to the code appears here;
  what a key means is the comment beside it in the loader's documented example;
* ``reference/http.md`` — every endpoint of the query service, from the OpenAPI schema of the
  FastAPI app built in-process over a tiny configuration (no server is started); the request
  fields and the responses are what the app answers to requests made in-process.

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
import re
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


# ----------------------------------------------------------------------------- recipe keys

PROBE = "__probe__"
#: The one wording of an unknown key (sdckit.core.tomlfile.check_keys) and the schema's own.
_TAKES = re.compile(r"unknown key '__probe__'; it takes (.*)\.$|allowed: (.*)\.$|use (.*?)\.$")


def accepted(call: Any) -> list[str]:
    """The keys a loader accepts: ``call()`` gives it the key ``__probe__`` and must be refused
    with the one-line message that lists the keys it takes."""
    from sdckit.core.errors import SdcError

    try:
        call()
    except SdcError as exc:
        m = _TAKES.search(str(exc))
        if m is None:
            raise RuntimeError(f"the probe was refused for another reason: {exc}") from None
        if m.group(3) is not None:  # a table recipe's sections: "use [table] (or ...), [[rule]], ..."
            return list(dict.fromkeys(re.findall(r"\[+([A-Za-z_]+)\]+", m.group(3))))
        text = next(g for g in m.groups() if g is not None)
        return [k.strip().strip("[]") for k in re.split(r", | or ", text) if k.strip()]
    raise RuntimeError("the loader accepted the unknown key '__probe__'")


def example_comments(doc: str) -> dict[tuple[str, str], str]:
    """``(section, key) -> what it is`` from a documented TOML example (a module docstring): the
    comment beside each ``key = value`` line (or one commented out), else its example value,
    under the ``[section]`` above it (``""`` at the top; ``(section, "")`` is the header's own
    comment). A comment-only line below continues the comment before; a comment indented past
    its ``#`` continues the line above's."""
    found: dict[tuple[str, str], list[str]] = {}
    values: dict[tuple[str, str], str] = {}
    section, last = "", None
    key_line = re.compile(r"^(#\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*(?:#(\s*)(.*))?$")
    for raw in doc.splitlines():
        line = raw.strip()
        header = re.match(r"^\[\[?([A-Za-z_.]+)\]\]?\s*(?:#\s*(.*))?$", line)
        if header:
            section, last = header.group(1), None
            if header.group(2):
                found.setdefault((section, ""), [header.group(2)])
            continue
        m = key_line.match(line)
        if m and (m.group(1) is None or m.group(5) is not None):
            comment = (m.group(5) or "").strip()
            if last is not None and comment and len(m.group(4) or "") >= 2:  # "#   and these)": goes on
                found[last].append(comment)
                comment = ""
            last = (section, m.group(2))
            found.setdefault(last, [comment] if comment else [])
            values.setdefault(last, m.group(3))
            continue
        if line.startswith("#") and last is not None and raw.startswith(" " * 8):
            found[last].append(line.lstrip("# ").strip())
        else:
            last = None
    out = {}
    for key, parts in found.items():
        text = " ".join(parts)
        value = values.get(key)
        if value:
            text = f"{text} (example: `{value}`)" if text else f"example: `{value}`"
        if text:
            out[key] = text
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def key_table(section: str, keys: list[str], comments: dict[tuple[str, str], str],
              links: dict[str, str] | None = None) -> list[str]:
    """A table of ``keys`` with what the documented example says of each (or a link); at the
    top level (``section`` ``""``) a key that is a section is described by its header's comment."""
    lines = ["| key | what it is |", "| --- | --- |"]
    for key in keys:
        text = (links or {}).get(key) or comments.get((section, key))
        if text is None and not section:
            has_section = any(s == key for s, _ in comments)
            text = comments.get((key, "")) or (f"the section `[{key}]` below" if has_section else None)
        lines.append(f"| `{key}` | {_cell(text or '(not in the documented example)')} |")
    return lines


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def microdata_recipe_keys(folder: Path) -> dict[str, list[str]]:
    """Each section of a microdata recipe -> the keys :func:`sdckit.recipe.parse_recipe` takes."""
    import pandas as pd

    from sdckit.core.schema import Schema
    from sdckit.recipe import parse_recipe

    source = folder / "recipe.toml"
    base: dict[str, Any] = {"input": {"path": "data.csv"}, "method": [{"name": "top_bottom_coding", "top": 1.0}]}

    def probe(section: str | None) -> list[str]:
        data = json.loads(json.dumps(base))
        if section is None:
            data[PROBE] = 1
        else:
            data.setdefault(section, {})[PROBE] = 1
            if section == "budget":
                data[section]["epsilon"] = 1
        return accepted(lambda: parse_recipe(data, source))

    return {"": probe(None), "input": probe("input"),
            "schema": accepted(lambda: Schema.from_dict({PROBE: 1}, pd.DataFrame())),
            "output": probe("output"), "report": probe("report"), "budget": probe("budget")}


def table_recipe_keys(folder: Path) -> dict[str, list[str]]:
    """Each section of a table recipe -> the keys :func:`sdckit.tabular.recipe.load_table_recipe` takes."""
    from sdckit.tabular.recipe import load_table_recipe

    table = '[table]\ninput = "cells.csv"\ndimensions = ["a"]\n'

    def probe(text: str) -> list[str]:
        return accepted(lambda: load_table_recipe(_write(folder, "table.toml", text)))

    return {"": probe(table + f"[{PROBE}]\n"), "table": probe(table + f"{PROBE} = 1\n"),
            "protection": probe(table + f"[protection]\n{PROBE} = 1\n"),
            "output": probe(table + f"[output]\n{PROBE} = 1\n")}


def service_config_keys(folder: Path) -> dict[str, list[str]]:
    """Each section of ``service.toml`` -> the keys :func:`sdckit.query.config.load_config` takes."""
    from sdckit.query.config import load_config

    table = '[[table]]\nname = "t"\npath = "t.csv"\n'
    domain = '[table.domains]\na = ["x", "y"]\n'

    def probe(text: str) -> list[str]:
        return accepted(lambda: load_config(_write(folder, "service.toml", text)))

    return {"": probe(f"{PROBE} = 1\n" + table + domain), "service": probe(f"[service]\n{PROBE} = 1\n" + table + domain),
            "restricted": probe(f"[restricted]\n{PROBE} = 1\n" + table + domain),
            "table": probe(table + f"{PROBE} = 1\n" + domain),
            "table.ckm": probe(table + 'mode = "tables"\n' + domain + f"[table.ckm]\nD = 3\nV = 2.0\n{PROBE} = 1\n")}


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{f.default!r}`"
    if f.default_factory is not dataclasses.MISSING:
        return f"`{f.default_factory()!r}`"
    return "required"


def protection_section(name: str, cls: Any) -> list[str]:
    """A protection's recipe section: each field (but ``rules``) with its default and rule."""
    from sdckit.core.params import describe_rule

    summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
    rules = "needs `[[rule]]` sections (they decide the sensitive cells)" if cls.needs_rules else (
        "uses the `[[rule]]` sections when given" if cls.takes_rules() else "takes no `[[rule]]`")
    lines = [f"### `[{name}]` {{#protection-{name}}}", "",
             f"`[protection] method = \"{name}\"`: class `{cls.__module__}.{cls.__name__}` — {_cell(summary)} "
             f"It {rules}.", "", "| key | default | rule |", "| --- | --- | --- |"]
    for f in dataclasses.fields(cls):
        if f.name == "rules":
            continue
        rule = describe_rule(cls.constraints[f.name]) if f.name in cls.constraints else "any value the protection accepts"
        secret = " (secret: never written to the manifest)" if f.name in cls.secrets else ""
        path = " (a path, relative to the recipe)" if f.name in cls.path_params else ""
        lines.append(f"| `{f.name}` | {_default(f)} | {_cell(rule)}{secret}{path} |")
    example = {k: _toml_value(v) for k, v in (cls.example or {}).items() if k != "rules"}
    if example and all(v is not None for v in example.values()):
        lines += ["", "```toml", "[protection]", f'method = "{name}"', "", f"[{name}]",
                  *(f"{k} = {v}" for k, v in example.items()), "```"]
    return [*lines, ""]


def recipes_page() -> str:
    """Every key of the three kinds of TOML file: microdata recipe, table recipe, service config."""
    import tempfile

    import sdckit.query.ckmconfig
    import sdckit.query.config
    import sdckit.recipe
    import sdckit.tabular.recipe
    from sdckit.methods import available
    from sdckit.tabular.protection import protections
    from sdckit.tabular.protection.base import RULE_TYPES

    with tempfile.TemporaryDirectory() as tmp:
        micro = microdata_recipe_keys(Path(tmp))
        table = table_recipe_keys(Path(tmp))
        service = service_config_keys(Path(tmp))
    mc = example_comments(sdckit.recipe.__doc__ or "")
    tc = example_comments(sdckit.tabular.recipe.__doc__ or "")
    sc = {**example_comments(sdckit.query.config.__doc__ or ""), **example_comments(sdckit.query.ckmconfig.__doc__ or "")}
    registry = protections()
    lines = ["# Recipe and configuration keys", "",
             "Generated at build time from the loaders themselves: for every section, the hook gives the",
             "loader an unknown key and lists the keys its refusal names, so a key added to the code appears",
             "here (and an unknown key in your file is refused with the same list). What a key means is the",
             "comment beside it in the loader's documented example; the rules of the method and protection",
             "parameters are the ones checked when they are built. Paths are relative to the file.", "",
             "## Microdata recipe (`sdckit protect`) {#microdata}", "",
             "Read by `sdckit.recipe.load_recipe`. Every `[[method]]` table has `name` (a recipe name of",
             "the [methods](methods.md) page) and that method's parameters.", ""]
    method_links = {"method": "one `[[method]]` table per step, applied in order: `name` and the parameters on "
                              "the [methods](methods.md) page"}
    sections = {"": "Top level", "input": "`[input]`", "schema": "`[schema]`", "output": "`[output]`",
                "report": "`[report]`", "budget": "`[budget]`"}
    for section, title in sections.items():
        lines += [f"### {title} {{#microdata-{section or 'top'}}}", "",
                  *key_table(section, micro[section], mc, links=method_links if section == "" else None), ""]
    lines += [f"Methods a `[[method]]` may name: {', '.join(f'[`{n}`](methods.md#{n})' for n in sorted(available()))}.", "",
              "## Table recipe (`sdckit table protect`) {#table}", "",
              "Read by `sdckit.tabular.recipe.load_table_recipe`. `[protection] method` names one registered",
              "protection; its own section (of the same name) holds its parameters.", ""]
    top = [k for k in table[""] if k not in registry]
    top += [key for (section, key) in tc if section == "" and key and key not in top]  # keys before the sections
    lines += ["### Sections and top-level keys {#table-top}", "", "| section or key | what it is |", "| --- | --- |"]
    for key in top:
        text = tc.get(("", key)) or tc.get((key, "")) or {
            "table": "the table: `[table]`, or several `[[table]]` (linked tables, each with a `name`)",
            "rule": "`[[rule]]`: a sensitivity rule, see below",
            "protection": "`[protection] method`: which protection, see below"}.get(key, "(not in the documented example)")
        lines.append(f"| `{key}` | {_cell(text)} |")
    for name in registry:
        lines.append(f"| `{name}` | the parameters of the protection [`{name}`](#protection-{name}) |")
    lines += ["", "### `[table]` {#table-table}", "", *key_table("table", table["table"], tc),
              "", "### `[[rule]]` {#table-rule}", "",
              "`type` names the rule; the other keys are its parameters (class in `sdckit.tabular.rules`).", "",
              "| type | class | keys |", "| --- | --- | --- |"]
    for kind, (cls, keys) in RULE_TYPES.items():
        lines.append(f"| `{kind}` | `{cls.__name__}` | {', '.join(f'`{k}`' for k in keys)} |")
    lines += ["", "### `[protection]` {#table-protection}", "",
              *key_table("protection", table["protection"], tc), "",
              f"The protections: {', '.join(f'[`{n}`](#protection-{n})' for n in registry)}.", ""]
    for name, cls in registry.items():
        lines += protection_section(name, cls)
    lines += ["### `[output]` {#table-output}", "", *key_table("output", table["output"], tc), "",
              "## Query service configuration (`sdckit serve`) {#service}", "",
              "Read by `sdckit.query.config.load_config`. Each `[[table]]` has `[table.bounds]`",
              "(`column = [low, high]`) and `[table.domains]` (`column = [values]`).", ""]
    titles = {"": "Top level", "service": "`[service]`", "restricted": "`[restricted]`", "table": "`[[table]]`",
              "table.ckm": "`[table.ckm]` (a table with `mode = \"tables\"`)"}
    top_links = {"service": "the service: state database, cache, sync", "restricted": "restricted mode's controls",
                 "table": "one `[[table]]` per queryable table"}
    for section, title in titles.items():
        anchor = section.replace(".", "-") or "top"
        lines += [f"### {title} {{#service-{anchor}}}", "",
                  *key_table(section, service[section], sc, links=top_links if section == "" else None), ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- HTTP endpoints

#: The tiny service the HTTP reference is generated over: the bundled census file, one table
#: answered by SQL and the same file served as tables (the cell key method).
SERVICE_TOML = """\
[service]
state = "state.db"
seed = "00112233445566778899aabbccddeeff"

[[table]]
name = "census"
path = "census.csv"
[table.bounds]
INCOME = [0, 400000]
[table.domains]
SEX = ["F", "M"]

[[table]]
name = "census_tables"
path = "census.csv"
mode = "tables"
[table.domains]
SEX = ["F", "M"]
[table.ckm]
D = 3
V = 2.0
js = 1

[public_tables.sexes]
path = "sexes.csv"
"""

#: A public table the service joins to its private ones (``GET /v1/public/sexes`` reads it whole).
PUBLIC_CSV = "code,label\nF,female\nM,male\n"
#: The concrete path requested for an OpenAPI path with parameters.
PATH_EXAMPLES = {"/v1/public/{name}": "/v1/public/sexes"}

#: A valid request body of each endpoint that takes one (the first answer shown on the page).

EXAMPLES: dict[str, dict[str, Any]] = {
    "/v1/query": {"sql": "SELECT SEX, COUNT(*) AS n FROM census GROUP BY SEX", "epsilon": 0.5},
    "/v1/table": {"table": "census_tables", "dimensions": ["SEX"]},
}


def _json_block(value: Any) -> list[str]:
    """An object one key a line (the values compact), as JSON."""
    if isinstance(value, dict):
        text = "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()) + "\n}"
    else:
        text = json.dumps(value)
    return ["```json", text, "```"]


def http_exchanges() -> tuple[dict[str, Any], dict[str, list[tuple[str, Any, int, Any]]]]:
    """The OpenAPI schema of the service's app, and per path the requests made in-process with
    their answers: ``(what, body, status, answer)``."""
    import shutil
    import tempfile
    import warnings

    with warnings.catch_warnings():  # starlette's note on httpx, not ours
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from sdckit import datasets
    from sdckit.query.server import create_app

    exchanges: dict[str, list[tuple[str, Any, int, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(datasets.path("census.csv"), folder / "census.csv")
        (folder / "service.toml").write_text(SERVICE_TOML, encoding="utf-8")
        (folder / "sexes.csv").write_text(PUBLIC_CSV, encoding="utf-8")
        app = create_app(folder / "service.toml")
        service = app.state.service
        try:
            key = service.state.add_analyst("analyst", "dp", epsilon=1)
            schema = app.openapi()
            auth = {"Authorization": f"Bearer {key}"}
            with TestClient(app) as client:
                for path, operations in schema["paths"].items():
                    for method in operations:
                        calls = exchanges.setdefault(f"{method.upper()} {path}", [])
                        body = EXAMPLES.get(path)
                        cases = [("a valid request", body, auth), ("without the API key", body, {})]
                        if body is not None:
                            cases.append(("with an unknown field", {**body, PROBE: 1}, auth))
                        for what, sent, headers in cases:
                            r = client.request(method.upper(), PATH_EXAMPLES.get(path, path), json=sent, headers=headers)
                            calls.append((what, sent, r.status_code, r.json()))
        finally:
            service.close()
    return schema, exchanges


def request_fields(calls: list[tuple[str, Any, int, Any]]) -> list[str]:
    """The fields an endpoint takes, read from its refusal of the unknown field ``__probe__``
    (``"... send table, dimensions, measure, where: ..."`` or ``"... send 'sql' and ... 'epsilon'"``)."""
    for _, _, _, answer in calls:
        error = answer.get("error", "") if isinstance(answer, dict) else ""
        if PROBE in error and "send" in error:
            told = error.split("send", 1)[1]
            quoted = re.findall(r"'([A-Za-z_]+)'", told)
            return list(dict.fromkeys(quoted)) if quoted else [f.strip() for f in told.split(":")[0].split(",")]
    return []


def http_page() -> str:
    """Every endpoint of the query service: path and method from the app's OpenAPI schema, the
    handler's documentation, and what the app answers to a valid request, to one without the
    key and to one with an unknown field (which names the fields the endpoint takes)."""
    from sdckit.query.service import Service

    schema, exchanges = http_exchanges()
    lines = ["# HTTP endpoints", "",
             "Generated at build time from the query service itself: the paths and methods are the OpenAPI",
             f"schema of the FastAPI app ({schema['info']['title']!r}, OpenAPI {schema['openapi']}) that",
             "`sdckit serve` runs, built in-process over a tiny configuration (the bundled `census.csv`,",
             "one table answered by SQL and the same file served as tables); the answers below are what",
             "that app returned to requests made in-process while this page was built (the noise is",
             "reproducible only because the configuration sets a test seed). Every request carries",
             "`Authorization: Bearer <key>` (`sdckit analyst add` prints the key); every refusal is",
             "`{\"error\": \"...\"}` with a 4xx status. The service itself serves no schema",
             "(`/openapi.json` and `/docs` are off).", "",
             "| method | path | handler |", "| --- | --- | --- |"]
    for path, operations in schema["paths"].items():
        for method in operations:
            lines.append(f"| `{method.upper()}` | `{path}` | `Service.{path.rsplit('/', 1)[-1]}` |")
    lines.append("")
    for endpoint, calls in exchanges.items():
        method, path = endpoint.split(" ", 1)
        name = path.rsplit("/", 1)[-1]
        doc = inspect.getdoc(getattr(Service, name, None)) or ""
        lines += [f"## `{endpoint}` {{#{name}}}", ""]
        if doc:
            lines += [re.sub(r":(mod|func|class):", "", doc).replace("``", "`"), ""]
        fields = request_fields(calls)
        statuses = ", ".join(dict.fromkeys(str(status) for _, _, status, _ in calls))
        lines += [f"- **Request fields**: {', '.join(f'`{f}`' for f in fields) if fields else 'none (no body)'}"
                  + (" (as the app's refusal of an unknown field names them)" if fields else ""),
                  "- **Header**: `Authorization: Bearer <key>`",
                  f"- **Statuses shown below**: {statuses}", ""]
        for what, sent, status, answer in calls:
            lines += [f"**{what}** → status {status}", ""]
            if sent is not None:
                lines += ["Request body:", "", *_json_block(sent), ""]
            lines += ["Answer:", "", *_json_block(answer), ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Every generated page: its path under docs/ -> its Markdown."""
    out = {f"reference/api/{page_name(p)}.md": api_page(p) for p in PACKAGES}
    out["reference/methods.md"] = methods_page()
    out["reference/cli.md"] = cli_page()
    out["reference/recipes.md"] = recipes_page()
    out["reference/http.md"] = http_page()
    return out


# ----------------------------------------------------------------------------- pictures
#: The pictures the pages show, drawn at build time by the library itself (so they cannot drift):
#: path under docs/ -> (page that shows it, what it is).
PICTURES = {
    "images/generated/report-distances.svg": ("how-to/read-the-report.md", "the distances section's figure"),
    "images/generated/report-classes.svg": ("how-to/read-the-report.md", "the classes section's figure"),
    "images/generated/table-pattern.svg": ("tutorials/protect-a-table.md", "the suppression pattern"),
}


def report_pictures() -> dict[str, str]:
    """Two figures of the report that docs/how-to/read-the-report.md builds (the same release, seed
    and settings), as the report draws them (:mod:`sdckit.report.figures`)."""
    import pandas as pd

    from sdckit import protect
    from sdckit.masking import AdditiveNoise
    from sdckit.report import build_report

    original = pd.read_csv(ROOT / "src/sdckit/datasets/census.csv", dtype={"ZIP": str})
    schema = {"identifier": ["ID"], "quasi": ["AGE", "SEX", "ZIP"], "confidential": ["INCOME", "HEIGHT", "DISEASE"]}
    seed = "00112233445566778899aabbccddeeff"
    release = protect(original, [AdditiveNoise(alpha=0.5, columns=["INCOME", "HEIGHT"])], schema=schema, seed=seed)
    report = build_report(original, release.data, schema=release.schema, manifest=release.manifest, seed=seed,
                          n_random=5000, n_null=20)
    figure = {s.anchor: str(s.context["figure"]) for s in report.sections if "figure" in s.context}
    return {"images/generated/report-distances.svg": figure["distances"],
            "images/generated/report-classes.svg": figure["classes"]}


#: Colours of the pattern picture: the workbench's Tables screen's (src/sdckit/app/static/app.css).
PATTERN_COLOURS = {"safe": "#ffffff", "primary": "#f4c7c3", "secondary": "#fde2b8"}


def pattern_picture() -> str:
    """The suppression pattern of docs/tutorials/protect-a-table.md (income by ZIP with its
    provinces x education, MinFrequency(3) and PPercent(10), optimal), one coloured cell per
    table cell, "x" where suppressed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from sdckit.report.figures import to_svg
    from sdckit.tabular import DimensionHierarchy, MinFrequency, PPercent, Table, suppress

    data = pd.read_csv(ROOT / "src/sdckit/datasets/census.csv", dtype={"ZIP": str})
    places = DimensionHierarchy.from_lengths(data["ZIP"], [2, 3])
    table = Table.from_microdata(data, ["ZIP", "EDUCATION"], {"ZIP": places}, response="INCOME")
    cells = suppress(table, [MinFrequency(3), PPercent(10)], method="optimal").cells
    rows = list(dict.fromkeys(cells["ZIP"]))
    cols = list(dict.fromkeys(cells["EDUCATION"]))
    status = {(z, e): st for z, e, st in zip(cells["ZIP"], cells["EDUCATION"], cells["status"])}
    value = {(z, e): v for z, e, v in zip(cells["ZIP"], cells["EDUCATION"], cells["value"])}
    fig, ax = plt.subplots(figsize=(1.3 + 1.15 * len(cols), 0.5 + 0.26 * len(rows)))
    for i, z in enumerate(rows):
        for j, e in enumerate(cols):
            st = status.get((z, e))
            colour = "#eeeeee" if st is None else PATTERN_COLOURS[st]
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="#c8ccd2", linewidth=0.6))
            if st is not None:
                text = "x" if st != "safe" else f"{value[(z, e)] / 1000:,.0f}k"
                ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(cols))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(cols))], cols, fontsize=7)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows, fontsize=7)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="#c8ccd2") for c in PATTERN_COLOURS.values()]
    ax.legend(handles, ["published", "primary (x)", "secondary (x)"], loc="upper center",
              bbox_to_anchor=(0.5, -0.01), ncol=3, fontsize=7, frameon=False)
    try:
        return to_svg(fig)
    finally:
        plt.close(fig)


def pictures() -> dict[str, str]:
    """Every generated picture: its path under docs/ -> its SVG text."""
    out = report_pictures()
    out["images/generated/table-pattern.svg"] = pattern_picture()
    return out


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    for path, svg in pictures().items():
        files.append(File.generated(config, path, content=svg.encode("utf-8")))
    return files
