"""Joins in dp queries (issue 32, ``sdckit.query.joins``): a private table with a public lookup
table, and two private tables of the same privacy unit with a bound on the rows per join key.

Hand-worked table ``census`` (privacy unit pid, max_rows_per_unit k = 2, income in [0, 200]):

    pid region income        the dp relation keeps person 1's first two rows (E 300 -> 200,
    1   E      300           E 250 -> 200), so: E 2 rows (sum 400), N 1 (20), S 1 (40),
    1   E      250           X 1 (10; X is no region code), W 1 (30).
    1   N      50
    2   N      20
    3   S      40
    4   X      10
    5   W      30

``regions`` has the codes N, S, E, W once each (multiplicity 1); ``regions_dup`` has E twice
(East, Eastern; multiplicity 2). So by region name: JOIN regions gives East 2 / North 1 /
South 1 / West 1 (sums 400, 20, 40, 30; 5 rows, LEFT JOIN 6), JOIN regions_dup gives East 2,
Eastern 2, North 1, South 1, West 1 (7 rows). Sensitivities: COUNT k M = 2 and 4, SUM 400 and 800.
Without person 1, regions_dup's count vector loses 2 + 2 = 4 = its sensitivity (tight), and a
sensitivity that forgot M (2) would be exceeded.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sqlglot.tokens import TokenType

import sqlglot
from query_helpers import SEED
from sdckit.core.errors import DataError, ParameterError
from sdckit.query import noisy, noisy_gaussian
from sdckit.query.builder import select_sql
from sdckit.query.client import Client
from sdckit.query.data import Database
from sdckit.query.config import load_config
from sdckit.query.generate import aggregate_sql
from sdckit.query.joins import query_table
from sdckit.query.service import Service
from sdckit.query.sql import UnsupportedQuery, parse

CENSUS = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 4, 5], "region": list("EENNSXW"),
                       "income": [300, 250, 50, 20, 40, 10, 30]})
REGIONS = pd.DataFrame({"code": list("NSEW"), "region_name": ["North", "South", "East", "West"], "pop": [10, 20, 30, 40]})
ZONES = pd.DataFrame({"code": list("NXZ"), "zone": list("nxz")})  # X, Z: outside census's domain of region
REGIONS_DUP = pd.DataFrame({"code": list("NSEEW"), "region_name": ["North", "South", "East", "Eastern", "West"]})
VISITS = pd.DataFrame({"pid": [1, 1, 1, 2, 2, 3, 9], "region": list("EENNESN"), "cost": [5, 7, 9, 3, 4, 1, 100],
                       "kind": list("abaabba")})
K = 2
TABLES = ('[[table]]\nname = "{name}"\npath = "{file}"\nprivacy_unit = "pid"\nmax_rows_per_unit = 2\n'
          '[table.bounds]\nincome = [0, 200]\n[table.domains]\nregion = ["N", "S", "E", "W"]\n'
          '[[table]]\nname = "{vname}"\npath = "{vfile}"\nprivacy_unit = "pid"\nmax_rows_per_unit = 2\n'
          'max_rows_per_join_key = 2\n[table.bounds]\ncost = [0, 10]\n[table.domains]\nkind = ["a", "b"]\n'
          'region = ["N", "S", "E", "W"]\n')


def _write(folder, pairs=(("census", CENSUS, "visits", VISITS),), cache=True) -> None:
    text = f'[service]\nstate = "state.db"\ncache = {str(cache).lower()}\nseed = "{SEED}"\n'
    for name, frame, vname, vframe in pairs:
        frame.to_csv(folder / f"{name}.csv", index=False)
        vframe.to_csv(folder / f"{vname}.csv", index=False)
        text += TABLES.format(name=name, file=f"{name}.csv", vname=vname, vfile=f"{vname}.csv")
    CENSUS.to_csv(folder / "solo.csv", index=False)
    text += ('[[table]]\nname = "solo"\npath = "solo.csv"\n[table.bounds]\nincome = [0, 200]\n'
             '[public_tables.regions]\npath = "regions.csv"\n[public_tables.regions_dup]\npath = "regions_dup.csv"\n'
             '[public_tables.zones]\npath = "zones.csv"\n')
    ZONES.to_csv(folder / "zones.csv", index=False)
    REGIONS.to_csv(folder / "regions.csv", index=False)
    REGIONS_DUP.to_csv(folder / "regions_dup.csv", index=False)
    (folder / "service.toml").write_text(text)


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("joins")
    _write(folder)
    service = Service(folder / "service.toml")
    yield service
    service.close()


def _analyst(svc, name, mode="dp", **budget):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return svc.state.add_analyst(name, mode, budget.get("epsilon"), budget.get("delta", 0), None, budget.get("rho"))


def _true(db, config, sql, rows=None):
    """The plan (epsilon 1) and the true counts and clamped sums per cell of a dp query (at most
    ``rows`` rows per person of the FROM table, if given)."""
    query = parse(sql, config)
    table = query_table(query, config)
    plan = noisy.plan(query, table, Fraction(1), rows)
    return plan, *noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp", rows=rows)))


# ------------------------------------------------------------------ the pandas oracle
def _bounded(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """The dp relation: each person's first k rows in file order, income clamped."""
    out = frame.groupby("pid", sort=False).head(k).copy()
    if "income" in out:
        out["income"] = out["income"].clip(0, 200)
    if "cost" in out:
        out["cost"] = out["cost"].clip(0, 10)
    return out


def _oracle(left: pd.DataFrame, right: pd.DataFrame, on: tuple[str, str], by: str, how="inner",
            per_key: tuple[int, int] | None = None, suffix="_r") -> pd.DataFrame:
    """COUNT(*) and SUM(income) per ``by`` of the join, by pandas: the bounded relations (private
    sides), then the first t rows per key in file order (a private join), then ``merge``."""
    if per_key is not None:
        left = left[left[on[0]].notna()].groupby(on[0], sort=False).head(per_key[0])
        right = right[right[on[1]].notna()].groupby(on[1], sort=False).head(per_key[1])
    merged = left.merge(right, left_on=on[0], right_on=on[1], how=how, suffixes=("", suffix))
    return merged.groupby(by).agg(n=("pid", "size"), s=("income", "sum"))


@pytest.mark.parametrize("public, how", [("regions", "inner"), ("regions_dup", "inner"), ("regions_dup", "left")])
def test_public_join_noiseless_answers_equal_the_hand_worked_ones_and_a_pandas_merge(svc, public, how):
    join = "LEFT JOIN" if how == "left" else "JOIN"
    plan, counts, sums = _true(svc.db, svc.config, f"SELECT r.region_name, COUNT(*), SUM(income) FROM census {join} "
                                                   f"{public} r ON census.region = r.code GROUP BY r.region_name")
    names = [c[0] for c in plan.cells]
    expected = _oracle(_bounded(CENSUS, K), REGIONS_DUP if public == "regions_dup" else REGIONS, ("region", "code"),
                       "region_name", how).reindex(names, fill_value=0)
    assert counts.tolist() == expected["n"].tolist()
    assert sums["income"].tolist() == expected["s"].astype(float).tolist()
    hand = {"regions": ([2, 1, 1, 1], [400, 20, 40, 30]), "regions_dup": ([2, 2, 1, 1, 1], [400, 400, 20, 40, 30])}
    assert (counts.tolist(), sums["income"].tolist()) == hand[public]  # (names sorted: East, [Eastern,] North, ...)
    totals = {("regions", "inner"): 5, ("regions_dup", "inner"): 7, ("regions_dup", "left"): 8}
    _, total, _ = _true(svc.db, svc.config, f"SELECT COUNT(*) FROM census {join} {public} ON region = code")
    assert total.tolist() == [totals[(public, how)]]  # LEFT: X's row once more, unmatched
    assert plan.sensitivities == {"count": 2.0 * (2 if public == "regions_dup" else 1),
                                  "income": 400.0 * (2 if public == "regions_dup" else 1)}


def test_a_public_key_outside_the_private_domain_joins_on_the_text(svc):
    """regions' codes are all in census's domain of region: the join compares integer codes;
    zones has X and Z, outside it: the join compares the text, and census's row of region X
    (outside the domain) finds its zone, as a pandas merge does."""
    sql = "SELECT zone, COUNT(*) FROM census JOIN zones ON region = code GROUP BY zone"
    _, counts, _ = _true(svc.db, svc.config, sql)
    expected = _oracle(_bounded(CENSUS, K), ZONES, ("region", "code"), "zone").reindex(list("nxz"), fill_value=0)
    assert counts.tolist() == expected["n"].tolist() == [1, 1, 0]
    assert query_table(parse(sql, svc.config), svc.config).key_domain == ()
    coded = query_table(parse(sql.replace("zones", "regions").replace("zone", "region_name"), svc.config), svc.config)
    assert coded.key_domain == ("N", "S", "E", "W")


def test_where_on_public_columns_and_numeric_public_groups(svc):
    _, counts, _ = _true(svc.db, svc.config, "SELECT pop, COUNT(*) FROM census JOIN regions ON region = code "
                                             "WHERE pop >= 20 AND region_name <> 'South' GROUP BY pop")
    assert counts.tolist() == [0, 0, 2, 1]  # pop 10 (N), 20 (S: excluded by name), 30 (E: 2 rows), 40 (W)


@pytest.mark.parametrize("on, per_key, bound", [(("region", "region"), (1, 2), 2 * (2 * 2 + 2 * 1)),
                                                (("pid", "pid"), (1, 2), 1 * 2)])
def test_private_join_noiseless_answers_equal_a_pandas_merge_after_truncation(svc, on, per_key, bound):
    """census keeps 1 row per key (default), visits 2 (configured); k = 2 on both sides."""
    plan, counts, sums = _true(svc.db, svc.config, f"SELECT v.kind, COUNT(*), SUM(income) FROM census JOIN visits v "
                                                   f"ON census.{on[0]} = v.{on[1]} GROUP BY v.kind")
    expected = _oracle(_bounded(CENSUS, K), _bounded(VISITS, K), on, "kind", per_key=per_key)
    expected = expected.reindex(["a", "b"], fill_value=0)
    assert counts.tolist() == expected["n"].tolist() and sums["income"].tolist() == expected["s"].astype(float).tolist()
    assert plan.k == bound and plan.sensitivities["count"] == bound
    fast = svc.db.fast_cells(parse(f"SELECT v.kind, COUNT(*), SUM(income) FROM census JOIN visits v "
                                   f"ON census.{on[0]} = v.{on[1]} GROUP BY v.kind", svc.config), len(plan.cells))
    assert fast[0].tolist() == counts.tolist() and fast[1]["income"].tolist() == sums["income"].tolist()  # joincube


@pytest.mark.parametrize("on, bound", [(("region", "region"), 2 * (1 * 2 + 2 * 1)), (("pid", "pid"), 1 * 2)])
def test_a_smaller_bound_asked_per_query_runs_before_the_truncation_per_key(svc, on, bound):
    """max_rows_per_unit k' = 1: census keeps each person's first row, then its first row per key
    (the oracle: pandas on the bounded relation at k = 1); the bound uses k_L = k'."""
    sql = f"SELECT v.kind, COUNT(*), SUM(income) FROM census JOIN visits v ON census.{on[0]} = v.{on[1]} GROUP BY v.kind"
    plan, counts, sums = _true(svc.db, svc.config, sql, rows=1)
    expected = _oracle(_bounded(CENSUS, 1), _bounded(VISITS, K), on, "kind", per_key=(1, 2)).reindex(["a", "b"], fill_value=0)
    assert counts.tolist() == expected["n"].tolist() and sums["income"].tolist() == expected["s"].astype(float).tolist()
    assert plan.k == bound
    key = _analyst(svc, f"smaller_{on[0]}", epsilon="1")
    status, body = svc.query(key, {"sql": sql, "epsilon": 1, "max_rows_per_unit": 1})
    assert status == 200 and body["max_rows_per_unit"] == 1 and body["join"]["contribution_bound"] == bound


def test_the_answer_states_the_join_the_bound_and_the_budget(svc):
    key = _analyst(svc, "states", epsilon="2")
    status, body = svc.query(key, {"sql": "SELECT region_name, COUNT(*) FROM census JOIN regions_dup "
                                          "ON region = code GROUP BY region_name", "epsilon": "1/2"})
    assert status == 200
    assert body["join"]["multiplicity"] == 2 and body["join"]["contribution_bound"] == 4
    assert "at most 4 joined row(s)" in body["mechanism"] and body["max_rows_per_unit"] == 2
    assert body["definition"] == "pure" and body["exact"]["epsilon_spent"] == "0.5"
    assert body["exact"]["epsilon_remaining"] == "1.5"
    status, private = svc.query(key, {"sql": "SELECT COUNT(*) FROM census JOIN visits ON census.pid = visits.pid",
                                      "epsilon": "1/2"})
    assert status == 200 and private["join"]["max_rows_per_join_key"] == [1, 2]
    assert private["join"]["contribution_bound"] == 2 and "Tumult" in private["join"]["text"]
    assert private["exact"]["epsilon_remaining"] == "1"


def test_huge_epsilon_answers_through_the_service_are_the_hand_worked_counts(svc):
    key = _analyst(svc, "huge", epsilon="1000000")
    status, body = svc.query(key, {"sql": "SELECT region_name, COUNT(*) AS n FROM census JOIN regions r ON "
                                          "census.region = r.code GROUP BY region_name", "epsilon": 1_000_000})
    assert status == 200 and body["rows"] == [["East", 2], ["North", 1], ["South", 1], ["West", 1]]


@pytest.mark.parametrize("sql", [
    "SELECT region_name, COUNT(*), SUM(income) FROM census JOIN regions ON region = code GROUP BY region_name",
    "SELECT region_name, COUNT(*), AVG(income) FROM census LEFT JOIN regions_dup ON region = code GROUP BY region_name",
    "SELECT COUNT(*), SUM(income) FROM census LEFT JOIN regions ON region = code",
    "SELECT region, pop, COUNT(*) FROM census JOIN regions ON region = code WHERE pop >= 20 OR region = 'N' "
    "GROUP BY region, pop",
    "SELECT zone, COUNT(*), SUM(income) FROM census LEFT JOIN zones ON region = code WHERE NOT zone IN ('n') GROUP BY zone",
    "SELECT COUNT(*) FROM census JOIN regions_dup r ON census.region = r.code WHERE r.region_name <> 'East' AND income > 30",
])
def test_the_joined_cube_gives_duckdbs_answer(svc, sql):
    """A public join whose columns are the cube's (the private key among them) is answered from
    the table's cube joined in numpy (sdckit.query.cube.Cube.joined): the same counts and sums as
    DuckDB's join, NULLs of a LEFT JOIN's unmatched rows included."""
    query = parse(sql, svc.config)
    table = query_table(query, svc.config)
    plan = noisy.plan(query, table, Fraction(1))
    fast = svc.db.fast_cells(query, len(plan.cells))
    assert fast is not None
    counts, sums = noisy.exact_cells(plan, table, svc.db.aggregate(aggregate_sql(query, table, "dp")))
    assert fast[0].tolist() == counts.tolist()
    assert {c: v.tolist() for c, v in fast[1].items()} == {c: v.tolist() for c, v in sums.items()}
    assert svc.db.fast_cells(query, len(plan.cells), rows=1) is None  # a smaller bound: DuckDB filters the rank


# ------------------------------------------------------------------ noise
@pytest.mark.parametrize("public, m", [("regions", 1), ("regions_dup", 2)])
def test_noise_scale_is_k_times_the_multiplicity(svc, public, m):
    """2,000 noise draws (400 answers of 5 groups): the discrete Laplace variance 2p/(1-p)^2 of
    scale k M / epsilon within 4 standard errors (the fourth moment of the discrete Laplace
    bounds the sample variance's spread by sqrt(5/n) of it, tolerance ~ 18%; half the scale,
    a quarter of the variance, is far outside)."""
    query = parse(f"SELECT region_name, COUNT(*) FROM census JOIN {public} ON region = code GROUP BY region_name",
                  svc.config)
    table = query_table(query, svc.config)
    plan = noisy.plan(query, table, Fraction(1))
    assert plan.count_scale == noisy.geometric_scale(1.0, K * m)
    counts = np.zeros(len(plan.cells), dtype=np.int64)
    rng = np.random.default_rng(20261129)
    draws = np.array([[r[1] for r in noisy.answer_cells(plan, table, counts, {}, rng)["rows"]] for _ in range(400)])
    p = math.exp(-1 / plan.count_scale)
    variance = 2 * p / (1 - p) ** 2
    assert abs(draws.var() / variance - 1) < 4 * math.sqrt(5 / draws.size)
    assert abs(draws.mean()) < 4 * math.sqrt(variance / draws.size)


def test_gaussian_noise_of_a_join_uses_the_bound(svc):
    query = parse("SELECT COUNT(*) FROM census JOIN visits ON census.region = visits.region", svc.config)
    table = query_table(query, svc.config)
    plan = noisy_gaussian.plan(query, table, "zcdp", rho=Fraction(1, 2))
    m = plan.measurements["count"]
    assert m.sensitivity == 12 and m.t * m.c >= 12 ** 2  # V >= Delta^2 / (2 rho)
    rng = np.random.default_rng(7)
    draws = np.array([noisy_gaussian.answer_cells(plan, np.zeros(1, dtype=np.int64), {}, rng)["rows"][0][0]
                      for _ in range(1000)])
    assert abs(draws.var() / (m.t * m.c) - 1) < 4 * math.sqrt(2 / draws.size)


# ------------------------------------------------------------------ attacks: neighbouring tables
def _neighbours(tmp_path, pairs):
    _write(tmp_path, pairs)
    config = load_config(tmp_path / "service.toml")
    return Database(config)


def test_a_person_cannot_move_a_public_join_more_than_the_stated_sensitivity(tmp_path):
    """Person 1 (3 rows, all region E: the duplicated key) removed: each noiseless vector moves
    by exactly its stated sensitivity (COUNT 4 = k M, SUM 800) with regions_dup, and by k = 2
    with the unique regions: the multiplicity is counted, and needed."""
    heavy = CENSUS.assign(region=["E", "E", "E", "N", "S", "X", "W"])
    db = _neighbours(tmp_path, [("c", heavy, "v", VISITS), ("cx", heavy[heavy.pid != 1], "vx", VISITS[VISITS.pid != 1])])
    for public, m in (("regions", 1), ("regions_dup", 2)):
        for how in ("JOIN", "LEFT JOIN"):
            sql = "SELECT region_name, COUNT(*), SUM(income) FROM {t} " + how + f" {public} ON region = code GROUP BY region_name"
            plan, c1, s1 = _true(db, db.config, sql.format(t="c"))
            _, c0, s0 = _true(db, db.config, sql.format(t="cx"))
            assert np.abs(c1 - c0).sum() == plan.sensitivities["count"] == K * m
            assert np.abs(s1["income"] - s0["income"]).sum() == plan.sensitivities["income"] == 200 * K * m
    db.close()


def test_a_person_cannot_move_a_private_join_more_than_the_stated_bound(tmp_path):
    """Keys N, S; census keeps 1 row per key, visits 2. Person 1 holds the first census row of
    both keys; removing her lets person 2's rows in: the counts split by income move by 8,
    above k_L t_R + k_R t_L = 6 (so the factor 2 of DropExcess is needed) and within the stated
    2 (2 x 2 + 2 x 1) = 12. Then 6 random instances, three persons removed in turn: never above
    12 on a region key (8 at k' = 1), never above min(k, 1) min(2, 2) = 2 joined on the privacy unit."""
    census = pd.DataFrame({"pid": [1, 1, 2, 2], "region": ["N", "S", "N", "S"], "income": [0, 0, 200, 200]})
    visits = pd.DataFrame({"pid": [3, 3, 4, 4], "region": ["N", "S", "N", "S"], "cost": [1, 1, 1, 1], "kind": list("abab")})
    pairs = [("c", census, "v", visits), ("cx", census[census.pid != 1], "vx", visits)]
    rng = np.random.default_rng(32)
    cases = []
    for i in range(6):
        n = int(rng.integers(4, 12))
        a = pd.DataFrame({"pid": rng.integers(1, 5, n), "region": rng.choice(list("NSE"), n),
                          "income": rng.integers(0, 250, n)})
        b = pd.DataFrame({"pid": rng.integers(1, 5, n), "region": rng.choice(list("NSE"), n),
                          "cost": rng.integers(0, 12, n), "kind": rng.choice(list("ab"), n)})
        pairs.append((f"a{i}", a, f"b{i}", b))
        for person in (1, 2, 3):
            cases.append((i, person))
            pairs.append((f"a{i}p{person}", a[a.pid != person], f"b{i}p{person}", b[b.pid != person]))
    db = _neighbours(tmp_path, pairs)
    split = "SELECT COUNT(*) FROM {t} JOIN {v} ON {t}.region = {v}.region WHERE {t}.income {op} 100"
    moved = sum(abs(_true(db, db.config, split.format(t=t, v="v", op=op))[1][0]
                    - _true(db, db.config, split.format(t=t0, v="v", op=op))[1][0])
                for op in ("<", ">=") for t, t0 in [("c", "cx")])
    assert moved == 8  # 4 joined rows of income 0 out, 4 of income 200 in
    grouped = ("SELECT {v}.kind, {t}.region, COUNT(*), SUM(cost), SUM(income) FROM {t} JOIN {v} "
               "ON {t}.{key} = {v}.{key} GROUP BY {v}.kind, {t}.region")
    for i, person in cases:
        for key, rows, bound in (("region", None, 12), ("pid", None, 2), ("region", 1, 8), ("pid", 1, 2)):
            plan, c1, s1 = _true(db, db.config, grouped.format(t=f"a{i}", v=f"b{i}", key=key), rows)
            _, c0, s0 = _true(db, db.config, grouped.format(t=f"a{i}p{person}", v=f"b{i}p{person}", key=key), rows)
            if rows is None:  # the service answers from the joined relation's cube (sdckit.query.joincube): the same
                fast = db.fast_cells(parse(grouped.format(t=f"a{i}", v=f"b{i}", key=key), db.config), len(c1))
                assert fast is not None and fast[0].tolist() == list(c1) and fast[1]["cost"].tolist() == list(s1["cost"])
            assert plan.sensitivities["count"] == bound and np.abs(c1 - c0).sum() <= bound
            assert np.abs(s1["cost"] - s0["cost"]).sum() <= plan.sensitivities["cost"] == 10 * bound
            assert np.abs(s1["income"] - s0["income"]).sum() <= plan.sensitivities["income"] == 200 * bound
    db.close()


# ------------------------------------------------------------------ injection
def test_no_text_of_the_analyst_reaches_the_generated_sql(svc):
    sql = ('SELECT "r\'x".region_name, COUNT(*) AS "n; DROP" FROM census AS "c--" JOIN regions_dup AS "r\'x" '
           'ON "c--".region = "r\'x".code WHERE "r\'x".region_name IN (\'East\', \'x\'\'; DROP TABLE t\') '
           'GROUP BY "r\'x".region_name')
    for text in (sql, sql.replace("JOIN regions_dup", "JOIN visits").replace(".code", ".region")
                 .replace("region_name", "kind").replace("'East'", "'a'"),
                 sql.replace("JOIN regions_dup", "JOIN zones").replace("region_name", "zone")):  # joined on the text
        query = parse(text, svc.config)
        generated = aggregate_sql(query, query_table(query, svc.config), "dp")
        allowed = ({"census", "visits", "regions_dup", "sdc_dp_census", "sdc_dp_visits", "sdc_pub_regions_dup", "n", "g0",
                    "sdc_pub_zones", "zone",
                    "code", "region_name", "region", "income", "kind", "cost", "pid", "visits__region"})
        for token in sqlglot.Dialect.get_or_raise("duckdb").tokenize(generated.sql):
            assert token.token_type != TokenType.STRING
            if token.token_type == TokenType.IDENTIFIER:  # every name is quoted
                assert token.text in allowed or token.text.startswith("__sdc_"), token.text
            elif token.token_type == TokenType.VAR:  # unquoted: sdckit's function names only
                assert token.text in ("COUNT", "SUM", "ROW_NUMBER", "LIST_POSITION"), token.text
        for fragment in ("DROP", "c--", "r'x"):
            assert fragment not in generated.sql
        assert "x'; DROP TABLE t" in generated.params


def test_a_public_table_with_a_column_name_that_is_not_plain_is_refused(tmp_path):
    _write(tmp_path)
    pd.DataFrame({'co"de': ["N"], "x": [1]}).to_csv(tmp_path / "regions.csv", index=False)
    with pytest.raises(DataError, match="not a plain name"):
        Database(load_config(tmp_path / "service.toml"))


# ------------------------------------------------------------------ refusals, one line each
@pytest.mark.parametrize("sql, culprit", [
    ("SELECT COUNT(*) FROM census JOIN regions ON census.income = regions.code", "different types"),
    ("SELECT COUNT(*) FROM census JOIN regions ON census.pid = regions.code", "not a declared column"),
    ("SELECT COUNT(*) FROM census JOIN regions ON census.region = regions.nope", "not a declared column"),
    ("SELECT COUNT(*) FROM regions JOIN regions_dup ON regions.code = regions_dup.code", "public table"),
    ("SELECT COUNT(*) FROM census CROSS JOIN regions", "Cross joins"),
    ("SELECT COUNT(*) FROM census, regions", "Cross joins"),
    ("SELECT COUNT(*) FROM census JOIN regions ON census.region < regions.code", "one equality"),
    ("SELECT COUNT(*) FROM census JOIN regions ON census.region = regions.code AND pop > 1", "one equality"),
    ("SELECT COUNT(*) FROM census JOIN regions ON census.region = census.region", "a column of each table"),
    ("SELECT COUNT(*) FROM census JOIN nowhere ON census.region = nowhere.code", "Unknown table 'nowhere'"),
    ("SELECT COUNT(*) FROM census RIGHT JOIN regions ON census.region = regions.code", "RIGHT JOIN"),
    ("SELECT COUNT(*) FROM census FULL JOIN regions ON census.region = regions.code", "FULL"),
    ("SELECT COUNT(*) FROM census JOIN regions USING (region)", "USING"),
    ("SELECT COUNT(*) FROM census NATURAL JOIN regions", "NATURAL"),
    ("SELECT COUNT(*) FROM census JOIN census ON census.region = census.region", "with itself"),
    ("SELECT COUNT(*) FROM census JOIN regions ON region = code JOIN regions_dup ON region = regions_dup.code", "One JOIN"),
    ("SELECT COUNT(*) FROM census LEFT JOIN visits ON census.pid = visits.pid", "LEFT JOIN of two private"),
    ("SELECT COUNT(*) FROM census JOIN solo ON census.income = solo.income", "same privacy unit"),
    ("SELECT COUNT(*) FROM census JOIN regions ON region = code WHERE zz.pop > 1", "neither joined table"),
    ("SELECT COUNT(*) FROM census JOIN visits ON census.region = visits.region WHERE region = 'N'", "in both joined"),
    ("SELECT SUM(pop) FROM census JOIN regions ON region = code", "needs public bounds"),
])
def test_bad_joins_are_refused_in_one_line(svc, sql, culprit):
    with pytest.raises(UnsupportedQuery) as info:
        parse(sql, svc.config)
    assert culprit in str(info.value) and "\n" not in str(info.value)


def test_refusals_through_the_service_charge_nothing(svc):
    restricted = _analyst(svc, "r1", mode="restricted")
    status, body = svc.query(restricted, {"sql": "SELECT COUNT(*) FROM census JOIN regions ON region = code"})
    assert status == 400 and "dp mode only" in body["error"]
    key = _analyst(svc, "r2", epsilon="1")
    status, body = svc.query(key, {"sql": "SELECT COUNT(*) FROM census JOIN visits ON census.pid = visits.pid",
                                   "epsilon": 0.5, "max_rows_per_unit": 3})
    assert status == 400 and "max_rows_per_unit" in body["error"]  # above the configured k = 2
    assert svc.state.analyst("r2").epsilon_remaining == 1
    status, body = svc.query(key, {"sql": "SELECT BOUNDS(income) FROM census JOIN regions ON region = code", "epsilon": 0.5})
    assert status == 400 and "BOUNDS over a JOIN" in body["error"]  # the merge of joins and BOUNDS
    assert svc.state.analyst("r2").epsilon_remaining == 1
    status, body = svc.public(key, "nope")
    assert status == 404 and "regions" in body["error"]
    assert svc.public("bad key", "regions")[0] == 401


def test_the_builder_writes_the_join_and_checks_it():
    assert select_sql("census", "count", by="region_name", join=("regions", "region", "code")) == (
        'SELECT "region_name", COUNT(*) FROM "census" JOIN "regions" ON "census"."region" = "regions"."code" '
        'GROUP BY "region_name"')
    assert " LEFT JOIN " in select_sql("census", "count", join=("regions", "region", "code", "left"))
    for bad in ("regions", ("regions", "region"), ("regions", "region", "code", "right"), ("re;gions", "a", "b")):
        with pytest.raises(ParameterError):
            select_sql("census", "count", join=bad)


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_over_http_the_client_reads_a_public_table_and_joins_it(svc):
    """The FastAPI app in process (the README's test runs the real server): GET /v1/public/<name>
    and the client's ``join=``."""
    from starlette.testclient import TestClient

    from sdckit.query.server import create_app

    key = _analyst(svc, "web", epsilon="2")
    with Client("http://testserver", key) as client:
        client._http.close()
        client._http = TestClient(create_app(service=svc), base_url="http://testserver",
                                  headers={"Authorization": f"Bearer {key}"})
        public = client.public("regions_dup")
        assert public.values.tolist() == REGIONS_DUP.values.tolist()
        assert public.attrs["multiplicity"]["code"] == 2
        frame = client.count("census", by="region_name", join=("regions_dup", "region", "code"), epsilon=1)
    assert frame["region_name"].tolist() == ["East", "Eastern", "North", "South", "West"]
    assert frame.attrs["join"]["contribution_bound"] == 4 and frame.attrs["exact"]["epsilon_spent"] == "1"


def test_every_combination_of_join_kinds_has_one_outcome(svc):
    """Every (kind, other table) pair parses to a join or a one-line refusal: none is a bug."""
    for kind, other in itertools.product(("JOIN", "LEFT JOIN", "INNER JOIN", "LEFT OUTER JOIN"),
                                         ("regions", "visits", "solo")):
        key = "code" if other == "regions" else "income" if other == "solo" else "region"
        try:
            parse(f"SELECT COUNT(*) FROM census {kind} {other} ON census.region = {other}.{key}", svc.config)
        except UnsupportedQuery as exc:
            assert "\n" not in str(exc)


def test_min_max_and_median_over_a_public_join_stay_within_the_bounds(svc):
    """The quantile family (MEDIAN, MIN, MAX) over a join: answered, inside income's bounds [0, 200]."""
    key = _analyst(svc, "quantiles", epsilon="10")
    status, body = svc.query(key, {"sql": "SELECT MEDIAN(income) AS m, MIN(income) AS lo, MAX(income) AS hi "
                                          "FROM census JOIN regions ON region = code", "epsilon": 1})
    assert status == 200, body
    assert all(0 <= v <= 200 for v in body["rows"][0]), body["rows"]


@pytest.mark.parametrize("sql", [
    "SELECT FLOOR(income / 100) * 100 AS band, COUNT(*) FROM census JOIN regions ON region = code GROUP BY band",
    "SELECT SUM(income * 2) FROM census JOIN regions ON region = code",
])
def test_binned_or_derived_columns_over_a_join_are_refused_in_one_line(svc, sql):
    with pytest.raises(UnsupportedQuery, match="over a JOIN are not supported") as info:
        parse(sql, svc.config)
    assert "\n" not in str(info.value)


def test_the_joined_cube_keeps_integer_sums_past_2_to_43(tmp_path):
    """Integer incomes near 2**44 (their sum ~2**46: past 2**43, below 2**53) are summed exactly
    in any order, so a public join is still answered from the joined cube (1e8 census incomes
    sum to ~1e13 > 2**43: the benchmark's join scanned, 11.7 s) — the same sums as DuckDB's join,
    checked against the exact integer sums worked here."""
    big = 2**44
    census = pd.DataFrame({"pid": [1, 2, 3, 4], "region": list("NNSE"), "income": [big + 1, big + 3, big, 7]})
    census.to_csv(tmp_path / "big.csv", index=False)
    REGIONS.to_csv(tmp_path / "regions.csv", index=False)
    (tmp_path / "service.toml").write_text(
        '[service]\nstate = "state.db"\n[[table]]\nname = "big"\npath = "big.csv"\nprivacy_unit = "pid"\n'
        f'[table.bounds]\nincome = [0, {2**46}]\n[table.domains]\nregion = ["N", "S", "E", "W"]\n'
        '[public_tables.regions]\npath = "regions.csv"\n')
    db = Database(load_config(tmp_path / "service.toml"))
    config = db.config  # (the public tables' columns, read when loading)
    try:
        query = parse("SELECT region_name, COUNT(*), SUM(income) FROM big JOIN regions ON region = code "
                      "GROUP BY region_name", config)
        table = query_table(query, config)
        plan = noisy.plan(query, table, Fraction(1))
        fast = db.fast_cells(query, len(plan.cells))
        assert fast is not None
        counts, sums = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))
        assert fast[0].tolist() == counts.tolist() and fast[1]["income"].tolist() == sums["income"].tolist()
        by_name = dict(zip([c[0] for c in plan.cells], fast[1]["income"].tolist()))
        assert by_name == {"East": 7.0, "North": float(2 * big + 4), "South": float(big), "West": 0.0}
    finally:
        db.close()
