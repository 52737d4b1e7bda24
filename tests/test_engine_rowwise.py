"""Row-wise methods on every engine (issue 17, DESIGN.md section 8): the same bytes out whatever
the engine and the batch size, statistics merged exactly, bounded memory, and clear refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdckit
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.rowwise import CHUNK_ROWS, Moments, chunk_bounds, rechunk
from sdckit.engine import parse_memory, protect_file
from sdckit.masking import (AdditiveNoise, CorrelatedNoise, Microaggregation, MultiplicativeNoise, Rounding,
                            TopBottomCoding)
from sdckit.pipeline import protect

SEED = "0123456789abcdef0123456789abcdef"
N = 2 * CHUNK_ROWS + 1234  # three logical chunks, the last one short


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "id": np.arange(N),
        "income": rng.lognormal(10, 1, N),
        "age": rng.integers(16, 95, N),
        "hours": rng.normal(38, 6, N),
        "region": rng.choice(["north", "south", "east"], N),
    })


@pytest.fixture(scope="module")
def parquet(frame, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("engine") / "in.parquet"
    frame.to_parquet(path, row_group_size=50_000)
    return path


METHODS = [
    AdditiveNoise(alpha=0.2, columns=["income", "hours"]),
    TopBottomCoding(top=80.0, top_value="mean", bottom=18.0, columns=["age"]),
    Rounding(base=2.5, columns=["age"]),
    MultiplicativeNoise(a=0.1, distribution="lognormal", columns=["income"]),
    CorrelatedNoise(alpha=0.1, preserve_covariance=True, columns=["income", "hours"]),
]
SCHEMA = {"identifier": ["id"]}


@pytest.fixture(scope="module")
def in_memory(frame):
    return protect(frame, METHODS, seed=SEED, schema=SCHEMA)


@pytest.mark.parametrize("batch_rows", [997, CHUNK_ROWS, 200_000])
def test_streamed_release_is_the_in_memory_release_whatever_the_batch_size(parquet, in_memory, tmp_path, batch_rows):
    out = tmp_path / "out.parquet"
    streamed = protect_file(parquet, out, METHODS, seed=SEED, schema=SCHEMA, batch_rows=batch_rows)
    pd.testing.assert_frame_equal(pd.read_parquet(out), in_memory.data.reset_index(drop=True), check_exact=True)
    assert streamed.manifest["output"]["fingerprint"] == in_memory.manifest["output"]["fingerprint"]
    assert streamed.manifest["output"]["records"] == N and streamed.manifest["dropped_identifiers"] == ["id"]
    for a, b in zip(streamed.manifest["methods"], in_memory.manifest["methods"], strict=True):
        assert a["params"] == b["params"] and a["info"] == b["info"]


def test_streamed_csv_is_byte_identical_to_the_in_memory_csv(frame, in_memory, tmp_path):
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    out = tmp_path / "out.csv"
    protect_file(source, out, METHODS, seed=SEED, schema=SCHEMA, batch_rows=40_000)
    expected = tmp_path / "expected.csv"
    memory = protect(pd.read_csv(source), METHODS, seed=SEED, schema=SCHEMA)
    memory.data.to_csv(expected, index=False)
    assert out.read_bytes() == expected.read_bytes()


def test_each_chunk_has_its_own_stream_so_a_prefix_is_released_alike(frame):
    """Rows of chunk 0 get the same noise whether or not more chunks follow (streams by index),
    given the same statistics: multiplicative noise needs none."""
    method = MultiplicativeNoise(a=0.3, columns=["income"])
    whole = protect(frame, [method], seed=SEED, schema=SCHEMA).data
    prefix = protect(frame.iloc[:CHUNK_ROWS], [method], seed=SEED, schema=SCHEMA).data
    np.testing.assert_array_equal(whole["income"].to_numpy()[:CHUNK_ROWS], prefix["income"].to_numpy())
    # and the chunks' streams differ (chunk 1 is not a copy of chunk 0's draws)
    ratio = whole["income"].to_numpy() / frame["income"].to_numpy()
    assert not np.allclose(ratio[:1000], ratio[CHUNK_ROWS:CHUNK_ROWS + 1000])


def test_top_coding_mean_across_chunks_is_the_mean_of_every_coded_value(parquet, frame, tmp_path):
    out = tmp_path / "out.parquet"
    protect_file(parquet, out, [TopBottomCoding(top=80.0, top_value="mean", columns=["age"])], seed=SEED, schema=SCHEMA)
    age = frame["age"].to_numpy()
    expected = age[age > 80].mean()
    released = pd.read_parquet(out)["age"].to_numpy()
    np.testing.assert_allclose(released[age > 80], expected, rtol=1e-12)
    np.testing.assert_array_equal(released[age <= 80], age[age <= 80])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=12), st.integers(1, 64))
def test_rechunk_cuts_any_batches_into_the_logical_chunks(sizes, size):
    n = sum(sizes)
    values = np.arange(n)
    batches, at = [], 0
    for s in sizes:
        batches.append(pd.DataFrame({"x": values[at:at + s]}))
        at += s
    chunks = list(rechunk(batches, size))
    expected = [(a, b) for a, b in chunk_bounds(n, size) if b > a]
    assert [(c.index[0], c.index[-1] + 1) for c in chunks] == expected
    for chunk in chunks:
        np.testing.assert_array_equal(chunk["x"].to_numpy(), chunk.index.to_numpy())


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=8), st.integers(0, 10_000))
def test_merged_moments_equal_the_whole_data_moments(sizes, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(1e4, 3.0, (sum(sizes), 3))
    parts, at = [], 0
    for s in sizes:
        parts.append(Moments.of(values[at:at + s], cross=True))
        at += s
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    assert merged.n == len(values)
    np.testing.assert_allclose(merged.mean, values.mean(axis=0), rtol=1e-12)
    if len(values) > 1:
        np.testing.assert_allclose(merged.variance(), values.var(axis=0, ddof=1), rtol=1e-8)
        np.testing.assert_allclose(merged.covariance(), np.cov(values, rowvar=False), rtol=1e-8, atol=1e-8)


def test_the_noise_has_the_stated_variance_on_the_stream(parquet, frame, tmp_path):
    out = tmp_path / "out.parquet"
    protect_file(parquet, out, [AdditiveNoise(alpha=0.25, columns=["hours"])], seed=SEED, schema=SCHEMA)
    noise = pd.read_parquet(out)["hours"].to_numpy() - frame["hours"].to_numpy()
    expected = 0.25 * frame["hours"].var(ddof=1)
    # the sample variance of N normal draws is within 4 standard errors (sqrt(2/N)) of the truth
    assert abs(noise.var() / expected - 1) < 4 * np.sqrt(2 / N)
    assert abs(noise.mean()) < 4 * np.sqrt(expected / N)


# --------------------------------------------------------------------------- refusals
def test_a_method_that_is_not_row_wise_is_refused_by_name(parquet, tmp_path):
    with pytest.raises(ParameterError, match=r"methods\[1\] \(Microaggregation\).*'all'"):
        protect_file(parquet, tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1), Microaggregation(k=3)], seed=SEED)


def test_a_stratified_row_wise_run_is_refused(parquet, tmp_path):
    from sdckit.masking import Pram

    with pytest.raises(ParameterError, match="Pram"):
        protect_file(parquet, tmp_path / "o.parquet", [Pram(p_keep=0.8, columns=["region"], strata=["age"])], seed=SEED)


@pytest.mark.parametrize("kwargs, culprit", [
    ({"engine": "spark"}, "'engine'"),
    ({"engine": "memory"}, "engine='duckdb'"),
    ({"batch_rows": 0}, "'batch_rows'"),
])
def test_bad_engine_parameters_name_the_parameter(parquet, tmp_path, kwargs, culprit):
    with pytest.raises(ParameterError, match=culprit):
        protect_file(parquet, tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1)], seed=SEED, **kwargs)


def test_unstreamable_formats_are_refused(parquet, tmp_path, frame):
    with pytest.raises(ParameterError, match="stata"):
        protect_file(parquet, tmp_path / "o.dta", [AdditiveNoise(alpha=0.1)], seed=SEED)
    with pytest.raises(ParameterError, match="stata"):
        protect_file(tmp_path / "in.dta", tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1)], seed=SEED, engine="dask")
    with pytest.raises(DataError, match="not found"):
        protect_file(tmp_path / "missing.parquet", tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1)], seed=SEED)


def test_a_missing_value_is_refused_with_its_global_row(tmp_path, frame):
    data = frame[["income"]].copy()
    data.loc[CHUNK_ROWS + 5, "income"] = np.nan
    path = tmp_path / "nan.parquet"
    data.to_parquet(path)
    with pytest.raises(DataError, match=f"first at row {CHUNK_ROWS + 5}"):
        protect_file(path, tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1)], seed=SEED)
    assert not (tmp_path / "o.parquet").exists()


def test_the_input_is_never_overwritten(parquet):
    with pytest.raises(DataError):
        protect_file(parquet, parquet, [AdditiveNoise(alpha=0.1, columns=["income"])], seed=SEED)


@pytest.mark.parametrize("text, expected", [("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5g", 1.5e9),
                                            (3_000_000, 3_000_000)])
def test_memory_budgets_are_read(text, expected):
    assert parse_memory(text) == int(expected)


@pytest.mark.parametrize("text", ["2XB", "lots", "-1GB", "10"])
def test_bad_memory_budgets_name_the_parameter(text):
    with pytest.raises(ParameterError, match="'memory'"):
        parse_memory(text)


# --------------------------------------------------------------------------- CLI and recipe
RECIPE = """
seed = "{seed}"
{engine}
[input]
path = "in.parquet"
[schema]
identifier = ["id"]
[[method]]
name = "additive_noise"
alpha = 0.1
columns = ["income"]
[[method]]
name = "top_bottom_coding"
top = 80
columns = ["age"]
[output]
dir = "{out}"
format = "csv"
"""


def _recipe(tmp_path, parquet, out, engine=""):
    (tmp_path / "in.parquet").write_bytes(parquet.read_bytes())
    path = tmp_path / f"{out}.toml"
    path.write_text(RECIPE.format(seed=SEED, engine=engine, out=out))
    return path


def test_cli_streams_by_itself_past_the_memory_budget_and_matches_memory(cli, tmp_path, parquet):
    streamed = cli("protect", str(_recipe(tmp_path, parquet, "s")), "--memory", "5MB", "--json", str(tmp_path / "s.json"))
    assert streamed.returncode == 0, streamed.stderr
    manifest = json.loads((tmp_path / "s.json").read_text())["manifest"]
    assert manifest["engine"]["name"] == "duckdb" and "not written" in manifest["report"]
    memory = cli("protect", str(_recipe(tmp_path, parquet, "m")), "--no-report")
    assert memory.returncode == 0, memory.stderr
    assert (tmp_path / "s" / "in_protected.csv").read_bytes() == (tmp_path / "m" / "in_protected.csv").read_bytes()


def test_recipe_engine_key_is_checked(cli, tmp_path, parquet):
    result = cli("protect", str(_recipe(tmp_path, parquet, "b", 'engine = "spark"')))
    assert result.returncode == 2 and "'engine'" in result.stderr and "Traceback" not in result.stderr


def test_cli_refuses_a_recipe_that_cannot_stream(cli, tmp_path, parquet):
    path = _recipe(tmp_path, parquet, "g")
    path.write_text(path.read_text().replace('name = "top_bottom_coding"\ntop = 80', 'name = "microaggregation"\nk = 3'))
    result = cli("protect", str(path), "--engine", "duckdb")
    assert result.returncode == 2 and "Microaggregation" in result.stderr


@pytest.mark.slow
def test_streaming_peak_memory_is_bounded(tmp_path):
    """2e6 records x 5 columns (80 MB as floats) stream in well under the memory reading them
    whole takes: the child's peak RSS grows by less than the data's size."""
    script = textwrap.dedent(f"""
        import resource, sys
        import numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
        from sdckit.engine import protect_file
        from sdckit.masking import AdditiveNoise
        path = sys.argv[1]
        rng = np.random.default_rng(0)
        with pq.ParquetWriter(path, pa.schema([(c, pa.float64()) for c in "abcde"])) as w:
            for _ in range(20):
                w.write_table(pa.table({{c: rng.normal(size=100_000) for c in "abcde"}}))
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        protect_file(path, path + ".out.parquet", [AdditiveNoise(alpha=0.1)], seed="{SEED}")
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(sdckit.__file__).resolve().parents[1])}
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "big.parquet")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) < 80e6


def test_a_keyed_input_fingerprint_is_the_in_memory_one(parquet, frame, tmp_path):
    key = "11" * 32
    streamed = protect_file(parquet, tmp_path / "o.parquet", METHODS[:1], seed=SEED, schema=SCHEMA,
                            fingerprint_key=key)
    memory = protect(frame, METHODS[:1], seed=SEED, schema=SCHEMA, fingerprint_key=key)
    assert streamed.manifest["input"]["fingerprint"] == memory.manifest["input"]["fingerprint"]
    assert streamed.manifest["input"]["fingerprint"].startswith("hmac-sha256:")
