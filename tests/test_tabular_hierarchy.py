"""The hierarchy of a table dimension (`DimensionHierarchy`): from parents, code lengths, prefixes and
tau-ARGUS .hrc files; its names before issue 29 (`Hierarchy`, `as_hierarchy`) warn and give the same objects."""

import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import DimensionHierarchy
from sdckit.tabular.hierarchy import as_dimension_hierarchy

REGIONS = {"A1": "A", "A2": "A", "B1": "B", "A": "Total", "B": "Total"}


def test_from_parents_tree():
    h = DimensionHierarchy.from_parents(REGIONS, name="region")
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
        DimensionHierarchy.from_parents({"a": "X", "b": "Y"}, name="d")
    h = DimensionHierarchy.from_parents({"a": "X", "b": "Y"}, total="All")
    assert h.total == "All" and h.children("All") == ["X", "Y"]


def test_cycle_is_named():
    with pytest.raises(DataError, match="cycle"):
        DimensionHierarchy.from_parents({"a": "Total", "b": "c", "c": "b"}, name="d")


def test_empty_and_total_with_parent_refused():
    with pytest.raises(DataError, match="empty"):
        DimensionHierarchy.from_parents({})
    with pytest.raises(DataError, match="gives the total"):
        DimensionHierarchy.from_parents({"T": "x", "a": "T"}, total="T")


def test_unknown_code_named():
    h = DimensionHierarchy.from_parents(REGIONS, name="region")
    with pytest.raises(DataError, match="'Z'.*'region'"):
        h.index("Z")


def test_from_lengths_prefix_levels():
    h = DimensionHierarchy.from_lengths(["111", "112", "121", "211"], [1, 1, 1])
    assert h.parent("111") == "11" and h.parent("11") == "1" and h.parent("1") == "Total"
    assert set(h.leaves) == {"111", "112", "121", "211"}
    with pytest.raises(ParameterError, match="lengths"):
        DimensionHierarchy.from_lengths(["1"], [0])


def test_from_prefixes():
    h = DimensionHierarchy.from_prefixes(["1", "11", "12", "2", "21"])
    assert h.parent("11") == "1" and h.parent("21") == "2" and h.parent("1") == "Total"


def test_from_hrc(tmp_path):
    p = tmp_path / "r.hrc"
    p.write_text("A\n@A1\n@A2\nB\n@B1\n")
    h = DimensionHierarchy.from_hrc(p, total="All")
    assert h.total == "All" and h.to_parents() == {"A": "All", "A1": "A", "A2": "A", "B": "All", "B1": "B"}


def test_as_hierarchy_accepts_mapping_path_none(tmp_path):
    assert as_dimension_hierarchy(REGIONS, "r").codes == DimensionHierarchy.from_parents(REGIONS).codes
    flat = as_dimension_hierarchy(None, "s", codes=["x", "y"])
    assert flat.to_parents() == {"x": "Total", "y": "Total"}
    with pytest.raises(ParameterError, match="'s'"):
        as_dimension_hierarchy(3, "s")
    with pytest.raises(DataError, match="total's code"):
        DimensionHierarchy.flat(["Total", "x"], name="s")


def test_the_old_names_warn_and_give_the_new_objects():
    """Issue 29 item 7: the table dimension's tree is ``DimensionHierarchy`` (the generalization
    ``Hierarchy`` of core is another idea); ``sdckit.tabular.Hierarchy`` and ``as_hierarchy`` (and
    the same names on ``sdckit.tabular.hierarchy``) still work for one release, with a
    FutureWarning pointing at the caller's line, and are the new objects."""
    import sdckit.tabular as tabular
    from sdckit.core.hierarchy import Hierarchy as GeneralizationHierarchy
    from sdckit.tabular import hierarchy as module

    assert tabular.DimensionHierarchy is module.DimensionHierarchy is DimensionHierarchy
    assert tabular.as_dimension_hierarchy is module.as_dimension_hierarchy is as_dimension_hierarchy
    assert DimensionHierarchy is not GeneralizationHierarchy
    for where in (tabular, module):
        for old, new in (("Hierarchy", DimensionHierarchy), ("as_hierarchy", as_dimension_hierarchy)):
            with pytest.warns(FutureWarning, match=rf"{where.__name__}\.{old} is now .*\.{new.__name__}; "
                              "the old name goes in the next release") as record:
                assert getattr(where, old) is new
            assert record[0].filename == __file__
        assert "Hierarchy" not in dir(where)
    with pytest.warns(FutureWarning, match="sdckit.tabular.Hierarchy is now"):
        from sdckit.tabular import Hierarchy
    assert Hierarchy is DimensionHierarchy
    assert "Hierarchy" not in tabular.__all__ and "DimensionHierarchy" in tabular.__all__
    with pytest.raises(AttributeError, match="no attribute 'Hierarchies'"):
        tabular.Hierarchies  # noqa: B018


def test_no_module_in_src_uses_the_old_names():
    """No source module imports or reads ``Hierarchy``/``as_hierarchy`` from ``sdckit.tabular``
    (or its ``hierarchy`` module), and in ``sdckit/tabular/`` no code names them at all."""
    import ast
    from pathlib import Path

    import sdckit

    old = {"Hierarchy", "as_hierarchy"}
    tabular = {"sdckit.tabular", "sdckit.tabular.hierarchy"}
    root = Path(sdckit.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        inside = path.is_relative_to(root / "tabular")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module in tabular or (inside and node.level)):
                found += [f"{path}: import {a.name}" for a in node.names if a.name in old]
            elif isinstance(node, ast.Attribute) and node.attr in old and ast.unparse(node.value).endswith(
                    ("tabular", "tabular.hierarchy")):
                found.append(f"{path}: {ast.unparse(node)}")
            elif inside and isinstance(node, ast.Name) and node.id in old:
                found.append(f"{path}:{node.lineno}: {node.id}")
        text = path.read_text(encoding="utf-8")
        found += [f"{path}: {name}" for name in ("tabular.Hierarchy", "tabular.as_hierarchy") if name in text]
    assert not found, found
