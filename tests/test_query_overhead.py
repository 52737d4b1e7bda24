"""The query service's per-query work done once (issue 32, latency): a parsed query's ledger text
and stored-answer key computed once per parsed query, the same texts and keys as before;
memoised mechanisms; :func:`sdckit.core.result.plain`'s leaves first. Each checked against the
formula it replaces, written out here."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from sdckit.core.errors import ParameterError
from sdckit.core.result import plain
from sdckit.dp.mechanisms import Geometric, geometric
from sdckit.query.bodyfields import ROWS_FIELD
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.keys import Selection
from sdckit.query.service import Service
from sdckit.query.sql import parse
from query_helpers import make_data, write_config

QUERIES = [
    "SELECT COUNT(*) FROM census",
    "SELECT grp, COUNT(*), SUM(income) FROM census WHERE age > 30 AND region <> 'S' GROUP BY grp",
    "SELECT AVG(income), VAR_POP(income) FROM census WHERE age BETWEEN 20 AND 40 OR region IN ('N', 'E')",
    "SELECT MEDIAN(income) AS m FROM census WHERE NOT (age < 18)",
]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("overhead")
    make_data(folder)
    svc = Service(write_config(folder, seed=True, cache=False))
    yield svc.config
    svc.close()


def old_cache_key(mode, query, epsilon, rows=None, groups=None) -> str:
    """The stored answers' key as it was computed before (the oracle: stored keys must still match)."""
    fields = {"mode": mode, "query": query.to_dict(), "epsilon": str(epsilon)}
    if rows is not None:
        fields[ROWS_FIELD] = rows
    if groups is not None:
        fields["groups"] = [groups.groups, groups.rows]
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("sql", QUERIES)
def test_cache_key_and_ledger_text_are_unchanged(config, sql):
    query = parse(sql, config)
    assert query.ledger_text == json.dumps(query.to_dict())
    assert query.ledger_text is query.ledger_text  # computed once
    groups = GroupBounds(2, 1, 2)
    for mode, loss, rows, grp in (("dp", Fraction(1, 10), None, None), ("zcdp", (("rho", Fraction(1, 2)),), 2, None),
                                  ("approx", (("delta", Fraction(1, 10**6)), ("epsilon", Fraction(1))), 3, groups),
                                  ("restricted", None, None, None), ("bounds:pure", (("epsilon", Fraction(1)),), 1, None)):
        assert Service._cache_key(mode, query, loss, rows, grp) == old_cache_key(mode, query, loss, rows, grp)


def test_plain_leaves_first_give_the_same_values():
    class Text(str):
        pass

    class Colour(enum.Enum):
        RED = "red"

    values = {"s": "a", "i": 3, "b": True, "n": None, "f": 1.5, "nan": float("nan"), "inf": -math.inf,
              "np": np.int64(4), "npf": np.float64("nan"), "sub": Text("x"), "fr": Fraction(1, 3),
              "enum": Colour.RED, "date": datetime.date(2020, 1, 2), "t": (1, [2.0, None])}
    assert plain(values) == {"s": "a", "i": 3, "b": True, "n": None, "f": 1.5, "nan": None, "inf": None, "np": 4,
                             "npf": None, "sub": "x", "fr": "1/3", "enum": "red", "date": "2020-01-02",
                             "t": [1, [2.0, None]]}
    assert type(plain(True)) is bool and type(plain(np.int64(4))) is int


def test_memoised_geometric_is_the_validated_frozen_mechanism():
    g = geometric(0.5, 2)
    assert g is geometric(0.5, 2) and g == Geometric(epsilon=0.5, sensitivity=2)
    assert g.scale_numerator() == math.ceil(Fraction(2) * 2**20 / Fraction(0.5))
    assert geometric(1, 1) is not geometric(1.0, 1)  # typed: an int is not shared with a float
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 1.0  # type: ignore[misc]
    for bad in ((0.0, 1), (-1.0, 1), (1.0, 0), (float("nan"), 1)):
        with pytest.raises(ParameterError):
            geometric(*bad)
    with pytest.raises(ParameterError):  # still refused when asked again (a refusal is not memoised)
        geometric(0.0, 1)


def test_memoised_selection_is_the_same_frozen_selection():
    s = Selection.make(0.25, Fraction(1, 10**6), 1)
    assert Selection.make(0.25, Fraction(1, 10**6), 1) is s
    assert s.scale == Fraction(geometric(0.25, 1).scale_numerator(), 2**20)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tau = 1  # type: ignore[misc]


def test_analyst_rows_read_the_same_exact_budget():
    """The memoised Fraction of a stored text: the same exact values, the tables as a tuple."""
    from sdckit.query.analysts import analyst_from_row

    row = ("ana", "dp", "3", "1/1000000", "123/1000", '["census", "visits"]', "approx", "1/3000000", None, "0")
    for _ in range(2):
        a = analyst_from_row(row)
        assert (a.epsilon_total, a.delta_total, a.epsilon_spent, a.delta_spent) == (
            Fraction(3), Fraction(1, 10**6), Fraction(123, 1000), Fraction(1, 3 * 10**6))
        assert a.rho_total is None and a.rho_spent == 0 and a.tables == ("census", "visits")
        assert a.epsilon_remaining == Fraction(3) - Fraction(123, 1000)
    assert analyst_from_row(("r", "restricted", None, None, "0", "*", "pure", "0", None, "0")).tables is None


def test_laplace_measurement_scale_is_computed_once_and_exact():
    """An (epsilon, delta) plan's pure-epsilon measurement: its scale is the sampler's actual scale
    (the geometric's numerator over 2**20 for a count; grid times steps for a sum), computed once."""
    from sdckit.dp.mechanisms import grid_scale
    from sdckit.query.noisy_gaussian import LaplaceMeasurement

    count = LaplaceMeasurement(2.0, 0.25, True)
    assert count.scale == geometric(0.25, 2).scale_numerator() / 2**20 and count.scale is count.scale
    total = LaplaceMeasurement(100_000.0, 0.25, False)
    grid, steps = grid_scale(np.asarray(100_000.0), 0.25)
    assert total.scale == float(steps) * float(grid) >= 100_000.0 / 0.25
    assert total.sigma == math.sqrt(2.0) * total.scale and "scale" in vars(total)
