"""Shared fixtures: small frames, and a helper that runs the CLI in-process as if in a subprocess.

``run_cli`` (fixture ``cli``) runs ``sdckit ARGS`` inside the test process: the same entry
(:func:`sdckit.cli.main`), its output captured at the file-descriptor level (Python's and native
code's writes alike), the working directory and environment of a child, warnings printed on
stderr as a fresh interpreter would, an uncaught exception printed as a traceback with status 1.
Starting an interpreter per call cost about 1.5 s each (imports); a handful of tests still start
the real process where the process itself is what they test (tests/test_cli_process.py,
tests/test_cli_robust.py's Ctrl-C tests, the README runners, the query server).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdckit

DATA = Path(__file__).parent / "data"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``sdckit ARGS`` in-process and return what ``python -m sdckit ARGS`` would: the exit
    status and the text written on stdout and stderr. ``timeout`` is accepted for the callers
    written for a subprocess; an in-process run is not cut short."""
    from sdckit.cli import main

    argv = [str(a) for a in args]
    with _environment({**(env_extra or {}), "COLUMNS": "200"}), _working_directory(cwd), \
            _captured() as streams, _warnings_as_a_fresh_interpreter():
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except Exception:  # an uncaught exception: what the interpreter prints, and status 1
            traceback.print_exc(file=sys.stderr)
            code = 1
    return subprocess.CompletedProcess(["sdckit", *argv], code, streams["out"], streams["err"])


def run_cli_process(*args: str, cwd: Path | None = None, timeout: float = 120,
                    env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m sdckit ARGS`` in a real subprocess with the package under test importable."""
    env = {**os.environ, **(env_extra or {})}
    package_root = str(Path(sdckit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "sdckit", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture(autouse=True)
def _private_ledger(monkeypatch, tmp_path_factory):
    """Every test's per-user privacy ledger lives in a fresh temporary folder (issue 27): no test
    reads or writes the real ~/.local/share/sdckit/ledger.json (CLI subprocesses inherit it)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    monkeypatch.delenv("SDCKIT_LEDGER", raising=False)


def _exit_status(code: object) -> int:
    """The status a process leaving with ``sys.exit(code)`` ends with (a message is printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _working_directory(cwd: Path | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _captured() -> Iterator[dict[str, str]]:
    """Descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr`` on them) point to temporary files
    for the block; the dict holds their text afterwards."""
    streams: dict[str, str] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = os.dup(1), os.dup(2)
    saved_streams = sys.stdout, sys.stderr
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        try:
            yield streams
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.close()  # flushes; the descriptor stays open (closefd=False)
            sys.stdout, sys.stderr = saved_streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)
            for name, file in (("out", out), ("err", err)):
                file.seek(0)
                streams[name] = file.read().decode("utf-8", errors="replace").replace("\r\n", "\n")


@contextlib.contextmanager
def _warnings_as_a_fresh_interpreter() -> Iterator[None]:
    """Python's default warning filters, warnings printed on stderr (not recorded by pytest)."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.filterwarnings("ignore", category=category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")

        def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

        warnings.showwarning = show
        yield


# The command's rich consoles take their width from COLUMNS when sdckit.cli is imported, as in the
# child ``run_cli_process`` starts (COLUMNS=200); import it here under that width, whatever the
# session's own COLUMNS (pytest-xdist workers have COLUMNS=80).
with _environment({"COLUMNS": "200"}):
    import sdckit.cli  # noqa: E402, F401


#: Files of the longest tests (the README and docs runs start sdckit as a process per command, the
#: query service runs a real server): with pytest-xdist they are run first, see below.
LONGEST_FIRST = ("test_readme.py", "test_docs.py", "test_query_server.py", "test_query_readme.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a pytest-xdist worker, the longest tests first: the others are then shared out at the end
    (work stealing, below) instead of one worker running a long test while the other waits."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: same order otherwise


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``-n`` shares the tests out by work stealing (an idle worker takes half of another's queue);
    ``--dist`` with another mode than ``load`` (the default) keeps that mode."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def cli_process():
    return run_cli_process


@pytest.fixture(scope="session")
def dask_client():
    """One in-process Dask cluster (2 workers, 1 thread each) for the whole test session."""
    pytest.importorskip("dask.distributed")
    from sdckit.engine.distributed import dask_client as start

    with start(workers=2, processes=False) as client:
        yield client


@pytest.fixture
def small_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "id": np.arange(1, 51),
            "age": rng.integers(18, 90, 50),
            "income": rng.normal(30_000, 8_000, 50).round(2),
            "region": rng.choice(["north", "south", "east"], 50),
        }
    )
