"""The documentation site (issue 33): every example on every page of docs/ runs as shown and
prints what the page quotes, and the generated Reference covers the code it is generated from.

The runner's rules are in ``tests/readme_runner.py``; a docs page runs its ``## `` sections in
order in one folder and one Python interpreter, as a tutorial is read (a page marked
``<!-- sections: independent -->``, such as the full guides under ``reference/`` that hold the
README's former sections, runs each section on its own in a fresh folder, as the README's
sections run). The folder also holds the repository's bundled tau-ARGUS job files (``tests/data/tauargus``), as in a clone. A page that
starts the query service shows ``sdckit serve CONFIG --port PORT`` in a block marked
``<!-- not-run: ... -->`` (the reader runs it in a second terminal): the test starts the real
service there (``tests/query_helpers.Server``: 127.0.0.1, a free port, which replaces PORT in the
blocks after it) and stops it after the page. The site itself is built with
``mkdocs build --strict`` by ``.ci/run``.

The generated Reference (``docs/hooks/reference.py``) is checked against the code it comes from:
every registered method and table protection, every CLI command, every public name, the keys
each recipe and configuration loader accepts, and every endpoint of the query service.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import re
import shutil
import sys

import pytest

from query_helpers import Server
from readme_runner import ROOT, Runner, Section, files_declared, parse, runnable

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


@functools.cache
def _hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _pages() -> dict[str, str]:
    return _hook().pages()


#: A page whose sections are independent (the full guides under reference/, the README's former
#: sections) says so: each of its ``## `` sections then runs on its own in a fresh folder, as the
#: README's do, and the test suite shares them out over its workers.
INDEPENDENT = "<!-- sections: independent -->"


def cases(pages, root=DOCS):
    """One case per page, or per runnable section of a page marked INDEPENDENT."""
    for page in pages:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(root))
        runnable_titles = [s.title for s in parse(text) if runnable(s)]
        if INDEPENDENT in text.splitlines():
            assert len(set(runnable_titles)) == len(runnable_titles), f"{name}: two sections of one title"
            yield from (pytest.param(page, title, id=f"{name}::{title}") for title in runnable_titles)
        elif runnable_titles:
            yield pytest.param(page, None, id=name)


@pytest.mark.parametrize(("page", "title"), list(cases(PAGES)))
def test_docs_page_runs_as_shown(page, title, tmp_path):
    sections = parse(page.read_text(encoding="utf-8"))
    runner = Runner(tmp_path, files_declared(sections), source=str(page.relative_to(ROOT)))
    shutil.copytree(ROOT / "tests" / "data" / "tauargus", tmp_path / "tests" / "data" / "tauargus")
    if title is not None:
        sections = [s for s in sections if s.title == title]
    served = serve_block(sections)
    if served is None:
        runner.run_page(sections)
        return
    before, (config, port), after = served
    runner.run_page(before)
    server = Server(tmp_path / config, command=[sys.executable, "-m", "sdckit", "serve", str(tmp_path / config)])
    try:
        runner.run_page(with_port(after, port, server.port))
    finally:
        server.stop()


#: The one line of a docs block that starts the query service (run by the test, not the runner).
SERVE = re.compile(r"^sdckit serve (\S+) --port (\d+)$")


def serve_block(sections: list[Section]) -> tuple[list[Section], tuple[str, str], list[Section]] | None:
    """``(before, (config, port), after)``: the page cut at its not-run ``sdckit serve`` block, or
    None. Before it, only shell and files (the runner's Python session ends with each run)."""
    for i, section in enumerate(sections):
        for j, block in enumerate(section.blocks):
            m = SERVE.match(block.text.strip())
            if "not-run" in block.directives and m:
                before = [*sections[:i], Section(section.title, section.blocks[:j])]
                assert not any(b.lang == "python" for s in before for b in s.blocks), \
                    "a docs page that starts the service has no Python example before it"
                return before, m.groups(), [Section(section.title, section.blocks[j + 1:]), *sections[i + 1:]]
    return None


def with_port(sections: list[Section], shown: str, port: int) -> list[Section]:
    """The sections with the address the page shows, 127.0.0.1:SHOWN, moved to the test's port."""
    def move(block):
        return dataclasses.replace(block, text=block.text.replace(f"127.0.0.1:{shown}", f"127.0.0.1:{port}"))
    return [Section(s.title, [move(b) for b in s.blocks]) for s in sections]


def test_a_page_of_independent_sections_is_run_section_by_section(tmp_path):
    together = tmp_path / "together.md"
    together.write_text("## A\n\n```python\nx = 1\n```\n\n## B\n\n```python\nprint(x)\n```\n")
    alone = tmp_path / "alone.md"
    alone.write_text(INDEPENDENT + "\n\n" + together.read_text() + "\n## C\n\nno example\n")
    found = [(c.values[0].name, c.values[1], c.id) for c in cases([alone, together], root=tmp_path)]
    assert found == [("alone.md", "A", "alone.md::A"), ("alone.md", "B", "alone.md::B"),
                     ("together.md", None, "together.md")]
    # run alone, B does not see A's names: the sections of such a page must not depend on each other
    sections = parse(alone.read_text())
    runner = Runner(tmp_path / "run", files_declared(sections), source="docs/alone.md")
    with pytest.raises(AssertionError, match="NameError"):
        runner.run_page([s for s in sections if s.title == "B"])


def test_a_docs_page_runs_its_sections_in_one_folder_and_names_its_line(tmp_path):
    text = ("## A\n\n```bash\necho 40 > n.txt\n```\n\n```python\nx = 2\n```\n\n"
            "## B\n\n```python\nprint(int(open('n.txt').read()) + x)\n```\n\n<!-- output -->\n```\n43\n```\n")
    Runner(tmp_path / "a", {}, source="docs/x.md").run_page(parse(text.replace("43", "42")))
    runner = Runner(tmp_path / "b", {}, source="docs/x.md")
    with pytest.raises(AssertionError, match=r"docs/x\.md line 18: the block before did not print '43'"):
        runner.run_page(parse(text))


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    nav = re.findall(r":\s*(\S+\.md)\s*$|^\s*-\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    listed = {a or b for a, b in nav}
    generated = set(_pages())
    written = {str(p.relative_to(DOCS)) for p in PAGES}
    assert listed == written | generated, (listed ^ (written | generated))
    assert not written & generated, "a generated page is also kept in docs/"


def test_reference_covers_every_method_command_and_public_name():
    from sdckit.cli.app import COMMANDS
    from sdckit.core.params import describe_rule
    from sdckit.masking import Microaggregation
    from sdckit.methods import available

    hook = _hook()
    pages = _pages()
    methods = pages["reference/methods.md"]
    for name in available():
        assert f"## `{name}` {{#{name}}}" in methods, name
    # a parameter's rule is the one the class checks (hand-picked: Microaggregation's k and strata)
    assert f"| `k` | required | {describe_rule(Microaggregation.constraints['k'])} |" in methods
    assert "| `strata` | `None` | None or a non-empty list of distinct column names |" in methods
    cli = pages["reference/cli.md"]
    for name in COMMANDS:
        assert f"## `sdckit {name}`" in cli, name
    assert "## `sdckit table protect`" in cli and "## `sdckit analyst add`" in cli
    assert "Usage: sdckit protect [OPTIONS] {recipe}" in cli
    for package in hook.PACKAGES:
        module = importlib.import_module(package)
        page = pages[f"reference/api/{hook.page_name(package)}.md"]
        for name in module.__all__:
            path = hook.target(getattr(module, name))
            assert (f"::: {path}" in page or f"[`{path}`]" in page) if path else f"| `{name}` |" in page, (package, name)


def test_sphinx_roles_in_docstrings_become_code_spans():
    spec = importlib.util.spec_from_file_location("docs_griffe_sdckit", DOCS / "hooks" / "griffe_sdckit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "See :func:`~sdckit.permutation.verify_linkage` and :class:`sdckit.Schema`, not `x`."
    assert module.plain_roles(text) == "See `verify_linkage` and `sdckit.Schema`, not `x`."


def test_a_page_that_starts_the_service_is_cut_at_its_serve_block():
    text = ("## A\n\n```bash\necho hi\n```\n\n<!-- not-run: a second terminal -->\n```bash\n"
            "sdckit serve service.toml --port 8000\n```\n\n```bash\ncurl http://127.0.0.1:8000/v1/budget\n```\n\n"
            "## B\n\n```python\nprint('http://127.0.0.1:8000', 'port 8000')\n```\n")
    before, (config, port), after = serve_block(parse(text))
    assert (config, port) == ("service.toml", "8000")
    assert [b.text for s in before for b in s.blocks] == ["echo hi\n"]
    moved = [b.text for s in with_port(after, port, 12345) for b in s.blocks]
    assert moved == ["curl http://127.0.0.1:12345/v1/budget\n", "print('http://127.0.0.1:12345', 'port 8000')\n"]
    assert serve_block(parse(text.replace("<!-- not-run: a second terminal -->\n", ""))) is None
    with pytest.raises(AssertionError, match="no Python example before it"):
        serve_block(parse(text.replace("```bash\necho hi", "```python\nx = 1")))


def test_recipe_reference_covers_every_protection_method_and_loader_key():
    from sdckit.core.params import describe_rule
    from sdckit.methods import available
    from sdckit.tabular.protection import CellSuppression, ControlledRounding, protections

    page = _pages()["reference/recipes.md"]
    for name, cls in protections().items():
        assert f"### `[{name}]` {{#protection-{name}}}" in page, name
        assert f"`{cls.__module__}.{cls.__name__}`" in page, name
        for field in dataclasses.fields(cls):
            if field.name != "rules":
                assert f"| `{field.name}` |" in page, (name, field.name)
    for name in available():
        assert f"[`{name}`](methods.md#{name})" in page, name
    # hand-picked rows: a protection parameter's rule is the one its class checks ...
    assert f"| `time_limit` | `None` | {describe_rule(CellSuppression.constraints['time_limit'])} |" in page
    assert f"| `base` | required | {describe_rule(ControlledRounding.constraints['base'])} |" in page
    assert "| `seed` | `None` | any value the protection accepts (secret: never written to the manifest) |" in page
    # ... and every key each loader takes is listed in its section (keys named in sdckit's docs)
    sections = {"microdata-top": ["seed", "seed_file", "engine", "memory", "scheduler", "fail_unsafe", "method"],
                "microdata-input": ["path", "format", "sep", "encoding"], "microdata-schema": ["quasi", "kinds", "orders"],
                "microdata-report": ["n_random", "n_null", "null", "alpha", "interval_p", "enabled"],
                "microdata-budget": ["epsilon", "delta", "ledger"], "table-table": ["input", "dimensions", "rda"],
                "table-output": ["dir", "cells"], "service-service": ["state", "cache", "seed", "sync", "memory_limit"],
                "service-restricted": ["min_query_set", "collusion", "p_percent"],
                "service-table": ["name", "path", "privacy_unit", "max_rows_per_unit", "mode", "dimensions"],
                "service-table-ckm": ["D", "V", "js", "pstay", "ptable", "record_key", "digits", "min_count"]}
    for anchor, keys in sections.items():
        start = page.index(f"{{#{anchor}}}")
        body = page[start:page.index("\n### ", start)] if "\n### " in page[start:] else page[start:]
        for key in keys:
            assert f"| `{key}` |" in body, (anchor, key)
    assert "| `restricted` | restricted mode's controls |" in page
    assert "| `min_query_set` | query-set-size control k (Denning) (example: `5`) |" in page


def test_a_loader_key_probe_reads_the_refusal_and_nothing_else():
    from sdckit.core.errors import ParameterError

    hook = _hook()

    def refuses(message):
        def call():
            raise ParameterError(message)
        return call

    assert hook.accepted(refuses("x.toml: [output] has unknown key '__probe__'; it takes cells, dir.")) == ["cells", "dir"]
    assert hook.accepted(refuses("Unknown schema key(s) '__probe__'; allowed: kinds, quasi.")) == ["kinds", "quasi"]
    with pytest.raises(RuntimeError, match="another reason"):
        hook.accepted(refuses("the recipe needs an [input] table with a 'path'."))
    with pytest.raises(RuntimeError, match="accepted the unknown key"):
        hook.accepted(lambda: None)


def test_a_documented_example_gives_each_key_its_comment():
    doc = ("Example::\n\n"
           "    seed = \"ab\"              # the secret\n"
           "    [input]                  # where the data is\n"
           "    path = \"census.csv\"      # relative to the recipe\n"
           "    # sep = \";\"               # optional: the delimiter,\n"
           "                             # sniffed otherwise\n"
           "    dir = \"out\"\n")
    comments = _hook().example_comments(doc)
    assert comments[("", "seed")] == 'the secret (example: `"ab"`)'
    assert comments[("input", "")] == "where the data is"
    assert comments[("input", "path")] == 'relative to the recipe (example: `"census.csv"`)'
    assert comments[("input", "sep")] == 'optional: the delimiter, sniffed otherwise (example: `";"`)'
    assert comments[("input", "dir")] == 'example: `"out"`'


def test_http_reference_lists_every_route_of_the_app_with_its_answers():
    hook = _hook()
    page = _pages()["reference/http.md"]
    schema, exchanges = hook.http_exchanges()
    # the endpoints sdckit.query.server documents, by hand
    served = {f"{m} {p}" for p, ops in schema["paths"].items() for m in (o.upper() for o in ops)}
    assert served == {"POST /v1/query", "POST /v1/table", "GET /v1/budget", "GET /v1/public/{name}"}
    for endpoint in served:
        assert f"## `{endpoint}`" in page, endpoint
        statuses = [status for _, _, status, _ in exchanges[endpoint]]
        assert statuses[:2] == [200, 401], (endpoint, statuses)
    # the refusal of an unknown field names the fields each endpoint takes
    assert "Unknown field '__probe__' in the request: send 'sql' and, in dp mode, 'epsilon'" in page
    assert "Unknown field '__probe__' in the request; send table, dimensions, measure, where" in page
    assert ("- **Request fields**: `sql`, `epsilon`, `delta`, `rho`, `max_rows_per_unit`, `max_groups_per_unit`, "
            "`max_rows_per_group` (as the app's") in page
    assert "- **Request fields**: `table`, `dimensions`, `measure`, `where` (as the app's" in page
    assert "- **Request fields**: none (no body)" in page


def test_choose_a_method_links_every_registered_method():
    from sdckit.methods import available

    text = (DOCS / "how-to" / "choose-a-method.md").read_text(encoding="utf-8")
    for name in available():
        assert f"[`{name}`](../reference/methods.md#{name})" in text, name


def test_every_picture_a_page_shows_exists_or_is_drawn_at_build_time():
    """Pictures are files under docs/ or drawn by the hook from the library (the report's figures,
    a suppression pattern), so none can drift from the code; each page shows the ones it names."""
    hook = _hook()
    drawn = hook.pictures()
    assert set(drawn) == set(hook.PICTURES)
    for path, svg in drawn.items():
        assert svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>"), path
        assert 'xmlns="http://www.w3.org/2000/svg"' in svg[:svg.index(">")], path  # a file of its own, for <img>
    # matplotlib writes each text as a path with the text in a comment: 22 primary + 17 secondary "x"
    assert drawn["images/generated/table-pattern.svg"].count("<!-- x -->") == 39
    for path, (page, _) in hook.PICTURES.items():
        assert f"../{path}" in (DOCS / page).read_text("utf-8"), (page, path)
    for page in PAGES:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text("utf-8")):
            resolved = (page.parent / target).resolve()
            name = resolved.relative_to(DOCS.resolve()).as_posix()
            assert resolved.is_file() or name in drawn, (page.name, target)
