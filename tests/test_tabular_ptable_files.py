"""Numeric p-tables in ptable's file format (issue 30 section 2): :func:`sdckit.tabular.read_ptable`
reads what ``ptable::pt_export`` writes for ``create_num_ptable``'s tables (a ``type`` column;
one table of type ``all``, or ``even`` and ``odd`` together) and :func:`write_ptable` writes them
back byte for byte.

References: R's own files (tests/data/cellkey/pt_export_nums_*.txt, written by ptable 1.0.0's
``pt_export``; provenance in tests/data/PROVENANCE.txt) against R's own tables (pt_ex_nums.csv,
``@pTable`` printed to 17 digits): the files print 8 decimals (8 significant digits in R's
scientific notation), so the values agree to 5e-9. That a table read from R's file equals
:func:`ptable_numeric`'s own solve (to 5e-7, as for ``pt_ex_nums``) is checked beside that solve
in tests/test_tabular_cellkey_r_sums.py (no second solve here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular import CellKeySumParams, cell_key_sums, ptable, ptable_numeric, read_ptable, write_ptable
from sdckit.tabular.ptable import COLUMNS

CK = Path(__file__).parent / "data" / "cellkey"
#: R's files: (name, the types it holds, the SDCtool pt_export was called with).
R_FILES = [("pt_export_nums_all.txt", ["all"], "TauArgus"), ("pt_export_nums_all_sas.txt", ["all"], "SAS"),
           ("pt_export_nums_even_odd.txt", ["even", "odd"], "SAS")]


@pytest.mark.parametrize("name, types, tool", R_FILES)
def test_read_ptable_reads_pt_exports_numeric_tables(name, types, tool):
    table = read_ptable(CK / name)
    r = pd.read_csv(CK / "pt_ex_nums.csv")
    r = pd.concat([r[r["type"] == k] for k in types], ignore_index=True)  # the file's order: even, then odd
    assert list(table.columns) == COLUMNS and len(table) == len(r)
    assert table["type"].tolist() == r["type"].tolist()
    for col in ("i", "j", "v"):
        assert table[col].dtype == float and np.array_equal(table[col].to_numpy(), r[col].to_numpy(dtype=float))
    for col in ("p", "p_int_lb", "p_int_ub"):  # p_int_lb: the file's (SAS) or the previous p_int_ub (TauArgus)
        assert np.abs(table[col].to_numpy() - r[col].to_numpy()).max() <= 5e-9, col


@pytest.mark.parametrize("name, types, tool", R_FILES)
def test_write_ptable_writes_pt_exports_bytes(name, types, tool, tmp_path):
    """Read from R's file and written again: R's file, byte for byte (its columns, the type last,
    R's format(digits = 8) — scientific for the even/odd file's p, which holds 9.9999999e-09)."""
    out = write_ptable(read_ptable(CK / name), tmp_path / name, sdctool=tool)
    assert out.read_bytes() == (CK / name).read_bytes()


@pytest.mark.parametrize("tool", ["TauArgus", "SAS"])
def test_round_trip_gives_the_same_table_and_the_same_sums(tool, tmp_path):
    """ptable_numeric's tables written and read back: i, j, v and type equal, the bounds equal
    (already rounded to 8 decimals), p to its 8 printed digits; the sums perturbed with the table
    read back equal those with the original, for an 'all' table and for even/odd tables."""
    all_ = ptable_numeric(3, 1, [1, 3])
    even_odd = pd.concat([ptable_numeric(3, 1, [1, 3], type="even"), ptable_numeric(3, 1.5, [1, 3], type="odd")],
                         ignore_index=True)
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"g": rng.choice(["a", "b", "c"], 200), "x": rng.integers(0, 5000, 200).astype(float),
                          "rkey": rng.integers(0, 10**8, 200) / 1e8})
    for table in (all_, even_odd):
        back = read_ptable(write_ptable(table, tmp_path / "pt.txt", sdctool=tool))
        assert back[["i", "j", "v", "type"]].equals(table[["i", "j", "v", "type"]])
        assert np.array_equal(back["p_int_ub"].to_numpy(), table["p_int_ub"].to_numpy())
        assert np.abs(back["p_int_lb"].to_numpy() - table["p_int_lb"].to_numpy()).max() <= 1e-12
        assert np.abs(back["p"].to_numpy() - table["p"].to_numpy()).max() <= 5e-9
        ptab = table if table is all_ else {k: g for k, g in table.groupby("type")}
        sums = [cell_key_sums(frame, ["g"], "rkey", "x", CellKeySumParams(ptab=t, fp=500, top_k=1))
                for t in (ptab, back)]
        assert sums[0]["sum_pert"].tolist() == sums[1]["sum_pert"].tolist()
        assert not np.allclose(sums[0]["sum_pert"], sums[0]["sum"])  # perturbed


def test_a_count_ptable_is_still_read_and_written_as_one(tmp_path):
    """A count p-table (no type column, or type 'all' with counts 0..max) keeps its int columns and
    pt_export's layout without type."""
    cnt = ptable(2, 1.05, js=1, mono=[True, True, False, True])
    path = write_ptable(cnt, tmp_path / "cnt.txt", sdctool="TauArgus")
    assert path.read_text().splitlines()[0] == "i;j;p;v;p_int_ub"
    assert read_ptable(path)["i"].dtype == np.int64
    cnt.to_csv(tmp_path / "cnt.csv", index=False)  # with its type column 'all'
    assert read_ptable(tmp_path / "cnt.csv")[["i", "j", "v"]].equals(cnt[["i", "j", "v"]])
    assert read_ptable(tmp_path / "cnt.csv", kind="nums")["i"].dtype == float  # a count table is a numeric one too


@pytest.mark.parametrize("edit, error, words", [
    (lambda t: t.replace(";all\n", ";median\n", 1), DataError, ["type 'median'", "'small_cells'"]),
    (lambda t: "\n".join(l for l in t.splitlines() if not l.startswith(" 0;")) + "\n", DataError,
     ["not a numeric p-table", "type 'even' has no row 0"]),
    (lambda t: t.replace("1.00000000;all", "0.90000000;all"), DataError, ["not a numeric p-table", "from 0 to 1"]),
])
def test_bad_numeric_files_are_one_line(edit, error, words, tmp_path):
    text = (CK / ("pt_export_nums_even_odd.txt" if "even" in str(words) else "pt_export_nums_all.txt")).read_text()
    (tmp_path / "bad.txt").write_text(edit(text))
    with pytest.raises(error) as info:
        read_ptable(tmp_path / "bad.txt")
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)


def test_bad_kinds_are_refused_in_the_template(tmp_path):
    with pytest.raises(ParameterError, match=r"The 'kind' parameter of read_ptable must be None or one of"):
        read_ptable(CK / "pt_export_nums_all.txt", kind="sums")
    with pytest.raises(ParameterError, match=r"The 'kind' parameter of write_ptable must be"):
        write_ptable(ptable_numeric(3, 1, [1, 3]), tmp_path / "x.txt", kind="numeric")
    with pytest.raises(DataError, match="not a count p-table"):  # forced: a numeric table is no count table
        read_ptable(CK / "pt_export_nums_all.txt", kind="cnts")
