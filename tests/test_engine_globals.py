"""Row-wise methods with global parameters on every engine (issue 17 §1): PRAM (categories and
the invariant matrix from a first pass), global recoding (equal-width breaks from the whole
column's range, a mapped ordinal's observed order) and generalization to a chosen hierarchy
node stream with bounded memory and give the in-memory bytes, whatever the engine and batch."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError
from sdckit.core.hierarchy import Hierarchy
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.engine import protect_file
from sdckit.masking import GlobalRecoding, Pram
from sdckit.pipeline import protect

SEED = "00112233445566778899aabbccddeeff"
N = 2 * CHUNK_ROWS + 777  # three logical chunks, the last one short
ZIPS = ["94142", "94141", "94139", "94138", "10001", "10002"]
SCHEMA = {"identifier": ["id"], "kinds": {"grade": "ordinal", "code": "nominal"}}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    region = rng.choice(["north", "south", "east", "west"], N, p=[0.6, 0.25, 0.1, 0.05]).astype(object)
    region[rng.random(N) < 0.01] = None  # missing values pass through PRAM
    income = rng.lognormal(10, 1, N)
    income[5] = np.nan
    grade = rng.integers(1, 6, N)
    grade[N - 3] = 7  # the highest grade appears only in the last chunk: the order needs the whole column
    return pd.DataFrame({"id": np.arange(N), "region": region, "income": income, "grade": grade,
                         "code": rng.choice([1, 2, 3], N), "zip": rng.choice(ZIPS, N)})


def methods() -> list:
    return [
        Pram(p_keep=0.7, columns=["region"]),
        Pram(matrix={"code": {"1": {"1": 0.8, "2": 0.2}, "2": {"2": 0.5, "3": 0.5}, "3": {"1": 1.0}}},
             invariant=True),
        GlobalRecoding(bins=4, columns=["income"]),
        GlobalRecoding(mapping={1: "low", 2: "low", 3: "mid", 4: "high", 5: "high", 7: "top"}, columns=["grade"]),
        GlobalRecoding(hierarchy=Hierarchy.masking(ZIPS, steps=(2, 5)), level=1, columns=["zip"]),
    ]


@pytest.fixture(scope="module")
def parquet(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("globals") / "in.parquet"
    frame.to_parquet(path, row_group_size=30_000)
    return path


@pytest.fixture(scope="module")
def in_memory(frame):
    return protect(frame, methods(), seed=SEED, schema=SCHEMA)


def _same_release(path, release):
    # values exactly; the dtypes (part of the fingerprint, compared by the callers) as the frame
    # had them: pandas reads a Parquet text column back as its own string dtype
    pd.testing.assert_frame_equal(pd.read_parquet(path), release.data.reset_index(drop=True), check_exact=True,
                                  check_dtype=False, check_categorical=True)


@pytest.mark.parametrize("batch_rows", [4_099, CHUNK_ROWS, 150_000])
def test_duckdb_engine_gives_the_in_memory_bytes_whatever_the_batch(parquet, in_memory, tmp_path, batch_rows):
    out = tmp_path / "out.parquet"
    streamed = protect_file(parquet, out, methods(), seed=SEED, schema=SCHEMA, batch_rows=batch_rows)
    _same_release(out, in_memory)
    assert streamed.manifest["output"]["fingerprint"] == in_memory.manifest["output"]["fingerprint"]
    for a, b in zip(streamed.manifest["methods"], in_memory.manifest["methods"], strict=True):
        assert a["info"] == b["info"] and a["warnings"] == b["warnings"]
    assert "equal-width bins disclose" in streamed.manifest["methods"][2]["warnings"][0]


def test_dask_engine_gives_the_in_memory_bytes(parquet, in_memory, tmp_path, dask_client):
    out = tmp_path / "out.parquet"
    streamed = protect_file(parquet, out, methods(), engine="dask", client=dask_client, seed=SEED, schema=SCHEMA)
    _same_release(out, in_memory)
    assert streamed.manifest["output"]["fingerprint"] == in_memory.manifest["output"]["fingerprint"]


def test_equal_width_breaks_come_from_the_whole_column(frame, in_memory):
    # hand-worked: 4 intervals of width (max - min) / 4 over the whole column's range
    income = frame["income"].to_numpy()
    low, high = np.nanmin(income), np.nanmax(income)
    breaks = np.linspace(low, high, 5)
    released = in_memory.data["income"]
    assert list(released.cat.categories)[0].startswith("[") and len(released.cat.categories) == 4
    codes = np.clip(np.searchsorted(breaks, income, side="right") - 1, 0, 3)
    present = ~np.isnan(income)
    np.testing.assert_array_equal(released.cat.codes.to_numpy()[present], codes[present])
    assert released.cat.codes.to_numpy()[5] == -1  # the missing income stays missing
    info = in_memory.manifest["methods"][2]["info"]
    assert info["categories_before"] == {"income": None}  # more than 10,000 distinct: not counted
    assert info["categories_after"] == {"income": 4}


def test_mapped_ordinal_order_includes_a_grade_seen_only_in_the_last_chunk(in_memory, frame):
    # observed grades 1..5 and 7: groups low (1, 2), mid (3), high (4, 5), top (7) are runs of the order
    assert in_memory.schema["grade"].order == ("low", "mid", "high", "top")
    assert in_memory.data["grade"].iloc[N - 3] == "top"
    info = in_memory.manifest["methods"][3]["info"]
    assert info["categories_before"] == {"grade": 6} and info["categories_after"] == {"grade": 4}


def test_generalization_to_the_chosen_node(in_memory, frame):
    expected = frame["zip"].str[:3] + "**"
    assert in_memory.data["zip"].tolist() == expected.tolist()


def test_pram_categories_counted_over_every_chunk(frame, in_memory):
    info = in_memory.manifest["methods"][0]["info"]["transitions"]["region"]
    assert info["categories"] == ["east", "north", "south", "west"]
    region = frame["region"]
    released = in_memory.data["region"]
    # missing values pass through; the share changed matches a recount (p_keep 0.7: about 0.3;
    # sd sqrt(.21 / N) = 0.0013, tolerance 5 sd)
    present = region.notna().to_numpy()
    assert released[~present].isna().all()
    share = float((released[present] != region[present]).mean())
    assert info["changed_share"] == pytest.approx(share, abs=1e-15)
    assert abs(share - 0.3) < 5 * math.sqrt(0.21 / present.sum())


def test_invariant_pram_keeps_the_whole_datas_distribution(frame, in_memory):
    # the invariant matrix R is built from the whole column's counts: pi R = pi
    info = in_memory.manifest["methods"][1]["info"]["transitions"]["code"]
    pi = frame["code"].value_counts(normalize=True).sort_index().to_numpy()
    np.testing.assert_allclose(pi @ np.array(info["matrix"]), pi, atol=1e-9)
    assert in_memory.data["code"].dtype == frame["code"].dtype  # integer codes from text keys


def test_csv_input_on_duckdb_gives_the_in_memory_csv(frame, tmp_path):
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    out = tmp_path / "out.csv"
    protect_file(source, out, methods(), seed=SEED, schema=SCHEMA, batch_rows=50_000)
    expected = tmp_path / "expected.csv"
    protect(pd.read_csv(source), methods(), seed=SEED, schema=SCHEMA).data.to_csv(expected, index=False)
    assert out.read_bytes() == expected.read_bytes()


def test_a_value_outside_the_matrix_is_refused_naming_its_row_not_its_value(tmp_path):
    data = pd.DataFrame({"code": ["a"] * (CHUNK_ROWS + 10)})
    data.loc[CHUNK_ROWS + 3, "code"] = "secret-value"
    source = tmp_path / "in.parquet"
    data.to_parquet(source)
    method = Pram(matrix={"code": {"a": {"a": 1.0}}})
    with pytest.raises(DataError, match=rf"column 'code' \(first at row {CHUNK_ROWS + 3}\)") as info:
        protect_file(source, tmp_path / "o.parquet", [method], seed=SEED)
    assert "secret-value" not in str(info.value)
    with pytest.raises(DataError, match=rf"first at row {CHUNK_ROWS + 3}"):
        protect(data, [method], seed=SEED)


def test_equal_width_bins_of_an_all_missing_column_are_refused(tmp_path):
    data = pd.DataFrame({"x": [np.nan] * 10, "y": np.arange(10.0)})
    with pytest.raises(DataError, match="Column 'x' has no value"):
        protect(data, [GlobalRecoding(bins=3, columns=["x"])], seed=SEED)


def test_a_statistics_pass_reruns_only_the_steps_its_columns_depend_on():
    # steps on (a), (b, c), (c), (d), then a step needing statistics: on (b) it needs the step
    # on (b, c) only (the later step on c changes no b); on (c) both steps on c (and through
    # the joint step, b); (a) and (d) are left out
    from sdckit.core.schema import Schema
    from sdckit.engine.plan import PlannedStep, step_columns, steps_reaching

    schema = Schema.infer(pd.DataFrame({k: [1.0] for k in "abcd"}))
    steps = [PlannedStep(Pram(p_keep=0.5), i, cols, schema) for i, cols in
             enumerate([("a",), ("b", "c"), ("c",), ("d",)])]
    assert [s.key for s in steps_reaching(steps, ("b",))] == [1]
    assert [s.key for s in steps_reaching(steps, ("c",))] == [1, 2]
    assert [s.key for s in steps_reaching(steps, ("e",))] == []
    assert [s.key for s in steps_reaching(steps[:2], ("c",))] == [1]
    assert step_columns(steps_reaching(steps, ("c",)), ("c",)) == ["c", "b"]


def test_a_recipe_with_pram_recoding_and_rank_swapping_streams_by_itself_past_the_budget(tmp_path, frame):
    from sdckit.recipe import load_recipe, run_recipe

    frame.head(20_000).fillna({"income": 1.0}).to_parquet(tmp_path / "in.parquet")
    (tmp_path / "r.toml").write_text(f"""
seed = "{SEED}"
[input]
path = "in.parquet"
[schema]
identifier = ["id"]
quasi = ["region", "grade", "zip"]
[[method]]
name = "pram"
p_keep = 0.75
columns = ["region"]
[[method]]
name = "rank_swapping"
p = 5
columns = ["income"]
[[method]]
name = "global_recoding"
bins = 3
columns = ["income"]
[output]
format = "csv"
""")
    recipe = load_recipe(tmp_path / "r.toml")
    streamed = run_recipe(recipe, output_dir=tmp_path / "s", memory="1MB", report=False)
    memory = run_recipe(recipe, output_dir=tmp_path / "m", engine="memory", report=False)
    assert streamed.release.manifest["engine"]["name"] == "duckdb"
    assert streamed.data_path.read_bytes() == memory.data_path.read_bytes()
    assert [m["name"] for m in streamed.release.manifest["methods"]] == ["pram", "rank_swapping", "global_recoding"]
