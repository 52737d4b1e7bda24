"""The truncations of the generated SQL keep exactly the rows their documented rules keep (issue 32;
DESIGN §7): random small tables with ties (a person's several rows in one group, shared join keys,
missing group values, rows beyond ``max_rows_per_unit``) against brute-force oracles in pandas.

* Per-group bounds: after the WHERE and ``__sdc_rank <= k'``, each person's first ``r`` rows
  (file order) per group, in her first ``g`` groups by their first row.
* A join of two private tables: each side's dp relation (its persons' first ``k`` rows; the FROM
  table's first ``k'``), then its first ``t`` rows per join-key value in file order, then the merge.

They guard the rewrites of that SQL for speed (the windows replaced where a rank suffices): each
passes before and after. The per-group oracle also checks the row store (``sdckit.query.rowstore``),
which answers those queries without SQL.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED
from sdckit.query import noisy
from sdckit.query.generate import aggregate_sql
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.joins import query_table
from sdckit.query.service import Service
from sdckit.query.sql import parse

K, T_LEFT, T_RIGHT = 4, 2, 3
GROUPS = ["a", "b", "c"]
DRAWS = 3
#: a bound above the rank masks' (``sdckit.query.groupbounds.MASK_RANKS``, 62): the windows' form
WIDE = 100


def _tables(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tables of few persons with many rows each (ties everywhere), g missing now and then."""
    def one(n: int) -> pd.DataFrame:
        g = rng.choice([*GROUPS, None], n, p=[0.3, 0.3, 0.3, 0.1])
        return pd.DataFrame({"pid": rng.integers(0, 6, n), "g": g, "v": rng.integers(-2, 12, n),
                             "key": rng.integers(0, 4, n)})
    return one(int(rng.integers(5, 40))), one(int(rng.integers(5, 40)))


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    out = []
    for draw in range(DRAWS):
        folder = tmp_path_factory.mktemp(f"oracle{draw}")
        left, right = _tables(np.random.default_rng(1000 + draw))
        left.to_csv(folder / "l.csv", index=False)
        right.to_csv(folder / "r.csv", index=False)
        text = f'[service]\nstate = "state.db"\ncache = false\nseed = "{SEED}"\n'
        for name, t in (("l", T_LEFT), ("r", T_RIGHT)):
            text += (f'[[table]]\nname = "{name}"\npath = "{name}.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {K}\n'
                     f'max_rows_per_join_key = {t}\n[table.bounds]\nv = [0, 10]\nkey = [0, 3]\n'
                     f'[table.domains]\ng = {GROUPS}\n')
        text += (f'[[table]]\nname = "wide"\npath = "l.csv"\nprivacy_unit = "pid"\nmax_rows_per_unit = {WIDE}\n'
                 f'[table.bounds]\nv = [0, 10]\n[table.domains]\ng = {GROUPS}\n')
        (folder / "service.toml").write_text(text)
        service = Service(folder / "service.toml")
        out.append((service, left, right))
    yield out
    for service, _, _ in out:
        service.close()


def _bounded(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """The dp relation at k rows per person (file order), v clamped, the file position kept."""
    f = frame.reset_index(drop=True).assign(row=lambda x: np.arange(len(x)), v=lambda x: x["v"].clip(0, 10))
    return f[f.groupby("pid").cumcount() < k]


def _cells(frame: pd.DataFrame, by: str) -> tuple[list[int], list[float]]:
    grouped = frame.groupby(by)
    return (grouped.size().reindex(GROUPS, fill_value=0).tolist(),
            grouped["v"].sum().reindex(GROUPS, fill_value=0).astype(float).tolist())


def _answer(service: Service, sql: str, rows: int | None, groups: GroupBounds | None = None, stored: bool = False):
    """The true counts and sums of the truncating SQL, or (``stored``) of the row store
    (``sdckit.query.rowstore``, which must answer)."""
    query = parse(sql, service.config)
    table = query_table(query, service.config)
    plan = noisy.plan(query, table, Fraction(1), rows, groups)
    if stored:
        found = service.db.fast_cells(query, len(plan.cells), rows, groups)
        assert found is not None, sql
        counts, sums = found
    else:
        counts, sums = noisy.exact_cells(plan, table, service.db.aggregate(
            aggregate_sql(query, table, "dp", rows=rows, groups=groups)))
    return np.asarray(counts).tolist(), np.asarray(next(iter(sums.values()))).astype(float).tolist()


@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("name, most", [("l", K), ("wide", WIDE)])
def test_per_group_bounds_keep_the_documented_rows(services, draw, name, most):
    """Both SQL forms: rank masks (k <= 62) and windows (above); and the row store (each
    person's rows in memory, sdckit.query.rowstore), which answers these without a scan."""
    service, left, _ = services[draw]
    for per_unit in (None, 2, K):
        for g, r in ((1, 1), (1, 2), (2, 1), (2, 2), (K, 1), (1, K)):
            for low in (None, 4):
                k = most if per_unit is None else per_unit
                f = _bounded(left, k)
                where = "" if low is None else f" WHERE v > {low}"
                if low is not None:
                    f = f[left["v"].to_numpy()[f["row"]] > low]  # the raw value, as the SQL's WHERE
                f = f[f.groupby(["pid", "g"], dropna=False).cumcount() < r]
                first = f.groupby(["pid", "g"], dropna=False)["row"].transform("min")
                f = f[first.groupby(f["pid"]).rank(method="dense") <= g]
                sql = f"SELECT g, COUNT(*), SUM(v) FROM {name}{where} GROUP BY g"
                for stored in (False, True):
                    got = _answer(service, sql, per_unit, GroupBounds(g, r, k), stored)
                    assert got == _cells(f, "g"), (per_unit, g, r, low, stored)


@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("on", [("pid", "pid"), ("key", "key"), ("key", "pid")])
def test_private_joins_keep_the_documented_rows(services, draw, on):
    service, left, right = services[draw]
    for per_unit in (None, 1, 2):
        lf = _bounded(left, K if per_unit is None else per_unit)
        rf = _bounded(right, K)
        lf = lf.groupby(on[0], sort=False).head(T_LEFT)
        rf = rf.groupby(on[1], sort=False).head(T_RIGHT)
        merged = lf.merge(rf, left_on=on[0], right_on=on[1], suffixes=("", "_r"))
        got = _answer(service, f"SELECT r.g, COUNT(*), SUM(l.v) FROM l JOIN r ON l.{on[0]} = r.{on[1]} GROUP BY r.g",
                      per_unit)
        assert got == _cells(merged.assign(g=merged["g_r"]), "g"), (per_unit, on)


@pytest.mark.parametrize("draw", range(DRAWS))
def test_the_two_forms_agree_on_binned_and_two_column_groups(services, draw):
    """A bin's and a WHERE's parameters around the truncation, two group columns: the rank masks
    (table ``l``) keep what the windows keep (table ``wide``, the same file, at k' = K)."""
    service = services[draw][0]
    for sql in ("SELECT FLOOR(v / 5) * 5 AS band, g, COUNT(*), SUM(v) FROM {t} WHERE v > 2 GROUP BY band, g",
                "SELECT g, FLOOR(v / 4) * 4 AS band, COUNT(*), SUM(v) FROM {t} WHERE g <> 'a' GROUP BY g, band"):
        for g, r in ((1, 1), (2, 1), (1, 2)):
            masks, windows = (_raw(service, sql.format(t=t), rows, GroupBounds(g, r, K)) for t, rows in (("l", None), ("wide", K)))
            assert masks == windows and len(masks) > 1, (sql, g, r)


def _raw(service: Service, sql: str, rows: int | None, groups: GroupBounds) -> list[tuple]:
    """The aggregate statement's result rows, sorted."""
    query = parse(sql, service.config)
    result = service.db.aggregate(aggregate_sql(query, query_table(query, service.config), "dp", rows=rows, groups=groups))
    return sorted(zip(*(np.asarray(v).tolist() for v in result.values())), key=repr)
