"""VAR_POP, STDDEV_POP and COUNT(DISTINCT) in the query service's dp mode (issue 32), as Tumult
Analytics answers them: three noisy measurements (COUNT, the sum of deviations from the bounds'
midpoint, the sum of squared deviations shifted by half their cap), the loss split over them and
charged exactly in the analyst's definition; restricted mode refuses them."""

from __future__ import annotations

import dataclasses

import math
from fractions import Fraction

import httpx
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from query_helpers import Server, make_data, write_config
from sdckit.query import Client, noisy, noisy_gaussian, variance
from sdckit.query.builder import select_sql
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql, square_cap
from sdckit.query.service import Service
from sdckit.query.sql import parse
from sdckit.query.state import State

_TOML = ('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {k}\n'
         '[table.bounds]\nv = [0, 10]\n[table.domains]\ng = ["a", "b", "c"]\n')


def _db(folder, frame: pd.DataFrame, k: int = 2) -> Database:
    frame.to_csv(folder / "t.csv", index=False)
    (folder / "s.toml").write_text(_TOML.format(k=k))
    return Database(load_config(folder / "s.toml"))


def _cells(db: Database, sql: str, plan_maker=None):
    t = db.config.tables["t"]
    q = parse(sql, db.config)
    p = plan_maker(q, t) if plan_maker else noisy.plan(q, t, Fraction(10**6))
    return p, t, noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp")))


# ------------------------------------------------------------------ hand-worked values
def test_hand_worked_variance_stddev_and_distinct_count_with_negligible_noise(tmp_path):
    """k = 2: person 1's third row (v = 50) is dropped, v = -4 is clamped to 0. The kept clamped
    values 1, 9, 3, 0, 7: mean 4, VAR_POP = (1 + 81 + 9 + 0 + 49) / 5 - 16 = 12, STDDEV_POP
    sqrt(12); group a (1, 3, 7): 59/3 - (11/3)^2 = 56/9, group b (9, 0): 20.25, c empty. Distinct
    g: a, b = 2; distinct v (as they are): 1, 9, 3, -4, 7 = 5. Epsilon 10^6 (noise ~1e-4): within
    1e-3 of these, and each interval holds the true value."""
    frame = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 4], "v": [1.0, 9.0, 50.0, 3.0, -4.0, 7.0],
                          "g": ["a", "b", "a", "a", "b", "a"]})
    db = _db(tmp_path, frame)
    p, t, (counts, sums) = _cells(db, "SELECT VAR_POP(v), STDDEV_POP(v), COUNT(DISTINCT g), COUNT(DISTINCT v) FROM t")
    assert counts.tolist() == [5] and sums["v"].tolist() == [20.0]
    assert sums["sumsq:v"].tolist() == [16 + 16 + 4 + 25 + 4]  # (x - 5)^2, below the cap 25
    assert sums["distinct:g"].tolist() == [2] and sums["distinct:v"].tolist() == [5]
    out = noisy.answer_cells(p, t, counts, sums, np.random.default_rng(1))
    var, sd, dg, dv = out["rows"][0]
    assert var == pytest.approx(12.0, abs=1e-3) and sd == pytest.approx(math.sqrt(12.0), abs=1e-3)
    assert (dg, dv) == (2, 5)
    for value, (low, high) in zip((12.0, math.sqrt(12.0), 2, 5), out["ci95"][0]):
        assert low <= value <= high
    assert out["columns"] == ["var_v", "stddev_v", "count_distinct_g", "count_distinct_v"]
    p, t, (counts, sums) = _cells(db, "SELECT g, VAR_POP(v) AS var FROM t GROUP BY g")
    rows = noisy.answer_cells(p, t, counts, sums, np.random.default_rng(2))["rows"]
    assert [r[0] for r in rows] == ["a", "b", "c"]
    assert rows[0][1] == pytest.approx(56 / 9, abs=1e-3) and rows[1][1] == pytest.approx(20.25, abs=1e-3)
    assert 0.0 <= rows[2][1] <= 25.0  # an empty group: a value of the clamped range


def test_the_measurements_sensitivities_and_the_split_are_stated(tmp_path):
    """Bounds [0, 10], k = 2: m = 5, cap 25; D's sensitivity 2 x 5 = 10, the squares' 2 x 25/2 = 25
    (Tumult's x^2 shifted by its midpoint: 2 x 100/2 = 100), COUNT and COUNT(DISTINCT) 2; epsilon
    split equally over the four measurements; the squared deviations' SQL caps them at 25."""
    db = _db(tmp_path, pd.DataFrame({"pid": [1, 2], "v": [1.0, 2.0], "g": ["a", "b"]}))
    t = db.config.tables["t"]
    q = parse("SELECT STDDEV_POP(v), COUNT(DISTINCT g) FROM t", db.config)
    p = noisy.plan(q, t, Fraction(1))
    assert list(p.shares) == ["count", "v", "sumsq:v", "distinct:g"] and set(p.shares.values()) == {0.25}
    assert p.sensitivities == {"count": 2.0, "v": 10.0, "sumsq:v": 25.0, "distinct:g": 2.0}
    assert p.midpoints == {"v": 5.0} and p.square_caps == {"v": 25.0} == {"v": square_cap(0.0, 10.0)}
    assert "SUM(min((v - 5)^2, 25) - 12.5)" in p.mechanism() and "split equally over 4" in p.mechanism()
    # integer values: LEAST((2x - 10)**2, 100) summed exactly as integers (over 4 = the squared deviations)
    assert t.square_bits == {"v": 0} and "LEAST" in aggregate_sql(q, t, "dp").sql
    assert aggregate_sql(q, t, "dp").params == (2.0, 10, 2.0, 10, 100)
    off_grid = dataclasses.replace(t, square_bits={})  # the double sum of LEAST((x - 5)**2, 25)
    assert "LEAST" in aggregate_sql(q, off_grid, "dp").sql and aggregate_sql(q, off_grid, "dp").params == (5.0, 5.0, 25.0)
    a = Fraction(0.1) - Fraction(0.05)  # the doubles' exact largest deviation
    assert square_cap(-3.0, 10.0) == 6.5 ** 2 and Fraction(square_cap(0.0, 0.1)) <= a * a
    assert math.nextafter(square_cap(0.0, 0.1), 1.0) > a * a


# ------------------------------------------------------------------ the noise's distribution
def _symmetric_cells(n: int):
    """n rows in [0, 10]: a quarter at 0, a quarter at 10, half at 5: D = 0 and the shifted
    squares' sum S = n (25/4 + 0) ... = n 12.5 - n 12.5 = 0, VAR_POP 12.5; to first order the
    estimate is 12.5 + Z_S / n (the count's and D's noise enter only at second order)."""
    return np.array([n]), {"v": np.array([5.0 * n]), "sumsq:v": np.array([12.5 * n])}


def test_the_estimate_follows_the_squares_laplace_noise(tmp_path):
    """Pure epsilon 3 (1 per measurement), n = 10,000: n (VAR - 12.5) against Laplace(b_S), b_S
    the squares' stated scale (k cap / 2 / epsilon = 12.5 / 1): KS at level 0.001 over 1,200 answers; the mean within
    3 standard errors of 12.5 (the second-order bias -2 b_D^2 / n^2 ~ 5e-7 is far below); the
    95% intervals cover 12.5 at least 95% of the time (minus 3 standard errors)."""
    db = _db(tmp_path, pd.DataFrame({"pid": [1], "v": [1.0], "g": ["a"]}), k=1)
    t = db.config.tables["t"]
    p = noisy.plan(parse("SELECT VAR_POP(v) FROM t", db.config), t, Fraction(3))
    n = 10_000
    counts, sums = _symmetric_cells(n)
    rng = np.random.default_rng(3232)
    draws, covered = [], 0
    for _ in range(1200):
        out = noisy.answer_cells(p, t, counts, sums, rng)
        draws.append(out["rows"][0][0])
        low, high = out["ci95"][0][0]
        covered += low <= 12.5 <= high
    draws = np.array(draws)
    b = p.other_scales["sumsq:v"]
    assert b == pytest.approx(12.5, rel=1e-9)
    assert stats.kstest(n * (draws - 12.5), stats.laplace(scale=b).cdf).pvalue > 0.001
    assert abs(draws.mean() - 12.5) < 3 * draws.std() / math.sqrt(draws.size)
    assert covered / 1200 >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 1200)


def test_the_gaussian_estimate_has_the_stated_sigma(tmp_path):
    """rho 3/8 (1/8 per measurement), k = 1: the squares' sigma = 12.5 / sqrt(1/4) = 25 (the grid
    adds < 1e-5 relative); n (VAR - 12.5) against N(0, sigma) (KS, level 0.001, 1,200 draws)."""
    db = _db(tmp_path, pd.DataFrame({"pid": [1], "v": [1.0], "g": ["a"]}), k=1)
    t = db.config.tables["t"]
    p = noisy_gaussian.plan(parse("SELECT VAR_POP(v) FROM t", db.config), t, "zcdp", rho=Fraction(3, 8))
    sigma = p.measurements["sumsq:v"].sigma
    assert sigma == pytest.approx(25.0, rel=1e-5)
    n = 10_000
    counts, sums = _symmetric_cells(n)
    rng = np.random.default_rng(3233)
    draws = np.array([noisy_gaussian.answer_cells(p, counts, sums, rng)["rows"][0][0] for _ in range(1200)])
    assert stats.kstest(n * (draws - 12.5), stats.norm(scale=sigma).cdf).pvalue > 0.001


def test_variance_range_is_the_exact_range_over_the_box():
    """Against a fine grid over the box (the function's range there), for a few boxes."""
    rng = np.random.default_rng(7)
    for _ in range(30):
        s, d, c = rng.normal(0, 40), rng.normal(0, 30), rng.uniform(5, 40)
        rs, rd, rc = rng.uniform(0, 30), rng.uniform(0, 30), rng.uniform(0, 4)
        low, high = variance.variance_range(s, rs, d, rd, c, rc, 25.0)
        S, D, C = np.meshgrid(np.linspace(s - rs, s + rs, 41), np.linspace(d - rd, d + rd, 81),
                              np.linspace(c - rc, c + rc, 81), indexing="ij")
        f = np.clip(S / C + 12.5 - (D / C) ** 2, 0, 25)
        assert low <= f.min() + 1e-9 and high >= f.max() - 1e-9
        assert f.min() - low < 0.05 and high - f.max() < 0.05  # and no wider (grid resolution)


# ------------------------------------------------------------------ attack: many rows
def test_a_person_with_many_rows_moves_each_measurement_by_at_most_its_sensitivity(tmp_path):
    """Random tables of 25 persons where person 0 holds 2..8 rows of extreme values (1e6, -1e6,
    values 0/10) and new distinct values, spread over the groups; k = 3. With and without her, the
    noiseless measurements per group (COUNT, SUM(x - m), shifted squares, COUNT(DISTINCT v),
    COUNT(DISTINCT g)) differ in L1 (over the groups) by at most k, k 5, k 12.5, k and k — the
    sensitivities the plan states and calibrates to. Unclamped, her rows would move the squares by
    up to 8 x 1e12."""
    rng = np.random.default_rng(32)
    sql = "SELECT g, VAR_POP(v), COUNT(DISTINCT v) AS dv FROM t GROUP BY g"
    for trial in range(6):
        rows = int(rng.integers(2, 9))
        others = pd.DataFrame({"pid": np.repeat(np.arange(1, 26), 2), "v": rng.integers(0, 11, 50).astype(float),
                               "g": rng.choice(list("abc"), 50)})
        her = pd.DataFrame({"pid": [0] * rows, "v": rng.choice([1e6, -1e6, 0.5 + trial, 10.0], rows),
                            "g": rng.choice(list("abc"), rows)})
        with_her = pd.concat([her, others] if trial % 2 else [others, her], ignore_index=True)
        folder = tmp_path / f"t{trial}"
        folder.mkdir()
        (folder / "without").mkdir()
        db1, db0 = _db(folder, with_her, k=3), _db(folder / "without", others, k=3)
        p, t, (c1, s1) = _cells(db1, sql)
        _, _, (c0, s0) = _cells(db0, sql)
        assert p.sensitivities == {"count": 3.0, "v": 15.0, "sumsq:v": 37.5, "distinct:v": 3.0}
        assert np.abs(c1 - c0).sum() <= p.sensitivities["count"]
        for name in ("v", "sumsq:v", "distinct:v"):
            if name == "v":
                moved = noisy.deviation_sums(s1[name], c1, 5.0) - noisy.deviation_sums(s0[name], c0, 5.0)
            elif name == "sumsq:v":
                moved = noisy.deviation_sums(s1[name], c1, 12.5) - noisy.deviation_sums(s0[name], c0, 12.5)
            else:
                moved = s1[name] - s0[name]
            assert np.abs(moved).sum() <= p.sensitivities[name] + 1e-9, (trial, name, moved)
        d1 = _cells(db1, "SELECT COUNT(DISTINCT g) FROM t")[2][1]["distinct:g"]
        d0 = _cells(db0, "SELECT COUNT(DISTINCT g) FROM t")[2][1]["distinct:g"]
        assert abs(int(d1[0]) - int(d0[0])) <= 3
        db1.close()
        db0.close()


# ------------------------------------------------------------------ budgets and refusals
@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("var")
    make_data(folder)
    svc = Service(write_config(folder, seed=True, cache=False))
    yield svc
    svc.close()


def test_the_charge_is_exactly_the_asked_loss_in_each_definition(service):
    """pure 1/3, approx (1, 1e-6), zCDP 1/2 over four measurements of 1/8 each (every variance
    exact): the ledger and the answer state exactly what was asked; a restricted analyst and a
    GROUP BY with keys from the data are refused (400) with nothing charged."""
    state: State = service.state
    sql = "SELECT region, VAR_POP(income), STDDEV_POP(income), COUNT(DISTINCT grp) FROM census GROUP BY region"
    cases = {"pure": ({"epsilon": "1"}, {"epsilon": "1/3"}),
             "approx": ({"epsilon": "2", "delta": "1e-5"}, {"epsilon": "1", "delta": "1e-6"}),
             "zcdp": ({"rho": "1"}, {"rho": "1/2"})}
    for definition, (total, asked) in cases.items():
        key = state.add_analyst(f"v_{definition}", "dp", total.get("epsilon"), total.get("delta", 0), None,
                                total.get("rho"))
        status, body = service.query(key, {"sql": sql, **asked})
        assert status == 200, body
        assert body["definition"] == definition and len(body["rows"]) == 4
        a = state.analyst(f"v_{definition}")
        if definition == "zcdp":
            assert a.rho_spent == Fraction(1, 2) and body["exact"]["rho_spent"] == "0.5"
        else:
            assert a.epsilon_spent == Fraction(asked["epsilon"]) and body["exact"]["epsilon_spent"] == asked["epsilon"]
        if definition == "approx":
            assert a.delta_spent == Fraction(1, 10**6)
        assert "VAR_POP" in body["mechanism"] and "COUNT(DISTINCT grp)" in body["mechanism"]
        for row, ci in zip(body["rows"], body["ci95"]):
            assert 0 <= row[1] <= 1e10 and row[2] == pytest.approx(math.sqrt(row[1]))
            assert ci[1][0] <= row[1] <= ci[1][1] and ci[2][0] <= row[2] <= ci[2][1]
    restricted = state.add_analyst("v_restricted", "restricted")
    status, body = service.query(restricted, {"sql": "SELECT VAR_POP(income) FROM census"})
    assert status == 400 and "dp mode only" in body["error"]
    assert service.query(restricted, {"sql": "SELECT COUNT(DISTINCT region) FROM census"})[0] == 400


def test_the_zcdp_charge_is_the_sum_of_the_measurements_exact_rhos(service):
    t = service.config.tables["census"]
    q = parse("SELECT VAR_POP(income), COUNT(DISTINCT grp) FROM census", service.config)
    p = noisy_gaussian.plan(q, t, "zcdp", rho=Fraction(1, 2))
    assert list(p.measurements) == ["count", "income", "sumsq:income", "distinct:grp"]
    assert all(m.rho == Fraction(1, 8) for m in p.measurements.values()) and p.cost == (0, 0, Fraction(1, 2))
    assert p.measurements["sumsq:income"].sensitivity == 1e10 / 2  # k (200000 / 2)^2 / 2, k = 1


# ------------------------------------------------------------------ the client, over HTTP
def test_client_var_stddev_count_distinct_over_http(tmp_path):
    frame = make_data(tmp_path)
    config = write_config(tmp_path, seed=True)
    state = State(load_config(config).state)
    key = state.add_analyst("h", "dp", "10")
    restricted = state.add_analyst("r", "restricted")
    assert select_sql("census", "count_distinct", "region") == 'SELECT COUNT(DISTINCT "region") FROM "census"'
    server = Server(config)
    try:
        with Client(server.url, key) as c:
            var = c.var("census", "income", epsilon="1/3")
            sd = c.stddev("census", "income", by="region", epsilon="1/2")
            dist = c.count_distinct("census", "grp", where={"age": (0, 60)}, epsilon=1)
        assert list(var.columns) == ["var_income", "var_income_low", "var_income_high"]
        assert var.attrs["exact"]["epsilon_spent"] == "1/3" and var.attrs["sql"] == 'SELECT VAR_POP("income") FROM "census"'
        clamped = frame["income"].clip(0, 200_000)
        assert var["var_income_low"][0] <= var["var_income"][0] <= var["var_income_high"][0]
        assert var["var_income"][0] == pytest.approx(clamped.var(ddof=0), rel=0.3)  # n = 400, epsilon 1/9 each
        assert list(sd["region"]) == ["N", "S", "E", "W"] and "stddev_income_low" in sd.columns
        assert abs(dist["count_distinct_grp"][0] - frame.loc[frame["age"] <= 60, "grp"].nunique()) <= 25
        r = httpx.post(server.url + "/v1/query", headers={"Authorization": f"Bearer {restricted}"}, timeout=30,
                       json={"sql": "SELECT STDDEV_POP(income) FROM census"})
        assert r.status_code == 400 and "dp mode only" in r.json()["error"]
    finally:
        server.stop()
    assert State(load_config(config).state).analyst("h").epsilon_spent == Fraction(11, 6)
