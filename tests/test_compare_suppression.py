"""Compare and tune a release with suppressed cells (issue 31): local suppression sets key values
to missing, and the release is measured on its complete record pairs (the records with every
verified column in both), as the release of those records alone (DESIGN.md section 3)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdckit.compare import Candidate, compare, evaluate_release
from sdckit.masking import AdditiveNoise, LocalSuppression, Rounding

SCHEMA = {"quasi": ["a"], "confidential": ["x"]}


def hand_frame() -> pd.DataFrame:
    # a = 3 and a = 4 occur once each: 2-anonymity suppresses both (rows 6 and 7), and their '*'
    # class then holds 2 records
    return pd.DataFrame({"a": [1, 1, 1, 2, 2, 2, 3, 4, 5, 5],
                         "x": [12.0, 27.0, 33.0, 48.0, 51.0, 66.0, 74.0, 89.0, 93.0, 108.0]})


def test_a_suppressed_candidate_is_measured_on_its_complete_record_pairs_by_hand():
    frame = hand_frame()
    steps = (LocalSuppression(k=2, columns=["a"]), Rounding(base=10.0, columns=["x"]))
    result = compare(frame, [Candidate("suppress + round", steps)], schema=SCHEMA, n_random=500, n_null=10, seed=2)
    # before: DataError "ranks need complete data" (column 'a' missing in 2 records)
    figures = result.results[0]
    run = figures.runs[0]
    assert (run["records_assessed"], run["records_suppressed"]) == (8, 2)
    assert figures.suppressed == pytest.approx(2 / 20)  # 2 of the 10 x 2 verified cells
    # IL1s on the 8 complete pairs (rows 0-5, 8, 9), both verified columns:
    # a unchanged -> 0; x = 12 27 33 48 51 66 93 108 rounded to 10 30 30 50 50 70 90 110:
    # |x - y| = 2 3 3 2 1 4 3 2, mean 2.5; mean 54.75, sum of squares about it 7555.5, sd sqrt(7555.5 / 7)
    il1_x = 2.5 / (np.sqrt(2.0) * np.sqrt(7555.5 / 7))
    assert figures.utility_loss == pytest.approx((0.0 + il1_x) / 2, rel=1e-12)
    for key in ("hellinger", "hellinger_null", "p_value"):
        assert 0.0 <= getattr(figures, key) <= 1.0


def test_the_verification_is_that_of_the_rows_left_by_hand():
    from sdckit.core.schema import Schema
    from sdckit.permutation import verify_linkage
    from sdckit.pipeline import protect

    frame = hand_frame()
    schema = Schema.infer(frame, **SCHEMA)
    release = protect(frame, [LocalSuppression(k=2, columns=["a"])], schema=schema, seed=np.random.default_rng(1))
    assert release.data["a"].isna().tolist() == [False] * 6 + [True, True] + [False] * 2
    figures = evaluate_release(frame, release.data, schema=release.schema, n_random=500, n_null=10, seed=7)
    kept = [0, 1, 2, 3, 4, 5, 8, 9]
    expected = verify_linkage(frame.iloc[kept], release.data.iloc[kept], ["a", "x"], schema=release.schema,
                              n_random=500, n_null=10, seed=7)
    assert figures["hellinger"] == float(expected.hellinger)
    assert figures["p_value"] == float(expected.p_value)
    assert figures["verdict"] == expected.verdict
    assert figures["utility_loss"] == 0.0  # the values released are the original's


def test_suppression_alone_leaves_the_confidential_values_linkable_and_is_flagged():
    """A maximum-knowledge intruder links the unchanged incomes: p = 0, while noise of half the
    variance on every column is deniable; suppression alone loses nothing on the values left."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(20, 70, 200), "z": rng.integers(1, 6, 200),
                          "x": np.round(rng.normal(50, 10, 200), 3)})
    schema = {"quasi": ["a", "z"], "confidential": ["x"]}
    result = compare(frame, [Candidate("ls", (LocalSuppression(k=3),)), Candidate("noise", (AdditiveNoise(alpha=0.5),))],
                     schema=schema, n_random=2000, n_null=10, seed=1)
    table = result.table()
    assert table.loc["ls", "p_value"] == 0.0 and not table.loc["ls", "plausibly_deniable"]
    assert table.loc["ls", "utility_loss"] == 0.0 and 0.0 < table.loc["ls", "suppressed"] < 1.0
    assert table.loc["noise", "suppressed"] == 0.0


def test_a_column_suppressed_everywhere_is_left_out_and_too_few_pairs_is_one_line():
    from sdckit.core.errors import DataError

    frame = hand_frame().assign(a=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])  # every value unique: all suppressed
    candidates = [Candidate("ls", (LocalSuppression(k=2, columns=["a"]),))]
    # by default the column is not released, as if dropped: x alone is verified, on all 10 records
    run = compare(frame, candidates, schema=SCHEMA, n_random=500, n_null=10, seed=1).results[0]
    assert (run.runs[0]["records_assessed"], run.runs[0]["records_suppressed"], run.suppressed) == (10, 0, 0.5)
    # named, it stays: no record pair is complete
    with pytest.raises(DataError, match="Only 0 record\\(s\\) have every one of the columns 'a', 'x'"):
        compare(frame, candidates, schema=SCHEMA, columns=["a", "x"], n_random=500, n_null=10, seed=1)


def test_tune_a_chain_with_local_suppression():
    from sdckit.tune import tune

    frame = hand_frame()
    result = tune(frame, [LocalSuppression(k=2, columns=["a"]), Rounding(base=10.0, columns=["x"])], step=1,
                  param="base", low=1.0, high=100.0, steps=1, schema=SCHEMA, n_random=500, n_null=10, seed=3)
    assert all(p["records_suppressed"] == 2 and p["records_assessed"] == 8 for p in result.curve)
    assert len(result.curve) >= 1  # before: DataError, ranks need complete data


RECIPE = """
seed = 3
allow_weak_seed = true  # a readable test seed
[input]
path = "data.csv"
[schema]
quasi = ["a"]
confidential = ["x"]
[compare]
n_random = 500
n_null = 10
[output]
dir = "cmp"
[[candidate]]
label = "suppress"
[[candidate.method]]
name = "local_suppression"
k = 2
[[candidate]]
label = "round"
[[candidate.method]]
name = "rounding"
base = 10.0
columns = ["x"]
"""


def test_cli_compare_with_a_local_suppression_candidate(cli, tmp_path):
    hand_frame().to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "cmp.toml").write_text(RECIPE)
    result = cli("compare", str(tmp_path / "cmp.toml"), "--json", str(tmp_path / "c.json"))
    assert result.returncode == 0, result.stderr  # before: exit 2, "ranks need complete data"
    assert "suppress" in result.stdout and "round" in result.stdout
    payload = json.loads((tmp_path / "c.json").read_text())
    assert payload["methods"]["suppress"]["runs"][0]["records_suppressed"] == 2
    assert payload["methods"]["suppress"]["suppressed"] == pytest.approx(2 / 20)
    assert payload["methods"]["suppress"]["utility_loss"] == 0.0
