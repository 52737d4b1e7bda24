"""Start-up of the ``sdckit`` command (issue 28 item 4): ``sdckit --help`` and
``sdckit <command> --help`` should take under 0.3 s, any command's start under 0.5 s.

What is measured, as the median of ``--runs`` runs (default 5) of a fresh ``python -m sdckit``
process each, wall-clock and CPU time (user + system, ``getrusage(RUSAGE_CHILDREN)``):

* **help**: ``sdckit --help``, ``sdckit <command> --help`` for every command and
  ``sdckit <group> <sub> --help`` for every subcommand of a group (table, analyst).
* **start**: a command's *start* is the time from the process's start until the command begins
  its own work. It is measured by running the command to its end on input that makes that work
  trivial (:func:`fixtures`): a 10-row CSV (risk, check, frequencies, dp-error, assess and
  verify-record with 100 random records), a recipe of additive noise on it without the report
  (protect; tune with one bisection step; compare with one candidate), an 8-row table (table
  protect, table audit of its cells), a query service's configuration over the CSV (analyst list,
  analyst budget; serve: until its port accepts a connection, then it is stopped), and ``query``
  sent to a port nothing listens on (it ends with the connection error, exit status 2). What
  remains is Python, typer and rich, the libraries the command imports, and the few milliseconds
  of the trivial work.

Each figure is followed by the heavy libraries that run imported (numpy, pandas, scipy, numba,
DuckDB, Dask, FastAPI, matplotlib ...), each with its own import time in ms (the self times of
its modules summed, from one ``python -X importtime`` run of the same command), so a figure over
the budget says what it paid for. ``sdckit demo`` is timed by ``--help`` only: its work is a
fixed one (the bundled 1080-record file and its report; ``benchmarks/bench_demo.py``).

Run from the repository root: ``PYTHONPATH=src python benchmarks/bench_startup.py [--runs N]
[--only help|start] [--command NAME ...]``. The machine's load changes the wall-clock figures;
the CPU figures much less. ``PYTHONPATH=/path/to/other/src`` times another checkout (before/after).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: The libraries whose import time is listed (top-level package names).
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "numba", "llvmlite", "sklearn", "duckdb", "dask", "distributed",
         "fastapi", "starlette", "uvicorn", "httpx", "matplotlib", "jinja2", "randomgen", "pydantic")
SEED = "0123456789abcdef0123456789abcdef"  # a benchmark's recipe seed, public on purpose

#: Each command's start run: its arguments, ``{name}`` for a file or value of :func:`fixtures`.
START: dict[str, list[str]] = {
    "seed": ["seed"],
    "query": ["query", "SELECT COUNT(*) FROM tiny", "--url", "{url}", "--key-file", "{key}"],
    "analyst list": ["analyst", "list", "{service}"],
    "analyst budget": ["analyst", "budget", "{service}", "alice"],
    "risk": ["risk", "{csv}", "--keys", "a,b"],
    "check": ["check", "{csv}", "--quasi", "a,b", "--k", "2"],
    "frequencies": ["frequencies", "{csv}", "--keys", "a,b"],
    "dp-error": ["dp-error", "{csv}", "--k-quasi", "a,b", "--epsilon-quasi", "c", "--k", "2", "--epsilon", "1"],
    "protect": ["protect", "{recipe}", "--no-report", "--out", "{out}/protect"],
    "assess": ["assess", "{csv}", "{csv}", "--random", "100"],
    "verify-record": ["verify-record", "{csv}", "--record", "a=1,b=1,c=1", "--random", "100"],
    "tune": ["tune", "{recipe}", "--steps", "1", "--random", "100"],
    "compare": ["compare", "{compare}", "--out", "{out}/compare"],
    "table protect": ["table", "protect", "{table}", "--out", "{out}/table"],
    "table audit": ["table", "audit", "{cells}", "--dimensions", "region,size"],
    "serve": ["serve", "{service}", "--port", "{port}"],
}
#: Exit status of a start run other than 0.
STATUS = {"query": 2}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args: list[str], cwd: Path, status: int = 0) -> None:
    done = subprocess.run([sys.executable, "-m", "sdckit", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != status:
        raise SystemExit(f"sdckit {' '.join(args)} exited with {done.returncode}: {done.stderr[-500:]}")


def _serve(args: list[str], cwd: Path, timeout: float = 120.0) -> None:
    """Start ``sdckit serve``, wait until its port accepts a connection, stop it."""
    port = int(args[args.index("--port") + 1])
    child = subprocess.Popen([sys.executable, "-m", "sdckit", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.05).close()
                return
            except OSError:
                if child.poll() is not None:
                    raise SystemExit(f"sdckit serve ended: {child.stderr.read().decode()[-500:]}") from None
                if time.monotonic() > deadline:
                    raise SystemExit("sdckit serve did not open its port") from None
                time.sleep(0.005)
    finally:
        child.terminate()
        child.wait()


def timed(run: Callable[[], None], runs: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``runs`` calls of ``run`` (each one child process)."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, wall0 = _children_cpu(), time.perf_counter()
        run()
        walls.append(time.perf_counter() - wall0)
        cpus.append(_children_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def heavy_imports(args: list[str], cwd: Path, serve: bool = False) -> dict[str, float]:
    """The heavy libraries ``sdckit *args`` imports -> their own import time in ms (``-X importtime``)."""
    if serve:  # the server runs until stopped: list what `serve` imports up to serving
        code = ("import sys, uvicorn\nuvicorn.run = lambda *a, **k: None\nfrom sdckit.cli import main\n"
                f"main({args!r})")
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=cwd, capture_output=True,
                             text=True).stderr
    else:
        err = subprocess.run([sys.executable, "-X", "importtime", "-m", "sdckit", *args], cwd=cwd,
                             capture_output=True, text=True).stderr
    own: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, _, module = line.split(":", 1)[1].split("|")
        top = module.strip().split(".")[0]
        if top in HEAVY:
            own[top] = own.get(top, 0.0) + int(self_us) / 1000
    return dict(sorted(own.items(), key=lambda item: -item[1]))


def fixtures(folder: Path) -> dict[str, str]:
    """The trivial inputs of the start runs (module docstring), written into ``folder``."""
    (folder / "tiny.csv").write_text("a,b,c\n" + "".join(f"{i % 3},{i % 2},{i}\n" for i in range(10)))
    schema = '[input]\npath = "tiny.csv"\n[schema]\nquasi = ["a", "b"]\nconfidential = ["c"]\n'
    (folder / "recipe.toml").write_text(
        f'seed = "{SEED}"\n{schema}[[method]]\nname = "additive_noise"\nalpha = 0.1\n'
        '[output]\ndir = "out"\n[report]\nenabled = false\n')
    (folder / "compare.toml").write_text(
        f'seed = "{SEED}"\n{schema}[compare]\nn_random = 100\nn_null = 5\n'
        '[[candidate]]\nlabel = "noise"\n[[candidate.method]]\nname = "additive_noise"\nalpha = 0.1\n')
    (folder / "table.csv").write_text("region,size,turnover\n" + "".join(
        f"{r},{s},{v}\n" for r, s, v in [("A", "small", 10), ("A", "small", 12), ("A", "large", 100),
                                         ("B", "small", 9), ("B", "large", 80), ("B", "large", 85),
                                         ("B", "large", 90), ("A", "small", 11)]))
    (folder / "table.toml").write_text('[table]\ninput = "table.csv"\ndimensions = ["region", "size"]\n'
                                       'response = "turnover"\n[[rule]]\ntype = "frequency"\nn = 3\n')
    (folder / "service.toml").write_text('[service]\nstate = "state.db"\n[[table]]\nname = "tiny"\n'
                                         'path = "tiny.csv"\n[table.bounds]\nc = [0, 9]\n')
    (folder / "key").write_text("no-such-key\n")
    files = {name: str(folder / name) for name in ("tiny.csv", "recipe.toml", "compare.toml", "table.toml",
                                                  "service.toml", "key")}
    values = {"csv": files["tiny.csv"], "recipe": files["recipe.toml"], "compare": files["compare.toml"],
              "table": files["table.toml"], "service": files["service.toml"], "key": files["key"],
              "out": str(folder / "out"), "cells": str(folder / "out" / "table" / "cells.csv"),
              "url": f"http://127.0.0.1:{_free_port()}", "port": str(_free_port())}
    _run(["analyst", "add", values["service"], "alice", "--mode", "dp", "--epsilon", "1"], folder)
    _run([a.format(**values) for a in START["table protect"]], folder)  # the cells `table audit` reads
    return values


def help_invocations() -> list[list[str]]:
    """Every ``--help`` to time (root, each command, each subcommand of a group)."""
    from sdckit.cli.app import COMMANDS, load_command

    out: list[list[str]] = [["--help"]]
    for name in sorted(COMMANDS):
        out.append([name, "--help"])
        out.extend([name, sub, "--help"] for sub in sorted(getattr(load_command(name), "commands", {})))
    return out


def _heavy_text(heavy: dict[str, float]) -> str:
    return " ".join(f"{name} {ms:.0f}" for name, ms in heavy.items() if ms >= 0.5) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs per command (the median is shown).")
    parser.add_argument("--only", choices=("help", "start"), help="Only the --help runs or only the start runs.")
    parser.add_argument("--command", nargs="*", default=None, help="Only these start runs (names of START).")
    options = parser.parse_args()
    runs = options.runs
    # the runs start in a temporary folder: a relative PYTHONPATH (PYTHONPATH=src) is made absolute
    os.environ["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in
                                               os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f", median of {runs} runs; heavy imports in ms")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if options.only != "start":
            print(f"\n{'help':<40} {'wall s':>7} {'cpu s':>7}  heavy imports")
            for args in help_invocations():
                wall, cpu = timed(lambda a=args: _run(a, folder), runs)
                heavy = heavy_imports(args, folder)
                print(f"{'sdckit ' + ' '.join(args):<40} {wall:7.3f} {cpu:7.3f}  {_heavy_text(heavy)}", flush=True)
        if options.only != "help":
            values = fixtures(folder)
            print(f"\n{'start (trivial input)':<40} {'wall s':>7} {'cpu s':>7}  heavy imports")
            for name, template in START.items():
                if options.command and name not in options.command:
                    continue
                args = [a.format(**values) for a in template]
                serve = name == "serve"
                run = (lambda a=args: _serve(a, folder)) if serve else \
                    (lambda a=args, s=STATUS.get(name, 0): _run(a, folder, s))
                wall, cpu = timed(run, runs)
                heavy = heavy_imports(args, folder, serve=serve)
                print(f"{'sdckit ' + name:<40} {wall:7.3f} {cpu:7.3f}  {_heavy_text(heavy)}", flush=True)
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
