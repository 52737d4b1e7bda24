"""Start-up of the command line (issue 28 item 4): ``sdckit --help`` lists every command from
``sdckit.cli.app.COMMANDS`` without importing any command's module or the heavy libraries, and
that list says what the modules themselves define."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import typer.main

import sdckit
import sdckit.cli
from sdckit.cli.app import COMMANDS, app

HEAVY = ("numpy", "pandas", "scipy", "numba", "duckdb", "dask", "fastapi", "uvicorn", "matplotlib", "sklearn", "pyarrow",
         "randomgen", "httpx")
#: The only modules of sdckit outside ``sdckit.cli`` a command's ``--help`` may import.
LIGHT = {"sdckit", "sdckit.core", "sdckit.core.defaults", "sdckit.core.errors", "sdckit.core.interrupt",
         "sdckit.core.lazy", "sdckit.core.version"}


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


# --------------------------------------------------------------------------- commands that run
#: The libraries no command needs to start (the query service's server, Dask, plots).
NEVER = {"dask", "distributed", "fastapi", "uvicorn", "matplotlib", "sklearn"}
#: Each command, on input that makes its work trivial, and the libraries it must not import: what
#: its work does not need (issue 28 item 4). ``{csv}`` and the others are the files of ``_inputs``.
RUNS = {
    "query": (["query", "SELECT COUNT(*) FROM t", "--url", "{url}", "--key-file", "{key}"],
              NEVER | {"numpy", "pandas", "scipy", "numba", "duckdb", "pyarrow", "randomgen"}),
    "analyst list": (["analyst", "list", "{service}"], NEVER | {"pandas", "scipy", "numba", "duckdb", "httpx"}),
    "risk": (["risk", "{csv}", "--keys", "a,b"], NEVER | {"scipy", "numba", "duckdb", "httpx"}),
    "check": (["check", "{csv}", "--quasi", "a,b", "--k", "2"], NEVER | {"scipy", "numba", "duckdb", "httpx"}),
    "protect": (["protect", "{recipe}", "--no-report"], NEVER | {"scipy", "numba", "duckdb", "httpx"}),
    "serve": (["serve", "{service}", "--port", "1"],
              {"dask", "distributed", "matplotlib", "sklearn", "pandas", "scipy", "numba", "httpx"}),
}


def _inputs(folder: Path) -> dict[str, str]:
    """A 10-row CSV, a recipe of additive noise on it, a query service's configuration, an API key
    file and the address of a port nothing listens on."""
    (folder / "tiny.csv").write_text("a,b,c\n" + "".join(f"{i % 3},{i % 2},{i}\n" for i in range(10)))
    (folder / "recipe.toml").write_text(
        'seed = "0123456789abcdef0123456789abcdef"\n[input]\npath = "tiny.csv"\n'
        '[schema]\nquasi = ["a", "b"]\nconfidential = ["c"]\n'
        '[[method]]\nname = "additive_noise"\nalpha = 0.1\n[output]\ndir = "out"\n')
    (folder / "service.toml").write_text(
        '[service]\nstate = "state.db"\n[[table]]\nname = "tiny"\npath = "tiny.csv"\n[table.bounds]\nc = [0, 9]\n')
    (folder / "key").write_text("no-such-key\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"csv": str(folder / "tiny.csv"), "recipe": str(folder / "recipe.toml"),
            "service": str(folder / "service.toml"), "key": str(folder / "key"), "url": f"http://127.0.0.1:{port}"}


RUN_AND_LIST = """
import json, sys
argv = json.loads(sys.argv[1])
if argv[0] == "serve":  # it serves until stopped: the service is built, uvicorn does not run it
    import uvicorn
    uvicorn.run = lambda *args, **kwargs: None
from sdckit.cli import main
try:
    main(argv)
except SystemExit as exc:
    print("EXIT", exc.code)
print("MODULES", " ".join(sorted(sys.modules)))
"""


def test_each_command_imports_only_what_its_work_needs(tmp_path):
    """Each command of RUNS, run to its end in its own process (all at once), imports none of the
    libraries its work does not need: ``sdckit query`` is an HTTP client (httpx, no numpy or
    pandas), ``risk`` without weights needs no scipy, ``check`` of k-anonymity no numba,
    ``protect`` with additive noise and no report neither, ``analyst`` no pandas, ``serve`` no
    numba until a restricted query is audited."""
    files = _inputs(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(sdckit.__file__).resolve().parents[1]) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    children = {}
    for name, (args, _) in RUNS.items():
        argv = [a.format(**files) for a in args]
        children[name] = subprocess.Popen([sys.executable, "-c", RUN_AND_LIST, json.dumps(argv)], cwd=tmp_path,
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    needless = {}
    for name, child in children.items():
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and "MODULES" in out, (name, err[-2000:])
        expected_exit = "EXIT 2" if name == "query" else "EXIT 0"  # query: the service cannot be reached
        assert expected_exit in out, (name, out[-500:], err[-500:])
        if name == "query":
            assert "cannot be reached" in err
        loaded = {m.split(".")[0] for m in out.rsplit("MODULES", 1)[1].split()}
        needless[name] = sorted(loaded & RUNS[name][1])
    assert needless == dict.fromkeys(RUNS, [])


# --------------------------------------------------------------------------- lazy packages
def _packages() -> list[str]:
    found = ["sdckit"]
    for info in pkgutil.walk_packages(sdckit.__path__, "sdckit."):
        if info.ispkg:
            found.append(info.name)
    return found


def test_every_public_name_of_every_package_resolves():
    """Every name in every package's ``__all__`` is there (``from sdckit.x import Y``; the
    packages import a name's module on first use, PEP 562), is listed by ``dir``, and is the
    object itself, never the submodule of the same name (``sdckit.anonymity.check``,
    ``sdckit.tabular.audit``, ``sdckit.permutation.assess``: each submodule imported first)."""
    for name in ("sdckit.anonymity.check", "sdckit.tabular.audit", "sdckit.tabular.suppress",
                 "sdckit.permutation.assess", "sdckit.risk.frequencies", "sdckit.utility.il1"):
        importlib.import_module(name)
    checked = 0
    for name in _packages():
        package = importlib.import_module(name)
        for public in getattr(package, "__all__", ()):
            value = getattr(package, public)
            assert not isinstance(value, ModuleType), f"{name}.{public}"
            assert public in dir(package), f"{name}.{public}"
            checked += 1
    assert checked > 200
    from sdckit.anonymity import check
    from sdckit.tabular import audit

    assert check.__module__ == "sdckit.anonymity.check" and audit.__module__ == "sdckit.tabular.audit"
    assert sdckit.check_anonymity is check


def test_a_lazy_package_imports_a_module_when_a_name_is_asked_for(tmp_path, monkeypatch):
    """``lazy_exports`` on a package of its own: importing the package imports no submodule; a name
    imports its module once; a submodule of a public name's spelling does not replace the name;
    an unknown name is an AttributeError."""
    package = tmp_path / "lazypkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from sdckit.core.lazy import lazy_exports\n__all__ = ['thing', 'Other', 'renamed']\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'thing': 'lazypkg.thing', 'Other': 'lazypkg.other',"
        " 'renamed': 'lazypkg.other:Other'})\n")
    (package / "thing.py").write_text("def thing():\n    return 'thing'\n")
    (package / "other.py").write_text("class Other:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    try:
        assert "lazypkg.thing" not in sys.modules and "lazypkg.other" not in sys.modules
        assert set(lazypkg.__all__) <= set(dir(lazypkg))
        importlib.import_module("lazypkg.thing")  # the import system binds the submodule on the package...
        from lazypkg import thing  # ...yet the public name is the function

        assert thing() == "thing" and "lazypkg.other" not in sys.modules
        assert lazypkg.renamed is lazypkg.Other and "lazypkg.other" in sys.modules
        with pytest.raises(AttributeError, match="no attribute 'missing'"):
            lazypkg.missing  # noqa: B018
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "lazypkg"]:
            del sys.modules[name]


def test_the_method_catalogue_names_each_method_s_module():
    """``sdckit.methods.METHOD_MODULES`` (a recipe imports only its methods' modules) is what the
    method packages register."""
    from sdckit.methods import METHOD_MODULES, available, get_method

    assert METHOD_MODULES == {name: cls.__module__ for name, cls in available().items()}
    with pytest.raises(sdckit.ParameterError, match="Unknown method 'no_such'.*additive_noise"):
        get_method("no_such")
