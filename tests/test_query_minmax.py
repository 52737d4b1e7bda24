"""MIN and MAX in dp mode (issue 32): the quantiles 0 and 1 over the public grid of the bounds
(permute-and-flip, as Tumult Analytics answers them with its exponential mechanism), in every
budget definition, charged exactly; refused in restricted mode."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from query_helpers import make_data, write_config
from sdckit.dp.epsilon import exact_text
from sdckit.query import noisy, quantiles
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql, histogram_sql
from sdckit.query.service import Service
from sdckit.query.sql import parse


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("minmax")
    make_data(folder)
    svc = Service(write_config(folder, seed=True, cache=False))
    yield svc
    svc.close()


def _answers(tmp_path, values: np.ndarray, sql: str, runs: int, epsilon: Fraction = Fraction(1)) -> np.ndarray:
    """``runs`` answers (rows x outputs) of ``sql`` over a table ``t`` of ``values`` in group "a",
    bounds [0, 1024] (grid resolution 1), an empty group "b"; the service's own plan and noise."""
    pd.DataFrame({"v": values, "g": "a"}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\n[table.bounds]\nv = [0, 1024]\n'
                                     '[table.domains]\ng = ["a", "b"]\n')
    db = Database(load_config(tmp_path / "s.toml"))
    t = db.config.tables["t"]
    q = parse(sql, db.config)
    p = noisy.plan(q, t, epsilon)
    result, hists = db.aggregate(aggregate_sql(q, t, "dp")), {"v": db.aggregate(histogram_sql(q, t, "v"))}
    rng = np.random.default_rng(11)
    out = np.array([[row[1:] for row in noisy.answer(p, t, result, rng, hists)["rows"]] for _ in range(runs)], dtype=float)
    db.close()
    return out


def test_min_and_max_are_clamping_bounds_within_the_rank_radius(tmp_path):
    """300 values in [100, 900], epsilon 1 split over MIN and MAX (0.5 each): the 95% rank radius is
    r = (2 / 0.5) ln(1025 / 0.05) = 39.7 records. In each of 200 runs both answers lie in the bounds;
    in >= 95% of them (the guarantee per run is >= 95%) at most r records lie below MIN's answer and
    at most r at or above MAX's, i.e. MIN <= the (r+1)-th smallest value and MAX > the (r+1)-th
    largest; the empty group's answers stay in the bounds too."""
    rng = np.random.default_rng(4)
    values = np.sort(rng.integers(100, 901, 300))
    answers = _answers(tmp_path, values, "SELECT g, MIN(v), MAX(v) FROM t GROUP BY g", 200)
    r = quantiles.quantile_rank_radius(0.5, 1)
    assert r == pytest.approx(4 * math.log(20500))
    assert ((answers >= 0) & (answers <= 1024)).all()
    lows, highs = answers[:, 0, 0], answers[:, 0, 1]
    below = np.array([(values < a).sum() for a in lows])
    above = np.array([(values >= a).sum() for a in highs])
    assert (below <= r).mean() >= 0.95 and (above <= r).mean() >= 0.95
    assert (lows <= values[int(r)]).mean() >= 0.95 and (highs > values[-int(r) - 1]).mean() >= 0.95


def test_on_dense_data_min_and_max_concentrate_at_the_true_extremes(tmp_path):
    """Each integer 0..1023 three times (min 0, max 1023), epsilon 2 (1 each): a grid point j
    steps inside has 3 j records beyond it, so the rank radius r = 2 ln(20500) = 19.9 records is
    6.6 steps: MIN <= 7 and MAX >= 1017 in >= 95% of 200 runs; the median answers are 0 and 1024
    (the best points: nothing below 0, nothing at or above 1024)."""
    answers = _answers(tmp_path, np.repeat(np.arange(1024), 3), "SELECT g, MIN(v), MAX(v) FROM t GROUP BY g", 200,
                       Fraction(2))
    lows, highs = answers[:, 0, 0], answers[:, 0, 1]
    assert (lows <= 7).mean() >= 0.95 and (highs >= 1017).mean() >= 0.95
    assert np.median(lows) <= 1 and np.median(highs) >= 1023


def _law(below: np.ndarray, n: int, q: float, epsilon: float, k: int) -> np.ndarray:
    """The exact output law of :func:`~sdckit.query.quantiles.permute_and_flip`, by brute force over
    every visiting order: candidate j is taken with probability exp(-eps' min(gap_j, cap) / (2 D k))."""
    d = 2**quantiles.Q_BITS
    utility = -np.abs(d * below - round(q * d) * n)
    gap = utility.max() - utility
    eps_num = math.floor(epsilon * 2**quantiles.EPS_BITS)
    den = 2 ** (quantiles.EPS_BITS + 1) * max(round(q * d), d - round(q * d)) * k  # 2**21 times the sensitivity
    coins = np.exp(-np.minimum(gap, -(-64 * den // eps_num)) * eps_num / den)
    law = np.zeros(below.size)
    orders = list(itertools.permutations(range(below.size)))
    for order in orders:
        stay = 1.0
        for j in order:
            law[j] += stay * coins[j] / len(orders)
            stay *= 1 - coins[j]
    return law


def _below(table: tuple[int, ...], points: int = 5) -> np.ndarray:
    return np.array([sum(x < c for x in table) for c in range(points)])


def test_the_brute_force_law_is_the_mechanism():
    below = _below((1, 1, 3))
    rng = np.random.default_rng(8)
    for q in (0.0, 1.0):
        law = _law(below, 3, q, 1.0, 1)
        draws = np.bincount([quantiles.permute_and_flip(below, 3, q, 1.0, 1, rng) for _ in range(1500)], minlength=5)
        assert stats.chisquare(draws, law * draws.sum()).pvalue > 1e-3


@pytest.mark.parametrize("k", [1, 2])
def test_a_persons_presence_moves_each_output_probability_by_at_most_e_epsilon(k):
    """Every table of at most 3 values on a 5-point grid (values 0..3), and every neighbour with one
    more person (k rows of one value, k the contribution bound): the exact law of MIN's, MAX's, the
    median's and the quartiles' answer changes by a factor of at most e^epsilon at every grid point,
    epsilon = 0.7 (the median's coins use the utility's sensitivity D k / 2, half MIN's and MAX's;
    with a quarter of it the bound is broken: the check can fail)."""
    epsilon = 0.7
    worst = 0.0
    for size in range(4):
        for table in itertools.combinations_with_replacement(range(4), size):
            for extra in range(4):
                neighbour = tuple(sorted(table + (extra,) * k))
                for q in (0.0, 1.0, 0.5, 0.25, 0.75):
                    a = _law(_below(table), len(table), q, epsilon, k)
                    b = _law(_below(neighbour), len(neighbour), q, epsilon, k)
                    worst = max(worst, float(np.max(np.abs(np.log(a / b)))))
    assert worst <= epsilon + 1e-9
    assert worst > epsilon / 4  # the check can fail: the laws do move


def test_min_max_charged_exactly_in_each_definition_and_refused_when_exhausted(service):
    state = service.state
    sql = "SELECT region, MIN(income), MAX(age) FROM census GROUP BY region"
    key = state.add_analyst("mm_pure", "dp", "1", 0, None)
    for _ in range(2):
        status, body = service.query(key, {"sql": sql, "epsilon": "2/5"})
        assert status == 200 and body["exact"]["epsilon_spent"] == "0.4" and body["definition"] == "pure"
        assert "MIN(income) (the quantile 0" in body["mechanism"] and len(body["rows"]) == 4
        assert all(0 <= row[1] <= 200_000 and 0 <= row[2] <= 120 for row in body["rows"])
    ledger = state.ledger("mm_pure")
    status, body = service.query(key, {"sql": sql, "epsilon": "2/5"})
    assert status == 403 and body["exact"]["epsilon_remaining"] == "0.2"
    assert state.ledger("mm_pure") == ledger and state.analyst("mm_pure").epsilon_spent == Fraction(4, 5)

    key = state.add_analyst("mm_approx", "dp", "1", "1e-5", None)
    status, body = service.query(key, {"sql": sql, "epsilon": "1/2", "delta": "1e-6"})
    assert status == 200 and body["exact"]["epsilon_spent"] == "0.5" and body["exact"]["delta_spent"] == "0.000001"

    key = state.add_analyst("mm_zcdp", "dp", None, 0, None, "1/50")
    status, body = service.query(key, {"sql": sql, "rho": "1/100"})
    each = Fraction(math.isqrt(math.floor(Fraction(2, 200) * 2**40)), 2**20)  # sqrt(2 rho/2), 20 bits, rounded down
    charged = 2 * each**2 / 2
    assert status == 200 and body["exact"]["rho_spent"] == exact_text(charged) and charged <= Fraction(1, 100)
    assert Fraction(1, 100) - charged < Fraction(1, 10**6) and state.analyst("mm_zcdp").rho_spent == charged
    assert service.query(key, {"sql": sql, "rho": "1/100"})[0] == 200
    status, body = service.query(key, {"sql": sql, "rho": "1/100"})
    assert status == 403 and state.analyst("mm_zcdp").rho_spent == 2 * charged


def test_restricted_mode_refuses_min_and_max_in_one_line(service):
    key = service.state.add_analyst("mm_restricted", "restricted", None, 0, None)
    for sql in ("SELECT MIN(income) FROM census", "SELECT region, MAX(age) FROM census GROUP BY region"):
        status, body = service.query(key, {"sql": sql})
        assert status == 400 and "MIN" in body["error"] and "\n" not in body["error"]
        assert "one person's value" in body["error"]


@pytest.mark.parametrize("q, table", [(1.0, (1, 1, 3)), (0.0, (1, 1, 3)), (0.5, (0, 2, 2, 4)), (1.0, (4, 4, 4))])
def test_flipping_every_coin_has_the_law_of_visiting_in_a_random_order(q, table):
    """:func:`~sdckit.query.quantiles.flip_all` (every coin at once, a uniform one of those that
    came up), which permute-and-flip takes when at most FLIP_ALL_NEAR candidates have a coin of
    at least 1/e (MAX over values piled at the upper bound), against the brute-force law over every
    visiting order: chi-square at level 1e-3 on 3,000 draws at epsilon 1 and 3."""
    below = _below(table)
    n = len(table)
    rng = np.random.default_rng(21)
    for epsilon in (1.0, 3.0):
        d = 2**quantiles.Q_BITS
        distance = np.abs(d * below - round(q * d) * n)
        eps_num, den, cap = quantiles.coin_parameters(epsilon, 1, q)
        exponents = np.minimum(distance - distance.min(), cap) * eps_num
        law = _law(below, n, q, epsilon, 1)
        draws = np.bincount([quantiles.flip_all(exponents, den, rng) for _ in range(3000)], minlength=5)
        seen = law > 0
        assert draws[~seen].sum() == 0
        assert stats.chisquare(draws[seen], law[seen] * draws.sum()).pvalue > 1e-3
