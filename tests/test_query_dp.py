"""DP answers (sdckit.query.noisy) and the loaded data (sdckit.query.data): contribution bounding,
clamping, every declared group, the budget split, the noise's distribution and the ci95."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdckit.core.errors import DataError
from sdckit.query import noisy, quantiles
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.sql import parse


def _service(tmp_path, frame: pd.DataFrame, extra: str = "", unit: bool = True, domain: str = '["a", "b", "c"]') -> Database:
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text(
        "[[table]]\nname = \"t\"\npath = \"t.csv\"\n" + ('privacy_unit = "pid"\n' if unit else "") + extra
        + "[table.bounds]\nv = [0, 10]\n[table.domains]\ng = " + domain + "\n")
    return Database(load_config(tmp_path / "s.toml"))


def _exact(db: Database, sql: str):
    t = db.config.tables["t"]
    q = parse(sql, db.config)
    p = noisy.plan(q, t, Fraction(1))
    return p, noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp")))


def test_contributions_are_bounded_per_person_and_values_clamped(tmp_path):
    # person 1 has 4 rows, person 2 one; v = 25 is clamped to 10, v = -3 to 0, missing counts as 0
    frame = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 3], "v": [25, 1, 2, 3, -3, None], "g": ["a", "a", "b", "b", "c", "a"]})
    db = _service(tmp_path, frame, "max_rows_per_unit = 2\n")
    plan, (counts, sums) = _exact(db, "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g")
    # person 1 keeps the first two rows (file order): (25 -> 10, a), (1, a)
    assert plan.cells == (("a",), ("b",), ("c",))
    assert counts.tolist() == [3, 0, 1]
    assert sums["v"].tolist() == [10 + 1 + 0, 0, 0]
    assert plan.k == 2 and plan.sensitivities == {"count": 2.0, "v": 20.0}


def test_every_declared_group_is_returned_and_others_dropped(tmp_path):
    frame = pd.DataFrame({"pid": range(4), "v": [1, 2, 3, 4], "g": ["a", "zz", "zz", "a"]})
    db = _service(tmp_path, frame)
    plan, (counts, _) = _exact(db, "SELECT g, COUNT(*) FROM t GROUP BY g")
    assert counts.tolist() == [2, 0, 0]  # 'zz' is outside the public domain: in no group
    t = db.config.tables["t"]
    answer = noisy.answer(plan, t, db.aggregate(aggregate_sql(plan.query, t, "dp")), np.random.default_rng(1))
    assert [row[0] for row in answer["rows"]] == ["a", "b", "c"]


def test_the_budget_split_is_stated_and_never_exceeds_epsilon(tmp_path):
    frame = pd.DataFrame({"pid": range(3), "v": [1, 2, 3], "g": ["a", "b", "c"]})
    db = _service(tmp_path, frame)
    t = db.config.tables["t"]
    p = noisy.plan(parse("SELECT AVG(v), COUNT(*) FROM t", db.config), t, Fraction(3, 10))
    assert set(p.shares) == {"count", "v"}
    assert sum(Fraction(s) for s in p.shares.values()) <= Fraction(3, 10)
    assert p.shares["count"] == pytest.approx(0.15)
    assert p.count_scale == pytest.approx(1 / 0.15, rel=1e-6) and p.count_scale >= 1 / 0.15
    assert p.sum_scales["v"] == pytest.approx(5 / 0.15, rel=1e-9) and p.sum_scales["v"] >= 5 / 0.15  # AVG: deviations from m = 5
    text = p.mechanism()
    assert "split equally over 2 measurement(s)" in text and "AVG = m + noisy SUM(x - m) / max(noisy COUNT, 1)" in text


def test_an_epsilon_too_small_to_sample_is_refused_before_charging(tmp_path):
    db = _service(tmp_path, pd.DataFrame({"pid": [1], "v": [1], "g": ["a"]}))
    from sdckit.core.errors import ParameterError

    with pytest.raises(ParameterError, match="epsilon"):
        noisy.plan(parse("SELECT COUNT(*) FROM t", db.config), db.config.tables["t"], Fraction(1, 10**30))


def test_permute_and_flip_has_its_exact_distribution():
    """Four grid points with 0, 1, 3, 4 records below them, n = 4, q = 0.5, epsilon = 2: the
    utilities are -D(2, 1, 1, 2), their sensitivity D/2 (one row moves D below - D n / 2 by at
    most D/2), and each coin is exp(-(u* - u)/(2 D/2) epsilon) = (e^-2, 1, 1, e^-2).
    The output's law, by enumerating the 24 visiting orders, against 5,000 draws (chi-square)."""
    import itertools as it

    below = np.array([0, 1, 3, 4])
    coins = np.array([math.exp(-2), 1.0, 1.0, math.exp(-2)])
    law = np.zeros(4)
    for order in it.permutations(range(4)):
        stay = 1.0
        for j in order:
            law[j] += stay * coins[j] / 24
            stay *= 1 - coins[j]
    rng = np.random.default_rng(5)
    draws = np.array([quantiles.permute_and_flip(below, 4, 0.5, 2.0, 1, rng) for _ in range(5_000)])
    observed = np.bincount(draws, minlength=4)
    assert law[0] == pytest.approx(law[3]) and law[1] == pytest.approx(law[2])
    assert stats.chisquare(observed, law * observed.sum()).pvalue > 1e-3


def test_dp_quantiles_land_near_the_true_quantile(tmp_path):
    """10,000 people, values 0..100 (grid resolution 0.1): the median and the 0.9-quantile with
    epsilon 1 fall within 1.0 of the true ones in each of 20 answers (a candidate 20 records off
    is e^-5 times as likely as the best one, and 1.0 is ~100 records here)."""
    rng = np.random.default_rng(3)
    values = rng.uniform(0, 100, 10_000)
    frame = pd.DataFrame({"pid": range(10_000), "v": values, "g": "a"})
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\n[table.bounds]\nv = [0, 102.4]\n'
                                     '[table.domains]\ng = ["a", "b"]\n')
    db = Database(load_config(tmp_path / "s.toml"))
    t = db.config.tables["t"]
    from sdckit.query.generate import histogram_sql

    q = parse("SELECT g, MEDIAN(v), QUANTILE_CONT(v, 0.9) FROM t GROUP BY g", db.config)
    p = noisy.plan(q, t, Fraction(2))
    result = db.aggregate(aggregate_sql(q, t, "dp"))
    hists = {"v": db.aggregate(histogram_sql(q, t, "v"))}
    for seed in range(20):
        out = noisy.answer(p, t, result, np.random.default_rng(seed), hists)
        (g, median, p90), empty = out["rows"]
        assert abs(median - np.quantile(values, 0.5)) < 1.0 and abs(p90 - np.quantile(values, 0.9)) < 1.0
        assert empty[0] == "b" and 0 <= empty[1] <= 102.4  # an empty group still gets an answer


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.0, 7.5, 40.0])
def test_discrete_laplace_radius_against_the_summed_pmf(scale):
    ys = np.arange(-2000, 2001)
    pmf = np.exp(-np.abs(ys) / scale)
    pmf /= pmf.sum()
    r = noisy.discrete_laplace_radius(scale, 0.95)
    inside = lambda m: pmf[np.abs(ys) <= m].sum()
    assert inside(r) >= 0.95 and (r == 0 or inside(r - 1) < 0.95)


def test_noise_has_the_stated_distribution(tmp_path):
    """5,000 groups of one answer (fixed seed): COUNT errors follow the discrete Laplace of the
    stated scale (chi-square), SUM errors the Laplace of the stated scale (Kolmogorov-Smirnov)."""
    frame = pd.DataFrame({"pid": range(2000), "v": np.tile([2.5, 7.0], 1000), "g": np.arange(2000) % 5000})
    db = _service(tmp_path, frame, unit=False, domain=str(list(range(5000))))
    t = db.config.tables["t"]
    q = parse("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", db.config)
    p = noisy.plan(q, t, Fraction(1, 2))
    result = db.aggregate(aggregate_sql(q, t, "dp"))
    counts, sums = noisy.exact_cells(p, t, result)
    out = noisy.answer(p, t, result, np.random.default_rng(20261125))
    err_n = np.array([r[1] for r in out["rows"]]) - counts
    err_s = np.array([r[2] for r in out["rows"]]) - sums["v"]
    b = out["noise_scale"][1]
    assert b == p.count_scale == pytest.approx(4.0, rel=1e-5)
    q_ = math.exp(-1 / b)
    edges = np.arange(-12, 13)
    observed = np.array([np.sum(err_n <= -13)] + [np.sum(err_n == y) for y in edges] + [np.sum(err_n >= 13)])
    pmf = lambda y: (1 - q_) / (1 + q_) * q_ ** abs(y)
    tail = sum(pmf(y) for y in range(13, 400))
    expected = len(err_n) * np.array([tail] + [pmf(y) for y in edges] + [tail])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert stats.kstest(err_s, stats.laplace(scale=out["noise_scale"][2]).cdf).pvalue > 1e-3


def test_bounds_read_from_the_data_are_said_to_be_not_dp(tmp_path):
    frame = pd.DataFrame({"pid": range(5), "v": [1, 2, 3, 4, 5], "w": [10, 20, 30, 40, 50], "g": ["a"] * 5})
    db = _service(tmp_path, frame, "bounds_from_data = true\n")
    t = db.config.tables["t"]
    assert t.bounds["w"] == (10.0, 50.0) and t.data_bounds == ("w",)
    p = noisy.plan(parse("SELECT SUM(w) FROM t", db.config), t, Fraction(1))
    assert not p.is_dp and p.mechanism().startswith("NOT differentially private: bounds of w")
    assert noisy.plan(parse("SELECT SUM(v) FROM t WHERE w > 20", db.config), t, Fraction(1)).is_dp


@pytest.mark.parametrize("frame, culprit", [
    (pd.DataFrame({"pid": [1], "g": ["a"]}), "'v' is not in"),
    (pd.DataFrame({"pid": [1], "v": ["x"], "g": ["a"]}), "'v' has bounds but is not numeric"),
    (pd.DataFrame({"pid": [1, None], "v": [1, 2], "g": ["a", "b"]}), "privacy unit 'pid' has missing values"),
])
def test_data_that_does_not_fit_the_configuration_is_named(tmp_path, frame, culprit):
    with pytest.raises(DataError) as info:
        _service(tmp_path, frame)
    assert culprit in str(info.value)


# ------------------------------------------------------------------ generated SQL against an oracle
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sdckit.query.generate import membership_sql  # noqa: E402
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Query  # noqa: E402

_ORACLE_ROWS = pd.DataFrame({
    "pid": range(12),
    "v": [1, 5, None, 10, 3, 7, 0, 2, 9, None, 4, 6],
    "g": ["a", "b", "c", "zz", None, "a", "b", "c", "a", "zz", "b", None],
})


def _cmp(x, op, y):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return {"=": x == y, "<>": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _truth(p, row):
    """SQL's three-valued logic (None = unknown), written out by hand."""
    if isinstance(p, Compare):
        return _cmp(row[p.column], p.op, p.value)
    if isinstance(p, InList):
        hits = [_cmp(row[p.column], "=", v) for v in p.values]
        value = True if True in hits else (None if None in hits else False)
        return (None if value is None else not value) if p.negated else value
    if isinstance(p, Between):
        lo, hi = _cmp(row[p.column], ">=", p.low), _cmp(row[p.column], "<=", p.high)
        value = False if False in (lo, hi) else (None if None in (lo, hi) else True)
        return (None if value is None else not value) if p.negated else value
    if isinstance(p, Not):
        value = _truth(p.item, row)
        return None if value is None else not value
    values = [_truth(i, row) for i in p.items]
    if isinstance(p, And):
        return False if False in values else (None if None in values else True)
    return True if True in values else (None if None in values else False)


_g_values = st.sampled_from(["a", "b", "c", "zz", "q"])
_atoms = st.one_of(
    st.builds(Compare, st.just("g"), st.sampled_from(["=", "<>", "<", ">="]), _g_values),
    st.builds(InList, st.just("g"), st.lists(_g_values, min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(Between, st.just("g"), _g_values, _g_values, st.booleans()),
    st.builds(Compare, st.just("v"), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), st.integers(-1, 11)),
    st.builds(Between, st.just("v"), st.integers(0, 6), st.integers(3, 11), st.booleans()),
)
_trees = st.recursive(_atoms, lambda inner: st.one_of(
    st.builds(Not, inner),
    st.builds(And, st.tuples(inner, inner)),
    st.builds(Or, st.tuples(inner, inner))), max_leaves=6)


@pytest.fixture(scope="module")
def oracle_db(tmp_path_factory):
    return _service(tmp_path_factory.mktemp("oracle"), _ORACLE_ROWS)


@given(where=_trees)
@settings(max_examples=200, deadline=None)
def test_generated_predicates_select_the_rows_sql_logic_says(oracle_db, where):
    """Text-domain columns are compared on their codes where that is exact: the rows DuckDB
    selects are those a hand-written three-valued evaluation of the predicate selects (values
    outside the domain and missing values included)."""
    t = oracle_db.config.tables["t"]
    q = Query("t", (), where, ())
    got = sorted(oracle_db.aggregate(membership_sql(q, t))["__sdc_row"].tolist())
    rows = _ORACLE_ROWS.astype(object).where(_ORACLE_ROWS.notna(), None).to_dict("records")
    assert got == [i for i, row in enumerate(rows) if _truth(where, row) is True]


@pytest.mark.parametrize("kind", ["parquet", "duckdb"])
def test_parquet_and_duckdb_sources_load_like_csv(tmp_path, kind):
    import duckdb

    frame = pd.DataFrame({"pid": [1, 2, 3], "v": [1.5, 20.0, 3.0], "g": ["a", "b", "a"]})
    if kind == "parquet":
        frame.to_parquet(tmp_path / "t.parquet")
        source = 'path = "t.parquet"\n'
    else:
        con = duckdb.connect(str(tmp_path / "t.duckdb"))
        con.execute("CREATE TABLE people AS SELECT * FROM frame")
        con.close()
        source = 'path = "t.duckdb"\ntable = "people"\n'
    (tmp_path / "s.toml").write_text("[[table]]\nname = \"t\"\n" + source + 'privacy_unit = "pid"\n'
                                     "[table.bounds]\nv = [0, 10]\n[table.domains]\ng = [\"a\", \"b\"]\n")
    db = Database(load_config(tmp_path / "s.toml"))
    plan, (counts, sums) = _exact(db, "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g")
    assert counts.tolist() == [2, 1] and sums["v"].tolist() == [4.5, 10.0]


def test_quantile_rank_radius_by_hand_and_nearly_tight():
    """r = 2 k s ln(1025 / 0.05) / eps' (eps' = eps rounded down to a multiple of 2**-20; s = 1 for
    MIN and MAX, 1/2 for the median, the share of D in the utility's sensitivity). On a
    histogram where every candidate but the best is exactly r records off, the union bound says
    P(a wrong candidate) <= 5%; permute-and-flip gives about half that (the best is met, on average,
    half-way through the permutation). Half the radius would be violated most of the time."""
    assert quantiles.quantile_rank_radius(1.0, 1) == pytest.approx(2 * math.log(20500))
    assert quantiles.quantile_rank_radius(0.5, 3) == pytest.approx(12 * math.log(20500))
    eps_rounded = math.floor(0.3 * 2**20) / 2**20
    assert quantiles.quantile_rank_radius(0.3, 1) == pytest.approx(2 * math.log(20500) / eps_rounded, rel=1e-12)
    assert quantiles.quantile_rank_radius(1.0, 1, q=0.5) == pytest.approx(math.log(20500))  # sensitivity D/2
    r = quantiles.quantile_rank_radius(0.5, 1, q=0.5)
    off = math.ceil(r)  # every other candidate is this many records from the target rank n/2
    below = np.array([0] * 512 + [off] + [2 * off] * 512)
    rng = np.random.default_rng(11)
    wrong = np.mean([quantiles.permute_and_flip(below, 2 * off, 0.5, 0.5, 1, rng) != 512 for _ in range(400)])
    assert 0.005 < wrong <= 0.05  # expected about 0.024 (binomial sd 0.008)
    half = math.ceil(r / 2)
    below = np.array([0] * 512 + [half] + [2 * half] * 512)
    assert np.mean([quantiles.permute_and_flip(below, 2 * half, 0.5, 0.5, 1, rng) != 512 for _ in range(60)]) > 0.5


def test_a_quantile_answer_states_its_rank_radius(tmp_path):
    frame = pd.DataFrame({"pid": range(50), "v": np.arange(50) % 10})
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     'max_rows_per_unit = 2\n[table.bounds]\nv = [0, 10]\n')
    db = Database(load_config(tmp_path / "s.toml"))
    t = db.config.tables["t"]
    from sdckit.query.generate import histogram_sql

    q = parse("SELECT COUNT(*), MEDIAN(v) FROM t", db.config)
    p = noisy.plan(q, t, Fraction(1))
    out = noisy.answer(p, t, db.aggregate(aggregate_sql(q, t, "dp")), np.random.default_rng(0),
                    {"v": db.aggregate(histogram_sql(q, t, "v"))})
    scale = out["noise_scale"][1]
    assert scale["grid_resolution"] == 10 / 2**18  # no GROUP BY: the finest grid, 2**18 + 1 candidates
    # 2 k s ln(m / 0.05) / eps with k = 2 and s = 1/2 (the median's utility sensitivity, D k / 2)
    assert scale["epsilon"] == 0.5 and scale["rank_radius95"] == pytest.approx(2 * 2 * 0.5 * math.log((2**18 + 1) / 0.05) / 0.5)
    assert out["ci95"][0][1] is None and "rank_radius95" in out["mechanism"]
