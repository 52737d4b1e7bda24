"""GROUP BY keys taken from the data, released by thresholding (issue 32; sdckit.query.keys).

The attack (a key held by one person is released with probability <= delta: exactly from the
mechanism, and empirically), the distributions (release frequencies against the noise's CDF at
the threshold; the released COUNTs' noise against the discrete Laplace, or the discrete
Gaussian where that is less noise), the refusals of
pure-epsilon, zCDP and restricted analysts (400, nothing charged), the exact charge, the
contribution bound, the configuration, and the real server over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import math
from fractions import Fraction

import httpx
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from query_helpers import SEED, Server
from sdckit.core.errors import ParameterError
from sdckit.dp.accountant import exact_text
from sdckit.query import keys, noisy_gaussian
from sdckit.query.config import load_config
from sdckit.query.generate import aggregate_sql
from sdckit.query.service import Service
from sdckit.query.sql import UnsupportedQuery, parse
from sdckit.query.state import State

BIG = {"A": 200, "B": 200, "C": 200, "D": 100}  # persons per common city


def _write(folder, *, keys_line='keys_from_data = ["city"]', extra: str = "") -> None:
    """600 persons in A, B, C (200 each), persons 0..99 with a second row in D; person 1000 alone
    in 'lonely'; person 1001 with three rows x1, x2, x3 (k = 2 keeps x1, x2); person 1002 with two
    rows in 'twin'; person 1003 with no city."""
    rows = [(p, "ABC"[p // 200], p % 101, "NS"[p % 2]) for p in range(600)]
    rows += [(p, "D", 50, "N") for p in range(100)]
    rows += [(1000, "lonely", 7, "N"), (1001, "x1", 1, "S"), (1001, "x2", 2, "S"), (1001, "x3", 3, "S"),
             (1002, "twin", 4, "N"), (1002, "twin", 5, "N"), (1003, None, 6, "S")]
    pd.DataFrame(rows, columns=["pid", "city", "income", "region"]).to_csv(folder / "t.csv", index=False)
    (folder / "service.toml").write_text(
        f'[service]\nstate = "state.db"\ncache = false\nsync = "normal"\nseed = "{SEED}"\n'
        f'[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = 2\n{keys_line}\n{extra}'
        '[table.bounds]\nincome = [0, 100]\n[table.domains]\nregion = ["N", "S"]\n')


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    _write(folder)
    service = Service(folder / "service.toml")
    yield service
    service.close()


def _tail(m: int, b: float) -> float:
    """P(Y >= m) of the discrete Laplace of scale b, summed term by term (the oracle)."""
    p = math.exp(-1 / b)
    c = (1 - p) / (1 + p)
    terms = int(80 * b) + 100  # the rest is below p**terms = exp(-80)
    if m >= 1:
        return math.fsum(c * p ** y for y in range(m, m + terms))
    return 1 - math.fsum(c * p ** y for y in range(1 - m, 1 - m + terms))


# ------------------------------------------------------------------ the threshold
def test_tail_and_threshold_against_hand_worked_values():
    # b = 6, k = 1, delta = 1/30,000,000: P(Y >= m) = e^(-m/6) / (1 + e^(-1/6)) is 3.13e-8 at m = 100
    # and 3.69e-8 at m = 99, so tau - 1 = 100
    assert _tail(100, 6) <= 1 / 30_000_000 < _tail(99, 6)
    assert keys.threshold(Fraction(6), 1, Fraction(1, 30_000_000)) == 101
    for m in (-5, 0, 1, 3, 40):
        assert float(keys.tail(m, Fraction(5, 2))) == pytest.approx(_tail(m, 2.5), rel=1e-12)
    for b in (1, Fraction(5, 2), 6, 40):
        for k in (1, 2, 5):
            for delta in (Fraction(1, 1000), Fraction(1, 10**6), Fraction(1, 10**9)):
                tau = keys.threshold(Fraction(b), k, delta)
                assert k * _tail(tau - 1, float(b)) <= float(delta) * (1 + 1e-12)
                assert tau == 2 or k * _tail(tau - 2, float(b)) > float(delta)  # the smallest such tau


def test_selection_scale_is_the_count_samplers_rounded_up():
    s = keys.Selection.make(0.3, Fraction(1, 10**6), 2)
    assert s.scale == Fraction(math.ceil(Fraction(2) / Fraction(0.3) * 2**20), 2**20) and s.scale >= Fraction(2) / Fraction(0.3)


def test_the_public_scales_are_memoised_with_the_hand_worked_values():
    """geometric_scale (asked ~7 times per answer) and the stated release probability depend on
    public numbers only: memoised, the same values (2 / 0.3 rounded up to 2**-20; e^-3 / (1 + e^-1))."""
    from sdckit.query import noisy

    want = math.ceil(Fraction(2) / Fraction(0.3) * 2**20) / 2**20
    assert noisy.geometric_scale(0.3, 2) == want
    hits = noisy.geometric_scale.cache_info().hits
    assert noisy.geometric_scale(0.3, 2) == want and noisy.geometric_scale.cache_info().hits == hits + 1
    s = keys.Selection.make(1.0, Fraction(1, 20), 1)
    p1 = math.exp(-3) / (1 + math.exp(-1))
    assert s.release_probability(1) == s.release_probability(1) == pytest.approx(p1, rel=1e-12)
    assert s.to_dict()["singleton_release_probability"] == s.release_probability(1)


# ------------------------------------------------------------------ (a) the attack
def test_a_key_of_one_person_is_released_with_probability_at_most_delta():
    """Exactly from the mechanism: P(1 + Y >= tau) <= delta / k for every (epsilon, delta, k);
    empirically at a measurable delta: 200,000 singleton keys at epsilon 1, delta 1/20, k = 1
    (b = 1, tau = 4, P = e^-3 / (1 + e^-1) = 0.0364) released at that rate within 5 sd (0.0021)."""
    for eps, delta, k in ((1.0, Fraction(1, 10**6), 1), (0.1, Fraction(1, 10**9), 3), (3.0, Fraction(1, 100), 2),
                          (0.01, Fraction(1, 10**5), 10)):
        s = keys.Selection.make(eps, delta, k)
        p1 = s.release_probability(1)
        assert p1 == pytest.approx(_tail(s.tau - 1, float(s.scale)), rel=1e-9)
        assert k * p1 <= float(delta)
    s = keys.Selection.make(1.0, Fraction(1, 20), 1)
    p1 = math.exp(-3) / (1 + math.exp(-1))
    assert s.tau == 4 and s.release_probability(1) == pytest.approx(p1, rel=1e-12)
    released, _ = s.select(np.ones(200_000, dtype=np.int64), np.random.default_rng(1))
    assert abs(released.mean() - p1) < 5 * math.sqrt(p1 * (1 - p1) / 200_000)


def test_the_released_key_sets_of_neighbours_are_epsilon_delta_close_by_brute_force():
    """Every subset of keys as an output, its probability under D and under D' = D + one person of
    k = 2 rows (in two common keys, one common and one new, or two new keys), from the term-by-term
    tail: the largest gap over all events, sum over outputs of max(0, P - e^eps P'), is <= delta in
    both directions (at a measurable delta 1/10 and a small one 1e-6)."""
    for eps, delta in ((0.5, Fraction(1, 10)), (1.0, Fraction(1, 10**6))):
        s = keys.Selection.make(eps, delta, 2)
        b = float(s.scale)
        base = {"a": s.tau - 1, "b": s.tau, "e": 1}
        for added in (("a", "b"), ("a", "c"), ("c", "d")):
            other = dict(base)
            for key in added:
                other[key] = other.get(key, 0) + 1
            names = sorted(other)

            def prob(counts, subset):
                out = 1.0
                for key in names:
                    r = _tail(s.tau - counts[key], b) if counts.get(key, 0) else 0.0
                    out *= r if key in subset else 1 - r
                return out
            outputs = [tuple(n for j, n in enumerate(names) if mask >> j & 1) for mask in range(2 ** len(names))]
            p, q = [prob(base, o) for o in outputs], [prob(other, o) for o in outputs]
            for x, y in ((p, q), (q, p)):
                gap = math.fsum(max(0.0, xi - math.exp(s.epsilon) * yi) for xi, yi in zip(x, y))
                assert gap <= float(delta) * (1 + 1e-9)


def test_one_persons_keys_are_never_released_and_the_contribution_bound_holds(svc):
    """The table's keys and person counts: x3 (person 1001's third row) is no key (k = 2), 'twin'
    is one person with two rows, a missing city no key. 2,000 selections at epsilon 2, delta 1e-6
    (COUNT only: the selection gets epsilon 1, delta 5e-7; b = 2, each one-person key released
    with probability <= 2.5e-7): the one-person keys never, the common ones always."""
    table = svc.config.tables["t"]
    q = parse("SELECT city, COUNT(*) FROM t GROUP BY city", svc.config)
    found, persons, counts, _ = keys.candidates(q, table, svc.db.aggregate(aggregate_sql(q, table, "dp", persons=True)))
    got = {key[0]: (int(p), int(c)) for key, p, c in zip(found, persons, counts)}
    assert got == {**{c: (n, n) for c, n in BIG.items()}, "lonely": (1, 1), "x1": (1, 1), "x2": (1, 1), "twin": (1, 2)}
    plan = keys.plan(q, table, Fraction(2), Fraction(1, 10**6))
    s = plan.selection
    assert s.k == 2 and s.epsilon == 1.0 and s.delta == Fraction(1, 2 * 10**6) and 2 * s.release_probability(1) <= 5e-7
    released, _ = s.select(np.tile(persons, 2000), np.random.default_rng(2))  # 2,000 selections at once
    seen = released.reshape(2000, len(found)).sum(axis=0)
    assert {key[0]: int(n) for key, n in zip(found, seen)} == {**{c: 2000 for c in BIG},
                                                                "lonely": 0, "x1": 0, "x2": 0, "twin": 0}


# ------------------------------------------------------------------ (b) distributions
def test_release_frequencies_follow_the_noise_cdf_at_the_threshold():
    """Keys of 1..7 persons, 20,000 each (b = 1, tau = 4): the release frequencies against
    P(c + Y >= tau) from the discrete Laplace summed term by term; chi-square over the 7 binomials
    at level 0.001 (critical value 24.3)."""
    s = keys.Selection.make(1.0, Fraction(1, 20), 1)
    counts = np.repeat(np.arange(1, 8), 20_000)
    released, _ = s.select(counts, np.random.default_rng(3))
    chi2 = 0.0
    for c in range(1, 8):
        p = _tail(s.tau - c, 1.0)
        assert s.release_probability(c) == pytest.approx(p, rel=1e-9)
        freq = released[counts == c].mean()
        chi2 += (freq - p) ** 2 / (p * (1 - p) / 20_000)
    assert chi2 < stats.chi2.ppf(0.999, 7)


def _chi2_against(noise: list[int], pmf_of, radius: int) -> None:
    """Chi-square of integer ``noise`` against ``pmf_of(support)`` (normalised over +/- radius),
    at level 0.001 over bins of expected count >= 20."""
    support = np.arange(-radius, radius + 1)
    pmf = pmf_of(support.astype(float))
    pmf /= pmf.sum()
    values, observed = np.unique(np.asarray(noise), return_counts=True)
    obs = dict(zip(values.tolist(), observed.tolist()))
    bins_o, bins_e, acc_o, acc_e = [], [], 0, 0.0
    for x, p in zip(support.tolist(), pmf):
        acc_o += obs.get(x, 0)
        acc_e += len(noise) * p
        if acc_e >= 20:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o, acc_e = 0, 0.0
    bins_o[-1] += acc_o
    bins_e[-1] += acc_e
    assert sum(bins_o) == len(noise)
    chi2 = sum((o - e) ** 2 / e for o, e in zip(bins_o, bins_e))
    assert chi2 < stats.chi2.ppf(0.999, len(bins_o) - 1)


def _released_noise(svc, epsilon: Fraction, delta: Fraction):
    """500 keys of 50 persons (80 rows) each, all released: 10 answers give 5,000 COUNT noises."""
    table = svc.config.tables["t"]
    q = parse("SELECT city, COUNT(*) FROM t GROUP BY city", svc.config)
    plan = keys.plan(q, table, epsilon, delta)
    assert plan.selection.tau < 25
    names = np.array([f"k{i:03d}" for i in range(500)], dtype=object)
    result = {"n": np.full(500, 80), "p": np.full(500, 50), "g0": names}
    rng = np.random.default_rng(4)
    noise = []
    for _ in range(10):
        out = keys.answer(plan, table, result, rng)
        assert [r[0] for r in out["rows"]] == sorted(names.tolist())
        noise += [r[1] - 80 for r in out["rows"]]
    return plan, out, noise


def test_released_counts_have_the_stated_discrete_laplace_noise(svc):
    """At (2, 1/1000) the COUNT of the released keys (epsilon 1, delta 1/2000) is answered with
    pure 1-DP noise, the exact discrete Laplace of the stated scale (as Tumult under an
    ApproxDPBudget; the Gaussian calibrated through zCDP would have sigma ~8.5): 5,000 noises
    against its pmf, chi-square at level 0.001."""
    plan, out, noise = _released_noise(svc, Fraction(2), Fraction(1, 1000))
    m = plan.aggregates.measurements["count"]
    assert isinstance(m, noisy_gaussian.LaplaceMeasurement) and m.epsilon == 1.0
    assert out["noise_scale"][1]["laplace_scale"] == m.scale == 2.0  # k / epsilon, k = 2
    assert "discrete Laplace" in out["mechanism"]
    _chi2_against(noise, lambda y: np.exp(-np.abs(y) / m.scale), 60)


def test_released_counts_keep_the_discrete_gaussian_where_it_is_less_noise(svc):
    """At (2, 9/10) the released keys' COUNT (epsilon 1, delta 9/20) keeps the discrete Gaussian
    (sigma ~0.75 < the discrete Laplace's): 5,000 noises against the discrete Gaussian of the
    stated variance (pmf over +/- 12 sigma), chi-square at level 0.001."""
    plan, out, noise = _released_noise(svc, Fraction(2), Fraction(9, 10))
    m = plan.aggregates.measurements["count"]
    assert isinstance(m, noisy_gaussian.Measurement)
    var = m.t * m.c
    assert out["noise_scale"][1]["sigma"] == pytest.approx(math.sqrt(var))
    _chi2_against(noise, lambda y: np.exp(-y ** 2 / (2 * var)), int(12 * math.sqrt(var)) + 1)


# ------------------------------------------------------------------ (c) refusals, (d) the charge
def test_pure_zcdp_and_restricted_analysts_are_refused_with_nothing_charged(svc):
    state: State = svc.state
    sql = "SELECT city, COUNT(*) FROM t GROUP BY city"
    pure = state.add_analyst("k_pure", "dp", "1")
    zcdp = state.add_analyst("k_zcdp", "dp", None, 0, None, "1")
    restricted = state.add_analyst("k_restricted", "restricted")
    approx = state.add_analyst("k_approx_missing", "dp", "1", "1e-6")
    for key, body, name, says in ((pure, {"epsilon": "0.5"}, "k_pure", "pure epsilon-DP"),
                                  (zcdp, {"rho": "0.1"}, "k_zcdp", "rho-zero-concentrated"),
                                  (restricted, {}, "k_restricted", "in restricted mode GROUP BY only"),
                                  (approx, {"epsilon": "0.5"}, "k_approx_missing", "send 'epsilon' and 'delta'")):
        status, answer = svc.query(key, {"sql": sql, **body})
        assert status == 400 and "\n" not in answer["error"] and says in answer["error"]
        a = state.analyst(name)
        assert a.epsilon_spent == 0 and a.delta_spent == 0 and a.rho_spent == 0 and state.ledger(name) == []
    assert "(epsilon, delta)-DP" in svc.query(zcdp, {"sql": sql, "rho": "0.1"})[1]["error"]
    assert svc.query(pure, {"sql": "SELECT region, COUNT(*) FROM t GROUP BY region", "epsilon": "0.5"})[0] == 200


def test_the_charge_is_exactly_the_stated_epsilon_delta(svc):
    """epsilon 10/3, delta 1/3,000,000 for COUNT and AVG (3 parts): the selection gets 10/9 (the
    largest float below) and 1/9,000,000, the aggregates 20/9 and 2/9,000,000; the analyst is
    charged 10/3 and 1/3,000,000 exactly, then 1/10 and 1e-7 more: 103/30 and 13/30,000,000."""
    state: State = svc.state
    key = state.add_analyst("k_exact", "dp", "10", "1e-6")
    sql = "SELECT city, COUNT(*), AVG(income) FROM t GROUP BY city"
    status, body = svc.query(key, {"sql": sql, "epsilon": "10/3", "delta": "1/3000000"})
    assert status == 200 and body["definition"] == "approx"
    assert [r[0] for r in body["rows"]] == sorted(BIG)
    a = state.analyst("k_exact")
    assert (a.epsilon_spent, a.delta_spent) == (Fraction(10, 3), Fraction(1, 3_000_000))
    assert body["exact"]["epsilon_spent"] == exact_text(Fraction(10, 3))
    assert body["exact"]["delta_spent"] == exact_text(Fraction(1, 3_000_000))
    sel = body["key_selection"]
    assert sel["exact"]["delta"] == exact_text(Fraction(1, 9_000_000)) and sel["tau"] >= 2
    assert Fraction(sel["epsilon"]) <= Fraction(10, 9) < Fraction(math.nextafter(sel["epsilon"], 2))
    plan = keys.plan(parse(sql, svc.config), svc.config.tables["t"], Fraction(10, 3), Fraction(1, 3_000_000))
    assert plan.aggregates.asked == {"epsilon": Fraction(20, 9), "delta": Fraction(2, 9_000_000)}
    assert plan.selection.delta + plan.aggregates.asked["delta"] == Fraction(1, 3_000_000)
    assert "tau = " in body["mechanism"] and "split equally over 1 + 2 parts" in body["mechanism"]
    assert svc.query(key, {"sql": sql, "epsilon": "0.1", "delta": "1e-7"})[0] == 200
    a = state.analyst("k_exact")
    assert (a.epsilon_spent, a.delta_spent) == (Fraction(103, 30), Fraction(13, 30_000_000))
    # nothing passes a tiny epsilon's threshold: an empty answer, still charged
    status, body = svc.query(key, {"sql": "SELECT city, region, COUNT(*) FROM t GROUP BY city, region",
                                   "epsilon": "0.001", "delta": "1e-8"})
    assert status == 200 and body["rows"] == [] and body["key_selection"]["released"] == 0


# ------------------------------------------------------------------ configuration and SQL
@pytest.mark.parametrize("line, message", [
    ('keys_from_data = ["region"]', "declared domain"),
    ('keys_from_data = ["pid"]', "privacy unit"),
    ('keys_from_data = "city"', "list of column names"),
    ('keys_from_data = ["city", "city"]', "twice"),
])
def test_bad_keys_from_data_is_refused_naming_the_key(tmp_path, line, message):
    _write(tmp_path, keys_line=line)
    with pytest.raises(ParameterError, match=message):
        load_config(tmp_path / "service.toml")


def test_keys_from_data_true_and_the_sql_rules(tmp_path):
    _write(tmp_path, keys_line="keys_from_data = true")
    config = load_config(tmp_path / "service.toml")
    assert config.tables["t"].key_columns == ("income",)  # every bounded column without a domain
    assert parse("SELECT income, COUNT(*) FROM t GROUP BY income", config).group_by == ("income",)
    with pytest.raises(UnsupportedQuery, match="not declared"):
        parse("SELECT city, COUNT(*) FROM t GROUP BY city", config)  # city is not a key column here
    _write(tmp_path)
    config = load_config(tmp_path / "service.toml")
    assert parse("SELECT city, COUNT(*) FROM t GROUP BY city", config).group_by == ("city",)
    with pytest.raises(UnsupportedQuery, match="only a GROUP BY column"):
        parse("SELECT COUNT(*) FROM t WHERE city = 'A'", config)
    _write(tmp_path, keys_line="")
    with pytest.raises(UnsupportedQuery, match="declared domain"):
        parse("SELECT COUNT(*) FROM t GROUP BY income", load_config(tmp_path / "service.toml"))


# ------------------------------------------------------------------ (e) over HTTP
def test_keys_from_data_over_http(tmp_path):
    _write(tmp_path)
    state = State(load_config(tmp_path / "service.toml").state)
    approx = state.add_analyst("h_approx", "dp", "4", "1e-6")
    pure = state.add_analyst("h_pure", "dp", "1")
    server = Server(tmp_path / "service.toml")
    try:
        def ask(key, **loss):
            return httpx.post(server.url + "/v1/query", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                              json={"sql": "SELECT city, COUNT(*) FROM t GROUP BY city", **loss})
        r = ask(approx, epsilon="2", delta="1/2000000")  # the selection: epsilon 1, b = 2, tau 32
        assert r.status_code == 200
        body = r.json()
        assert [row[0] for row in body["rows"]] == sorted(BIG) and body["key_selection"]["columns"] == ["city"]
        assert body["exact"]["epsilon_spent"] == "2" and body["definition"] == "approx"
        assert body["key_selection"]["tau"] == 32
        assert "Wilson et al. 2020" in body["mechanism"]
        r = ask(pure, epsilon="1/2")
        assert r.status_code == 400 and "pure epsilon-DP" in r.json()["error"]
        budget = httpx.get(server.url + "/v1/budget", headers={"Authorization": f"Bearer {pure}"}, timeout=30).json()
        assert budget["epsilon_spent"] == 0
    finally:
        server.stop()
    a = State(load_config(tmp_path / "service.toml").state).analyst("h_approx")
    assert (a.epsilon_spent, a.delta_spent) == (Fraction(2), Fraction(1, 2_000_000))


def test_min_max_with_keys_from_the_data_are_a_400_before_any_charge(svc):
    """MIN/MAX (quantiles) are answered over groups of declared domains only: with keys taken from
    the data the query is refused (one line), nothing charged (issue 32)."""
    key = svc.state.add_analyst("k_minmax", "dp", "1", "1e-6", None)
    status, body = svc.query(key, {"sql": "SELECT city, MIN(income) FROM t GROUP BY city", "epsilon": "0.5",
                                   "delta": "1e-7"})
    assert status == 400 and "declared domains only" in body["error"] and "\n" not in body["error"]
    assert svc.state.analyst("k_minmax").epsilon_spent == 0
