"""AVG as Tumult Analytics answers it (issue 32): the noisy sum of deviations from the bounds'
midpoint, its sensitivity, its accuracy against a hand-computed bound and against the direct SUM."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from sdckit.dp.mechanisms import Geometric, laplace_randomise
from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.sql import parse


def _db(tmp_path, frame: pd.DataFrame, k: int = 1) -> Database:
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     f'max_rows_per_unit = {k}\n[table.bounds]\nv = [0, 10]\n')
    return Database(load_config(tmp_path / "s.toml"))


def _cells(db: Database, sql: str, epsilon: Fraction):
    t = db.config.tables["t"]
    p = noisy.plan(parse(sql, db.config), t, epsilon)
    return p, t, noisy.exact_cells(p, t, db.aggregate(aggregate_sql(p.query, t, "dp")))


def test_avg_median_error_is_below_the_hand_bound_and_below_the_direct_sum(tmp_path):
    """1,000 people, v = 4..10 (mean 7.0), bounds [0, 10], epsilon 1 split 1/2 + 1/2, k = 1:
    m = 5, the deviations' Laplace scale b_D = 5 / 0.5 = 10, the count's discrete Laplace scale 2
    (p = e^-0.5). Error = (N_D - (7 - 5) N_C) / (1000 + N_C). Hand bound: |N_C| >= 4 has
    probability 2 p^4 / (1 + p) = 2 e^-2 / 1.6065 = 0.168; otherwise |error| > 0.025 needs
    |N_D| > 0.025 * 996 - 2 * 3 = 18.9, probability e^-1.89 = 0.151; so P(|error| > 0.025) <= 0.32
    and the median of 200 errors is below 0.025 (it exceeds it with probability < 1e-6). The
    direct SUM (before issue 32: scale 10 / 0.5 = 20, error (N_S - 7 N_C) / C') is worse."""
    n = 1000
    v = np.tile(np.arange(4, 11), n // 7 + 1)[:n]
    frame = pd.DataFrame({"pid": range(n), "v": v})
    db = _db(tmp_path, frame)
    plan, table, (counts, sums) = _cells(db, "SELECT AVG(v) FROM t", Fraction(1))
    true = v.mean()
    assert plan.midpoints == {"v": 5.0} and plan.sensitivities["v"] == 5.0
    rng = np.random.default_rng(32)
    new, old = [], []
    geometric = Geometric(epsilon=plan.shares["count"], sensitivity=1)
    for _ in range(200):
        answer = noisy.answer_cells(plan, table, counts, sums, rng)
        new.append(abs(answer["rows"][0][0] - true))
        s = laplace_randomise(sums["v"], 10.0, plan.shares["v"], rng, noise_at_zero=True)[0]
        c = int(counts[0] + geometric.noise(1, rng)[0])
        old.append(abs(min(max(s / max(c, 1), 0.0), 10.0) - true))
    assert np.median(new) < 0.025
    assert np.median(new) <= np.median(old)


def test_the_deviation_sum_is_exact_and_a_person_moves_it_by_at_most_its_sensitivity(tmp_path):
    """Person 1 has 5 rows (values 10, 10, 10, 0, 7), k = 3: the first three rows are kept, so
    removing person 1 moves SUM(v - 5) by (10 - 5) * 3 = 15 = k (hi - lo) / 2, the stated
    sensitivity (the direct SUM's would be k * 10 = 30)."""
    frame = pd.DataFrame({"pid": [1, 1, 1, 1, 1, 2, 3], "v": [10, 10, 10, 0, 7, 2, 3]})
    db = _db(tmp_path, frame, k=3)
    plan, _, (counts, sums) = _cells(db, "SELECT AVG(v) FROM t", Fraction(1))
    with_person = noisy.deviation_sums(sums["v"], counts, plan.midpoints["v"])[0]
    assert with_person == (10 - 5) * 3 + (2 - 5) + (3 - 5)
    (tmp_path / "t.csv").unlink()
    db2 = _db(tmp_path, frame[frame.pid != 1])
    plan2, _, (counts2, sums2) = _cells(db2, "SELECT AVG(v) FROM t", Fraction(1))
    without = noisy.deviation_sums(sums2["v"], counts2, 5.0)[0]
    assert abs(with_person - without) == 15 == plan.sensitivities["v"]
    assert noisy.midpoint_sensitivity(-3.0, 10.0, 2) == (3.5, 13.0)


def test_sum_with_avg_of_the_same_column_is_the_deviations_plus_m_times_the_count(tmp_path):
    frame = pd.DataFrame({"pid": range(50), "v": np.arange(50) % 11})
    db = _db(tmp_path, frame)
    plan, table, (counts, sums) = _cells(db, "SELECT COUNT(*), SUM(v), AVG(v) FROM t", Fraction(1))
    answer = noisy.answer_cells(plan, table, counts, sums, np.random.default_rng(1))
    c, s, a = answer["rows"][0]
    assert abs(a - min(max(s / c, 0), 10)) < 1e-9  # one consistent pair: AVG = SUM / COUNT
    assert answer["noise_scale"][1]["midpoint"] == 5.0
