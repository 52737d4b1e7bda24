"""The Dask engine on a 2-worker LocalCluster (issue 17): the same release as in memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.rowwise import CHUNK_ROWS
from sdckit.engine import protect_file
from sdckit.masking import AdditiveNoise, Microaggregation, MultiplicativeNoise, Rounding, TopBottomCoding
from sdckit.pipeline import protect

pytest.importorskip("dask.distributed")

SEED = "fedcba9876543210fedcba9876543210"
N = CHUNK_ROWS + 4321


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client  # the session's cluster (tests/conftest.py)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame({"x": rng.normal(50, 10, N), "y": rng.integers(0, 1000, N), "g": rng.choice(list("ab"), N)})


METHODS = [AdditiveNoise(alpha=0.1, columns=["x"]), TopBottomCoding(top=900, bottom=50, columns=["y"]),
           Rounding(base=0.5, columns=["x"]), MultiplicativeNoise(a=0.2, columns=["y"])]


def test_dask_file_engine_gives_the_in_memory_release(client, frame, tmp_path):
    source = tmp_path / "in.parquet"
    frame.to_parquet(source, row_group_size=10_000)
    out = tmp_path / "out.parquet"
    streamed = protect_file(source, out, METHODS, engine="dask", client=client, seed=SEED)
    memory = protect(frame, METHODS, seed=SEED)
    pd.testing.assert_frame_equal(pd.read_parquet(out), memory.data, check_exact=True)
    assert streamed.manifest["output"]["fingerprint"] == memory.manifest["output"]["fingerprint"]
    assert streamed.manifest["engine"] == {"name": "dask", "chunk_rows": CHUNK_ROWS, "chunks": 2}
    assert streamed.manifest["methods"][1]["info"] == memory.manifest["methods"][1]["info"]


def test_dask_frame_engine_runs_row_wise_steps_on_the_cluster_and_others_here(client, frame):
    methods = [AdditiveNoise(alpha=0.1, columns=["x"]), Microaggregation(k=5, columns=["y"]),
               MultiplicativeNoise(a=0.1, columns=["x"])]
    small = frame.head(3000)
    on_dask = protect(small, methods, seed=SEED, engine="dask", client=client)
    memory = protect(small, methods, seed=SEED)
    pd.testing.assert_frame_equal(on_dask.data, memory.data, check_exact=True)
    assert on_dask.manifest["engine"] == {"name": "dask"}


def test_dask_task_errors_reach_the_caller_as_they_are(client, tmp_path):
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0] * 10})
    source = tmp_path / "nan.parquet"
    frame.to_parquet(source)
    with pytest.raises(DataError, match="column 'x'"):
        protect_file(source, tmp_path / "o.parquet", [AdditiveNoise(alpha=0.1)], engine="dask", client=client, seed=SEED)
    assert not (tmp_path / "o.parquet").exists()


def test_dask_engine_reads_csv_in_byte_blocks_with_the_whole_files_dtypes(client, frame, tmp_path):
    # "y" is an integer column until one missing value in the last block: read whole, it is
    # float64, and so it must be in every block (the workers' first pass merges the dtypes)
    data = frame.copy()
    data["y"] = data["y"].astype(float)
    data.loc[N - 5, "y"] = np.nan
    data["y"] = data["y"].astype("Int64").astype(object).where(data["y"].notna(), None)
    source = tmp_path / "in.csv"
    data.to_csv(source, index=False)
    methods = [AdditiveNoise(alpha=0.1, columns=["x"]), Rounding(base=0.5, columns=["x"]),
               TopBottomCoding(top=900.5, top_value="mean", columns=["y"])]
    memory = protect(pd.read_csv(source), methods, seed=SEED)
    assert memory.data["y"].dtype == np.float64
    expected = tmp_path / "expected.csv"
    memory.data.to_csv(expected, index=False)
    for blocksize in (100_000, 10_000_000):  # many blocks (not at chunk bounds), and one
        out = tmp_path / f"out-{blocksize}.csv"
        streamed = protect_file(source, out, methods, engine="dask", client=client, seed=SEED, blocksize=blocksize)
        assert out.read_bytes() == expected.read_bytes()
        assert streamed.manifest["output"]["fingerprint"] == memory.manifest["output"]["fingerprint"]


def test_dask_csv_blocksize_is_checked(client, tmp_path):
    source = tmp_path / "in.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_csv(source, index=False)
    with pytest.raises(ParameterError, match="'blocksize'"):
        protect_file(source, tmp_path / "o.csv", [AdditiveNoise(alpha=0.1)], engine="dask", client=client,
                     seed=SEED, blocksize=10)


def test_dask_csv_without_records_is_refused(client, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("x,y\n")
    with pytest.raises(DataError, match="holds no records"):
        protect_file(source, tmp_path / "o.csv", [AdditiveNoise(alpha=0.1)], engine="dask", client=client, seed=SEED)


def test_dask_engine_runs_rank_swapping_on_the_drivers_external_sort(client, frame, tmp_path):
    from sdckit.masking import RankSwapping

    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    methods = [AdditiveNoise(alpha=0.1, columns=["x"]), RankSwapping(p=5.0, columns=["y", "x"])]
    out = tmp_path / "out.parquet"
    streamed = protect_file(source, out, methods, engine="dask", client=client, seed=SEED, blocksize=300_000)
    memory = protect(pd.read_csv(source), methods, seed=SEED)
    pd.testing.assert_frame_equal(pd.read_parquet(out), memory.data, check_exact=True, check_dtype=False)
    assert streamed.manifest["output"]["fingerprint"] == memory.manifest["output"]["fingerprint"]
    assert streamed.manifest["methods"][1]["info"] == memory.manifest["methods"][1]["info"]
