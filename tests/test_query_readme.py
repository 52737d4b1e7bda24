"""The README's query-service quick start works as written: the configuration on the bundled
CASC file, `sdckit analyst add`, `sdckit serve`, `sdckit query` and the Python client."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import sys
from pathlib import Path


from query_helpers import Server

ROOT = Path(__file__).resolve().parents[1]


def _blocks(quickstart: str = "query-quickstart", client: str = "query-client") -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # the README runner (tests/readme_runner.py) skips these blocks ("not-run"): they need a server
    bash = re.search(rf"<!-- {quickstart} -->\n(?:<!-- not-run:[^\n]*-->\n)?```bash\n(.*?)```", text, re.S).group(1)
    python = re.search(rf"<!-- {client} -->\n(?:<!-- not-run:[^\n]*-->\n)?```python\n(.*?)```", text, re.S).group(1)
    return bash, python


def _sdckit(args: list[str], capsys) -> tuple[int, str, str]:
    from sdckit.cli import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def _run_bash(bash: str, tmp_path: Path, capsys, port: int) -> tuple[Server, int, list[str]]:
    """Run the quick start's lines: heredocs written, `sdckit serve ... &` started as a real server
    (on its own free port, returned), every other `sdckit` line through the CLI (outputs returned)."""
    lines = iter(bash.replace(str(port), "@PORT@").splitlines())
    server = None
    outputs = []
    try:
        for line in lines:
            if line.startswith("cat > "):
                target, marker = re.match(r"cat > (\S+) <<'(\w+)'", line).groups()
                body = []
                for inner in lines:
                    if inner == marker:
                        break
                    body.append(inner)
                (tmp_path / target).write_text("\n".join(body) + "\n")
            elif line.startswith("sdckit serve") and line.endswith("&"):
                args = shlex.split(line[:-1])
                assert args[-2:] == ["--port", "@PORT@"]
                server = Server(tmp_path / args[2], command=[sys.executable, "-m", "sdckit", *args[1:-2]])
            else:
                args = shlex.split(line.replace("@PORT@", str(server.port) if server else str(port)))
                redirect = None
                if ">" in args:
                    redirect = args[args.index(">") + 1]
                    args = args[:args.index(">")]
                assert args[0] == "sdckit"
                code, out, err = _sdckit(args[1:], capsys)
                assert code == 0, err
                if redirect:
                    (tmp_path / redirect).write_text(out)
                outputs.append(out)
    except BaseException:
        if server is not None:
            server.stop()
        raise
    assert server is not None
    return server, server.port, outputs


def _run_python(python: str, port: int, port_used: int) -> list[str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(python.replace(str(port), str(port_used)), "README.md", "exec"), {})
    return buffer.getvalue().splitlines()


def test_readme_quick_start_runs_as_written(tmp_path, monkeypatch, capsys):
    bash, python = _blocks()
    (tmp_path / "src").symlink_to(ROOT / "src")  # the quick start runs from a clone
    monkeypatch.chdir(tmp_path)
    server, port_used, outputs = _run_bash(bash, tmp_path, capsys, 8000)
    try:
        # `sdckit query` printed a noisy count and the budget left
        assert "epsilon spent 0.1, remaining 0.9" in outputs[-1]
        printed = _run_python(python, 8000, port_used)
        assert "mean_agi" in printed[0]
        assert any(line.strip() == "0.4" for line in printed)
        # the query builder (issue 32 item 5): the SQL it wrote, the interval columns, the exact charge
        builder = re.search(r"<!-- query-builder -->\n<!-- not-run:[^\n]*-->\n```python\n(.*?)```",
                            (ROOT / "README.md").read_text(encoding="utf-8"), re.S).group(1)
        assert _run_python(builder, 8000, port_used) == [
            'SELECT COUNT(*) FROM "casc" WHERE "AGI" >= 50000 AND "FEDTAX" <= 20000',
            "['count', 'count_low', 'count_high']", "0.2"]
        # MIN/MAX and BOUNDS (issue 32): the columns and the exact budget left (1 - 0.1 - 0.5 - 0.2 - 0.1 - 0.05)
        found = re.search(r"<!-- query-bounds -->\n<!-- not-run:[^\n]*-->\n```python\n(.*?)```",
                          (ROOT / "README.md").read_text(encoding="utf-8"), re.S).group(1)
        assert _run_python(found, 8000, port_used) == ["['AGI_lower_bound', 'AGI_upper_bound']", "['max_FEDTAX']", "0.05"]
        # binned GROUP BY, a derived SUM and Client.histogram (issue 32): every bin, the exact charge
        bins = re.search(r"<!-- query-bins -->\n<!-- not-run:[^\n]*-->\n```python\n(.*?)```",
                         (ROOT / "README.md").read_text(encoding="utf-8"), re.S).group(1)
        assert _run_python(bins, 8000, port_used) == [
            "[0, 25000, 50000, 75000, 100000]", "['bin', 'count', 'count_low', 'count_high']", "[0, 5000, 10000]", "0.025"]
    finally:
        server.stop()


def test_readme_table_service_runs_as_written(tmp_path, monkeypatch, capsys):
    """The table service's quick start: the census served as tables, one table by httpx; its
    grand total is the 304 records with flu or cold, perturbed by at most D = 3; their income by
    EDUCATION's levels, perturbed by the flex function."""
    bash, python = _blocks("tables-quickstart", "tables-client")
    (tmp_path / "src").symlink_to(ROOT / "src")
    monkeypatch.chdir(tmp_path)
    server, port_used, _ = _run_bash(bash, tmp_path, capsys, 8001)
    try:
        printed = _run_python(python, 8001, port_used)
        assert printed[0] == "['SEX', 'EDUCATION', 'count']"
        first = ast.literal_eval(printed[1])
        assert first[:2] == ["Total", "Total"] and abs(first[2] - 304) <= 3
        # the sums by EDUCATION's hierarchy: its levels, and their income 17,397,440 perturbed
        assert ast.literal_eval(printed[2]) == ["Total", "school", "primary", "secondary", "higher", "bachelor",
                                                "master", "doctorate"]
        total = ast.literal_eval(printed[3])
        assert total[0] == "Total" and total[1] != 17_397_440 and abs(total[1] / 17_397_440 - 1) < 0.02
    finally:
        server.stop()


def test_readme_budget_definitions_run_as_written(tmp_path, monkeypatch, capsys):
    """The budget definitions' example: a rho-zCDP analyst's query charges rho 1/8 of 1/2 exactly;
    an (epsilon, delta) analyst's answer and budget state the definition and the delta left."""
    bash, python = _blocks("query-budgets", "query-budgets-client")
    (tmp_path / "src").symlink_to(ROOT / "src")
    monkeypatch.chdir(tmp_path)
    server, port_used, outputs = _run_bash(bash, tmp_path, capsys, 8002)
    try:
        assert "rho spent 0.125, remaining 0.375 (rho-zCDP)" in outputs[-1]
        printed = _run_python(python, 8002, port_used)
        assert printed == ["approx 0.0000009", "approximate (epsilon, delta)-DP, basic composition"]
    finally:
        server.stop()


def test_readme_joins_run_as_written(tmp_path, monkeypatch, capsys):
    """The joins' example (issue 32): the census joined with a public table of education stages;
    the CLI prints both stages, the client reads the public table and states the join's bound."""
    bash, python = _blocks("query-joins", "query-joins-client")
    (tmp_path / "src").symlink_to(ROOT / "src")
    monkeypatch.chdir(tmp_path)
    server, port_used, outputs = _run_bash(bash, tmp_path, capsys, 8003)
    try:
        assert "school" in outputs[-1] and "university" in outputs[-1]
        assert _run_python(python, 8003, port_used) == ["(5, 2)", "['school', 'university']", "1"]
    finally:
        server.stop()


def test_readme_group_bounds_run_as_written(tmp_path, monkeypatch, capsys):
    """Per-group bounds (issue 32): the CLI sends them; the client's sigma from sqrt(2) * 1 against
    the per-person bound 4, at rho 1/4 each; the rho left exactly 1 - 3/4."""
    bash, python = _blocks("query-groups", "query-groups-client")
    (tmp_path / "src").symlink_to(ROOT / "src")
    monkeypatch.chdir(tmp_path)
    server, port_used, outputs = _run_bash(bash, tmp_path, capsys, 8004)
    try:
        assert "north" in outputs[-1] and "east" in outputs[-1]
        assert _run_python(python, 8004, port_used) == ["2.0", "5.656854249492381", "0.25"]
    finally:
        server.stop()
