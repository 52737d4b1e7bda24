"""Generalization to a chosen node streams (issue 17 §1): the optimal full-domain node found on a
file's frequency table, applied record by record by every engine — the bytes of the in-memory
release, and the release FullDomainGeneralization gives when it suppresses nothing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sdckit.anonymity import FullDomainGeneralization, GeneralizeToNode, Hierarchy
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine import protect_file
from sdckit.pipeline import protect, search_file

ADULT = Path(__file__).parent / "data" / "adult"
QI = ["age", "sex", "race"]
SEED = "1234567890abcdef1234567890abcdef"


@pytest.fixture(scope="module")
def hierarchies():
    return {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI}


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    frame = pd.read_csv(ADULT / "adult.csv.gz", sep=";", usecols=[*QI, "salary-class"])
    frame = pd.concat([frame] * 5, ignore_index=True)  # 150,810 records: three logical chunks
    path = tmp_path_factory.mktemp("generalize") / "adult.parquet"
    frame.to_parquet(path, row_group_size=40_000)
    return frame, path


def test_the_searched_node_applied_by_streaming_is_full_domain_generalizations_release(adult, hierarchies, tmp_path):
    frame, path = adult
    k = 50
    result = search_file(path, hierarchies, k, engine="duckdb")
    node = dict(zip(QI, (int(level) for level in result.node)))
    assert any(node.values())  # something is generalized
    method = GeneralizeToNode(hierarchies, node)
    out = tmp_path / "out.parquet"
    streamed = protect_file(path, out, [method], seed=SEED, batch_rows=9_999)
    memory = protect(frame, [method], seed=SEED)
    assert streamed.manifest["output"]["fingerprint"] == memory.manifest["output"]["fingerprint"]
    fdg = FullDomainGeneralization(k, hierarchies, max_suppression=0.0).run(frame)
    assert fdg.info["node"] == node and fdg.info["suppressed"] == 0
    pd.testing.assert_frame_equal(memory.data, fdg.data)
    pd.testing.assert_frame_equal(pd.read_parquet(out), fdg.data, check_dtype=False)
    assert memory.manifest["methods"][0]["info"] == {"node": node}


def test_hand_worked_generalization():
    h = Hierarchy.masking(["94142", "94141", "94139", "94138"], steps=(1, 2))
    data = pd.DataFrame({"zip": ["94142", "94139", "94138"], "x": [1, 2, 3]})
    out = GeneralizeToNode({"zip": h}, {"zip": 2}).run(data, seed=SEED)
    assert out.data["zip"].tolist() == ["941**", "941**", "941**"] and out.data["x"].tolist() == [1, 2, 3]
    assert out.schema["zip"].kind.value == "nominal"
    same = GeneralizeToNode({"zip": h}, {"zip": 0}).apply(data, seed=SEED)
    assert same["zip"].tolist() == data["zip"].tolist()


def test_bad_nodes_and_values_are_refused_by_name():
    h = Hierarchy.masking(["94142", "94141"], steps=(1, 2))
    with pytest.raises(ParameterError, match=r"'node'.*column 'age' has none"):
        GeneralizeToNode({"zip": h}, {"age": 1})
    with pytest.raises(ParameterError, match=r"'node'.*\[0, 2\] for column 'zip'"):
        GeneralizeToNode({"zip": h}, {"zip": 3})
    with pytest.raises(ParameterError, match="'node'"):
        GeneralizeToNode({"zip": h}, {"zip": -1})
    data = pd.DataFrame({"zip": ["94142", "secret"]})
    with pytest.raises(DataError, match="zip") as info:
        GeneralizeToNode({"zip": h}, {"zip": 1}).apply(data, seed=SEED)
    assert "secret" not in str(info.value)
