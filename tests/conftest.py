"""Shared fixtures: small frames and a helper to run the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdckit

DATA = Path(__file__).parent / "data"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m sdckit ARGS`` in a subprocess with the package under test importable."""
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


@pytest.fixture
def cli():
    return run_cli


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
