"""Budget definitions of the query service (issue 32): pure epsilon, (epsilon, delta) and rho-zCDP,
fixed at `analyst add`; Gaussian noise for the latter two, charged exactly in the definition."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdckit.core.errors import ParameterError
from sdckit.dp.zcdp import rho_for, zcdp_delta
from sdckit.query import noisy, noisy_gaussian
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.service import Service
from sdckit.query.sql import parse
from sdckit.query.state import State
from query_helpers import make_data, write_config


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("budgets")
    make_data(folder)
    svc = Service(write_config(folder, seed=True, cache=False))
    yield svc
    svc.close()


def _ask(svc: Service, key: str, sql: str, **loss):
    return svc.query(key, {"sql": sql, **loss})


def test_variance_for_is_exact_where_possible_and_rounds_up_otherwise():
    assert noisy_gaussian.variance_for(1, Fraction(1, 10)) == (1, 5)  # 1 / (2/10) = 5 = 1 * 5
    t, c = noisy_gaussian.variance_for(1, Fraction(3, 10))  # 5/3 -> 2 (rounded up)
    assert t * c == 2
    t, c = noisy_gaussian.variance_for(3, Fraction(1, 8))  # 9 / (1/4) = 36 = 6 * 6
    assert (t, c) == (6, 6)
    with pytest.raises(ParameterError, match="rho"):
        noisy_gaussian.variance_for(2**20, Fraction(1, 10**9))


def test_rho_for_is_within_the_asked_epsilon_delta_and_tighter_than_the_classical_conversion():
    for eps, delta in ((1.0, 1e-6), (0.1, 1e-9), (3.0, 1e-5)):
        rho = float(rho_for(eps, delta))
        assert zcdp_delta(rho, eps) <= delta
        # Bun & Steinke 2016: rho-zCDP is (rho + 2 sqrt(rho ln(1/delta)), delta)-DP; its rho is smaller
        lg = math.log(1 / delta)
        classical = (math.sqrt(lg + eps) - math.sqrt(lg)) ** 2
        assert rho >= classical
        assert zcdp_delta(rho * 1.01, eps) > delta  # nearly the largest


def test_zcdp_count_is_a_discrete_gaussian_of_the_stated_variance(service):
    """COUNT at rho 1/100 (k = 1): V = 1 / (2/100) = 50 exactly, rho charged 1/100. The noise of
    4,000 answers (GROUP BY over 200 groups, 20 queries' worth) has mean 0 and variance 50 within
    10% (the sample variance's relative sd is sqrt(2/4000) = 2.2%; the discrete Gaussian's variance
    is sigma^2 (1 - 1e-19) at sigma^2 = 50), and is an integer."""
    table = service.config.tables["census"]
    q = parse("SELECT grp, COUNT(*) FROM census GROUP BY grp", service.config)
    p = noisy_gaussian.plan(q, table, "zcdp", rho=Fraction(1, 100))
    m = p.measurements["count"]
    assert m.t * m.c == 50 and m.rho == Fraction(1, 100) and p.cost == (0, 0, Fraction(1, 100))
    counts, sums = noisy.exact_cells(p, table, service.db.aggregate(aggregate_sql(q, table, "dp")))
    rng = np.random.default_rng(7)
    noise = np.concatenate([np.array([r[1] for r in noisy_gaussian.answer_cells(p, counts, sums, rng)["rows"]]) - counts
                            for _ in range(20)])
    assert noise.dtype.kind == "i" and noise.size == 4000
    assert abs(noise.mean()) < 4 * math.sqrt(50 / 4000)
    assert noise.var() == pytest.approx(50, rel=0.10)


def test_approx_sum_noise_has_the_calibrated_sigma_and_charges_epsilon_delta_exactly(service):
    """At (1, 1/2) the Gaussian calibrated through zCDP (sigma ~0.70 x 200,000) is less noise than
    the Laplace of scale 200,000, so it is kept."""
    table = service.config.tables["census"]
    q = parse("SELECT grp, SUM(income) FROM census GROUP BY grp", service.config)  # 200 groups
    p = noisy_gaussian.plan(q, table, "approx", epsilon=Fraction(1), delta=Fraction(1, 2))
    assert p.cost == (Fraction(1), Fraction(1, 2), Fraction(0))
    m = p.measurements["income"]
    assert isinstance(m, noisy_gaussian.Measurement)
    rho = rho_for(1.0, 0.5)
    assert m.rho <= rho and m.steps == math.ceil(200_000 / m.grid) + 1
    assert m.sigma == pytest.approx(200_000 / math.sqrt(2 * float(rho)), rel=1e-5)
    rng = np.random.default_rng(3)
    zeros = np.zeros(200)
    noise = np.concatenate([[r[1] for r in noisy_gaussian.answer_cells(p, zeros.astype(int), {"income": zeros}, rng)["rows"]]
                            for _ in range(15)])
    assert noise.std() == pytest.approx(m.sigma, rel=0.06)  # relative sd of the sample sd: 1.3%


def test_approx_at_a_small_delta_answers_with_laplace_noise_of_the_epsilon_share(service):
    """At (1, 1e-6) the Gaussian through zCDP would have sigma ~4.5 sensitivities, the Laplace of
    epsilon 1 has scale 1 sensitivity: each measurement gets the pure epsilon-share noise (as
    Tumult under an ApproxDPBudget), the query is still charged (1, 1e-6). The SUM's 3,000 noises
    against Laplace(0, b) with b the stated scale (KS, level 0.001), the COUNT's against the
    discrete Laplace (chi-square, level 0.001); AVG splits epsilon 1/2 + 1/2."""
    table = service.config.tables["census"]
    q = parse("SELECT grp, SUM(income) FROM census GROUP BY grp", service.config)  # 200 groups
    p = noisy_gaussian.plan(q, table, "approx", epsilon=Fraction(1), delta=Fraction(1, 10**6))
    assert p.cost == (Fraction(1), Fraction(1, 10**6), Fraction(0))
    m = p.measurements["income"]
    assert isinstance(m, noisy_gaussian.LaplaceMeasurement) and m.epsilon == 1.0 and not m.integer
    assert 200_000 <= m.scale <= 200_000 * (1 + 2**-18)
    rng = np.random.default_rng(5)
    zeros = np.zeros(200)
    outs = [noisy_gaussian.answer_cells(p, zeros.astype(int), {"income": zeros}, rng) for _ in range(15)]
    assert outs[0]["noise_scale"][1] == {"sigma": pytest.approx(math.sqrt(2) * m.scale), "laplace_scale": m.scale}
    assert "pure epsilon-DP" in outs[0]["mechanism"] and "Laplace" in outs[0]["mechanism"]
    noise = np.concatenate([[r[1] for r in out["rows"]] for out in outs])
    assert stats.kstest(noise, stats.laplace(scale=m.scale).cdf).pvalue > 0.001
    q = parse("SELECT grp, COUNT(*), AVG(income) FROM census GROUP BY grp", service.config)
    p = noisy_gaussian.plan(q, table, "approx", epsilon=Fraction(1), delta=Fraction(1, 10**6))
    c = p.measurements["count"]
    assert isinstance(c, noisy_gaussian.LaplaceMeasurement) and c.integer and c.epsilon == 0.5 and c.scale == 2.0
    assert isinstance(p.measurements["income"], noisy_gaussian.LaplaceMeasurement)
    many = np.full(200, 10_000)
    counts = np.concatenate([[r[1] for r in noisy_gaussian.answer_cells(p, many, {"income": many * 5e4}, rng)["rows"]]
                             for _ in range(15)]) - 10_000
    values, observed = np.unique(np.clip(counts, -12, 12), return_counts=True)
    pr = math.exp(-1 / c.scale)
    pmf = {y: (1 - pr) / (1 + pr) * pr ** abs(y) for y in range(-11, 12)}
    pmf[-12] = pmf[12] = pr ** 12 / (1 + pr)  # the tails P(Y <= -12), P(Y >= 12)
    expected = np.array([3000 * pmf[int(v)] for v in values])
    assert abs(sum(pmf.values()) - 1) < 1e-12 and values.size == 25
    assert stats.chisquare(observed, expected).pvalue > 0.001


def test_approx_laplace_is_chosen_from_public_parameters_only(service):
    """The choice depends on epsilon, delta, k and the bounds, never on the data: two tables'
    plans agree; the Gaussian is kept exactly when its median absolute error is smaller."""
    table = service.config.tables["census"]
    q = parse("SELECT COUNT(*) FROM census", service.config)
    for delta, gaussian in ((Fraction(1, 10**6), False), (Fraction(1, 10), False), (Fraction(1, 2), True)):
        m = noisy_gaussian.plan(q, table, "approx", epsilon=Fraction(1), delta=delta).measurements["count"]
        assert isinstance(m, noisy_gaussian.Measurement) is gaussian
        g = noisy_gaussian.Measurement(1.0, 1.0, 1, *noisy_gaussian.variance_for(1, rho_for(1.0, float(delta))))
        assert (0.6745 * g.sigma <= math.log(2) * 1.0) is gaussian  # median |N(0, s)| vs median |Laplace(b = 1)|


def test_a_person_with_many_rows_moves_the_vector_by_at_most_the_l2_sensitivity(tmp_path):
    """Person 1 has 6 rows spread over groups a, b, c with v = 10 (bounds [0, 10]), k = 3: removing
    her moves the count vector by (1, 1, 1) (L2 sqrt(3) <= 3) and the rounded deviation-sum vector
    by at most the stated steps."""
    frame = pd.DataFrame({"pid": [1] * 6 + list(range(2, 30)), "v": [10] * 6 + [3] * 28,
                          "g": list("abcabc") + ["a"] * 28})
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     'max_rows_per_unit = 3\n[table.bounds]\nv = [0, 10]\n[table.domains]\n'
                                     'g = ["a", "b", "c"]\n')
    db = Database(load_config(tmp_path / "s.toml"))
    t = db.config.tables["t"]
    q = parse("SELECT g, COUNT(*), AVG(v) FROM t GROUP BY g", db.config)
    p = noisy_gaussian.plan(q, t, "zcdp", rho=Fraction(1, 2))
    counts, sums = noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp")))
    dev = noisy.deviation_sums(sums["v"], counts, 5.0)
    without = counts.copy()
    without[:3] -= 1
    dev_without = dev - 5.0  # each of her 3 kept rows deviates by 10 - 5
    assert counts.tolist() == [29, 1, 1] and dev.tolist() == [5 - 2 * 28, 5, 5]
    m = p.measurements["v"]
    assert np.linalg.norm(counts - without) <= p.measurements["count"].steps == 3
    moved = np.rint(dev / m.grid) - np.rint(dev_without / m.grid)
    assert np.linalg.norm(moved) <= m.steps and m.steps == math.ceil(15 / m.grid) + 3
    # (epsilon, delta) at 1e-6: the same measurements with pure noise, whose L1 sensitivities are
    # the stated ones: her removal moves the count vector by 3 = k and the deviations by 15 = k * 5
    a = noisy_gaussian.plan(q, t, "approx", epsilon=Fraction(1), delta=Fraction(1, 10**6))
    assert all(isinstance(x, noisy_gaussian.LaplaceMeasurement) for x in a.measurements.values())
    assert np.abs(counts - without).sum() <= a.measurements["count"].sensitivity == 3
    assert np.abs(dev - dev_without).sum() <= a.measurements["v"].sensitivity == 15


def test_an_analyst_cannot_spend_past_the_budget_in_any_definition(service):
    """Each definition: queries until refused; the spent total never passes the total, the
    refusal charges nothing (403, the ledger and the spent total unchanged), and every answer and
    GET /v1/budget state the definition."""
    state: State = service.state
    cases = {"pure": ({"epsilon": "1/2"}, {"epsilon": "0.2"}),
             "approx": ({"epsilon": "1", "delta": "1e-6"}, {"epsilon": "0.3", "delta": "3e-7"}),
             "zcdp": ({"rho": "1/10"}, {"rho": "0.03"})}
    for definition, (total, each) in cases.items():
        name = f"b_{definition}"
        kw = {"epsilon": total.get("epsilon"), "delta": total.get("delta", 0), "rho": total.get("rho")}
        key = state.add_analyst(name, "dp", kw["epsilon"], kw["delta"], None, kw["rho"])
        statuses = []
        for i in range(5):
            status, body = _ask(service, key, f"SELECT COUNT(*), AVG(income) FROM census WHERE age > {i}", **each)
            statuses.append(status)
            if status == 200:
                assert body["definition"] == definition
            else:
                assert status == 403 and "exceed" in body["error"] and body["definition"] == definition
        a = state.analyst(name)
        assert a.definition == definition and statuses == [200] * statuses.count(200) + [403] * statuses.count(403)
        assert statuses.count(403) >= 1
        ledger = state.ledger(name)
        status, budget = service.budget(key)
        assert status == 200 and budget["definition"] == definition
        if definition == "zcdp":
            assert a.rho_spent <= a.rho_total and a.rho_spent > 0 and budget["rho_spent"] == float(a.rho_spent)
            before = a.rho_spent
            assert _ask(service, key, "SELECT COUNT(*) FROM census", rho="1/10")[0] == 403
            assert state.analyst(name).rho_spent == before and state.ledger(name) == ledger
            assert _ask(service, key, "SELECT COUNT(*) FROM census", epsilon="0.1")[0] == 400  # wrong definition
        else:
            assert a.epsilon_spent <= a.epsilon_total and a.delta_spent <= a.delta_total
            assert a.epsilon_spent == len(ledger) * Fraction(each["epsilon"])
            assert _ask(service, key, "SELECT COUNT(*) FROM census", rho="0.1")[0] == 400
    # quantiles (MEDIAN, MIN, MAX) keep their pure mechanism: epsilon = sqrt(2 rho) on 20 bits, rounded
    # down, charged epsilon^2 / 2 exactly (Bun & Steinke 2016, Prop. 1.4)
    status, body = _ask(service, state.add_analyst("b_q", "dp", None, 0, None, "1"), "SELECT MEDIAN(age) FROM census",
                        rho="0.1")
    eps = Fraction(math.isqrt(math.floor(Fraction(2, 10) * 2**40)), 2**20)
    assert status == 200 and state.analyst("b_q").rho_spent == eps**2 / 2 <= Fraction(1, 10)


def test_zcdp_charges_are_exact_fractions_summing_to_what_was_asked(service):
    key = service.state.add_analyst("z_exact", "dp", None, 0, None, "1")
    status, body = _ask(service, key, "SELECT region, COUNT(*) FROM census GROUP BY region", rho="1/8")
    assert status == 200 and body["exact"]["rho_spent"] == "0.125" and body["exact"]["rho_remaining"] == "0.875"
    assert "rho-zCDP" in body["mechanism"] and "discrete Gaussian" in body["mechanism"]


def test_a_budget_has_one_definition(tmp_path):
    with pytest.raises(ParameterError, match="one definition"):
        State(tmp_path / "s.db").add_analyst("x", "dp", "1", 0, None, "1")


def test_analyst_add_cli_fixes_the_definition_and_budget_states_it(tmp_path, capsys):
    from sdckit.cli import main

    make_data(tmp_path)
    config = write_config(tmp_path)

    def cli(*args: str) -> tuple[int, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        return code, capsys.readouterr().out

    assert cli("analyst", "add", str(config), "zed", "--mode", "dp", "--rho", "0.5")[0] == 0
    assert cli("analyst", "add", str(config), "apx", "--mode", "dp", "--epsilon", "1", "--delta", "1e-6")[0] == 0
    assert cli("analyst", "add", str(config), "bad", "--mode", "dp", "--epsilon", "1", "--rho", "1")[0] == 2
    code, out = cli("analyst", "budget", str(config), "zed")
    assert code == 0 and "rho-zCDP" in out and "rho total 0.5, spent 0, remaining 0.5" in out
    code, out = cli("analyst", "budget", str(config), "apx")
    assert "(epsilon, delta)-DP" in out and "delta total 0.000001" in out
