"""The LP audit against closed forms: the rectangle of a 2-D table, deducible cells, 3-D slices."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.tabular import MinFrequency, Table, audit_pattern, sensitivity
from sdckit.tabular.audit import intervals


def table2d(values, negative_ok=False):
    """A 2-D table (rows r0.., columns c0..) with margins from a matrix of interior values."""
    values = np.asarray(values, float)
    R, C = values.shape
    rows = []
    for i in range(R):
        for j in range(C):
            rows.append((f"r{i}", f"c{j}", values[i, j]))
        rows.append((f"r{i}", "Total", values[i].sum()))
    for j in range(C):
        rows.append(("Total", f"c{j}", values[:, j].sum()))
    rows.append(("Total", "Total", values.sum()))
    cells = pd.DataFrame(rows, columns=["r", "c", "value"])
    cells["freq"] = 5
    return Table.from_cells(cells, ["r", "c"])


def mask(t, keys):
    m = np.zeros(len(t.cells), bool)
    m[t.locate(keys)] = True
    return m


def test_rectangle_closed_form_hand_worked():
    # interior 3x3; suppress r0/r1 x c0/c1; x = r0,c0 = 5
    t = table2d([[5, 7, 9], [6, 2, 8], [10, 11, 12]])
    keys = [("r0", "c0"), ("r0", "c1"), ("r1", "c0"), ("r1", "c1")]
    lo, hi, _ = intervals(t, mask(t, keys))
    i = t.locate(keys)
    # x00 = 5 can move by -min(5, 2) .. +min(7, 6)
    assert lo[i[0]] == pytest.approx(3.0) and hi[i[0]] == pytest.approx(11.0)
    # x11 = 2 moves with x00: -min(5, 2) .. +min(7, 6)
    assert lo[i[3]] == pytest.approx(0.0) and hi[i[3]] == pytest.approx(8.0)
    # x01 = 7 moves against them: -min(7, 6) .. +min(5, 2)
    assert lo[i[1]] == pytest.approx(1.0) and hi[i[1]] == pytest.approx(9.0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=9, max_size=9),
       st.sampled_from(list(itertools.combinations(range(3), 2))),
       st.sampled_from(list(itertools.combinations(range(3), 2))))
def test_rectangle_interval_is_x_minus_min_to_x_plus_min(vals, rows, cols):
    """Suppressing a rectangle (i,j), (i,l), (k,j), (k,l): x_ij lies in
    [x_ij - min(x_ij, x_kl), x_ij + min(x_il, x_kj)] (values >= 0)."""
    v = np.asarray(vals, float).reshape(3, 3) + 1.0
    t = table2d(v)
    (i, k), (j, l) = rows, cols
    keys = [(f"r{i}", f"c{j}"), (f"r{i}", f"c{l}"), (f"r{k}", f"c{j}"), (f"r{k}", f"c{l}")]
    lo, hi, _ = intervals(t, mask(t, keys))
    p = t.locate(keys[:1])[0]
    assert lo[p] == pytest.approx(v[i, j] - min(v[i, j], v[k, l]))
    assert hi[p] == pytest.approx(v[i, j] + min(v[i, l], v[k, j]))


def test_single_suppressed_cell_is_deduced_exactly():
    t = table2d([[5, 7], [6, 2]])
    s = sensitivity(t, None, primary=[("r0", "c0")])
    a = audit_pattern(t, mask(t, [("r0", "c0")]), s)
    row = a.cells[a.cells.status == "primary"].iloc[0]
    assert row["lo"] == pytest.approx(5.0) and row["hi"] == pytest.approx(5.0)
    assert not a.safe and a.unprotected == 1


def test_negative_values_unbounded():
    t = table2d([[5, -7], [6, 2]])
    assert t.negative
    keys = [("r0", "c0"), ("r0", "c1"), ("r1", "c0"), ("r1", "c1")]
    lo, hi, _ = intervals(t, mask(t, keys))
    p = t.locate(keys[:1])[0]
    assert lo[p] == -np.inf and hi[p] == np.inf


def test_cell_with_total_suppressed_is_unbounded_above():
    cells = pd.DataFrame({"d": ["a", "b", "Total"], "value": [3.0, 4.0, 7.0], "freq": [1, 2, 3]})
    t = Table.from_cells(cells, ["d"])
    lo, hi, _ = intervals(t, mask(t, [("a",), ("Total",)]))
    a = t.locate([("a",)])[0]
    assert lo[a] == 0.0 and hi[a] == np.inf


def table3d(v):
    """2x2x2 interior with every margin (3x3x3 cells)."""
    rows = []
    codes = ["a", "b", "Total"]
    for i, j, k in itertools.product(range(3), range(3), range(3)):
        sl = tuple(slice(None) if x == 2 else x for x in (i, j, k))
        rows.append((codes[i], ["x", "y", "Total"][j], ["p", "q", "Total"][k], float(np.sum(v[sl]))))
    cells = pd.DataFrame(rows, columns=["d1", "d2", "d3", "value"])
    cells["freq"] = 4
    return Table.from_cells(cells, ["d1", "d2", "d3"])


def test_3d_slice_rectangle_safe_in_2d_unsafe_in_3d():
    v = np.arange(1, 9, dtype=float).reshape(2, 2, 2) * 3
    t3 = table3d(v)
    slice_p = v[:, :, 0]
    t2 = table2d(slice_p)
    keys2 = [("r0", "c0"), ("r0", "c1"), ("r1", "c0"), ("r1", "c1")]
    s2 = sensitivity(t2, None, primary=keys2[:1])
    assert audit_pattern(t2, mask(t2, keys2), s2).safe  # the layer alone: the rectangle protects
    keys3 = [("a", "x", "p"), ("a", "y", "p"), ("b", "x", "p"), ("b", "y", "p")]
    s3 = sensitivity(t3, None, primary=keys3[:1])
    a3 = audit_pattern(t3, mask(t3, keys3), s3)
    assert not a3.safe  # x[a,x,p] = x[a,x,Total] - x[a,x,q], both published
    lo, hi = a3.cells.loc[a3.cells.status == "primary", ["lo", "hi"]].iloc[0]
    assert lo == pytest.approx(v[0, 0, 0]) and hi == pytest.approx(v[0, 0, 0])


def test_audit_frame_columns_and_to_dict():
    t = table2d([[1, 7], [6, 2]])
    s = sensitivity(t, MinFrequency(10))
    a = audit_pattern(t, s.primary, s)
    assert list(a.cells.columns) == ["r", "c", "value", "status", "lo", "hi", "upper", "lower", "protected"]
    assert set(a.to_dict()) == {"safe", "unprotected_primaries", "suppressed_cells", "lps_solved"}
