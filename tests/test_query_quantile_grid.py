"""The dp quantile's fine grid (issue 32, accuracy against Tumult Analytics): up to 2**18 bins of
the bounds (2**18 / cells with GROUP BY, at least 1024), a sparse histogram and permute-and-flip
with its coins flipped lazily in the visiting order.

Its law against the one enumerated by hand, and on an 8193-point grid against the exact law
(the visiting order drawn lazily, :func:`~sdckit.query.quantiles.visiting_order`, is a uniform
random permutation: every order of 6 points equally often); the answer within 0.3 of a true median that lies
half-way between two points of the old 1025-point grid (which could not come closer than 0.488);
the grid rule by hand; and the attack: a person with k extreme rows moves every ``below_j`` of the
fine grid by at most k (so each utility by at most D k, the sensitivity the coins assume).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdckit.query import noisy, quantiles
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.generate import aggregate_sql, histogram_sql
from sdckit.query.grid import QUANTILE_GRID, coarsen, quantile_bins
from sdckit.query.sql import parse


def _db(tmp_path, frame: pd.DataFrame, extra: str = "") -> Database:
    frame.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     f'max_rows_per_unit = 3\n[table.bounds]\nv = [0, 1000]\n{extra}')
    return Database(load_config(tmp_path / "s.toml"))


def test_sparse_permute_and_flip_has_the_enumerated_law():
    """Grid points 0..3 over 3 bins holding 1, 2, 1 records (below = 0, 1, 3, 4), q = 0.5,
    epsilon 2: coins (e^-2, 1, 1, e^-2) (the median's utility sensitivity is D/2); the law over the
    24 visiting orders against 2,000 draws (chi-square, level 0.001)."""
    coins = np.array([math.exp(-2), 1.0, 1.0, math.exp(-2)])
    law = np.zeros(4)
    for order in itertools.permutations(range(4)):
        stay = 1.0
        for j in order:
            law[j] += stay * coins[j] / 24
            stay *= 1 - coins[j]
    rng = np.random.default_rng(8)
    draws = [quantiles.permute_and_flip_sparse(np.array([0, 1, 2]), np.array([1, 2, 1]), 4, 0.5, 2.0, 1, rng)
             for _ in range(2_000)]
    observed = np.bincount(draws, minlength=4)
    assert stats.chisquare(observed, law * observed.sum()).pvalue > 1e-3
    with pytest.raises(ValueError, match="grid"):
        quantiles.permute_and_flip_sparse(np.array([0, 4]), np.array([1, 1]), 4, 0.5, 2.0, 1, rng)


def test_the_lazy_visiting_order_is_a_uniform_random_permutation():
    """Every one of the 720 orders of 6 points equally often (chi-square, level 0.001, over 14,400
    orders), first batch 1 (then 2, 4: new values met in i.i.d. draws, then the rest permuted);
    on 2**18 points the batches make up a permutation, the first of them 256 draws' new values."""
    rng = np.random.default_rng(5)
    index = {order: i for i, order in enumerate(itertools.permutations(range(6)))}
    seen = np.zeros(720, dtype=np.int64)
    for _ in range(14_400):
        seen[index[tuple(np.concatenate(list(quantiles.visiting_order(6, rng, first=1))).tolist())]] += 1
    assert stats.chisquare(seen).pvalue > 1e-3
    batches = list(quantiles.visiting_order(QUANTILE_GRID, rng))
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(QUANTILE_GRID))
    assert 250 <= batches[0].size <= 256


def _exact_law(coins: np.ndarray) -> np.ndarray:
    """Permute-and-flip's law for these coins: candidate j comes at a uniform time t and is taken
    if its coin comes up and no earlier one's did, ``p_j \\int_0^1 prod_{i != j} (1 - p_i t) dt``
    (Gauss-Legendre, 200 nodes; the integrand is smooth)."""
    nodes, weights = np.polynomial.legendre.leggauss(200)
    t, w = (nodes + 1) / 2, weights / 2
    log_all = np.log1p(-np.outer(t, coins)).sum(axis=1)  # (nodes,)
    return coins * (w[:, None] * np.exp(log_all[:, None] - np.log1p(-np.outer(t, coins)))).sum(axis=0)


def test_permute_and_flip_on_a_large_grid_has_the_exact_law():
    """8193 grid points over one record per bin, the median (rank 4096), epsilon 1: candidate j's
    coin is e^-|j - 4096| (the median's utility has sensitivity D/2: exp(-eps D |j - 4096| / (2 D/2));
    about 2.2 expected heads in all: some 3,800 candidates visited, over several lazily drawn
    batches). The law of |j - 4096| (0..7, then 8 and past) and of the side
    against 1,000 draws (chi-square, level 0.001)."""
    below, center = np.arange(8193), 4096
    coins = np.exp(-np.abs(below - center).astype(float))
    law = _exact_law(coins)
    assert law.sum() == pytest.approx(1.0, abs=1e-9)
    rng = np.random.default_rng(6)
    draws = np.array([quantiles.permute_and_flip(below, 8192, 0.5, 1.0, 1, rng) for _ in range(1_000)])
    classes = lambda j: np.minimum(np.abs(j - center), 8) * 2 + (j > center)  # noqa: E731
    observed = np.bincount(classes(draws), minlength=18)
    expected = np.bincount(classes(np.arange(8193)), weights=law, minlength=18) * draws.size
    used = expected > 0
    assert stats.chisquare(observed[used], expected[used]).pvalue > 1e-3


def test_the_grid_rule_by_hand(tmp_path):
    """2**18 bins without GROUP BY, 2**18 / cells rounded down to a power of two, at least 1024;
    the plan's text and noise_scale state the grid the histogram SQL uses."""
    assert [quantile_bins(c) for c in (1, 2, 5, 256, 257, 1000, 10**6)] == [2**18, 2**17, 2**15, 1024, 1024, 1024, 1024]
    db = _db(tmp_path, pd.DataFrame({"pid": [1, 2], "v": [1.0, 999.0], "g": ["a", "b"]}),
             '[table.domains]\ng = ["a", "b", "c", "d", "e"]\n')
    t = db.config.tables["t"]
    q = parse("SELECT g, MEDIAN(v) FROM t GROUP BY g", db.config)
    p = noisy.plan(q, t, Fraction(1))
    hists = {"v": db.aggregate(histogram_sql(q, t, "v"))}
    out = noisy.answer(p, t, db.aggregate(aggregate_sql(q, t, "dp")), np.random.default_rng(0), hists)
    assert out["noise_scale"][1]["grid_resolution"] == 1000 / 2**15 and f"{2**15 + 1} points" in out["mechanism"]
    assert [b.tolist() for b, _ in noisy.histograms(p, t, hists["v"])] == [[32], [32735], [], [], []]  # floor(x 2**15 / 1000)
    db.close()


def test_coarsening_the_finest_grid_is_exact():
    """The cube's bins (2**18 of the bounds) divided down give the scan's bin on every coarser
    grid, at the awkward values too (the bin edges, the upper bound, values a few ulps off an edge)."""
    low, high = 0.0, 200000.0
    edges = np.arange(0, 2**18 + 1) * ((high - low) / 2**18)
    x = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
                        np.random.default_rng(3).uniform(low, high, 10_000)])
    x = np.clip(x, low, high)

    def scan(bins: int) -> np.ndarray:  # the SQL's LEAST(FLOOR((x - low) * (bins / (high - low))), bins - 1)
        return np.minimum(np.floor((x - low) * (bins / (high - low))), bins - 1).astype(np.int64)
    fine = scan(QUANTILE_GRID)
    for bins in (2**17, 2**13, 1024):
        assert np.array_equal(coarsen(fine, bins), scan(bins))


def test_the_median_lands_between_the_old_grid_points(tmp_path):
    """20,001 values (20 per unit of [0, 1000]) shifted so that the median is 500.49, half-way
    between the old grid's 500 and 500.9765625: at epsilon 12 each of 20 answers is within 0.3 of
    it (0.3 is 6 records; with k = 3 rows per person a candidate 6 records off has a coin of
    e^-(12 * 6 / 6) = e^-12; at epsilon 4 it was e^-4 and about 2% of answers were 0.3 off). The
    old grid's best point was 0.488 away."""
    rng = np.random.default_rng(2)
    values = rng.uniform(0, 1000, 20_001)
    values += 500.49 - np.median(values)
    values = np.clip(values, 0, 1000)
    truth = float(np.median(values))
    assert truth == pytest.approx(500.49)
    db = _db(tmp_path, pd.DataFrame({"pid": range(values.size), "v": values}))
    t = db.config.tables["t"]
    q = parse("SELECT MEDIAN(v) FROM t", db.config)
    p = noisy.plan(q, t, Fraction(12))
    result, hists = db.aggregate(aggregate_sql(q, t, "dp")), {"v": db.aggregate(histogram_sql(q, t, "v"))}
    answers = [noisy.answer(p, t, result, np.random.default_rng(s), hists)["rows"][0][0] for s in range(20)]
    db.close()
    assert max(abs(a - truth) for a in answers) < 0.3


def test_a_person_with_extreme_rows_moves_each_below_by_at_most_k(tmp_path):
    """k = 3: person 1 has 5 rows (the first 3 kept) at 0, 1000 and 999.9999; the others 0..999.
    Every grid point's ``below_j`` (from the sparse histograms, against a brute-force count of the
    clamped kept values) moves by at most 3 when she is removed."""
    base = pd.DataFrame({"pid": np.arange(2, 1002), "v": np.arange(1000, dtype=float)})
    her = pd.DataFrame({"pid": [1] * 5, "v": [0.0, 1000.0, 999.9999, 5000.0, -7.0]})
    belows = []
    for i, frame in enumerate((pd.concat([her, base]), base)):
        folder = tmp_path / str(i)
        folder.mkdir()
        db = _db(folder, frame)
        t = db.config.tables["t"]
        q = parse("SELECT MEDIAN(v) FROM t", db.config)
        p = noisy.plan(q, t, Fraction(1))
        (bins, counts), = noisy.histograms(p, t, db.aggregate(histogram_sql(q, t, "v")))
        cum = np.concatenate([[0], np.cumsum(counts)])
        size = quantile_bins(len(p.cells))
        below = cum[np.searchsorted(bins, np.arange(size + 1), side="left")]
        belows.append(below)
        db.close()
        width = 1000 / size
        raw = frame.groupby("pid").head(3)["v"].clip(0, 1000).to_numpy()  # the first k rows of each person
        edges = np.arange(size + 1) * width
        brute = np.searchsorted(np.sort(np.minimum(np.floor(raw / width), size - 1)), np.arange(size + 1))
        assert np.array_equal(below, brute) and below[-1] == raw.size and edges[-1] == 1000
    assert np.abs(belows[0] - belows[1]).max() <= 3
