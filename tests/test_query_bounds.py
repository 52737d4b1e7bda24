"""``SELECT BOUNDS(col)`` (issue 32; Tumult Analytics ``get_bounds``): clamping bounds found under
DP from a noisy signed powers-of-2 histogram (:mod:`sdckit.query.bounds`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from query_helpers import SEED, make_data, write_config
from sdckit.dp.mechanisms import SCALE_DENOMINATOR, Geometric
from sdckit.query import bounds
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import magnitude_histogram_sql
from sdckit.query.service import Service
from sdckit.query.sql import parse


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bounds")
    make_data(folder)
    svc = Service(write_config(folder, seed=True, cache=False))
    yield svc
    svc.close()


def _db(tmp_path, frame: pd.DataFrame, extra: str = "") -> Database:
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\n' + extra + "[table.bounds]\nv = [0, 1]\n"
                                     "[table.domains]\ng = [0, 1, 2, 3, 4, 5, 6, 7]\n")
    return Database(load_config(tmp_path / "s.toml"))


def _counts(db: Database, sql: str, rows: int | None = None) -> np.ndarray:
    t = db.config.tables["t"]
    return bounds.bin_counts(db.aggregate(magnitude_histogram_sql(parse(sql, db.config), t, "v", bounds.LOWEST,
                                                                  bounds.HIGHEST, rows)))


def _oracle(values: list[float]) -> np.ndarray:
    """Bin counts by hand: j the smallest integer with |x| <= 2**j (frexp: |x| = m 2**e, m in
    [1/2, 1); j = e - 1 exactly when m = 1/2), clipped to [LOWEST, HIGHEST]; zeros in no bin."""
    out = np.zeros(2 * bounds.SIDE, dtype=np.int64)
    for x in values:
        if x == 0 or x != x:
            continue
        m, e = math.frexp(abs(x))
        j = min(max(e - 1 if m == 0.5 else e, bounds.LOWEST), bounds.HIGHEST)
        i = j - bounds.LOWEST  # 0 .. SIDE-1
        out[bounds.SIDE + i if x > 0 else bounds.SIDE - 1 - i] += 1
    return out


def test_the_threshold_by_hand():
    """epsilon 1, k 1: scale 1, p = e^-1, 186 bins: 186 e^-8 / (1 + e^-1) = 0.0456 <= 0.05 but
    186 e^-7 / (1 + e^-1) = 0.124: T = 8. epsilon 1/2: scale 2, 186 e^-8 / (1 + e^-1/2) = 0.0388,
    186 e^-7.5 / (1 + e^-1/2) = 0.064: T = 16."""
    assert bounds.threshold_for(SCALE_DENOMINATOR) == 8
    assert bounds.threshold_for(2 * SCALE_DENOMINATOR) == 16
    assert 186 * math.exp(-8) / (1 + math.exp(-1)) <= 0.05 < 186 * math.exp(-7) / (1 + math.exp(-1))


def test_the_sql_bins_are_the_powers_of_two_by_hand(tmp_path):
    values = [0.0, 1.0, -1.0, 1024.0, 1024.0000000000002, 1000.0, -0.75, 3.0, 1e-12, -1e30, 1e300, 2.0**62,
              2.0**62 * 1.5, 256.00000000000006, 0.5, -2.0**-30, 7.0, None]
    db = _db(tmp_path, pd.DataFrame({"v": values, "g": 0}))
    assert (_counts(db, "SELECT BOUNDS(v) FROM t") == _oracle([v for v in values if v is not None])).all()
    assert bounds.bounds_from_counts(_oracle([1000.0] * 9 + [-3.0] * 8), 8) == (-4.0, 1024.0)
    assert bounds.bounds_from_counts(_oracle([1000.0] * 9 + [-3.0] * 7), 8) == (0.0, 1024.0)
    assert bounds.bounds_from_counts(_oracle([1e-12] * 9), 8) == (0.0, 2.0**-30)
    assert bounds.bounds_from_counts(_oracle([5.0] * 7), 8) == (0.0, 0.0)


def test_uniform_0_1000_gives_upper_1024_in_at_least_95_percent_of_runs(tmp_path):
    """n = 10,000 uniform in [0, 1000], epsilon 1 (T = 8). The upper bound is 1024 unless one of the
    52 empty positive bins above 1024 reaches 8 (probability <= 52 e^-8 / (1 + e^-1) = 0.0128) or
    the bin (512, 1024] (~4,900 records) falls below it (negligible); the lower bound is 0 unless
    one of the 93 empty negative bins does (<= 0.0228). Over 300 runs both hold in >= 95% (the
    binomial sd of the rates is < 0.01)."""
    rng = np.random.default_rng(1)
    db = _db(tmp_path, pd.DataFrame({"v": rng.uniform(0, 1000, 10_000), "g": 0}))
    t = db.config.tables["t"]
    q = parse("SELECT BOUNDS(v) FROM t", db.config)
    p = bounds.plan(q, t, "pure", epsilon=Fraction(1))
    assert p.threshold == 8 and p.scale_numerator == SCALE_DENOMINATOR
    result = db.aggregate(magnitude_histogram_sql(q, t, "v", bounds.LOWEST, bounds.HIGHEST))
    counts = bounds.bin_counts(result)  # 300 releases (batched noise: answer() is this, see the law test)
    noisy = counts + Geometric(epsilon=p.epsilon, sensitivity=p.k).noise(300 * counts.size, rng).reshape(300, -1)
    found = np.array([bounds.bounds_from_counts(row, p.threshold) for row in noisy])
    assert (found[:, 1] == 1024).mean() >= 0.95 and (found[:, 0] == 0).mean() >= 0.95


def _side_law(counts: np.ndarray, threshold: int, p: float) -> np.ndarray:
    """Exact law of the outermost index reaching the threshold among ``counts`` (outermost last),
    plus 'none' at the end: P(count + Y >= T) = p**(T-c) / (1 + p) for T - c >= 1, else
    1 - p**(1-T+c) / (1 + p) (Y discrete Laplace, P(Y = y) proportional to p**|y|)."""
    reach = np.array([p ** (threshold - c) / (1 + p) if threshold - c >= 1 else 1 - p ** (1 - threshold + c) / (1 + p)
                      for c in counts])
    law = np.zeros(counts.size + 1)
    none_above = 1.0
    for i in range(counts.size - 1, -1, -1):
        law[i] = reach[i] * none_above
        none_above *= 1 - reach[i]
    law[-1] = none_above
    return law


def _bounds_law(counts: np.ndarray, threshold: int, p: float) -> np.ndarray:
    """Exact law of (lower, upper): the two signs' bins are independent."""
    side = bounds.SIDE
    lower = _side_law(counts[:side][::-1], threshold, p)  # the most negative bin is the outermost
    upper = _side_law(counts[side:], threshold, p)
    return np.outer(lower, upper)


@pytest.mark.parametrize("k", [1, 2])
def test_one_person_moves_the_histogram_by_k_and_every_output_by_at_most_e_epsilon(tmp_path, k):
    """Persons g = 0..7 (k rows each, values on both sides of 0, near and far); each table without
    one person (WHERE g <> i) is a neighbour of the whole one. The SQL bin counts of neighbours (and
    the cube's, the same: sdckit.query.boundscube) differ by at most k in L1, and the exact law of
    the released (lower, upper) moves by a factor of at most e^epsilon (epsilon 3, threshold 3 for
    k 1, 6 for k 2: bins near it, so the laws do move)."""
    values = [3.0, 3.5, 5.0, -2.0, -2.5, 900.0, 1e9, 0.0]
    frame = pd.DataFrame({"pid": np.repeat(np.arange(8), k), "v": np.repeat(values, k), "g": np.repeat(np.arange(8), k)})
    db = _db(tmp_path, frame, f'privacy_unit = "pid"\nmax_rows_per_unit = {k}\n')
    t = db.config.tables["t"]
    p = bounds.plan(parse("SELECT BOUNDS(v) FROM t", db.config), t, "pure", epsilon=Fraction(3))
    assert p.k == k and p.threshold == (3 if k == 1 else 6)  # by hand: e^-3T (k 1), e^-1.5T (k 2) vs 0.05 (1 + p) / 186
    prob = math.exp(-SCALE_DENOMINATOR / p.scale_numerator)
    whole = _counts(db, "SELECT BOUNDS(v) FROM t")
    law = _bounds_law(whole, p.threshold, prob)
    worst = 0.0
    for i in range(8):
        part = _counts(db, f"SELECT BOUNDS(v) FROM t WHERE g <> {i}")
        fast = db.fast_bounds(parse(f"SELECT BOUNDS(v) FROM t WHERE g <> {i}", db.config), k)  # the cube's path
        assert fast is not None and (bounds.bin_counts(fast) == part).all()
        assert np.abs(whole - part).sum() <= k
        worst = max(worst, float(np.max(np.abs(np.log(law / _bounds_law(part, p.threshold, prob))))))
    assert 1.0 < worst <= 3.0 + 1e-9


def test_the_exact_law_is_the_mechanism(tmp_path):
    """:func:`bounds.answer` is the plan's geometric noise on the SQL bin counts, then
    :func:`bounds.bounds_from_counts` (the same draws from the same seed); 3,000 such releases
    follow the exact law above (chi-square over the upper bound, the rare outcomes pooled)."""
    db = _db(tmp_path, pd.DataFrame({"v": [3.0, 3.5, 5.0, 900.0, 1e9], "g": 0}))
    t = db.config.tables["t"]
    q = parse("SELECT BOUNDS(v) FROM t", db.config)
    p = bounds.plan(q, t, "pure", epsilon=Fraction(3))
    result = db.aggregate(magnitude_histogram_sql(q, t, "v", bounds.LOWEST, bounds.HIGHEST))
    counts = bounds.bin_counts(result)
    noise = Geometric(epsilon=p.epsilon, sensitivity=p.k)
    for seed in range(3):
        expected = bounds.bounds_from_counts(counts + noise.noise(counts.size, np.random.default_rng(seed)), p.threshold)
        assert tuple(bounds.answer(p, result, np.random.default_rng(seed))["rows"][0]) == expected
    runs = 3000
    noisy = counts + noise.noise(runs * counts.size, np.random.default_rng(2)).reshape(runs, counts.size)
    uppers = [bounds.bounds_from_counts(row, p.threshold)[1] for row in noisy]
    index = [bounds.SIDE if u == 0 else int(math.log2(u)) - bounds.LOWEST for u in uppers]
    observed = np.bincount(index, minlength=bounds.SIDE + 1)
    law = _side_law(counts[bounds.SIDE:], p.threshold, math.exp(-SCALE_DENOMINATOR / p.scale_numerator))
    keep = law * runs > 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(law[keep], law[~keep].sum()) * runs
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_bounds_charged_exactly_in_each_definition(service):
    state = service.state
    sql = "SELECT BOUNDS(income) AS inc FROM census WHERE age > 17"
    key = state.add_analyst("bd_pure", "dp", "1", 0, None)
    status, body = service.query(key, {"sql": sql, "epsilon": "1/3"})
    assert status == 200 and body["exact"]["epsilon_spent"] == "1/3" and body["columns"] == ["inc_lower_bound",
                                                                                             "inc_upper_bound"]
    lower, upper = body["rows"][0]
    assert lower == 0.0 and upper in (2.0**17, 2.0**18) and "BOUNDS(income)" in body["mechanism"]
    key = state.add_analyst("bd_approx", "dp", "1", "1e-6", None)
    status, body = service.query(key, {"sql": sql, "epsilon": "1/2", "delta": "1e-7"})
    assert status == 200 and body["exact"]["epsilon_spent"] == "0.5" and body["exact"]["delta_spent"] == "0"
    key = state.add_analyst("bd_zcdp", "dp", None, 0, None, "1")
    status, body = service.query(key, {"sql": sql, "rho": "1/3"})
    eps = Fraction(math.isqrt(math.floor(Fraction(2, 3) * 2**40)), 2**20)  # sqrt(2/3) on 20 bits, rounded down
    assert status == 200 and Fraction(body["exact"]["rho_spent"]) == eps**2 / 2 <= Fraction(1, 3)
    assert state.analyst("bd_zcdp").rho_spent == eps**2 / 2


@pytest.mark.parametrize("sql, loss, status, match", [
    ("SELECT BOUNDS(region) FROM census", {"epsilon": "0.1"}, 400, "needs a numeric column"),
    ("SELECT BOUNDS(income), COUNT(*) FROM census", {"epsilon": "0.1"}, 400, "asked alone"),
    ("SELECT region, BOUNDS(income) FROM census GROUP BY region", {"epsilon": "0.1"}, 400, "no GROUP BY"),
    ("SELECT BOUNDS(income) FROM census", {"epsilon": "2"}, 403, "exceed"),
    ("SELECT BOUNDS(income) FROM census", {}, 400, "send 'epsilon'"),
])
def test_bad_inputs_are_one_line_and_charge_nothing(service, sql, loss, status, match):
    key = service.state.add_analyst(f"bd_bad_{abs(hash((sql, status))) % 10**8}", "dp", "1", 0, None)
    got, body = service.query(key, {"sql": sql, **loss})
    assert got == status and match in body["error"] and "\n" not in body["error"]
    assert service.state.analyst(f"bd_bad_{abs(hash((sql, status))) % 10**8}").epsilon_spent == 0


def test_rho_too_small_and_restricted_mode_are_refused(service):
    key = service.state.add_analyst("bd_tiny", "dp", None, 0, None, "1")
    status, body = service.query(key, {"sql": "SELECT BOUNDS(income) FROM census", "rho": "1e-13"})
    assert status == 400 and "too small" in body["error"] and service.state.analyst("bd_tiny").rho_spent == 0
    key = service.state.add_analyst("bd_restricted", "restricted", None, 0, None)
    status, body = service.query(key, {"sql": "SELECT BOUNDS(income) FROM census"})
    assert status == 400 and "dp mode only" in body["error"]


def test_bounds_is_dp_on_a_bounds_from_data_column_where_max_is_not(tmp_path):
    """``bounds_from_data`` reads the exact min and max (answers over them say NOT differentially
    private); BOUNDS reads the raw values through the noisy histogram only: dp, and its text says
    to declare what it finds in [table.bounds]. Values 0, 3, ..., 297 (upper 512 at epsilon 1, the
    bin (256, 512] holding 14 records > T = 8, the bin (128, 256] 43; a seeded service)."""
    pd.DataFrame({"v": np.arange(100) * 3.0, "g": 0}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text(f'[service]\nstate = "state.db"\ncache = false\nseed = "{SEED}"\n[[table]]\n'
                                     'name = "t"\npath = "t.csv"\nbounds_from_data = true\n[table.domains]\ng = [0]\n')
    svc = Service(tmp_path / "s.toml")
    try:
        key = svc.state.add_analyst("fd", "dp", "3", 0, None)
        status, body = svc.query(key, {"sql": "SELECT BOUNDS(v) FROM t", "epsilon": "1"})
        assert status == 200 and body["dp"] is True and "[table.bounds]" in body["mechanism"]
        assert body["rows"][0][1] in (256.0, 512.0) and not body["mechanism"].startswith("NOT")
        status, body = svc.query(key, {"sql": "SELECT MAX(v) FROM t", "epsilon": "1"})
        assert status == 200 and body["dp"] is False and body["mechanism"].startswith("NOT differentially private")
    finally:
        svc.close()
