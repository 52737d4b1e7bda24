"""Binned GROUP BY columns (histograms) and values derived before aggregating in the query
service's dp mode (issue 32; sdckit.query.derived): hand-worked and pandas-oracle answers before
noise, the noise's distribution, attacks (a person with extreme values; a bin of one person),
injection, and the one-line refusals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sqlglot.tokens import TokenType

from query_helpers import Server, make_data, write_config
from sdckit.query import Client, noisy
from sdckit.query.builder import histogram_sql
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.generate import aggregate_sql
from sdckit.query.service import Service
from sdckit.query.sql import UnsupportedQuery, parse
from sdckit.query.state import State
from sdckit.core.errors import ParameterError

_TOML = ('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {k}\n'
         '[table.bounds]\nage = [0, 100]\nincome = [0, 1000]\n[table.domains]\nsex = ["F", "M"]\n')

#: k = 2: person 1's third row (age 40) is left out; ages NaN, 130 and -5 and incomes 2000, NaN
#: and -10 test the clamping and missing values.
FRAME = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 4, 5, 6, 7, 8],
                      "age": [5, 17, 40, np.nan, 130, -5, 64, 65, 18, 99.5],
                      "income": [100, 2000, 50, np.nan, 500, -10, 999, 1000, 250, 750],
                      "sex": ["F", "F", "M", "M", "F", None, "M", "F", "M", "F"]})


def _db(folder, frame: pd.DataFrame, k: int = 2) -> Database:
    frame.to_csv(folder / "t.csv", index=False)
    (folder / "s.toml").write_text(_TOML.format(k=k))
    return Database(load_config(folder / "s.toml"))


def _cells(db: Database, sql: str, epsilon: Fraction = Fraction(1)):
    q = parse(sql, db.config)
    t = dp_table(q, db.config.tables["t"])
    p = noisy.plan(q, t, epsilon)
    return p, t, noisy.exact_cells(p, t, db.aggregate(aggregate_sql(q, t, "dp")))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = _db(tmp_path_factory.mktemp("bins"), FRAME)
    yield database
    database.close()


def _kept(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """The oracle's dp relation: the first k rows of each person in file order."""
    return frame[frame.groupby("pid").cumcount() < k]


# ------------------------------------------------------------------ answers before noise
def test_hand_worked_bins_and_derived_sums(db):
    """Clamped ages 5, 17, -, 100, 0, 64, 65, 18, 99.5 (NaN in no bin): FLOOR(age / 10) * 10 has
    the 11 bins 0..100 and counts 2, 2, 0, 0, 0, 0, 2, 0, 0, 1, 1. CASE on the ages as stored
    (NaN meets no WHEN: ELSE): child 5, 17, -5; adult 64, 18; senior NaN, 130, 65, 99.5. Clamped
    incomes 100, 1000, -, 500, 0, 999, 1000, 250, 750: WIDTH_BUCKET(income, 0, 1000, 4) has the
    bins 1..5 (5 = the upper bound) with counts 2, 1, 1, 2, 2. SUM(income * 12) = 12 x 4599
    (missing as 0); the women's incomes 100 + 1000 + 500 + 1000 + 750 = 3350."""
    p, _, (counts, _) = _cells(db, "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*) FROM t GROUP BY band")
    assert [c[0] for c in p.cells] == list(range(0, 101, 10))
    assert counts.tolist() == [2, 2, 0, 0, 0, 0, 2, 0, 0, 1, 1]
    p, _, (counts, _) = _cells(db, "SELECT CASE WHEN age < 18 THEN 'child' WHEN age < 65 THEN 'adult' ELSE 'senior' "
                                   "END AS band, COUNT(*) FROM t GROUP BY band")
    assert p.cells == (("child",), ("adult",), ("senior",)) and counts.tolist() == [3, 2, 4]
    p, _, (counts, sums) = _cells(db, "SELECT WIDTH_BUCKET(income, 0, 1000, 4) AS b, COUNT(*), SUM(income * 12), "
                                      "SUM(CASE WHEN sex = 'F' THEN income ELSE 0 END) AS f FROM t GROUP BY b")
    assert [c[0] for c in p.cells] == [1, 2, 3, 4, 5] and counts.tolist() == [2, 1, 1, 2, 2]
    assert sums["income * 12"].sum() == 12 * 4599
    assert sums["CASE WHEN sex = 'F' THEN income ELSE 0 END"].tolist() == [100, 0, 500, 750, 2000]
    assert p.bounds["income * 12"] == (0, 12000) and p.sensitivities["income * 12"] == 2 * 12000
    assert p.sensitivities["CASE WHEN sex = 'F' THEN income ELSE 0 END"] == 2 * 1000


@pytest.mark.parametrize("sql, oracle", [
    ("SELECT FLOOR(age / 10) * 10 AS band, sex, COUNT(*), SUM(income - 1000) FROM t GROUP BY band, sex",
     lambda f: (np.floor(f.age.clip(0, 100) / 10) * 10, (f.income.fillna(0).clip(0, 1000) - 1000))),
    ("SELECT CEIL(age / 7 - 0.5) AS c, sex, COUNT(*), SUM(-income / 4 + 7) FROM t GROUP BY c, sex",
     lambda f: (np.ceil(f.age.clip(0, 100) / 7 - 0.5), -f.income.fillna(0).clip(0, 1000) / 4 + 7)),
    ("SELECT WIDTH_BUCKET(age * 2, 10, 150, 7) AS w, sex, COUNT(*), SUM(ABS(income - 300)) FROM t GROUP BY w, sex",
     lambda f: (f.age.clip(0, 100).map(lambda v: np.nan if np.isnan(v) else 0 if 2 * v < 10 else 8 if 2 * v >= 150
                                        else min(math.floor((2 * v - 10) / 140 * 7) + 1, 7)),
                (f.income.fillna(0).clip(0, 1000) - 300).abs())),
])
def test_bins_and_sums_equal_a_pandas_oracle(tmp_path, sql, oracle):
    """Random tables of 30 persons (1-3 rows each, k = 2, missing values, values outside the
    bounds): per cell of bin x sex the generated SQL's counts and derived sums equal pandas'."""
    rng = np.random.default_rng(7)
    for trial in range(3):
        n = 60
        frame = pd.DataFrame({"pid": rng.integers(0, 30, n), "age": rng.uniform(-20, 130, n).round(1),
                              "income": rng.uniform(-100, 1300, n).round(), "sex": rng.choice(["F", "M", None], n)})
        frame.loc[rng.choice(n, 6, replace=False), "age"] = np.nan
        frame.loc[rng.choice(n, 6, replace=False), "income"] = np.nan
        (tmp_path / str(trial)).mkdir()
        database = _db(tmp_path / str(trial), frame)
        p, _, (counts, sums) = _cells(database, sql)
        database.close()
        kept = _kept(frame, 2)
        bins, values = oracle(kept)
        value_name = next(iter(p.sum_scales))
        for i, (label, sex) in enumerate(p.cells):
            inside = (bins == label) & (kept.sex == sex)
            assert counts[i] == inside.sum(), (trial, label, sex)
            assert sums[value_name][i] == pytest.approx(values[inside].sum(), abs=1e-6)
        labels = [c[0] for c in p.cells[::2]]
        assert set(bins.dropna()) <= set(labels)  # every row with a value is in a listed bin


def test_the_bins_and_bounds_follow_from_the_declared_bounds_alone(db):
    config = db.config
    for sql, labels in [("SELECT FLOOR(age / 25) AS x, COUNT(*) FROM t GROUP BY x", [0, 1, 2, 3, 4]),
                        ("SELECT FLOOR(age / 25) * 0.5 + 1 AS x, COUNT(*) FROM t GROUP BY x", [1, 1.5, 2, 2.5, 3]),
                        ("SELECT CEIL(age / 40) AS x, COUNT(*) FROM t GROUP BY x", [0, 1, 2, 3]),
                        ("SELECT WIDTH_BUCKET(age, 20, 80, 3) AS x, COUNT(*) FROM t GROUP BY x", [0, 1, 2, 3, 4]),
                        ("SELECT CASE WHEN sex = 'F' THEN 1 ELSE 0 END AS x, COUNT(*) FROM t GROUP BY x", [1, 0])]:
        q = parse(sql, config)
        assert list(dp_table(q, config.tables["t"]).domains[q.group_by[0]]) == labels, sql
    for sql, bounds in [("SELECT SUM(income * -2 + 10) FROM t", (-1990, 10)),
                        ("SELECT SUM(ABS(income - 400)) FROM t", (0, 600)),
                        ("SELECT SUM(FLOOR(income / 300)) FROM t", (0, 3)),
                        ("SELECT SUM(CASE WHEN age > 50 THEN 1 ELSE 0 END) FROM t", (0, 1))]:
        q = parse(sql, config)
        assert dp_table(q, config.tables["t"]).bounds[q.outputs[0].column] == bounds, sql
    q = parse("SELECT SUM(income / 3) FROM t", config)  # rounded outwards: the double just above 1000/3
    high = dp_table(q, config.tables["t"]).bounds["income / 3"][1]
    assert Fraction(1000, 3) <= Fraction(high) and math.nextafter(high, 0) < 1000 / 3 + 1e-12


@pytest.mark.parametrize("bin_sql", ["FLOOR(age / 7)", "CEIL(age / 3 - 0.5) * 3", "WIDTH_BUCKET(age, 10, 90, 7)",
                                     "WIDTH_BUCKET(age * 0.1, 1.5, 8.5, 3) - 1", "FLOOR(-age / 9.5 + 0.3)",
                                     "CASE WHEN age < 18 THEN 'child' WHEN age BETWEEN 18 AND 64 THEN 'adult' END",
                                     "CASE WHEN age IN (1, 2, 3) OR NOT age > 50 THEN 1 ELSE 0 END"])
def test_the_cube_answers_bins_of_a_cube_column_as_the_scan_does(tmp_path, bin_sql):
    """An integer age with missing values and values outside its bounds is a cube column: every
    binned GROUP BY of it (with a WHERE and a second group column) gets from the cube exactly the
    counts and clamped sums DuckDB's scan of the generated SQL gives."""
    rng = np.random.default_rng(11)
    n = 400
    frame = pd.DataFrame({"pid": rng.integers(0, 250, n), "age": pd.array(rng.integers(-10, 131, n), dtype="Int64"),
                          "income": rng.integers(0, 1200, n), "sex": rng.choice(["F", "M"], n)})
    frame.loc[rng.choice(n, 30, replace=False), "age"] = pd.NA
    database = _db(tmp_path, frame)
    try:
        for where in ("", " WHERE sex = 'F' OR age > 40"):
            sql = f"SELECT {bin_sql} AS b, sex, COUNT(*), SUM(income) FROM t{where} GROUP BY b, sex"
            p, _, (counts, sums) = _cells(database, sql)
            q = parse(sql, database.config)
            assert database.cubes["t"].covers(q), sql
            fast_counts, fast_sums = database.fast_cells(q, len(p.cells))
            assert fast_counts.tolist() == counts.tolist() and counts.sum() > 0, sql
            assert fast_sums["income"].tolist() == sums["income"].tolist(), sql
    finally:
        database.close()


# ------------------------------------------------------------------ the noise
def test_the_noise_per_bin_has_the_stated_scale(db):
    """epsilon 1 split over COUNT and SUM, k = 2: each of the 11 bins gets discrete Laplace noise of
    the stated scale k / (1/2) = 4; 500 answers (5,500 draws) against its probabilities (chi-square,
    |noise| >= 8 pooled, level 0.001); the derived SUM(income * 12) gets Laplace noise of its stated
    scale >= 2 x 12000 / (1/2) (KS, level 0.001)."""
    p, t, (counts, sums) = _cells(db, "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*), SUM(income * 12) FROM t GROUP BY band")
    assert p.count_scale == 2.0 * 2 and p.sum_scales["income * 12"] >= 2 * 2 * 12000  # epsilon 1/2 each
    rng = np.random.default_rng(32)
    noise, sum_noise = [], []
    for _ in range(500):
        out = noisy.answer_cells(p, t, counts, sums, rng)
        noise.extend(row[1] - c for row, c in zip(out["rows"], counts))
        sum_noise.extend(row[2] - s for row, s in zip(out["rows"], sums["income * 12"]))
    noise = np.clip(np.abs(np.array(noise)), 0, 8)
    q = math.exp(-1 / p.count_scale)
    pmf = [(1 - q) / (1 + q)] + [2 * (1 - q) / (1 + q) * q**m for m in range(1, 8)]
    pmf.append(1 - sum(pmf))
    observed = np.bincount(noise.astype(int), minlength=9)
    assert stats.chisquare(observed, np.array(pmf) * len(noise)).pvalue > 0.001
    assert stats.kstest(sum_noise, stats.laplace(scale=p.sum_scales["income * 12"]).cdf).pvalue > 0.001


# ------------------------------------------------------------------ attacks
def test_a_person_with_extreme_values_moves_each_derived_sum_by_at_most_its_sensitivity(tmp_path):
    """25 persons of 2 rows; person 0 holds 2..8 rows of extreme values (incomes +/-1e9, missing,
    ages +/-1e6); k = 3. With and without her, the noiseless derived sums (and the deviations from
    the midpoint AVG measures) per bin differ in L1 by at most the stated sensitivity k max(|lo'|,
    |hi'|) (k (hi' - lo') / 2), and the counts by at most k. Unclamped, one of her rows alone
    would move SUM(income * 12) by 1.2e10."""
    rng = np.random.default_rng(33)
    sql = ("SELECT CASE WHEN age < 50 THEN 'young' ELSE 'old' END AS b, COUNT(*), SUM(income * 12) AS s, "
           "SUM(CASE WHEN sex = 'F' THEN income ELSE -income / 2 END) AS f, AVG(income - 1000) AS a FROM t GROUP BY b")
    for trial in range(6):
        rows = int(rng.integers(2, 9))
        others = pd.DataFrame({"pid": np.repeat(np.arange(1, 26), 2), "age": rng.integers(0, 100, 50),
                               "income": rng.integers(0, 1001, 50).astype(float), "sex": rng.choice(["F", "M"], 50)})
        her = pd.DataFrame({"pid": [0] * rows, "age": rng.choice([1e6, -1e6, 10, 90], rows),
                            "income": rng.choice([1e9, -1e9, np.nan, 1000.0], rows), "sex": rng.choice(["F", "M"], rows)})
        with_her = pd.concat([her, others] if trial % 2 else [others, her], ignore_index=True)
        (tmp_path / f"{trial}a").mkdir()
        (tmp_path / f"{trial}b").mkdir()
        db1, db0 = _db(tmp_path / f"{trial}a", with_her, k=3), _db(tmp_path / f"{trial}b", others, k=3)
        p, _, (c1, s1) = _cells(db1, sql)
        _, _, (c0, s0) = _cells(db0, sql)
        db1.close()
        db0.close()
        assert p.sensitivities == {"count": 3.0, "income * 12": 36000.0,
                                   "CASE WHEN sex = 'F' THEN income ELSE (-income) / 2 END": 3000.0,
                                   "income - 1000": 1500.0}
        assert np.abs(c1 - c0).sum() <= 3
        for name in ("income * 12", "CASE WHEN sex = 'F' THEN income ELSE (-income) / 2 END"):
            assert np.abs(s1[name] - s0[name]).sum() <= p.sensitivities[name] + 1e-9, (trial, name)
        m = p.midpoints["income - 1000"]
        moved = noisy.deviation_sums(s1["income - 1000"], c1, m) - noisy.deviation_sums(s0["income - 1000"], c0, m)
        assert np.abs(moved).sum() <= p.sensitivities["income - 1000"] + 1e-9


def test_a_bin_of_one_person_is_released_only_with_noise_and_every_bin_always(tmp_path):
    """Only person 9 is aged 90 or more. With and without her the answer lists the same bins,
    all 11 the bounds give (empty ones too), never keys from the data; her bin's count is
    noisy: over 300 answers at epsilon 1 (scale 1) it is not 1 about 54% of the time and its mean
    is within 4 standard errors of 1, as the empty bin 100's mean is of 0."""
    frame = pd.DataFrame({"pid": range(10), "age": [5, 15, 25, 35, 45, 55, 61, 62, 75, 95],
                          "income": [1] * 10, "sex": ["F"] * 10})
    listed = []
    for i, data in enumerate((frame, frame[frame.pid != 9])):
        (tmp_path / str(i)).mkdir()
        database = _db(tmp_path / str(i), data, k=1)
        p, t, (counts, sums) = _cells(database, "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*) FROM t GROUP BY band")
        database.close()
        listed.append([c[0] for c in p.cells])
    assert listed[0] == listed[1] == list(range(0, 101, 10))
    database = _db(tmp_path / "0", frame, k=1)
    p, t, (counts, sums) = _cells(database, "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*) FROM t GROUP BY band")
    database.close()
    assert counts[9] == 1 and counts[10] == 0 and p.count_scale == 1.0
    rng = np.random.default_rng(9)
    answers = np.array([[row[1] for row in noisy.answer_cells(p, t, counts, sums, rng)["rows"][9:]] for _ in range(300)])
    hers, empty = answers[:, 0], answers[:, 1]
    q = math.exp(-1)
    sd = math.sqrt(2 * q / (1 - q) ** 2 / 300)
    assert abs(hers.mean() - 1) < 4 * sd and abs(empty.mean()) < 4 * sd
    assert 0.42 < (hers != 1).mean() < 0.66  # P(noise != 0) = 2q / (1 + q) = 0.54 (sd 0.029)


# ------------------------------------------------------------------ injection
def test_a_string_in_case_stays_a_literal_and_values_are_bound(db):
    """A label and a condition value full of SQL: the label never reaches DuckDB (the SQL
    computes bin codes), the condition value is a bound parameter; the generated SQL has no
    string literal and names only the configured columns and sdckit's; the answer shows the label."""
    label = "a'); DROP TABLE sdc_dp_t; --"
    sql = (f"SELECT CASE WHEN sex = 'F'' OR 1=1 --' THEN '{label.replace(chr(39), chr(39) * 2)}' ELSE 'b' END AS x, "
           "COUNT(*), SUM(CASE WHEN sex = 'x'' OR ''1''=''1' THEN income ELSE 0 END) AS s FROM t GROUP BY x")
    q = parse(sql, db.config)
    t = dp_table(q, db.config.tables["t"])
    generated = aggregate_sql(q, t, "dp")
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(generated.sql)
    assert not [tok for tok in tokens if tok.token_type == TokenType.STRING]
    names = {tok.text for tok in tokens if tok.token_type == TokenType.IDENTIFIER}  # quoted: every name
    assert names <= {"sex", "income", "__sdc_code_sex", "__sdc_clamp_income", "sdc_dp_t", "n", "s0", "g0"}, names
    assert not [tok for tok in tokens if tok.token_type == TokenType.NUMBER] and generated.sql.count("?") == len(generated.params)
    assert "F' OR 1=1 --" in generated.params and "x' OR '1'='1" in generated.params
    assert label not in generated.sql and label not in generated.params
    p, _, (counts, sums) = _cells(db, sql)
    assert [c[0] for c in p.cells] == [label, "b"] and counts.tolist() == [0, 9] and sums[q.outputs[2].column].sum() == 0


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@given(labels=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=3, unique=True),
       value=st.text(max_size=12), number=st.floats(-1e6, 1e6, allow_nan=False))
@settings(max_examples=40, deadline=None)
def test_generated_sql_of_any_bins_holds_no_analyst_text(db, labels, value, number):
    """Whatever labels and values a CASE holds, the generated SQL has no string and no number
    literal, only the configured (quoted) names, a ``?`` per parameter; the condition values are
    parameters, the labels are not anywhere (codes instead)."""
    arms = " ".join(f"WHEN sex = {_quoted(value)} OR sex IN ('F', {_quoted(v)}) THEN {_quoted(v)}" for v in labels[:-1])
    derived = f"SUM(CASE WHEN age < {number!r} OR sex = {_quoted(value)} THEN income * {number!r} ELSE -1 END)"
    sql = (f"SELECT CASE {arms} ELSE {_quoted(labels[-1])} END AS x, COUNT(*), {derived} FROM t GROUP BY x" if arms else
           f"SELECT CASE WHEN sex <> {_quoted(value)} THEN {_quoted(labels[0])} END AS x, COUNT(*) FROM t GROUP BY x")
    q = parse(sql, db.config)
    generated = aggregate_sql(q, dp_table(q, db.config.tables["t"]), "dp")
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(generated.sql)
    assert not [t for t in tokens if t.token_type in (TokenType.STRING, TokenType.NUMBER)], generated.sql
    assert {t.text for t in tokens if t.token_type == TokenType.IDENTIFIER} <= {
        "sex", "age", "income", "__sdc_code_sex", "__sdc_clamp_income", "sdc_dp_t", "n", "s0", "g0"}
    assert generated.sql.count("?") == len(generated.params)
    domain = ["F", "M"]  # a value of the declared domain is compared by its code (the column's index)
    assert (domain.index(value) if value in domain else value) in generated.params
    assert not set(labels) & {p for p in generated.params if isinstance(p, str)} - {value, "F"} - set(labels[:-1])
    assert list(q.outputs[0].derived.labels) == labels


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("sql, culprit", [
    ("SELECT SUM(income + age) FROM t", "reads age, income"),
    ("SELECT CASE WHEN age < 18 AND income > 5 THEN 'a' ELSE 'b' END AS x, COUNT(*) FROM t GROUP BY x", "reads age, income"),
    ("SELECT SUM(income / age) FROM t", "Division by a column"),
    ("SELECT SUM(income / 0) FROM t", "Division by zero"),
    ("SELECT SUM(LOG(income)) FROM t", "LOG"),
    ("SELECT MY_FUNC(age) AS s, COUNT(*) FROM t GROUP BY s", "MY_FUNC"),
    ("SELECT SUM(income % 7) FROM t", "MOD"),
    ("SELECT SUM(income * 'a') FROM t", "string"),
    ("SELECT age + 1 AS a, COUNT(*) FROM t GROUP BY a", "does not bin"),
    ("SELECT SUM(CASE WHEN sex = 'F' THEN income END) FROM t", "ELSE"),
    ("SELECT COUNT(*) FROM t GROUP BY FLOOR(age / 10)", "Select the binned"),
    ("SELECT FLOOR(age / 10), COUNT(*) FROM t", "FLOOR"),
    ("SELECT FLOOR(age / 10), CEIL(age / 10) AS c, COUNT(*) FROM t GROUP BY c", "not in GROUP BY"),
    ("SELECT FLOOR(income * 1000) AS f, COUNT(*) FROM t GROUP BY f", "at most 100000"),
    ("SELECT CASE WHEN age < 18 THEN 'a' ELSE 1 END AS x, COUNT(*) FROM t GROUP BY x", "all strings or all numbers"),
    ("SELECT FLOOR(sex) AS x, COUNT(*) FROM t GROUP BY x", "no declared bounds"),
    ("SELECT MEDIAN(income * 2) FROM t", "MUL"),
    ("SELECT COUNT(*) + 1 FROM t", "ADD"),
])
def test_what_is_not_supported_is_refused_in_one_line(db, sql, culprit):
    with pytest.raises(UnsupportedQuery) as info:
        parse(sql, db.config)
    assert culprit in str(info.value) and "\n" not in str(info.value)


def test_the_service_answers_states_and_charges_exactly_and_restricted_mode_refuses(tmp_path):
    make_data(tmp_path)
    service = Service(write_config(tmp_path, seed=True))
    try:
        pure = service.state.add_analyst("p", "dp", "2")
        zcdp = service.state.add_analyst("z", "dp", None, 0, None, "1")
        restricted = service.state.add_analyst("r", "restricted")
        sql = "SELECT FLOOR(age / 10) * 10 AS band, COUNT(*), AVG(income * 12) FROM census GROUP BY band"
        status, body = service.query(pure, {"sql": sql, "epsilon": "1/3"})
        assert status == 200 and body["definition"] == "pure" and body["exact"]["epsilon_spent"] == "1/3"
        assert [r[0] for r in body["rows"]] == list(range(0, 121, 10)) and "13 bins" in body["mechanism"]
        assert "clamped to [0, 2.4e+06]" in body["mechanism"]
        status, body = service.query(zcdp, {"sql": sql, "rho": "1/4"})
        assert status == 200 and body["definition"] == "zcdp" and 0 < service.state.analyst("z").rho_spent <= Fraction(1, 4)
        status, body = service.query(restricted, {"sql": sql})
        assert status == 400 and "income * 12 is a derived value, answered in dp mode only" in body["error"]
        assert service.state.analyst("p").epsilon_spent == Fraction(1, 3)
    finally:
        service.close()


def test_restricted_mode_audits_the_bins_sets(tmp_path):
    """A binned GROUP BY of a public dimension is answered exactly in restricted mode, each bin's
    membership vector audited: the answer equals pandas'; a bin holding only the known unique
    (age 130, clamped to 120) is refused by size control; and the differencing attack through
    bins — ages < 50 / >= 50, then < 50 / 50..120 (the unique in no bin) — is refused by the
    auditor on the second query, as it would be for the same sets written with WHERE, also after a
    restart (the stored binned SQL replayed). A bin of a
    confidential column and a derived value are 400s."""
    frame = make_data(tmp_path)
    service = Service(write_config(tmp_path))
    try:
        key = service.state.add_analyst("r", "restricted")
        status, body = service.query(key, {"sql": "SELECT CASE WHEN age < 50 THEN 'a' ELSE 'b' END AS g, COUNT(*), "
                                                  "SUM(income) FROM census GROUP BY g"})
        assert status == 200, body
        young = frame["age"] < 50
        assert body["rows"] == [["a", int(young.sum()), int(frame.income[young].sum())],
                                ["b", int((~young).sum()), int(frame.income[~young].sum())]]
        status, body = service.query(key, {"sql": "SELECT FLOOR(age / 50) AS g, COUNT(*) FROM census GROUP BY g"})
        assert status == 403 and "query-set-size control" in body["error"]
        status, body = service.query(key, {"sql": "SELECT CASE WHEN age < 50 THEN 'a' WHEN age < 121 THEN 'b' END AS g, "
                                                  "SUM(income) FROM census GROUP BY g"})
        assert status == 403 and "Refused by the auditor" in body["error"], body
        status, body = service.query(key, {"sql": "SELECT SUM(income) FROM census WHERE age BETWEEN 50 AND 120"})
        assert status == 403 and "Refused by the auditor" in body["error"], body
        status, body = service.query(key, {"sql": "SELECT FLOOR(income / 1000) AS g, COUNT(*) FROM census GROUP BY g"})
        assert status == 400 and "'income' is confidential" in body["error"]
    finally:
        service.close()
    service = Service(write_config(tmp_path))  # a restart replays the binned query into the auditor
    try:
        status, body = service.query(key, {"sql": "SELECT SUM(income) FROM census WHERE age BETWEEN 50 AND 120"})
        assert status == 403 and "Refused by the auditor" in body["error"], body
    finally:
        service.close()


# ------------------------------------------------------------------ the builder and the client
def test_histogram_sql_writes_the_binned_group_by():
    assert histogram_sql("census", "age", [0, 18, 65, 120]) == (
        'SELECT CASE WHEN "age" < 18 THEN 0 WHEN "age" < 65 THEN 18 ELSE 65 END AS "bin", COUNT(*) FROM "census" '
        'WHERE "age" BETWEEN 0 AND 120 GROUP BY "bin"')
    text = histogram_sql("census", "income", bins=4, range=(0, 200000), where={"region": "N"}, name="n")
    assert 'WHEN "income" < 100000.0 THEN 50000.0' in text and text.endswith(""" AND ("region" = 'N') GROUP BY "bin\"""")
    for kwargs in ({}, {"bins": 3}, {"edges": [1, 1]}, {"edges": [0, 1], "bins": 2, "range": (0, 1)},
                   {"bins": 0, "range": (0, 1)}, {"edges": [0, float("nan")]}):
        with pytest.raises(ParameterError):
            histogram_sql("census", "age", **kwargs)


def test_client_histogram_over_http(tmp_path):
    frame = make_data(tmp_path)
    config = write_config(tmp_path, seed=True)
    key = State(load_config(config).state).add_analyst("h", "dp", "10")
    server = Server(config)
    try:
        with Client(server.url, key) as c:
            ages = c.histogram("census", "age", edges=[0, 18, 65, 121], epsilon=1)
            incomes = c.histogram("census", "income", bins=4, range=(0, 200000), where={"region": "N"}, epsilon="1/2")
    finally:
        server.stop()
    assert list(ages.columns) == ["bin", "count", "count_low", "count_high"] and list(ages["bin"]) == [0, 18, 65]
    oracle = pd.cut(frame["age"], [0, 18, 65, 121], right=False).value_counts(sort=False).tolist()
    assert np.all(np.abs(ages["count"] - oracle) <= 15)  # scale 1: |noise| > 15 has odds ~1e-6
    assert list(incomes["bin"]) == [0, 50000.0, 100000.0, 150000.0] and incomes.attrs["exact"]["epsilon_spent"] == "0.5"
    assert State(load_config(config).state).analyst("h").epsilon_spent == Fraction(3, 2)
    assert incomes.attrs["definition"] == "pure" and "GROUP BY CASE WHEN" in incomes.attrs["mechanism"]


def test_a_quantiles_histogram_by_a_binned_group_binds_its_values_in_sql_order(db):
    """MEDIAN by a CASE bin: the group's literals come before the quantile bin's in the SQL, and so
    in the bound values (a merge once bound the bin's first: every row in the wrong group or bin)."""
    from sdckit.query.generate import histogram_sql

    q = parse("SELECT CASE WHEN age < 18 THEN 'young' ELSE 'old' END AS band, MEDIAN(income) FROM t GROUP BY band",
              db.config)
    got = db.aggregate(histogram_sql(q, dp_table(q, db.config.tables["t"]), "income"))
    kept = _kept(FRAME, 2)
    band = np.where(kept["age"] < 18, 0, 1)  # a missing age is not < 18: ELSE
    income = kept["income"].clip(0, 1000).fillna(0).to_numpy()  # the dp relation's clamped column
    bins = np.minimum(np.floor(income * 2**17 / 1000), 2**17 - 1).astype(int)  # 2 cells: 2**18 / 2 bins
    expected = pd.Series(1, index=pd.MultiIndex.from_arrays([band, bins])).groupby(level=[0, 1]).sum()
    answered = pd.Series(got["n"], index=pd.MultiIndex.from_arrays([got["g0"], got["b"]])).sort_index()
    assert answered.to_dict() == expected.to_dict()
