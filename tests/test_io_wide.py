"""Very wide files are refused before they are parsed (issue 27).

A 10 MB CSV file of one header line and 700,000 columns kept ``sdckit risk`` busy for more than
9 minutes at 2.4 GB (pandas alone needs about two minutes and 2.3 GB to parse that header). The
shared reader counts the header's fields first and refuses a file of more than
``sdckit.io.MAX_COLUMNS`` (10,000) columns in one line: every command that reads a file benefits.
"""

from __future__ import annotations

import time

import pandas as pd
import pytest

from sdckit import DataError, ParameterError
from sdckit.cli import main
from sdckit.io import MAX_COLUMNS, read


def _header_only(path, columns: int, rows: int = 0):
    names = [f"column{i:07d}" for i in range(columns)]
    with open(path, "w") as fh:
        fh.write(",".join(names) + "\n")
        for r in range(rows):
            fh.write(",".join(str((i + r) % 3) for i in range(columns)) + "\n")
    return path


def _risk(path, capsys) -> tuple[int, str, float]:
    start = time.perf_counter()
    with pytest.raises(SystemExit) as done:
        main(["risk", str(path), "--keys", "column0000001,column0000002", "--no-suda"])
    return done.value.code, capsys.readouterr().err, time.perf_counter() - start


def test_700000_columns_refused_in_seconds(tmp_path, capsys):
    path = _header_only(tmp_path / "wide.csv", 700_000)
    assert path.stat().st_size > 9_500_000  # about 10 MB
    code, err, seconds = _risk(path, capsys)
    assert code == 2 and seconds < 20  # before: > 9 minutes
    assert err.count("\n") == 1 and "has 700,000 columns; sdckit reads at most 10,000" in err


def test_just_over_the_limit_is_refused(tmp_path, capsys):
    path = _header_only(tmp_path / "wide.csv", MAX_COLUMNS + 1, rows=3)
    code, err, _ = _risk(path, capsys)
    assert code == 2 and f"has {MAX_COLUMNS + 1:,} columns" in err


def test_the_limit_is_a_parameter_and_usecols_picks_fewer(tmp_path):
    path = _header_only(tmp_path / "six.csv", 6, rows=2)
    with pytest.raises(DataError, match="has 6 columns; sdckit reads at most 5"):
        read(path, max_columns=5)
    assert read(path, max_columns=5, usecols=["column0000000", "column0000003"]).shape == (2, 2)
    assert read(path, max_columns=6).shape == (2, 6)
    with pytest.raises(ParameterError, match="max_columns"):
        read(path, max_columns=0)


def test_parquet_refused_from_its_schema(tmp_path):
    path = tmp_path / "six.parquet"
    pd.DataFrame({f"c{i}": [1, 2] for i in range(6)}).to_parquet(path)
    with pytest.raises(DataError, match="has 6 columns"):
        read(path, max_columns=5)
    assert read(path, max_columns=5, columns=["c0", "c1"]).shape == (2, 2)


def test_a_header_longer_than_the_sniffed_head_is_read_whole(tmp_path):
    """The duplicate-name check read the header from the first 64 KiB only: a header cut inside
    its last name ('b10' cut to 'b1') was refused as having the duplicate name 'b1'."""
    path = tmp_path / "long.csv"
    path.write_text("a" * 65530 + ",b1,b10,c\n1,2,3,4\n")
    frame = read(path)
    assert list(frame.columns)[1:] == ["b1", "b10", "c"] and frame.shape == (1, 4)
    path.write_text("a" * 65530 + ",b1,b10,b1\n1,2,3,4\n")
    with pytest.raises(DataError, match="duplicate column names: 'b1'"):
        read(path)
