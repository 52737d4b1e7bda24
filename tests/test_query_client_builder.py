"""The client's query builder (issue 32 item 5): ``Client.count/sum/avg/median/quantile`` write
the SQL the service accepts, hand-checked here; values stay literals whatever they hold; and a
real server answers them as it answers the same raw SQL, charging exactly the epsilon given."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from query_helpers import Server, add_analyst, make_data, write_config
from sdckit.core.errors import ParameterError
from sdckit.query.builder import select_sql
from sdckit.query.client import Client, QueryError
from sdckit.query.config import load_config
from sdckit.query.sql import And, Between, Compare, InList, Or, Query, parse
from sdckit.query.state import State

INJECTION = "N' OR 1=1 --"


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("builder")
    make_data(folder)
    return load_config(write_config(folder))


# ------------------------------------------------------------------ the SQL, worked by hand
@pytest.mark.parametrize("args, kwargs, expected", [
    (("census", "count"), {}, 'SELECT COUNT(*) FROM "census"'),
    (("census", "count"), {"by": ["region"], "where": {"age": (18, 65), "region": ["N", "S"]}},
     'SELECT "region", COUNT(*) FROM "census" WHERE "age" BETWEEN 18 AND 65 AND "region" IN (\'N\', \'S\') '
     'GROUP BY "region"'),
    (("census", "sum", "income"), {"where": "age > 30 OR region = 'N'", "by": "region"},
     'SELECT "region", SUM("income") FROM "census" WHERE (age > 30 OR region = \'N\') GROUP BY "region"'),
    (("census", "avg", "income"), {"where": [{"age": (None, 64.5)}, "grp < 10"], "by": ["region", "grp"],
                                   "name": "mean_income"},
     'SELECT "region", "grp", AVG("income") AS "mean_income" FROM "census" WHERE "age" <= 64.5 AND (grp < 10) '
     'GROUP BY "region", "grp"'),
    (("census", "count"), {"where": {"region": INJECTION, "age": (-3, None)}},
     'SELECT COUNT(*) FROM "census" WHERE "region" = \'N\'\' OR 1=1 --\' AND "age" >= -3'),
    (("census", "median", "income"), {"where": {"grp": 7}}, 'SELECT MEDIAN("income") FROM "census" WHERE "grp" = 7'),
    (("census", "quantile", "income"), {"q": 0.9, "by": ["region"]},
     'SELECT "region", QUANTILE_CONT("income", 0.9) FROM "census" GROUP BY "region"'),
    (("census", "min", "income"), {"by": "region"}, 'SELECT "region", MIN("income") FROM "census" GROUP BY "region"'),
    (("census", "max", "age"), {"name": "top"}, 'SELECT MAX("age") AS "top" FROM "census"'),
    (("census", "bounds", "income"), {"where": {"age": (18, None)}},
     'SELECT BOUNDS("income") FROM "census" WHERE "age" >= 18'),
])
def test_the_sql_written_by_hand(args, kwargs, expected, config):
    text = select_sql(*args, **kwargs)
    assert text == expected
    parse(text, config)  # and the service's parser accepts it


def test_the_sql_means_what_the_arguments_say(config):
    query = parse(select_sql("census", "sum", "income", by=["region"],
                             where=[{"age": (18, 65), "region": ["N", INJECTION]}, "grp < 10 OR grp > 190"]), config)
    assert query == Query("census", query.outputs, And((And((Between("age", 18, 65), InList("region", ("N", INJECTION)))),
                                                         Or((Compare("grp", "<", 10), Compare("grp", ">", 190))))),
                          ("region",))
    assert [(o.kind, o.column, o.label) for o in query.outputs] == [("group", "region", "region"),
                                                                    ("sum", "income", "sum_income")]


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_any_string_value_stays_one_literal(config, value):
    """Whatever a value holds (quotes, OR 1=1, comment marks, ';'), it is the one literal compared."""
    query = parse(select_sql("census", "count", where={"region": [value, "x"], "age": (0, 9)}), config)
    assert query.where == And((InList("region", (value, "x")), Between("age", 0, 9)))


@pytest.mark.parametrize("where", [
    "region = 'N') OR (1=1", "age > 3) GROUP BY (region", "1=1; SELECT 1", "age > 3 -- the rest",
    "age > 3 /* x */", "region = 'N", "(age > 3", "age > 3]", "",
])
def test_a_condition_string_cannot_leave_its_parentheses(where):
    with pytest.raises(ParameterError, match="'where' of select_sql"):
        select_sql("census", "count", where=where)


# ------------------------------------------------------------------ bad arguments: one line, nothing sent
@pytest.mark.parametrize("call, match", [
    (lambda c: c.count("census", where=3, epsilon=1), "'where' of Client.count must be a dict"),
    (lambda c: c.count("census", where={"region": {"N"}}, epsilon=1), "give a value, a list of values or a tuple"),
    (lambda c: c.count("census", where={"age": (1, 2, 3)}, epsilon=1), r"tuple \(low, high\)"),
    (lambda c: c.count("census", where={"age": (None, None)}, epsilon=1), r"tuple \(low, high\)"),
    (lambda c: c.count("census", where={"age": (9, 1)}, epsilon=1), "is empty: low 9 > high 1"),
    (lambda c: c.count("census", where={"region": []}, epsilon=1), "is empty: give at least one value"),
    (lambda c: c.count("census", where={"age": float("nan")}, epsilon=1), "string or a finite number"),
    (lambda c: c.count("census", where={"age": True}, epsilon=1), "give a value"),
    (lambda c: c.count("census", where={}, epsilon=1), "holds no condition"),
    (lambda c: c.count("census", by=[], epsilon=1), "'by' of Client.count must be a column name or a non-empty"),
    (lambda c: c.count("census", by=["region", "region"], epsilon=1), "names a column twice"),
    (lambda c: c.count("census", by=["region; DROP"], epsilon=1), "'by' column of Client.count must be a name"),
    (lambda c: c.sum('census" --', "income", epsilon=1), "table of Client.sum must be a name"),
    (lambda c: c.avg("census", "income", where={"a b": 1}, epsilon=1), "'where' column of Client.avg"),
    (lambda c: c.count("census", epsilon=0), "'epsilon' parameter of Client.count must be a finite number > 0"),
    (lambda c: c.sum("census", "income", epsilon=-1), "'epsilon' parameter of Client.sum"),
    (lambda c: c.avg("census", "income", epsilon="0"), "'epsilon' parameter of Client.avg"),
    (lambda c: c.count("census", epsilon=1, delta=1.5), "'delta' parameter of Client.count must be a number in"),
    (lambda c: c.count("census", rho=0), "'rho' parameter"),
    (lambda c: c.quantile("census", "income", 1.0, epsilon=1), "'q' of Client.quantile"),
])
def test_bad_arguments_are_one_line_parameter_errors(call, match):
    with Client("http://127.0.0.1:9", "no-key") as client:  # nothing listens: an error before sending
        with pytest.raises(ParameterError, match=match) as caught:
            call(client)
    assert "\n" not in str(caught.value)


# ------------------------------------------------------------------ a real server
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("builder_server")
    frame = make_data(folder)
    path = write_config(folder)
    keys = {"ana": add_analyst(path, "ana", "dp", "10"), "rita": add_analyst(path, "rita", "restricted")}
    state = State(load_config(path).state)
    keys["zoe"] = state.add_analyst("zoe", "dp", rho="1/2")
    keys["abe"] = state.add_analyst("abe", "dp", "1", "1e-6")
    server = Server(path)
    try:
        yield server.url, keys, frame, load_config(path)
    finally:
        server.stop()


def _spent(client: Client) -> Fraction:
    return Fraction(client.budget()["exact"]["epsilon_spent"])


@pytest.mark.parametrize("builder_first", [True, False])
@pytest.mark.parametrize("call, sql, epsilon, value", [
    (lambda c, e: c.count("census", by=["region"], epsilon=e),
     "SELECT region, COUNT(*) FROM census GROUP BY region", "1/4", "count"),
    (lambda c, e: c.sum("census", "income", where={"age": (18, 65)}, by="region", epsilon=e),
     "SELECT region, SUM(income) FROM census WHERE age BETWEEN 18 AND 65 GROUP BY region", "1/2", "sum_income"),
    (lambda c, e: c.avg("census", "income", where="age >= 30", by=["region"], epsilon=e),
     "SELECT region, AVG(income) FROM census WHERE age >= 30 GROUP BY region", "1/3", "avg_income"),
])
def test_the_builder_answers_as_the_raw_sql_and_charges_epsilon_exactly(served, call, sql, epsilon, value,
                                                                       builder_first):
    """Asked both ways by one analyst, the second answer is the first from the cache (the same
    query), and the one charge is exactly the epsilon asked. Each order uses its own epsilon
    (the cache is keyed by it), so each pair is new to the service."""
    url, keys, _, config = served
    epsilon = str(Fraction(epsilon) / (3 if builder_first else 5))
    with Client(url, keys["ana"]) as client:
        before = _spent(client)
        if builder_first:  # the builder's epsilon a Fraction (sent exactly), the raw query's a string
            built = call(client, Fraction(epsilon))
            raw = client.sql(sql, epsilon=epsilon)
        else:
            raw = client.sql(sql, epsilon=epsilon)
            built = call(client, Fraction(epsilon))
        after = _spent(client)
    assert after - before == Fraction(epsilon)
    first, second = (built, raw) if builder_first else (raw, built)
    assert first.attrs["cached"] is False and second.attrs["cached"] is True
    assert Fraction(first.attrs["exact"]["epsilon_spent"]) == Fraction(epsilon)
    assert list(built.columns) == ["region", value, f"{value}_low", f"{value}_high"]
    assert built[["region", value]].equals(raw)
    assert list(built["region"]) == ["N", "S", "E", "W"]
    assert [[lo, hi] for lo, hi in zip(built[f"{value}_low"], built[f"{value}_high"])] == [row[1] for row in raw.attrs["ci95"]]
    # an interval of the true value: a count's is clipped at 0, so a negative noisy count lies below it
    assert (built[f"{value}_low"] <= built[value].clip(lower=0)).all() and (built[value] <= built[f"{value}_high"]).all()
    assert parse(built.attrs["sql"], config) == parse(sql, config)


def test_injection_attempts_stay_literals_on_the_server(served):
    """A restricted analyst's exact counts: the value with a quote and OR 1=1 matches no row, so
    the count of region N or it is the number of N rows, and alone it is a query set of 0 (refused)."""
    url, keys, frame, _ = served
    with Client(url, keys["rita"]) as client:
        by_region = client.count("census", by=["region"])
        either = client.count("census", where={"region": ["N", INJECTION]})
        with pytest.raises(QueryError, match="query-set-size control") as refused:
            client.count("census", where={"region": "N') OR ('1'='1"})
    truth = frame["region"].value_counts()
    assert list(by_region.columns) == ["region", "count"]  # exact answers: no interval columns
    assert dict(zip(by_region["region"], by_region["count"])) == {r: int(truth[r]) for r in "NSEW"}
    assert either["count"].tolist() == [int(truth["N"])] and either.attrs["sql"].endswith("IN ('N', 'N'' OR 1=1 --')")
    assert refused.value.status == 403


def test_the_builder_sends_rho_and_delta_in_the_analysts_definition(served):
    """A zCDP analyst's count by region at rho 1/8 (variance 4, an integer: charged exactly 1/8);
    an (epsilon, delta) analyst's sum, charged exactly the (epsilon, delta) sent."""
    url, keys, _, _ = served
    with Client(url, keys["zoe"]) as client:
        counted = client.count("census", by=["region"], rho="1/8")
        budget = client.budget()
    assert list(counted.columns) == ["region", "count", "count_low", "count_high"]
    assert Fraction(budget["exact"]["rho_spent"]) == Fraction(1, 8)
    with Client(url, keys["abe"]) as client:
        summed = client.sum("census", "income", where={"region": "S"}, epsilon=0.5, delta=Fraction(1, 10**7))
        budget = client.budget()
    assert list(summed.columns) == ["sum_income", "sum_income_low", "sum_income_high"]
    assert Fraction(budget["exact"]["epsilon_spent"]) == Fraction(1, 2)
    assert Fraction(budget["exact"]["delta_spent"]) == Fraction(1, 10**7)


def test_min_max_and_bounds_from_the_client(served):
    """``Client.min/max`` (the quantiles 0 and 1 over the bounds' grid) and ``Client.bounds`` (found
    under DP) answer in the analyst's definition and charge exactly what they are given."""
    url, keys, _, _ = served
    with Client(url, keys["ana"]) as client:
        before = _spent(client)
        low = client.min("census", "income", by="region", epsilon="1/8")
        high = client.max("census", "age", epsilon="1/8")
        found = client.bounds("census", "income", where={"age": (18, None)}, epsilon="1/4")
        assert _spent(client) - before == Fraction(1, 2)
    assert list(low.columns) == ["region", "min_income"] and low["min_income"].between(0, 200_000).all()
    assert list(high.columns) == ["max_age"] and 0 <= high["max_age"].iloc[0] <= 120
    assert list(found.columns) == ["income_lower_bound", "income_upper_bound"]
    assert found.iloc[0].tolist()[0] <= 0 < found.iloc[0].tolist()[1] and "BOUNDS(income)" in found.attrs["mechanism"]
    with Client(url, keys["zoe"]) as client:
        before = Fraction(client.budget()["exact"]["rho_spent"])
        client.bounds("census", "income", rho="1/8")  # epsilon 1/2 exactly: rho 1/8 charged
        client.median("census", "age", rho="1/32")  # epsilon 1/4 exactly: rho 1/32 charged
        assert Fraction(client.budget()["exact"]["rho_spent"]) - before == Fraction(1, 8) + Fraction(1, 32)
