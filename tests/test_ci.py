"""CI runs the README's test command as written, then the long runs marked slow (issue 28)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- not-run: it is the test suite that runs this README -->\n```bash\n(.*?)\n```", text, re.S)
    assert found, "README.md has no test command block"
    return found.group(1).strip()


def test_ci_runs_the_readme_test_command_then_the_slow_runs():
    command = _readme_test_command()
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert command in lines, f".ci/run does not run the README's command {command!r}"
    slow = [ln for ln in lines if ln.startswith("python -m pytest") and "-m slow" in ln]
    assert len(slow) == 1 and lines.index(slow[0]) > lines.index(command)
