"""Data columns named like the generated SQL's aliases (``b``, ``g0``, ``n``, ``s0``): the service
starts (its cube, moments and histograms are built) and answers quantiles, MIN, BOUNDS and grouped
counts as on any other names. The generated SQL once grouped by the alias ``"b"``, which DuckDB
resolved to a column ``b`` of the data: the service did not start."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from sdckit.query.service import Service


def test_columns_named_like_the_aliases_change_nothing(tmp_path):
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"pid": np.arange(n), "b": rng.integers(0, 3, n), "g0": rng.integers(0, 2, n),
                          "n": rng.integers(0, 10, n), "s0": rng.integers(0, 100, n)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "service.toml").write_text(
        '[service]\nstate = "state.db"\ncache = false\n[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
        '[table.bounds]\ns0 = [0, 100]\nn = [0, 10]\n[table.domains]\nb = [0, 1, 2]\ng0 = [0, 1]\n', encoding="utf-8")
    svc = Service(tmp_path / "service.toml")
    try:
        key = svc.state.add_analyst("a", "dp", Fraction(1000))
        for sql, rows in [("SELECT b, COUNT(*) FROM t GROUP BY b", 3),
                          ("SELECT g0, MEDIAN(s0), MIN(n) FROM t GROUP BY g0", 2),
                          ("SELECT b, g0, SUM(s0), AVG(n) FROM t GROUP BY b, g0", 6),
                          ("SELECT BOUNDS(s0) FROM t", 1)]:
            status, body = svc.query(key, {"sql": sql, "epsilon": 100})
            assert status == 200, (sql, body)
            assert len(body["rows"]) == rows, (sql, body["rows"])
        status, body = svc.query(key, {"sql": "SELECT b, COUNT(*) FROM t GROUP BY b", "epsilon": 100})
        truth = frame.groupby("b").size()
        assert all(abs(count - truth[b]) <= 1 for b, count in body["rows"])  # epsilon 100: geometric noise 0 or +-1
    finally:
        svc.close()
