"""Start-up of the ``sdckit`` command (issue 28 item 4): ``sdckit --help`` and
``sdckit <command> --help`` should take under 0.3 s, any command's start under 0.5 s.

Times, as the median of ``--runs`` runs (default 5), the wall-clock and CPU time (user + system,
from ``resource.getrusage(RUSAGE_CHILDREN)``) of ``python -m sdckit --help``, of
``python -m sdckit <command> --help`` for every command (and every subcommand of a command group)
and of ``python -m sdckit seed``; then prints the ten largest cumulative imports of
``python -X importtime -m sdckit protect --help``.

Run from the repository root: ``PYTHONPATH=src python benchmarks/bench_startup.py [--runs N]``.
The machine's load changes the wall-clock figures; the CPU figures much less.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(args: list[str], runs: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``python -m sdckit *args`` over ``runs`` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, wall0 = _children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "sdckit", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - wall0)
        cpus.append(_children_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def invocations() -> list[list[str]]:
    """Every ``--help`` to time (root, each command, each subcommand of a group) and ``seed``."""
    from sdckit.cli.app import COMMANDS, load_command

    out: list[list[str]] = [["--help"]]
    for name in sorted(COMMANDS):
        out.append([name, "--help"])
        out.extend([name, sub, "--help"] for sub in sorted(getattr(load_command(name), "commands", {})))
    out.append(["seed"])
    return out


def top_imports(args: list[str], n: int = 10) -> list[tuple[int, int, str]]:
    """The ``n`` largest (cumulative us, self us, module) lines of ``-X importtime``."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "sdckit", *args], capture_output=True,
                         text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, module = line.split(":", 1)[1].split("|")
        rows.append((int(cumulative), int(own), module.rstrip()))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs per command (the median is shown).")
    runs = parser.parse_args().runs
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f", median of {runs} runs")
    print(f"{'command':<36} {'wall s':>7} {'cpu s':>7}")
    for args in invocations():
        wall, cpu = time_command(args, runs)
        print(f"{'sdckit ' + ' '.join(args):<36} {wall:7.3f} {cpu:7.3f}", flush=True)
    print("\nlargest cumulative imports of `python -X importtime -m sdckit protect --help` (ms):")
    print(f"{'cumulative':>10} {'self':>8}  module")
    for cumulative, own, module in top_imports(["protect", "--help"]):
        print(f"{cumulative / 1000:10.1f} {own / 1000:8.1f}  {module}")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
