"""The README's risk examples work exactly as written (issue 16)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Disclosure risk as statistical offices measure it")
    return text[start:text.index("\n## ", start + 3)]


def test_readme_python_example_runs(monkeypatch):
    code = re.search(r"<!-- risk-example -->\n```python\n(.*?)```", _section(), re.S).group(1)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    # the figures the comments state
    assert lines[0] == "24.78 expected re-identifications, 117.20 with households"
    assert lines[1] == "674" and lines[2] == "330"


def test_readme_cli_example_runs(tmp_path, cli):
    line = re.search(r"```\n(sdckit risk .*?)\n```", _section(), re.S).group(1)
    args = shlex.split(line)[1:]
    args = [str(ROOT / a) if a.startswith("tests/") else a for a in args]
    args[args.index("--json") + 1] = str(tmp_path / "risk.json")
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "risk.json").read_text())["expected_reidentifications"] > 24
