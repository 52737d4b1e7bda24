"""The command line through a real process (issue 28): the console script and ``python -m sdckit``.

The other CLI tests run the command in-process (``cli`` in tests/conftest.py) to stay fast; these
check, through a real child process, what only a process shows (the installed entry point, the exit
status the shell sees, the bytes on its stdout and stderr) and that the in-process runs see the same
status and text as the process does. Ctrl-C is tested on a real process in tests/test_cli_robust.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import sdckit

RECIPE = """seed = "ab12ab12ab12ab12ab12ab12ab12ab12"
[input]
path = "d.csv"
[[method]]
name = "additive_noise"
alpha = 0.1
[output]
dir = "out"
"""


def _data(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"zip": ["1", "1", "2", "2", "2", "3"], "sex": ["F", "M"] * 3,
                  "income": [10.0, 12.5, 9.0, 30.0, 22.0, 17.5]}).to_csv(folder / "d.csv", index=False)
    (folder / "r.toml").write_text(RECIPE)


def test_the_installed_console_script_runs():
    script = shutil.which("sdckit", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("no 'sdckit' console script beside this interpreter (the package is not installed)")
    env = {**os.environ, "PYTHONPATH": str(Path(sdckit.__file__).resolve().parents[1])}
    done = subprocess.run([script, "--version"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"sdckit {sdckit.__version__}\n"


@pytest.mark.parametrize("args", [
    ["--version"],
    ["frobnicate"],                                   # a usage error: typer's message, status 2
    ["check", "d.csv", "--quasi", "zip,sex", "--k", "2"],     # a table drawn by rich
    ["check", "d.csv", "--quasi", "nope", "--k", "2"],       # bad input: one line, status 2
], ids=["version", "unknown-command", "check-table", "check-bad-column"])
def test_in_process_runs_see_what_the_process_shows(tmp_path, cli, cli_process, args):
    _data(tmp_path)
    process = cli_process(*args, cwd=tmp_path)
    in_process = cli(*args, cwd=tmp_path)
    assert process.returncode in (0, 2), process.stderr
    assert "Traceback" not in process.stderr
    assert (in_process.returncode, in_process.stdout, in_process.stderr) == \
        (process.returncode, process.stdout, process.stderr)


def test_a_release_through_the_process_is_the_in_process_release(tmp_path, cli, cli_process):
    _data(tmp_path / "p")
    _data(tmp_path / "i")
    # the report is left out here (the README runner makes reports through the real process)
    process = cli_process("protect", "r.toml", "--no-report", cwd=tmp_path / "p")
    in_process = cli("protect", "r.toml", "--no-report", cwd=tmp_path / "i")
    assert process.returncode == 0 == in_process.returncode, process.stderr
    assert process.stderr == in_process.stderr
    names = sorted(p.name for p in (tmp_path / "p" / "out").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "i" / "out").iterdir())
    assert {".csv", ".json"} <= {Path(n).suffix for n in names}
    release = next(n for n in names if n.endswith(".csv"))
    assert (tmp_path / "p" / "out" / release).read_bytes() == (tmp_path / "i" / "out" / release).read_bytes()


def test_an_uncaught_exception_in_process_is_a_traceback_and_status_1(cli, monkeypatch):
    # what the interpreter does with it: the harness must not hide a crash as a clean exit
    import sdckit.core.random as random_module  # `sdckit seed` imports new_seed from it when run

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(random_module, "new_seed", broken)
    done = cli("seed")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "RuntimeError: boom" in done.stderr
