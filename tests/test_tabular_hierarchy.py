"""Hierarchy of a table dimension: from parents, code lengths, prefixes and tau-ARGUS .hrc files."""

import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import Hierarchy
from sdckit.tabular.hierarchy import as_hierarchy

REGIONS = {"A1": "A", "A2": "A", "B1": "B", "A": "Total", "B": "Total"}


def test_from_parents_tree():
    h = Hierarchy.from_parents(REGIONS, name="region")
    assert h.total == "Total" and h.codes[0] == "Total"
    assert h.codes == ("Total", "A", "A1", "A2", "B", "B1")  # depth-first, order as given
    assert set(h.leaves) == {"A1", "A2", "B1"}
    assert set(h.subtotals) == {"A", "B"}
    assert h.children("A") == ["A1", "A2"]
    assert h.children("A1") == []
    assert h.parent("A1") == "A" and h.parent("Total") is None
    assert h.ancestors("A2") == ["A2", "A", "Total"]
    assert list(h.depths()) == [0, 1, 2, 2, 1, 2]
    assert h.to_parents() == REGIONS


def test_several_top_codes_need_a_total():
    with pytest.raises(DataError, match="top codes.*total="):
        Hierarchy.from_parents({"a": "X", "b": "Y"}, name="d")
    h = Hierarchy.from_parents({"a": "X", "b": "Y"}, total="All")
    assert h.total == "All" and h.children("All") == ["X", "Y"]


def test_cycle_is_named():
    with pytest.raises(DataError, match="cycle"):
        Hierarchy.from_parents({"a": "Total", "b": "c", "c": "b"}, name="d")


def test_empty_and_total_with_parent_refused():
    with pytest.raises(DataError, match="empty"):
        Hierarchy.from_parents({})
    with pytest.raises(DataError, match="gives the total"):
        Hierarchy.from_parents({"T": "x", "a": "T"}, total="T")


def test_unknown_code_named():
    h = Hierarchy.from_parents(REGIONS, name="region")
    with pytest.raises(DataError, match="'Z'.*'region'"):
        h.index("Z")


def test_from_lengths_prefix_levels():
    h = Hierarchy.from_lengths(["111", "112", "121", "211"], [1, 1, 1])
    assert h.parent("111") == "11" and h.parent("11") == "1" and h.parent("1") == "Total"
    assert set(h.leaves) == {"111", "112", "121", "211"}
    with pytest.raises(ParameterError, match="lengths"):
        Hierarchy.from_lengths(["1"], [0])


def test_from_prefixes():
    h = Hierarchy.from_prefixes(["1", "11", "12", "2", "21"])
    assert h.parent("11") == "1" and h.parent("21") == "2" and h.parent("1") == "Total"


def test_from_hrc(tmp_path):
    p = tmp_path / "r.hrc"
    p.write_text("A\n@A1\n@A2\nB\n@B1\n")
    h = Hierarchy.from_hrc(p, total="All")
    assert h.total == "All" and h.to_parents() == {"A": "All", "A1": "A", "A2": "A", "B": "All", "B1": "B"}


def test_as_hierarchy_accepts_mapping_path_none(tmp_path):
    assert as_hierarchy(REGIONS, "r").codes == Hierarchy.from_parents(REGIONS).codes
    flat = as_hierarchy(None, "s", codes=["x", "y"])
    assert flat.to_parents() == {"x": "Total", "y": "Total"}
    with pytest.raises(ParameterError, match="'s'"):
        as_hierarchy(3, "s")
    with pytest.raises(DataError, match="total's code"):
        Hierarchy.flat(["Total", "x"], name="s")
