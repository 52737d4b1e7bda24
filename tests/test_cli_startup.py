"""Start-up of the command line (issue 28 item 4): ``sdckit --help`` lists every command from
``sdckit.cli.app.COMMANDS`` without importing any command's module or the heavy libraries, and
that list says what the modules themselves define."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import typer.main

import sdckit.cli
from sdckit.cli.app import COMMANDS, app

HEAVY = ("numpy", "pandas", "scipy", "numba", "duckdb", "dask", "fastapi", "uvicorn", "matplotlib", "sklearn", "pyarrow",
         "randomgen", "httpx")
#: The only modules of sdckit outside ``sdckit.cli`` a command's ``--help`` may import.
LIGHT = {"sdckit", "sdckit.core", "sdckit.core.defaults", "sdckit.core.errors", "sdckit.core.interrupt",
         "sdckit.core.version"}


def test_the_command_table_is_what_the_modules_define():
    modules = [m.name for m in pkgutil.iter_modules(sdckit.cli.__path__) if m.name not in {"app", "common"}]
    for name in modules:
        importlib.import_module(f"sdckit.cli.{name}")
    group = typer.main.get_group(app)
    defined = {}
    for name, command in group.commands.items():
        callback = getattr(command, "callback", None)
        module = callback.__module__.rsplit(".", 1)[-1] if callback is not None else None
        defined[name] = (module, command.get_short_help_str(limit=1000))
    assert set(defined) == set(COMMANDS)
    for name, (module, short) in defined.items():
        assert COMMANDS[name][1] == short, name
        if module is not None:  # a command group's callback is typer's own
            assert COMMANDS[name][0] == module, name
    assert {module for module, _ in COMMANDS.values()} == set(modules)


def test_help_imports_no_command_and_no_heavy_library():
    code = ("import sys\nfrom sdckit.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('MODULES', ' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "protect" in out and "verify-record" in out
    loaded = set(out.rsplit("MODULES", 1)[1].split())
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]
    assert not [m for m in loaded if m.startswith("sdckit.cli.") and m not in {"sdckit.cli.app"}]


def test_every_command_help_imports_no_heavy_library():
    """``sdckit <command> --help`` (and ``sdckit table|analyst <sub> --help``) imports the command's
    module and nothing heavy: all of them in one process, then its modules are listed."""
    code = """
import sys
from sdckit.cli import main
from sdckit.cli.app import COMMANDS, load_command

def run(*args):
    try:
        main([*args, "--help"])
    except SystemExit as exc:
        assert exc.code in (0, None), (args, exc.code)
    print("HELP-SHOWN", " ".join(args))

for name in sorted(COMMANDS):
    run(name)
    command = load_command(name)
    for sub in sorted(getattr(command, "commands", {})):  # a command group: table, analyst
        run(name, sub)
print("MODULES", " ".join(sorted(sys.modules)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    shown = {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("HELP-SHOWN ")}
    assert set(COMMANDS) <= shown and {"table protect", "table audit", "analyst add", "analyst log"} <= shown
    assert out.count("Usage: sdckit") >= len(shown)
    loaded = set(out.rsplit("MODULES", 1)[1].split())
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in loaded if m.split(".")[0] == "sdckit" and not m.startswith("sdckit.cli")
                  and m not in LIGHT) == []


def test_an_unknown_command_is_a_usage_error(cli):
    result = cli("no-such-command")
    assert result.returncode == 2 and "No such command" in result.stderr
