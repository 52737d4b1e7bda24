"""Contribution bounds chosen per query on a table of one row per person (issue 32): truncating
each person to ``k' >= 1`` rows (``max_rows_per_unit``), ``g >= 1`` groups and ``r >= 1`` rows per
group (``max_groups_per_unit``, ``max_rows_per_group``) keeps her one row, so the true answer is
the whole dp relation's and the cube answers it (``Database.keeps_every_row``), while the noise
scale stays the declared bounds' (never the data's).

Table: persons 0..59, one row each (``pid`` unique), ``g`` in a..d (``g = "abcd"[i % 4]`` for
``i < 40``, then ``"a"``: a 30, b c d 10 each), ``v = i % 11`` in [0, 10], ``age = i % 7``;
configured ``max_rows_per_unit = 4``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED, seeded_answers
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.sql import parse

K = 4
N = 60
DOMAIN = ["a", "b", "c", "d"]
FRAME = pd.DataFrame({"pid": np.arange(N) * 7 + 3, "g": ["abcd"[i % 4] if i < 40 else "a" for i in range(N)],
                      "v": [i % 11 for i in range(N)], "age": [i % 7 for i in range(N)]})
GROUPED = "SELECT g, COUNT(*), SUM(v), AVG(v) FROM t WHERE age >= 2 GROUP BY g"


def _write(folder, frame: pd.DataFrame = FRAME) -> None:
    frame.to_csv(folder / "t.csv", index=False)
    (folder / "service.toml").write_text(
        f'[service]\nstate = "state.db"\ncache = false\nseed = "{SEED}"\n'
        f'[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
        '[table.bounds]\nv = [0, 10]\nage = [0, 6]\n[table.domains]\ng = ["a", "b", "c", "d"]\n'
        f'[[table]]\nname = "keyed"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
        'keys_from_data = ["age"]\n[table.bounds]\nv = [0, 10]\nage = [0, 6]\n[table.domains]\ng = ["a", "b", "c", "d"]\n')


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onerow")
    _write(folder)
    database = Database(load_config(folder / "service.toml"))
    yield database
    database.close()


BOUNDS = [(None, None), (1, None), (2, None), (None, GroupBounds(1, 1, K)), (None, GroupBounds(2, 3, K)),
          (2, GroupBounds(1, 2, 2)), (1, GroupBounds(1, 1, 1))]


@pytest.mark.parametrize("rows, groups", BOUNDS)
def test_the_cube_gives_the_scans_true_cells_under_any_bounds(db, rows, groups):
    """The scan truncates (rank <= k', then per group); the cube does not; on one row per person
    both give the pandas oracle's counts and clamped sums per cell, exactly."""
    t = db.config.tables["t"]
    assert db.unique_units["t"] and db.keeps_every_row("t", rows, groups)
    q = parse(GROUPED, db.config)
    plan = noisy.plan(q, t, Fraction(1), rows, groups)
    scanned = noisy.exact_cells(plan, t, db.aggregate(aggregate_sql(q, t, "dp", rows=rows, groups=groups)))
    fast = db.fast_cells(q, len(plan.cells), rows, groups)
    assert fast is not None
    kept = FRAME[FRAME.age >= 2]
    want_counts = kept.groupby("g").size().reindex(DOMAIN, fill_value=0).tolist()
    want_sums = kept.groupby("g")["v"].sum().reindex(DOMAIN, fill_value=0).astype(float).tolist()
    for counts, sums in (scanned, fast):
        assert np.asarray(counts).tolist() == want_counts
        assert np.asarray(sums["v"]).tolist() == want_sums


def test_several_rows_per_person_still_scan(tmp_path):
    """With a person of two rows, a smaller k' or per-group bounds drop rows: not the cube. k' = 1
    is answered from the cube with the stored rank (Cube.ranked), per-group bounds from the row
    store (sdckit.query.rowstore, tests/test_query_rowstore.py): both the scan's cells."""
    _write(tmp_path, pd.concat([FRAME, FRAME.iloc[:1]]))
    database = Database(load_config(tmp_path / "service.toml"))
    try:
        q = parse(GROUPED, database.config)
        t = database.config.tables["t"]
        assert not database.unique_units["t"]
        assert database.fast_cells(q, 4) is not None
        scanned = noisy.exact_cells(noisy.plan(q, t, Fraction(1), 1), t, database.aggregate(aggregate_sql(q, t, "dp", rows=1)))
        ranked = database.fast_cells(q, 4, 1)
        assert ranked[0].tolist() == scanned[0].tolist() and ranked[1]["v"].tolist() == scanned[1]["v"].tolist()
        bounds = GroupBounds(1, 1, K)
        scanned = noisy.exact_cells(noisy.plan(q, t, Fraction(1), None, bounds), t,
                                    database.aggregate(aggregate_sql(q, t, "dp", groups=bounds)))
        stored = database.fast_cells(q, 4, None, bounds)
        assert np.array_equal(stored[0], scanned[0]) and np.array_equal(stored[1]["v"], scanned[1]["v"])
        database.row_stores.clear()
        assert database.fast_cells(q, 4, None, bounds) is None
        assert database.fast_keys(parse("SELECT age, COUNT(*) FROM keyed GROUP BY age", database.config), 1) is None
    finally:
        database.close()


def _answers(folder, fast: bool) -> list:
    """Seeded answers of a fresh service; ``fast``: every scan forbidden, else every fast path off."""
    folder.mkdir()
    _write(folder)
    requests = []
    for who in ("pure", "approx", "zcdp"):
        for rows, groups in BOUNDS:
            body = {"sql": GROUPED}
            if rows is not None:
                body["max_rows_per_unit"] = rows
            if groups is not None:
                body.update(max_groups_per_unit=groups.groups, max_rows_per_group=groups.rows)
            requests.append((who, body))
    requests += [
        ("pure", {"sql": "SELECT g, MEDIAN(v) FROM t GROUP BY g", "epsilon": 1, "max_groups_per_unit": 2}),
        # a Gaussian analyst's quantiles come from the cube's histograms too (they scanned before)
        ("zcdp", {"sql": "SELECT g, MEDIAN(v), COUNT(*) FROM t GROUP BY g"}),
        ("approx", {"sql": "SELECT MIN(v), MAX(v), QUANTILE_CONT(v, 0.25) FROM t WHERE age >= 2"}),
        ("approx", {"sql": "SELECT age, COUNT(*) FROM keyed WHERE g = 'a' GROUP BY age", "epsilon": 1,
                    "max_rows_per_unit": 1})]
    return seeded_answers(folder / "service.toml", requests, fast)


def test_answers_from_the_cube_equal_the_scans_and_state_the_declared_noise(tmp_path):
    """The same seeded answers (values, noise scales, stated bounds and mechanisms, bit for bit)
    with every scan forbidden as with every fast path off: the path changed, not the answer. The
    noise is the declared bounds' (pure COUNT at g = 2, r = 3, k = 4: L1 4; at k' = 1 or g = r = 1:
    L1 1), never the data's one row per person."""
    fast, scanned = _answers(tmp_path / "fast", True), _answers(tmp_path / "scan", False)
    assert all(status == 200 for status, _ in fast), [b for s, b in fast if s != 200]
    assert fast == scanned
    t = load_config(tmp_path / "fast" / "service.toml").tables["t"]
    q = parse(GROUPED, load_config(tmp_path / "fast" / "service.toml"))
    for rows, groups, l1 in ((None, GroupBounds(2, 3, K), 4), (1, None, 1), (None, GroupBounds(1, 1, K), 1)):
        _, body = fast[BOUNDS.index((rows, groups))]
        plan = noisy.plan(q, t, Fraction(1, 2), rows, groups)  # the declared bounds, no data read
        assert plan.sensitivities["count"] == l1 and plan.sensitivities["v"] == 5 * l1  # (AVG: about the midpoint 5)
        assert body["noise_scale"][1] == plan.count_scale == noisy.geometric_scale(plan.shares["count"], l1)
        assert body["max_rows_per_unit"] == (rows or K)
        assert body.get("group_bounds", {}).get("l1", l1) == l1
    assert fast[-1][1]["key_selection"]["k"] == 1 and fast[-1][1]["max_rows_per_unit"] == 1
