"""The configuration, the SQL subset and the generated SQL (sdckit.query.config, .sql, .generate)."""

from __future__ import annotations

import sqlglot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot.tokens import TokenType

from sdckit.core.errors import ParameterError
from sdckit.query.config import load_config
from sdckit.query.generate import aggregate_sql, membership_sql
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, UnsupportedQuery, parse

CONFIG = """
[service]
state = "state.db"
[restricted]
min_query_set = 3
[[table]]
name = "census"
path = "census.csv"
privacy_unit = "person_id"
[table.bounds]
income = [0, 200000]
age = [-5, 120.5]
[table.domains]
region = ["N", "S", "E", "W"]
code = [1, 2, 3]
"""


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cfg")
    (folder / "service.toml").write_text(CONFIG)
    return load_config(folder / "service.toml")


# ------------------------------------------------------------------ configuration
def test_config_reads_tables_and_resolves_paths_relative_to_the_file(config):
    t = config.tables["census"]
    assert config.state == config.path.parent / "state.db"
    assert t.path == config.path.parent / "census.csv"
    assert t.bounds == {"income": (0, 200000), "age": (-5, 120.5)}
    assert t.domains["region"] == ("N", "S", "E", "W")
    assert t.privacy_unit == "person_id" and t.max_rows_per_unit == 1
    assert config.min_query_set == 3 and config.collusion is False and config.seed is None


@pytest.mark.parametrize("change, culprit", [
    (("[service]", "[service]\nbogus = 1"), "[service] has unknown key 'bogus'"),
    (("min_query_set = 3", "min_query_set = 0"), "'min_query_set'"),
    (("min_query_set = 3", "min_query_set = 3\ncollusion = 1"), "'collusion'"),
    (('privacy_unit = "person_id"', 'privacy_unit = "person id"'), "'privacy_unit'"),
    (("income = [0, 200000]", "income = [5, 1]"), "income"),
    (("income = [0, 200000]", 'income = [0, "x"]'), "income"),
    (('region = ["N", "S", "E", "W"]', 'region = ["N", 1]'), "region"),
    (('region = ["N", "S", "E", "W"]', 'region = ["N", "N"]'), "region"),
    (('region = ["N", "S", "E", "W"]', "region = []"), "region"),
    (('path = "census.csv"', 'path = "census.xlsx"'), "'path'"),
    (('path = "census.csv"', 'path = "census.duckdb"'), "'table'"),
    (('name = "census"', 'name = "cen;sus"'), "'name'"),
    (('name = "census"', 'name = "census"\ncolour = "red"'), "unknown key 'colour'"),
    (('privacy_unit = "person_id"', 'privacy_unit = "income"'), "'privacy_unit'"),
    (('privacy_unit = "person_id"', 'max_rows_per_unit = 2'), "'max_rows_per_unit'"),
    (('[service]', '[service]\nseed = "abc"'), "'seed'"),
    (('[service]', '[service]\ncache = "yes"'), "'cache'"),
    (('[service]', '[service]\nsync = "off"'), "'sync'"),
])
def test_every_bad_configuration_names_its_key(tmp_path, change, culprit):
    (tmp_path / "service.toml").write_text(CONFIG.replace(*change, 1))
    with pytest.raises(ParameterError) as info:
        load_config(tmp_path / "service.toml")
    assert culprit in str(info.value)


def test_a_missing_or_broken_configuration_file_is_named(tmp_path):
    with pytest.raises(ParameterError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[service\n")
    with pytest.raises(ParameterError, match="not valid TOML"):
        load_config(tmp_path / "bad.toml")


# ------------------------------------------------------------------ parsing
def test_a_full_query_parses_to_the_object_written_by_hand(config):
    q = parse("select REGION, count(*) as n, avg(income) from Census "
              "where (age between 18 and 65 and not region in ('N', 'S')) or income <> -3 or 7 > age "
              "group by region", config)
    assert q.table == "census" and q.group_by == ("region",)
    assert [(o.kind, o.column, o.label) for o in q.outputs] == [
        ("group", "region", "region"), ("count", None, "n"), ("avg", "income", "avg_income")]
    assert q.where == Or((Or((And((Between("age", 18, 65), InList("region", ("N", "S"), negated=True))),
                              Compare("income", "<>", -3))), Compare("age", "<", 7)))
    assert parse("SELECT COUNT(*) FROM census WHERE NOT age > 3;", config).where == Not(Compare("age", ">", 3))


@pytest.mark.parametrize("sql, culprit", [
    ("SELECT COUNT(*) FROM census; DROP TABLE census", "Several statements"),
    ("SELECT COUNT(*) FROM census;;", "Several statements"),
    ("SELECT COUNT(*) FROM census -- x", "Comments"),
    ("SELECT COUNT(*) /* x */ FROM census", "Comments"),
    ("SELECT COUNT(*) FROM census c", "Table aliases"),
    ("SELECT COUNT(*) FROM census, census", "JOIN"),
    ("SELECT COUNT(*) FROM census LEFT JOIN census ON TRUE", "JOIN"),
    ("SELECT COUNT(*) FROM census WHERE age IN (SELECT age FROM census)", "Sub-queries"),
    ("SELECT (SELECT 1), COUNT(*) FROM census", "Sub-queries"),
    ("WITH c AS (SELECT 1) SELECT COUNT(*) FROM census", "WITH"),
    ("SELECT COUNT(*) FROM census UNION ALL SELECT COUNT(*) FROM census", "Only SELECT"),
    ("INSERT INTO census VALUES (1)", "Only SELECT"),
    ("SELECT COUNT(*) FROM census HAVING COUNT(*) > 2", "HAVING"),
    ("SELECT COUNT(*) FROM census LIMIT 1", "LIMIT"),
    ("SELECT DISTINCT COUNT(*) FROM census", "DISTINCT"),
    ("SELECT * FROM census", "SELECT *"),
    ("SELECT age FROM census", "not in GROUP BY"),
    ("SELECT COUNT(age) FROM census", "COUNT(column)"),
    ("SELECT COUNT(DISTINCT age, region) FROM census", "COUNT(DISTINCT column)"),
    ("SELECT COUNT(DISTINCT person_id) FROM census", "'person_id' is not declared"),
    ("SELECT VARIANCE(age) FROM census", "VAR_POP(column)"),
    ("SELECT STDDEV(age) FROM census", "STDDEV_POP(column)"),
    ("SELECT STDDEV_SAMP(age) FROM census", "population"),
    ("SELECT VAR_POP(region) FROM census", "bounds of 'region'"),
    ("SELECT SUM(region) FROM census", "bounds of 'region'"),
    ("SELECT MAX(region) FROM census", "bounds of 'region'"),
    ("SELECT MIN(DISTINCT age) FROM census", "MIN takes one column"),
    ("SELECT BOUNDS(age, income) FROM census", "BOUNDS takes one numeric column"),
    ("SELECT region, BOUNDS(age) FROM census GROUP BY region", "no GROUP BY"),
    ("SELECT ABS(age) FROM census", "function ABS"),
    ("SELECT QUANTILE_CONT(age, 1.5) FROM census", "strictly between 0 and 1"),
    ("SELECT QUANTILE_CONT(age, 'x') FROM census", "strictly between 0 and 1"),
    ("SELECT MEDIAN(region) FROM census", "needs public bounds"),
    ("SELECT PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY age) FROM census", "quantile form"),
    ("SELECT COUNT(*) + 1 FROM census", "ADD"),
    ("SELECT COUNT(*) FROM census WHERE LOWER(region) = 'n'", "function"),
    ("SELECT COUNT(*) FROM census WHERE age = income", "another column"),
    ("SELECT COUNT(*) FROM census WHERE age IS NULL", "IS [NOT] NULL"),
    ("SELECT COUNT(*) FROM census WHERE region LIKE 'N%'", "LIKE"),
    ("SELECT COUNT(*) FROM census WHERE region = 1", "holds text"),
    ("SELECT COUNT(*) FROM census WHERE age = '1'", "numeric"),
    ("SELECT COUNT(*) FROM census WHERE person_id = 1", "'person_id' is not declared"),
    ("SELECT COUNT(*) FROM census WHERE age > 1 + 1", "ADD"),
    ("SELECT COUNT(*) FROM census WHERE TRUE", "not supported in WHERE"),
    ("SELECT COUNT(*) FROM census GROUP BY age", "declared domain"),
    ("SELECT COUNT(*) FROM census GROUP BY 1", "must be a column"),
    ("SELECT COUNT(*) AS a, SUM(age) AS a FROM census", "same name"),
    ("SELECT region FROM census GROUP BY region", "at least one aggregate"),
    ("SELECT COUNT(*) FROM other", "Unknown table 'other'"),
    ("SELECT COUNT(*) FROM main.census", "Schema-qualified"),
    ("SELECT COUNT(*) FROM census WHERE other.age > 1", "qualifier"),
    ("SELECT COUNT(*) FROM census WHERE age > 1e999", "not finite"),
    ("SELECT COUNT(*) FROM read_csv('/etc/passwd')", "FROM must name one table"),
    ("COPY census TO '/tmp/x'", "Only SELECT"),
    ("", "empty"),
    ("SELECT COUNT(*) FROM census WHERE 'abc", "cannot be"),
])
def test_everything_else_is_refused_naming_what(config, sql, culprit):
    with pytest.raises(UnsupportedQuery) as info:
        parse(sql, config)
    assert culprit in str(info.value)


def test_quantiles_parse_with_their_level(config):
    q = parse("SELECT MEDIAN(income), QUANTILE_CONT(age, 0.9) AS p90, QUANTILE(age, 0.25) FROM census", config)
    assert [(o.kind, o.column, o.label, o.q) for o in q.outputs] == [
        ("quantile", "income", "median_income", 0.5), ("quantile", "age", "p90", 0.9),
        ("quantile", "age", "q0.25_age", 0.25)]


def test_very_long_or_deep_sql_is_refused(config):
    with pytest.raises(UnsupportedQuery, match="longer than"):
        parse("SELECT COUNT(*) FROM census WHERE " + " OR ".join(["age = 1"] * 2000), config)
    deep = "SELECT COUNT(*) FROM census WHERE " + "NOT (" * 80 + "age = 1" + ")" * 80
    with pytest.raises(UnsupportedQuery, match="nested|cannot be parsed"):
        parse(deep, config)


# ------------------------------------------------------------------ generated SQL
def test_generated_sql_binds_every_value_and_quotes_configured_names(config):
    t = config.tables["census"]
    q = parse("SELECT region, SUM(income) FROM census WHERE region IN ('N', 'x''; DROP TABLE census; --') "
              "AND age BETWEEN 1 AND 2 GROUP BY region", config)
    g = aggregate_sql(q, t, "dp")
    # 'N' is the domain's value 0: compared on the code; the other string is outside the domain
    where = ('WHERE (("__sdc_code_region" IN (?)) OR ("region" IN (?))) AND ("age" BETWEEN ? AND ?)')
    assert g.sql == ('SELECT COUNT(*) AS "n", SUM("__sdc_clamp_income") AS "s0", "__sdc_code_region" AS "g0" '
                     f'FROM "sdc_dp_census" {where} GROUP BY "__sdc_code_region"')
    assert g.params == (0, "x'; DROP TABLE census; --", 1, 2)
    r = aggregate_sql(q, t, "restricted")
    assert r.sql.startswith('SELECT COUNT(*) AS "n", SUM("income") AS "s0", "__sdc_code_region" AS "g0" FROM "sdc_census" ')
    m = membership_sql(q, t)
    assert m.sql == f'SELECT "__sdc_row", "__sdc_code_region" AS "g0" FROM "sdc_census" {where}'


_COLUMNS = {"income": "num", "age": "num", "region": "text", "code": "num"}
_ALLOWED_IDENTIFIERS = {"income", "age", "region", "code", "sdc_dp_census", "sdc_census", "__sdc_row",
                        "__sdc_code_region", "__sdc_code_code", "__sdc_clamp_income", "__sdc_clamp_age",
                        "n", "s0", "g0", "q0", "d0"}
_ALLOWED_WORDS = {"SELECT", "FROM", "WHERE", "GROUP", "BY", "AND", "OR", "NOT", "IN", "BETWEEN", "COUNT", "SUM",
                  "LEAST", "GREATEST", "COALESCE", "CAST", "AS", "DOUBLE", "DISTINCT"}

_text = st.text(alphabet=st.sampled_from(list("abN S'\";-/*\\()=%_xyz0 \t\nDROPTABLE")), max_size=12)
_number = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: round(v, 3)))


def _case(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.upper(), name.capitalize(), f'"{name}"'])


def _literal(kind: str):
    if kind == "text":
        return _text.map(lambda s: ("'" + s.replace("'", "''") + "'", s))
    return _number.map(lambda v: (repr(v), v))


@st.composite
def _atom(draw):
    column = draw(st.sampled_from(["income", "age", "region"]))
    kind = _COLUMNS[column]
    name = draw(_case(column))
    form = draw(st.sampled_from(["cmp", "in", "between"]))
    if form == "cmp":
        text, value = draw(_literal(kind))
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        return f"{name} {op} {text}", [value]
    if form == "in":
        items = draw(st.lists(_literal(kind), min_size=1, max_size=4))
        return f"{name} IN ({', '.join(t for t, _ in items)})", [v for _, v in items]
    (a, va), (b, vb) = draw(_literal(kind)), draw(_literal(kind))
    return f"{name} BETWEEN {a} AND {b}", [va, vb]


@st.composite
def _predicate(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        return draw(_atom())
    form = draw(st.sampled_from(["and", "or", "not"]))
    if form == "not":
        text, values = draw(_predicate(depth + 1))
        return f"NOT ({text})", values
    (a, va), (b, vb) = draw(_predicate(depth + 1)), draw(_predicate(depth + 1))
    return f"({a}) {form.upper()} ({b})", va + vb


@given(pred=_predicate(), alias=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
       agg=st.sampled_from(["COUNT(*)", "SUM(income)", "AVG(age)", "VAR_POP(income)", "STDDEV_POP(age)",
                            "COUNT(DISTINCT region)"]), grouped=st.booleans())
@settings(max_examples=150, deadline=None)
def test_generated_sql_never_contains_analyst_text(config, pred, alias, agg, grouped):
    """Whatever the analyst writes, the generated statement holds only sdckit's keywords, the
    configured (quoted) names, the configured bounds and ``?``; every value is a parameter."""
    text, values = pred
    sql = f"SELECT {'region, ' if grouped else ''}{agg} AS {alias} FROM census WHERE {text}"
    if grouped:
        sql += " GROUP BY region"
    q = parse(sql, config)
    t = config.tables["census"]
    for g in (aggregate_sql(q, t, "dp"), aggregate_sql(q, t, "restricted"), membership_sql(q, t)):
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(g.sql)
        for tok in tokens:
            assert tok.token_type != TokenType.STRING, g.sql
            if tok.token_type == TokenType.IDENTIFIER:  # quoted
                assert tok.text in _ALLOWED_IDENTIFIERS, tok.text
            elif tok.token_type == TokenType.NUMBER:
                raise AssertionError(f"a number in the generated SQL: {tok.text}")
            elif tok.text.isalpha():
                assert tok.text.upper() in _ALLOWED_WORDS, tok.text
        assert g.sql.count("?") == len(g.params)
    # every value the analyst wrote is a parameter (a domain string may be its code), and nothing else is
    domain = {v: i for i, v in enumerate(t.domains["region"])}
    params = [repr(p) for p in membership_sql(q, t).params]
    codes = {repr(domain[v]) for v in values if isinstance(v, str) and v in domain}
    assert set(params) <= {repr(v) for v in values} | codes
    for v in values:
        assert repr(v) in params or (isinstance(v, str) and v in domain and repr(domain[v]) in params)
