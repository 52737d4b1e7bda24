"""Every README example runs as shown, and the figures it quotes come from that run (issue 12 §5).

The rules of the runner are in ``tests/readme_runner.py``.
"""

from __future__ import annotations

import pytest

from readme_runner import README, ROOT, SHELLS, Runner, files_declared, parse, runnable

SECTIONS = parse(README.read_text(encoding="utf-8"))
FILES = files_declared(SECTIONS)


@pytest.mark.parametrize("section", [s for s in SECTIONS if runnable(s)], ids=lambda s: s.title)
def test_readme_section_runs_as_shown(section, tmp_path):
    Runner(tmp_path, FILES).run(section)


#: The pages whose examples the test suite runs: the README (here) and every page of docs/
#: (tests/test_docs.py), which hold the README's former sections (issue 33).
PAGES = [README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]


def run_commands(pages) -> str:
    """The shell blocks the runner executes on ``pages`` (not the not-run ones), as one text."""
    skipped = {"not-run", "output", "file"}
    return "\n".join(b.text for page in pages for s in parse(page.read_text(encoding="utf-8"))
                     for b in s.blocks if b.lang in SHELLS and not skipped & set(b.directives))


def test_quick_start_and_every_command_group_are_exercised():
    titles = [s.title for s in SECTIONS if runnable(s)]
    assert "Quick start" in titles
    assert "sdckit demo" in run_commands([README])
    # every command group is run by an example of the README or of a docs page
    text = run_commands(PAGES)
    for command in ("sdckit demo", "sdckit protect", "sdckit assess", "sdckit check", "sdckit risk",
                    "sdckit compare", "sdckit tune", "sdckit dp-error", "sdckit verify-record",
                    "sdckit table protect", "sdckit table audit"):
        assert command in text, command


def test_a_command_shown_but_not_run_does_not_count(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("## S\n\n<!-- not-run: a server -->\n```bash\nsdckit tune x.toml\n```\n\n"
                    "```bash\nsdckit risk x.csv\n```\n\n<!-- output -->\n```\nsdckit check\n```\n")
    text = run_commands([page])
    assert "sdckit risk" in text and "sdckit tune" not in text and "sdckit check" not in text


def _section(text, tmp_path):
    sections = parse(text)
    return Runner(tmp_path, files_declared(sections)), sections[0]


def test_runner_fails_on_a_failing_command(tmp_path):
    runner, section = _section("## S\n\n```bash\nsdckit protect missing.toml\n```\n", tmp_path)
    with pytest.raises(AssertionError, match="line 3: exit 2"):
        runner.run(section)


def test_runner_fails_when_a_quoted_figure_is_not_printed(tmp_path):
    text = "## S\n\n```python\nprint(1 + 1)\n```\n\n<!-- output -->\n```\n3\n```\n"
    runner, section = _section(text, tmp_path)
    with pytest.raises(AssertionError, match="did not print '3'"):
        runner.run(section)


def test_runner_checks_quoted_figures_and_keeps_names_between_python_blocks(tmp_path):
    text = ("## S\n\n```python\nx = 40\n```\n\n```python\nprint(x + 2)\n```\n\n"
            "<!-- output -->\n```\n42\n```\n")
    runner, section = _section(text, tmp_path)
    runner.run(section)


def test_runner_fails_on_a_python_error_and_on_bad_toml(tmp_path):
    runner, section = _section("## S\n\n```python\n1 / 0\n```\n", tmp_path / "a")
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        runner.run(section)
    runner, section = _section("## S\n\n```toml\n[x\n```\n", tmp_path / "b")
    with pytest.raises(AssertionError, match="not valid TOML"):
        runner.run(section)


def test_runner_needs_a_reason_to_skip_and_a_base_for_a_fragment(tmp_path):
    runner, section = _section("## S\n\n<!-- not-run: -->\n```bash\nfalse\n```\n", tmp_path / "a")
    with pytest.raises(AssertionError, match="must say why"):
        runner.run(section)
    runner, section = _section("## S\n\n<!-- fragment: r.toml -->\n```toml\na = 1\n```\n", tmp_path / "b")
    with pytest.raises(AssertionError, match="no '<!-- file: r.toml -->'"):
        runner.run(section)


def test_fragment_is_appended_to_its_recipe(tmp_path):
    text = ("## S\n\n<!-- file: r.toml -->\n```toml\na = 1\n```\n\n<!-- fragment: r.toml -->\n"
            "```toml\nb = 2\n```\n\n```bash\ncat r.toml\n```\n\n<!-- output -->\n```\na = 1\nb = 2\n```\n")
    runner, section = _section(text, tmp_path)
    runner.run(section)
