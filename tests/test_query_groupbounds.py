"""Per-group contribution bounds chosen per query (issue 32; Tumult's ``MaxGroupsPerID`` and
``MaxRowsPerGroupPerID``): ``"max_groups_per_unit": g`` and ``"max_rows_per_group": r`` beside a
dp GROUP BY. Each person keeps at most ``r`` rows per group (her first ones) in her first ``g``
groups (ordered by their first row in file order), after the WHERE and the rank bound ``k'``; the
L1 sensitivity is ``min(g r, k')``, the L2 one ``sqrt(g) r`` when ``g r <= k'``.

Hand-worked table (configured k = 6, v in [0, 10], groups a..d): person 1 has 8 rows, groups
a b a c a d b c, v = 10 except her second row (v = 1); person 2 two rows in a (v = 3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED
from sdckit.query import noisy, noisy_gaussian
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.service import Service
from sdckit.query.sql import parse

K = 6
DOMAIN = ["a", "b", "c", "d"]
HAND = pd.DataFrame({"pid": [1] * 8 + [2] * 2, "v": [10, 1, 10, 10, 10, 10, 10, 10, 3, 3],
                     "g": list("abacadbc") + ["a", "a"]})


def _write(folder, frame: pd.DataFrame = HAND, cache: bool = True, wide: int = 0) -> None:
    frame.to_csv(folder / "t.csv", index=False)
    text = (f'[service]\nstate = "state.db"\ncache = {str(cache).lower()}\nseed = "{SEED}"\n'
            f'[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
            f'[table.bounds]\nv = [0, 10]\n[table.domains]\ng = {DOMAIN}\n'
            f'[[table]]\nname = "keyed"\npath = "t.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
            'keys_from_data = ["g"]\n[table.bounds]\nv = [0, 10]\n'
            '[public_tables.names]\npath = "names.csv"\n')
    pd.DataFrame({"code": DOMAIN, "label": ["A", "B", "C", "D"]}).to_csv(folder / "names.csv", index=False)
    if wide:
        rng = np.random.default_rng(7)
        pd.DataFrame({"pid": rng.integers(0, 50, 300), "h": rng.integers(0, wide, 300)}).to_csv(folder / "w.csv", index=False)
        text += (f'[[table]]\nname = "w"\npath = "w.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
                 f'[table.bounds]\nh = [0, {wide}]\n[table.domains]\nh = {list(range(wide))}\n')
    (folder / "service.toml").write_text(text)


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    _write(folder)
    service = Service(folder / "service.toml")
    yield service
    service.close()


def _key(svc: Service, name: str, mode: str = "dp", **budget) -> str:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # huge test budgets
        return svc.state.add_analyst(name, mode, budget.get("epsilon"), budget.get("delta", 0), None, budget.get("rho"))


def _exact(db: Database, sql: str, rows: int | None, groups: GroupBounds | None) -> tuple[np.ndarray, np.ndarray]:
    t = db.config.tables["t"]
    q = parse(sql, db.config)
    plan = noisy.plan(q, t, Fraction(1), rows, groups)
    counts, sums = noisy.exact_cells(plan, t, db.aggregate(aggregate_sql(q, t, "dp", rows=rows, groups=groups)))
    return np.asarray(counts), np.asarray(sums.get("v", np.zeros(len(counts))))


def oracle(frame: pd.DataFrame, per_unit: int, g: int, r: int, where=None) -> tuple[np.ndarray, np.ndarray]:
    """The rule in pandas: the dp relation (each person's first K rows, file order), rank <= k',
    the WHERE, then <= r rows per (person, group), then the person's first g groups by first row."""
    f = frame.reset_index(drop=True).assign(row=lambda x: np.arange(len(x)))
    f = f[f.groupby("pid").cumcount() < min(K, per_unit)]
    if where is not None:
        f = f[where(f)]
    f = f[f.groupby(["pid", "g"]).cumcount() < r]
    first = f.groupby(["pid", "g"])["row"].transform("min")
    f = f[first.groupby(f["pid"]).rank(method="dense") <= g]
    counts = f.groupby("g").size().reindex(DOMAIN, fill_value=0).to_numpy()
    sums = f.assign(c=f["v"].clip(0, 10)).groupby("g")["c"].sum().reindex(DOMAIN, fill_value=0).to_numpy(dtype=float)
    return counts, sums


# ------------------------------------------------------------------ the bounds' arithmetic
@pytest.mark.parametrize("g, r, k, l1, l2sq", [(2, 3, 6, 6, 18), (1, 1, 6, 1, 1), (3, 2, 6, 6, 12), (4, 4, 6, 6, 20),
                                               (6, 6, 6, 6, 36), (3, 1, 2, 2, 2), (2, 4, 5, 5, 17)])
def test_the_sensitivities_by_hand(g, r, k, l1, l2sq):
    """L1 min(g r, k'); L2^2 the most sum of squares of <= g groups of <= r rows, <= k' rows in all
    (4, 4, 6: 4^2 + 2^2; 2, 4, 5: 4^2 + 1^2)."""
    b = GroupBounds(g, r, k)
    assert (b.l1, b.l2_squared) == (l1, l2sq)
    assert b.l2_times(10.0) >= 10 * math.sqrt(l2sq) and Fraction(b.l2_times(10.0)) ** 2 >= 100 * l2sq


# ------------------------------------------------------------------ hand-worked and oracle answers
def test_hand_worked_truncation(svc):
    """g = 2, r = 2: person 1's first six rows a b a c a d keep a (rows 1, 3), b (row 2); person 2
    keeps a, a: COUNT a 4, b 1, c 0, d 0; SUM 10+10+3+3 = 26, 1. With WHERE v >= 5 (her b row and
    person 2 gone first) she keeps a, a, c: a 2, c 1 — the truncation comes after the WHERE."""
    db = svc.db
    counts, sums = _exact(db, "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", None, GroupBounds(2, 2, K))
    assert counts.tolist() == [4, 1, 0, 0] and sums.tolist() == [26, 1, 0, 0]
    counts, _ = _exact(db, "SELECT g, COUNT(*) FROM t WHERE v >= 5 GROUP BY g", None, GroupBounds(2, 2, K))
    assert counts.tolist() == [2, 0, 1, 0]
    counts, _ = _exact(db, "SELECT g, COUNT(*) FROM t GROUP BY g", 2, GroupBounds(1, 1, 2))  # k' = 2: rows a b
    assert counts.tolist() == [2, 0, 0, 0]
    counts, _ = _exact(db, "SELECT g, COUNT(*) FROM t GROUP BY g", None, None)  # no group bounds: her first six
    assert counts.tolist() == [5, 1, 1, 1]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_answers_equal_the_pandas_oracle(tmp_path, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"pid": rng.integers(0, 12, 90), "v": rng.integers(0, 15, 90), "g": rng.choice(DOMAIN, 90)})
    _write(tmp_path, frame)
    db = Database(load_config(tmp_path / "service.toml"))
    try:
        for per_unit, g, r in ((K, 2, 3), (K, 1, 1), (K, 3, 2), (4, 2, 2), (3, 4, 6), (K, K, K)):
            rows = None if per_unit == K else per_unit
            for sql, where in (("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", None),
                               ("SELECT g, COUNT(*), SUM(v) FROM t WHERE v >= 5 GROUP BY g", lambda f: f["v"] >= 5)):
                counts, sums = _exact(db, sql, rows, GroupBounds(g, r, per_unit))
                want_counts, want_sums = oracle(frame, per_unit, g, r, where)
                assert counts.tolist() == want_counts.tolist(), (per_unit, g, r, sql)
                assert sums.tolist() == pytest.approx(want_sums.tolist())
    finally:
        db.close()


# ------------------------------------------------------------------ the attack: neighbouring tables
@pytest.mark.parametrize("seed", [3, 4])
def test_a_person_in_many_groups_moves_the_answer_by_at_most_the_bounds(tmp_path, seed):
    """Person 0 has 12 rows (3 in each group) anywhere in the file. The exact COUNT vector with and
    without her moves by at most g r in L1 and sqrt(g) r in L2 (the plan's sensitivities), the SUM
    vector by 10 times that; the difference is exactly her own kept rows (the oracle on her rows
    alone): nobody else's rows are kept or dropped because of her."""
    rng = np.random.default_rng(seed)
    others = pd.DataFrame({"pid": rng.integers(1, 20, 80), "v": rng.integers(0, 15, 80), "g": rng.choice(DOMAIN, 80)})
    person = pd.DataFrame({"pid": [0] * 12, "v": [10] * 12, "g": list("abcd" * 3)})
    frame = pd.concat([person, others]).sample(frac=1.0, random_state=seed)
    exact = {}
    for name, data in (("with", frame), ("without", frame[frame.pid != 0])):
        folder = tmp_path / name
        folder.mkdir()
        _write(folder, data)
        db = Database(load_config(folder / "service.toml"))
        q = parse("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", db.config)
        for g, r in ((1, 1), (2, 1), (2, 2), (3, 2), (2, 3), (4, 1), (K, K)):
            exact[name, g, r] = _exact(db, "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", None, GroupBounds(g, r, K))
            # the service answers from the row store (sdckit.query.rowstore): the attack holds there too
            stored = db.fast_cells(q, len(DOMAIN), None, GroupBounds(g, r, K))
            assert stored is not None and stored[0].tolist() == exact[name, g, r][0].tolist()
            assert stored[1]["v"].tolist() == exact[name, g, r][1].tolist()
        t = db.config.tables["t"]
        pure = noisy.plan(q, t, Fraction(1), None, GroupBounds(2, 3, K))
        gauss = noisy_gaussian.plan(q, t, "zcdp", rho=Fraction(1, 2), groups=GroupBounds(2, 3, K))
        db.close()
    assert pure.sensitivities == {"count": 6.0, "v": 60.0}
    assert gauss.measurements["count"].sensitivity == pytest.approx(3 * math.sqrt(2))
    assert gauss.measurements["v"].sensitivity == pytest.approx(30 * math.sqrt(2))
    her = frame[frame.pid == 0]  # her rows in their file order
    for g, r in ((1, 1), (2, 1), (2, 2), (3, 2), (2, 3), (4, 1), (K, K)):
        (c1, s1), (c0, s0) = exact["with", g, r], exact["without", g, r]
        bound = GroupBounds(g, r, K)
        assert np.abs(c1 - c0).sum() <= min(g * r, K) == bound.l1
        assert math.sqrt(((c1 - c0) ** 2).sum()) <= math.sqrt(g) * r + 1e-12
        assert ((c1 - c0) ** 2).sum() <= bound.l2_squared
        assert np.abs(s1 - s0).sum() <= 10 * bound.l1 + 1e-9
        assert (c1 - c0).tolist() == oracle(her, K, g, r)[0].tolist()
    # a group has 3 of her rows, so her first six rows span >= 2 groups: g = 2, r = 1 reaches its bound 2
    (c1, _), (c0, _) = exact["with", 2, 1], exact["without", 2, 1]
    assert np.abs(c1 - c0).sum() == 2


# ------------------------------------------------------------------ the Gaussian noise scale
def test_the_gaussian_noise_has_the_stated_sigma_from_sqrt_g_times_r(tmp_path):
    """rho-zCDP, rho 1/2 for one COUNT over 400 groups, g = 2, r = 3 (k = 6): L2 sensitivity
    sqrt(18), variance 18/(2 rho) = 18, sigma sqrt(18) = 4.24 (6 without the group bounds). Ten
    answers (4,000 noise draws): the sample variance within 5 standard errors (18 sqrt(2/n) ~ 0.4)
    of 18, the mean within 5 sigma/sqrt(n) of 0; rho charged exactly 10 x 1/2."""
    _write(tmp_path, cache=False, wide=400)
    svc = Service(tmp_path / "service.toml")
    try:
        key = _key(svc, "gauss", rho="100")
        sql = "SELECT h, COUNT(*) FROM w GROUP BY h"
        q = parse(sql, svc.config)
        t = svc.config.tables["w"]
        bounds = GroupBounds(2, 3, K)
        plan = noisy_gaussian.plan(q, t, "zcdp", rho=Fraction(1, 2), groups=bounds)
        truth = noisy.exact_cells(plan, t, svc.db.aggregate(aggregate_sql(q, t, "dp", groups=bounds)))[0]
        noise = []
        for _ in range(10):
            status, body = svc.query(key, {"sql": sql, "rho": "1/2", "max_groups_per_unit": 2, "max_rows_per_group": 3})
            assert status == 200, body
            assert body["noise_scale"][1]["sigma"] == pytest.approx(math.sqrt(18), rel=1e-12)
            assert body["group_bounds"]["l2"] == pytest.approx(3 * math.sqrt(2))
            noise.extend(np.array([row[1] for row in body["rows"]]) - truth)
        noise = np.asarray(noise, dtype=float)
        n = len(noise)
        assert abs(noise.var() - 18) <= 5 * 18 * math.sqrt(2 / n)
        assert abs(noise.mean()) <= 5 * math.sqrt(18 / n)
        assert svc.state.analyst("gauss").rho_spent == 5
        status, body = svc.query(key, {"sql": sql, "rho": "1/2"})
        assert body["noise_scale"][1]["sigma"] == pytest.approx(6.0)  # per person only: L2 k = 6
    finally:
        svc.close()


# ------------------------------------------------------------------ the service: answers, charges, cache
def test_the_answer_states_the_bounds_and_the_charge_is_exact(svc):
    key = _key(svc, "pure", epsilon="10")
    body = {"sql": "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g", "epsilon": "1/3", "max_groups_per_unit": 2,
            "max_rows_per_group": 3}
    status, first = svc.query(key, body)
    assert status == 200, first
    assert (first["max_groups_per_unit"], first["max_rows_per_group"], first["max_rows_per_unit"]) == (2, 3, K)
    assert "at most 2 group(s)" in first["mechanism"] and "L1 sensitivity factor 6" in first["mechanism"]
    assert first["noise_scale"][1] == pytest.approx(6 / (1 / 6), rel=1e-5)  # geometric scale g r / epsilon_share
    assert svc.state.analyst("pure").epsilon_spent == Fraction(1, 3)
    status, again = svc.query(key, body)
    assert again["cached"] and again["rows"] == first["rows"]
    status, other = svc.query(key, {**body, "max_rows_per_group": 1})
    assert not other["cached"] and other["group_bounds"]["l1"] == 2
    status, plain = svc.query(key, {k: v for k, v in body.items() if not k.startswith("max_")})
    assert not plain["cached"] and "group_bounds" not in plain
    assert svc.state.analyst("pure").epsilon_spent == 1
    assert len(svc.state.ledger("pure")) == 3
    approx = _key(svc, "approx", epsilon="1", delta="1/1000")
    status, answer = svc.query(approx, {**body, "epsilon": "1/2", "delta": "1/10000"})
    assert status == 200 and Fraction(answer["exact"]["epsilon_spent"]) == Fraction(1, 2)
    assert Fraction(answer["exact"]["delta_spent"]) == Fraction(1, 10000)
    assert svc.state.analyst("approx").epsilon_spent == Fraction(1, 2)


def test_quantiles_and_bins_are_truncated_too(svc):
    key = _key(svc, "quant", epsilon="100000")
    status, body = svc.query(key, {"sql": "SELECT g, MEDIAN(v) FROM t GROUP BY g", "epsilon": 10000,
                                   "max_groups_per_unit": 1, "max_rows_per_group": 1})
    assert status == 200 and "at most 1 group(s)" in body["mechanism"], body
    status, body = svc.query(key, {"sql": "SELECT FLOOR(v / 5) * 5 AS band, COUNT(*) FROM t GROUP BY band",
                                   "epsilon": 10000, "max_groups_per_unit": 1, "max_rows_per_group": 1})
    assert status == 200, body  # person 1: her first row (band 10), person 2: band 0
    assert [row[1] for row in body["rows"]] == [1, 0, 1]


# ------------------------------------------------------------------ refusals: one line, nothing charged
@pytest.mark.parametrize("field", ["max_groups_per_unit", "max_rows_per_group"])
@pytest.mark.parametrize("i, bad", list(enumerate([0, K + 1, -1, "2", True, 1.5, None, [1]])))
def test_bad_values_are_a_400_with_nothing_charged(svc, field, i, bad):
    name = f"bad{field}{i}"
    key = _key(svc, name, epsilon="1")
    status, body = svc.query(key, {"sql": "SELECT g, COUNT(*) FROM t GROUP BY g", "epsilon": "1/2", field: bad})
    assert status == 400, body
    assert f"'{field}' must be an int from 1 to {K}" in body["error"] and "\n" not in body["error"]
    assert svc.state.analyst(name).epsilon_spent == 0 and svc.state.ledger(name) == []


@pytest.mark.parametrize("i, sql, said", [(i, *case) for i, case in enumerate([
    ("SELECT COUNT(*) FROM t", "has none"),
    ("SELECT label, COUNT(*) FROM t JOIN names ON t.g = names.code GROUP BY label", "JOIN"),
    ("SELECT g, COUNT(*) FROM keyed GROUP BY g", "keys from the data")])])
def test_queries_the_bounds_do_not_apply_to_are_refused(svc, i, sql, said):
    name = f"wrong{i}"
    key = _key(svc, name, epsilon="1", delta="1/1000")
    status, body = svc.query(key, {"sql": sql, "epsilon": "1/2", "delta": "1/10000", "max_groups_per_unit": 1})
    assert status == 400 and said in body["error"] and "\n" not in body["error"], body
    assert svc.state.analyst(name).epsilon_spent == 0 and svc.state.ledger(name) == []


def test_a_restricted_analyst_is_refused(svc):
    key = _key(svc, "exact", mode="restricted")
    for field in ("max_groups_per_unit", "max_rows_per_group"):
        status, body = svc.query(key, {"sql": "SELECT g, COUNT(*) FROM t GROUP BY g", field: 1})
        assert status == 400 and "restricted" in body["error"] and f"'{field}'" in body["error"]
        assert "\n" not in body["error"]


# ------------------------------------------------------------------ the client, in process
@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_the_client_sends_the_bounds(svc):
    from starlette.testclient import TestClient

    from sdckit.core.errors import ParameterError
    from sdckit.query.client import Client
    from sdckit.query.server import create_app

    key = _key(svc, "web", epsilon="100000")
    with Client("http://testserver", key) as client:
        client._http.close()
        client._http = TestClient(create_app(service=svc), base_url="http://testserver",
                                  headers={"Authorization": f"Bearer {key}"})
        frame = client.count("t", by="g", epsilon=1000, max_groups_per_unit=2, max_rows_per_group=2)
        assert frame["count"].tolist() == [4, 1, 0, 0]
        assert frame.attrs["group_bounds"]["l1"] == 4 and frame.attrs["max_rows_per_group"] == 2
        raw = client.sql("SELECT g, SUM(v) FROM t WHERE v >= 5 GROUP BY g", epsilon=1000, max_groups_per_unit=2,
                         max_rows_per_group=2)
        assert [round(x) for x in raw["sum_v"]] == [20, 0, 10, 0]
        hist = client.histogram("t", "v", edges=[0, 5, 11], epsilon=1000, max_groups_per_unit=1, max_rows_per_group=1)
        assert hist["count"].tolist() == [1, 1]
        spent = client.budget()["epsilon_spent"]
        for bad in (0, True, 1.5, "2"):
            with pytest.raises(ParameterError, match="max_groups_per_unit"):
                client.count("t", by="g", epsilon=1, max_groups_per_unit=bad)
            with pytest.raises(ParameterError, match="max_rows_per_group"):
                client.sql("SELECT g, COUNT(*) FROM t GROUP BY g", epsilon=1, max_rows_per_group=bad)
        assert client.budget()["epsilon_spent"] == spent  # nothing sent


def test_an_approx_plan_with_group_bounds_never_takes_laplace_noise_at_the_l2_sensitivity(tmp_path):
    """Under (epsilon, delta) a measurement takes pure Laplace noise where it is less noise (as
    Tumult), at its L1 sensitivity. With g = 4, r = 1 (k = 6) the L1 sensitivity is 4 and the L2
    one 2: Laplace at 2 would be a privacy break (a person moves the counts by 4 in L1). With group
    bounds the plan keeps the Gaussian (calibrated to L2); without, the Laplace takes L1 = k = 6."""
    _write(tmp_path, cache=False, wide=400)
    svc = Service(tmp_path / "service.toml")
    try:
        q = parse("SELECT h, COUNT(*) FROM w GROUP BY h", svc.config)
        t = svc.config.tables["w"]
        bounds = GroupBounds(4, 1, K)
        assert (bounds.l1, bounds.l2_squared) == (4, 4)
        grouped = noisy_gaussian.plan(q, t, "approx", epsilon=Fraction(1), delta=Fraction(1, 10**6), groups=bounds)
        assert all(isinstance(m, noisy_gaussian.Measurement) for m in grouped.measurements.values())
        assert grouped.measurements["count"].sensitivity == pytest.approx(2.0)
        plain = noisy_gaussian.plan(q, t, "approx", epsilon=Fraction(1), delta=Fraction(1, 10**6))
        laplace = plain.measurements["count"]
        assert isinstance(laplace, noisy_gaussian.LaplaceMeasurement) and laplace.sensitivity == K
    finally:
        svc.close()
