"""``[service] memory_limit`` (issue 32): large tables held in a temporary DuckDB file with bounded
memory, the same answers as in memory, the file's folder removed at close; bad sizes refused."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.sql import parse

CONFIG = """[service]
state = "state.db"
{limit}
[[table]]
name = "t"
path = "t.csv"
privacy_unit = "pid"
max_rows_per_unit = 2
[table.bounds]
income = [0, 1000]
frac = [0, 1]
[table.domains]
region = ["N", "S"]
"""


def _config(folder: Path, limit: str = "") -> Path:
    path = folder / "service.toml"
    path.write_text(CONFIG.format(limit=limit), encoding="utf-8")
    return path


@pytest.mark.parametrize("text, size", [('"64MiB"', 64 * 2**20), ('"1.5GB"', 1_500_000_000), ('" 100 mb "', 10**8)])
def test_a_memory_limit_is_read_in_bytes(tmp_path, text, size):
    assert load_config(_config(tmp_path, f"memory_limit = {text}")).memory_limit == size
    assert load_config(_config(tmp_path)).memory_limit is None


@pytest.mark.parametrize("text", ['"1MB"', '"lots"', "4000000000", '"4 GiGs"', '""'])
def test_a_bad_memory_limit_is_refused_in_one_line(tmp_path, text):
    with pytest.raises(ParameterError, match="memory_limit") as info:
        load_config(_config(tmp_path, f"memory_limit = {text}"))
    assert "\n" not in str(info.value)


def test_tables_in_a_bounded_duckdb_file_give_the_same_answers_and_are_removed(tmp_path):
    rng = np.random.default_rng(2)
    n = 400
    frame = pd.DataFrame({"pid": rng.integers(0, 150, n), "income": rng.integers(-50, 1200, n),
                          "region": rng.choice(["N", "S", "X"], n), "frac": rng.random(n)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    answers = []
    for limit in ("", 'memory_limit = "128MiB"'):
        db = Database(load_config(_config(tmp_path, limit)))
        scratch = [p for p in vars(db).values() if isinstance(p, Path)]
        try:
            if limit:
                assert len(scratch) == 1 and (scratch[0] / "tables.duckdb").is_file()
                assert db.execute("SELECT current_setting('memory_limit')").fetchone()[0].startswith("128")
            table = db.config.tables["t"]
            out = []
            for sql in ("SELECT region, COUNT(*), SUM(income) FROM t WHERE frac > 0.25 GROUP BY region",
                        "SELECT COUNT(*), SUM(frac) FROM t WHERE income BETWEEN 100 AND 700"):
                query = parse(sql, db.config)
                plan = noisy.plan(query, table, Fraction(1))
                counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))
                out.append((counts.tolist(), {c: v.tolist() for c, v in sums.items()}))
            answers.append(out)
        finally:
            db.close()
        assert all(not p.exists() for p in scratch)
    # counts and integer sums exactly; SUM(frac) (inexact doubles) depends on DuckDB's summation order
    assert [(c, s["income"]) for c, s in answers[0][:1]] == [(c, s["income"]) for c, s in answers[1][:1]]
    assert answers[0][1][0] == answers[1][1][0]
    assert answers[0][1][1]["frac"] == pytest.approx(answers[1][1][1]["frac"], rel=1e-12)


def test_the_server_removes_its_duckdb_file_when_stopped(tmp_path, monkeypatch):
    """The real server (SIGTERM, as a service manager stops it) leaves no copy of the data behind."""
    from query_helpers import Server

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    pd.DataFrame({"pid": [1, 2, 3], "income": [10, 20, 30], "region": ["N", "S", "N"],
                  "frac": [0.1, 0.2, 0.3]}).to_csv(tmp_path / "t.csv", index=False)
    monkeypatch.setenv("TMPDIR", str(scratch))  # the server's temporary folder
    server = Server(_config(tmp_path, 'memory_limit = "128MiB"'))
    try:
        made = list(scratch.glob("sdckit-duckdb-*"))
        assert len(made) == 1 and (made[0] / "tables.duckdb").is_file()
    finally:
        server.stop()
    assert server.proc.returncode is not None and not made[0].exists()
