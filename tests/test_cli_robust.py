"""No traceback, no crash (issue 12 section 4): the listed defects one by one, Ctrl-C, and random
small frames and recipes through the CLI (exit 0 or 2, never a traceback or a partial output)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdckit

SEED = "ef" * 16


def _recipe(tmp_path: Path, method: str, params: str = "", extra: str = "", data: str = "d.csv") -> str:
    (tmp_path / "r.toml").write_text(
        f'seed = "{SEED}"\n[input]\npath = "{data}"\n[[method]]\nname = "{method}"\n{params}\n'
        f'[output]\ndir = "out"\n{extra}')
    return str(tmp_path / "r.toml")


def _one_line(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_format_sas_lists_the_writable_formats(tmp_path, cli):
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 7.0]}).to_csv(tmp_path / "d.csv", index=False)
    message = _one_line(cli("protect", _recipe(tmp_path, "additive_noise", "alpha = 0.1"), "--format", "sas"))
    assert "cannot write sas" in message and "parquet" in message
    assert not (tmp_path / "out").exists()


def test_correlated_noise_with_inf_is_one_line(tmp_path, cli):
    pd.DataFrame({"a": [1.0, np.inf, 3.0, 4.0], "b": [4.0, 5.0, 7.0, 1.0]}).to_csv(tmp_path / "d.csv", index=False)
    message = _one_line(cli("protect", _recipe(tmp_path, "correlated_noise", "alpha = 0.1")))
    assert "'a'" in message


def test_check_with_a_hierarchical_t_distance(tmp_path, cli):
    pd.DataFrame({"q": ["x"] * 4 + ["y"] * 4, "s": ["flu", "cold", "flu", "cancer"] * 2}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "h.csv").write_text("flu;infection;*\ncold;infection;*\ncancer;tumour;*\n")
    message = _one_line(cli("check", str(tmp_path / "d.csv"), "--quasi", "q", "--t", "0.3", "--sensitive", "s",
                            "--t-distance", "hierarchical"))
    assert "--t-hierarchy" in message
    result = cli("check", str(tmp_path / "d.csv"), "--quasi", "q", "--t", "0.3", "--sensitive", "s",
                 "--t-distance", "hierarchical", "--t-hierarchy", str(tmp_path / "h.csv"))
    assert result.returncode == 0, result.stderr
    assert "All criteria hold." in result.stdout  # both classes have the whole table's distribution


def test_verify_record_prints_a_count_and_the_positions(tmp_path, cli):
    pd.DataFrame({"age": [50, 40, 30, 60], "income": [3.0, 2.0, 1.0, 4.0]}).to_csv(tmp_path / "rel.csv", index=False)
    result = cli("verify-record", str(tmp_path / "rel.csv"), "--record", "age=30,income=1.0", "--random", "50")
    assert result.returncode == 0, result.stderr
    count = next(ln for ln in result.stdout.splitlines() if "(count)" in ln)
    positions = next(ln for ln in result.stdout.splitlines() if "positions" in ln)
    assert count.split("│")[2].strip() == "1" and positions.split("│")[2].strip() == "2"


def test_help_texts_keep_their_brackets(cli):
    result = cli("tune", "--help")
    assert "[[method]]" in result.stdout
    assert "[report]" in cli("protect", "--help").stdout


def _interrupted_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a run that the test interrupts: this package, and numba's compilation
    cache in the test's own folder, so that a process stopped while numba compiles or writes its
    cache cannot leave anything the other tests load (a fresh CI run compiles on first use)."""
    return {**os.environ, "PYTHONPATH": str(Path(sdckit.__file__).resolve().parents[1]),
            "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}


def test_ctrl_c_exits_130_and_writes_nothing(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(300_000, 6)), columns=list("abcdef")).to_csv(tmp_path / "d.csv", index=False)
    recipe = _recipe(tmp_path, "additive_noise", "alpha = 0.1")
    env = _interrupted_env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "sdckit", "protect", recipe], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)  # reading, protecting or computing the report
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("delay", [0.5, 1.5])
def test_ctrl_c_while_the_commands_load_exits_130(tmp_path, delay):
    # early: the interpreter is still importing sdckit's commands; the exit is 130 all the same
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "d.csv", index=False)
    recipe = _recipe(tmp_path, "additive_noise", "alpha = 0.1")
    env = _interrupted_env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "sdckit", "protect", recipe], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:          # it had already finished: nothing to interrupt
        return
    out = tmp_path / "out"
    written = out.exists() and any(p.name.endswith(".manifest.json") for p in out.iterdir())
    if proc.returncode == -signal.SIGINT and written:
        # it had finished (the manifest is written last, atomically) and the signal came while the
        # interpreter was shutting down, when Python has given SIGINT back its default action
        return
    assert proc.returncode == 130, err
    assert "Traceback" not in err


# ----------------------------------------------------------------------------- property-based
CELLS = st.one_of(
    st.none(), st.just(float("nan")), st.just(float("inf")), st.just(""), st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False), st.text("abé中 ,\"", min_size=0, max_size=4),
)
METHODS = [
    ("additive_noise", "alpha = 0.1"), ("microaggregation", "k = 2"), ("rank_swapping", "p = 10"),
    ("local_suppression", "k = 2"), ("top_bottom_coding", "top = 0.9"), ("pram", "p = 0.8"),
    ("rounding", "base = 5"), ("laplace_noise", 'epsilon = 1.0\nbounds = "data"'),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), n=st.integers(1, 8), m=st.integers(1, 3), method=st.sampled_from(METHODS),
       duplicate=st.booleans())
def test_random_frames_and_recipes_never_crash(tmp_path_factory, cli, data, n, m, method, duplicate):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    names = [data.draw(st.text("xyzé", min_size=1, max_size=3)) for _ in range(m)]
    if duplicate and m > 1:
        names[-1] = names[0]
    rows = [[data.draw(CELLS) for _ in range(m)] for _ in range(n)]
    header = ",".join(f'"{x}"' for x in names)
    lines = [",".join("" if v is None else f'"{v}"' if isinstance(v, str) else str(v) for v in row) for row in rows]
    (tmp_path / "d.csv").write_text(header + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    name, params = method
    result = cli("protect", _recipe(tmp_path, name, params, '[budget]\nepsilon = "1"\n[report]\nn_random = 200\nn_null = 3\n'),
                 cwd=tmp_path, timeout=120)
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    out = tmp_path / "out"
    if result.returncode == 2:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not out.exists() or not any(out.iterdir())
    else:
        assert {p.suffix for p in out.iterdir()} == {".csv", ".json", ".html"}
