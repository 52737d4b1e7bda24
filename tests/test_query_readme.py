"""The README's query-service quick start works as written: the configuration on the bundled
CASC file, `sdckit analyst add`, `sdckit serve`, `sdckit query` and the Python client."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path


from query_helpers import Server, free_port

ROOT = Path(__file__).resolve().parents[1]


def _blocks() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # the README runner (tests/readme_runner.py) skips these blocks ("not-run"): they need a server
    bash = re.search(r"<!-- query-quickstart -->\n(?:<!-- not-run:[^\n]*-->\n)?```bash\n(.*?)```", text, re.S).group(1)
    python = re.search(r"<!-- query-client -->\n(?:<!-- not-run:[^\n]*-->\n)?```python\n(.*?)```", text, re.S).group(1)
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


def test_readme_quick_start_runs_as_written(tmp_path, monkeypatch, capsys):
    bash, python = _blocks()
    (tmp_path / "src").symlink_to(ROOT / "src")  # the quick start runs from a clone
    monkeypatch.chdir(tmp_path)
    port = free_port()
    lines = iter(bash.replace("8000", str(port)).splitlines())
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
                assert args[-2:] == ["--port", str(port)]
                server = Server(tmp_path / args[2], command=[sys.executable, "-m", "sdckit", *args[1:-2]])
                assert server.port != port  # the helper picked its own free port: use it below
                port_used = server.port
            else:
                args = shlex.split(line.replace(str(port), str(server.port) if server else str(port)))
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
        assert server is not None
        # `sdckit query` printed a noisy count and the budget left
        assert "epsilon spent 0.1, remaining 0.9" in outputs[-1]
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(python.replace("8000", str(port_used)), "README.md", "exec"), {})
        printed = buffer.getvalue().splitlines()
        assert "mean_agi" in printed[0]
        assert any(line.strip() == "0.4" for line in printed)
    finally:
        if server is not None:
            server.stop()
