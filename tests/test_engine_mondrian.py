"""Mondrian on Dask by cells of a KD partition (issue 17)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.anonymity import Mondrian
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.cells import assign_cells, kd_cuts
from sdckit.pipeline import mondrian_file


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client  # the session's cluster (tests/conftest.py)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    rng = np.random.default_rng(6)
    n = 12_000
    frame = pd.DataFrame({"x": rng.uniform(0, 100, n), "y": rng.normal(50, 10, n), "z": rng.integers(0, 90, n),
                          "income": rng.lognormal(10, 1, n)})
    path = tmp_path_factory.mktemp("mondrian") / "in.parquet"
    frame.to_parquet(path, row_group_size=5000)
    return frame, path


def test_one_cell_is_the_in_memory_mondrian(client, source, tmp_path):
    frame, path = source
    method = Mondrian(5, ("x", "y", "z"))
    info = mondrian_file(path, tmp_path / "o.parquet", method, cell_size=len(frame), client=client)
    expected = method.partition(frame)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "o.parquet"), expected.data.reset_index(drop=True),
                                  check_dtype=False)
    assert info["cells"] == 1 and info["classes"] == expected.info["classes"]
    for q in ("x", "y", "z"):
        assert info["loss_by_attribute"][q] == pytest.approx(expected.info["loss_by_attribute"][q], rel=1e-9)


def test_cells_keep_k_anonymity_and_the_record_order(client, source, tmp_path):
    frame, path = source
    method = Mondrian(5, ("x", "y", "z"))
    info = mondrian_file(path, tmp_path / "o.parquet", method, cell_size=3000, client=client)
    out = pd.read_parquet(tmp_path / "o.parquet")
    assert info["cells"] == 4 and info["records"] == len(frame)
    np.testing.assert_array_equal(out["income"].to_numpy(), frame["income"].to_numpy())  # order kept
    assert out.groupby(["x", "y", "z"]).size().min() >= 5
    whole = method.partition(frame).info["loss"]
    assert whole <= info["loss"] < 1.5 * whole  # a little coarser than one Mondrian over all


def test_kd_cuts_and_assignment_by_hand():
    sample = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.1], [3.0, 0.1]])
    nodes, leaves = kd_cuts(sample, np.array([3.0, 0.1]), 2)
    assert leaves == 2 and nodes[0].column == 0 and nodes[0].value == 1.5
    assert assign_cells(np.array([[1.4, 5.0], [1.6, -5.0]]), nodes).tolist() == [0, 1]


def test_refusals(client, source, tmp_path):
    _, path = source
    with pytest.raises(ParameterError, match="Mondrian method"):
        mondrian_file(path, tmp_path / "o.parquet", object(), client=client)
    with pytest.raises(ParameterError, match="'cell_size'"):
        mondrian_file(path, tmp_path / "o.parquet", Mondrian(5, ("x",)), cell_size=6, client=client)
    with pytest.raises(DataError, match="'nope' is not in"):
        mondrian_file(path, tmp_path / "o.parquet", Mondrian(5, ("x", "nope")), client=client)
