"""Exact sums of squared deviations (sdckit.query.squares, issue 32): on values where a double sum
of squares loses precision, the scan and the cube both give the exact integer sum rounded once
(hand-computed with Python integers), the LEAST cap kept exactly; values off a grid keep the
double sum and the scan."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from sdckit.query import noisy
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import dp_table
from sdckit.query.generate import aggregate_sql, midpoint_sensitivity, square_cap
from sdckit.query.sql import parse
from sdckit.query.squares import Scaling, grid_bits, scaling

CONFIG = """[service]
state = "state.db"
[[table]]
name = "t"
path = "t.csv"
[table.bounds]
huge = [0, 2000000000000000]
fine = [0, 1099511627776]
capped = [0, 134217729]
frac = [0, 1]
[table.domains]
g = [1, 2]
"""
HUGE = [1, 3, 7, 1821623345252217, 1922666461361040, 566516099713017, 477873548765231, 80468818484178]
FINE = [Fraction(k, 1024) for k in (1, 3, 634004877786053, 695712783021117, 1094651655346339, 5, 1023, 990357832518683)]
CAPPED = [0, 134217729, 5, 134217729, 0, 67108864, 67108865, 1]
G = [1, 2, 1, 1, 2, 2, 1, 2]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("squares")
    pd.DataFrame({"huge": HUGE, "fine": [float(v) for v in FINE], "capped": CAPPED, "frac": [0.1] * 8,
                  "g": G}).to_csv(folder / "t.csv", index=False)
    (folder / "service.toml").write_text(CONFIG, encoding="utf-8")
    database = Database(load_config(folder / "service.toml"))
    yield database
    database.close()


def _largest_double_at_most(x: Fraction) -> Fraction:
    d = float(x)
    return Fraction(d) if Fraction(d) <= x else Fraction(math.nextafter(d, 0.0))


def _hand(values: list, lo: int, hi: int, rows: list[int]) -> float:
    """SUM(LEAST((x - m)**2, cap)) over ``rows``, in exact arithmetic, rounded once."""
    m = Fraction(lo + hi, 2)
    cap = _largest_double_at_most((Fraction(hi - lo, 2)) ** 2)
    return float(sum(min((Fraction(values[i]) - m) ** 2, cap) for i in rows))


def _both(db: Database, sql: str):
    table = db.config.tables["t"]
    query = parse(sql, db.config)
    plan = noisy.plan(query, table, Fraction(1))
    scan = noisy.exact_cells(plan, table, db.aggregate(aggregate_sql(query, table, "dp")))[1]
    assert db.moments["t"].covers(query), sql
    cube = db.moments["t"].cells(query, len(plan.cells))[1]
    return scan, cube


@pytest.mark.parametrize("column, values, lo, hi", [("huge", HUGE, 0, 2 * 10**15), ("fine", FINE, 0, 2**40),
                                                    ("capped", CAPPED, 0, 2**27 + 1)])
def test_scan_and_cube_give_the_exact_sum_rounded_once(db, column, values, lo, hi):
    key = noisy.square_key(column)
    everyone = list(range(8))
    expected = _hand(values, lo, hi, everyone)
    terms = [(float(v) - (lo + hi) / 2) ** 2 for v in values]  # the double terms (no value at a bound)
    if column != "capped":  # a double sum of them is not the exact sum (in any of these orders)
        assert sum(terms) != expected and sum(reversed(terms)) != expected and sum(sorted(terms)) != expected
    scan, cube = _both(db, f"SELECT VAR_POP({column}) FROM t")
    assert scan[key].tolist() == cube[key].tolist() == [expected]
    scan, cube = _both(db, f"SELECT g, STDDEV_POP({column}) FROM t WHERE g <> 3 GROUP BY g")
    by_group = [_hand(values, lo, hi, [i for i in everyone if G[i] == g]) for g in (1, 2)]
    assert scan[key].tolist() == cube[key].tolist() == by_group


def test_the_cap_is_kept_exactly_as_an_integer(db):
    """[0, 2**27 + 1]: a**2 = (2**27 + 1)**2 / 4 is not a double; cap = 2**52 + 2**26 < a**2, and a
    value at a bound counts cap, not a**2 (4 C = 2**54 + 2**28 < (2**27 + 1)**2)."""
    cap = square_cap(0.0, 2.0**27 + 1)
    assert cap == 2**52 + 2**26
    found = scaling(0.0, 2.0**27 + 1, midpoint_sensitivity(0.0, 2.0**27 + 1, 1)[0], cap, 0)
    assert found == Scaling(0, 2**27 + 1, 2**54 + 2**28, "BIGINT")
    scan, cube = _both(db, "SELECT VAR_POP(capped) FROM t WHERE g = 2")  # rows 1, 4, 5, 7: 134217729, 0, 67108864, 1
    m = Fraction(2**27 + 1, 2)
    expected = float(2 * cap + (67108864 - m) ** 2 + (1 - m) ** 2)
    assert scan[noisy.square_key("capped")].tolist() == cube[noisy.square_key("capped")].tolist() == [expected]


def test_grid_bits_the_rule_and_the_overflow_bound(db):
    table = db.config.tables["t"]
    assert table.square_bits == {"huge": 0, "fine": 10, "capped": 0}  # frac: 0.1 is on no grid
    caps = {c: (midpoint_sensitivity(lo, hi, 1)[0], square_cap(lo, hi)) for c, (lo, hi) in table.bounds.items()}
    assert "huge" not in grid_bits(db._con, table, 2**40, caps)  # 2**40 rows x C ~ 2**102 >= 2**126
    assert scaling(0.0, 2e5, 1e5, 1e10, 0) == Scaling(0, 200000, 4 * 10**10, "BIGINT")
    assert scaling(0.0, 2.0**40, 2.0**39, 2.0**78, 0).sql_type == "HUGEINT"
    assert scaling(0.0, 2.0**63, 2.0**62, 2.0**124, 0) is None  # (2 a)**2 = 2**126: could overflow
    assert scaling(0.1, 1.0, 0.55, 0.2025, 10) is None  # the midpoint is on no grid


def test_values_off_the_grid_keep_the_double_sum_and_the_scan(db):
    table = db.config.tables["t"]
    query = parse("SELECT VAR_POP(frac) FROM t", db.config)
    assert not db.moments["t"].covers(query)
    generated = aggregate_sql(query, table, "dp")
    assert "VARCHAR" not in generated.sql and "TEXT" not in generated.sql
    plan = noisy.plan(query, table, Fraction(1))
    got = noisy.exact_cells(plan, table, db.aggregate(generated))[1][noisy.square_key("frac")]
    assert got.tolist() == pytest.approx([8 * (0.1 - 0.5) ** 2], rel=1e-12)
    assert np.asarray(got).dtype == float
    derived = parse("SELECT VAR_POP(capped * 2) FROM t", db.config)  # a derived value: the double sum too
    assert "TEXT" not in aggregate_sql(derived, dp_table(derived, table), "dp").sql
