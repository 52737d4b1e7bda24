import os
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import sdckit
from sdckit import DataError, ParameterError
from sdckit.io import detect_format, sniff_delimiter

DATA = Path(__file__).parent / "data"


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "ID": [1, 2, 3, 4],
            "AGE": [34, 45, 29, 61],
            "INCOME": [52000.5, 61000.0, 38000.25, 75500.0],
            "REGION": ["north", "south", "east", "west"],
        }
    )


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    for col in a.columns:
        if pd.api.types.is_numeric_dtype(a[col]):
            np.testing.assert_allclose(a[col].to_numpy(float), b[col].to_numpy(float))
        else:
            assert a[col].astype(str).tolist() == b[col].astype(str).tolist()


@pytest.mark.parametrize("name", ["d.csv", "d.tsv", "d.parquet", "d.dta", "d.sav", "d.duckdb"])
def test_round_trip(tmp_path, frame, name):
    path = sdckit.write(frame, tmp_path / name)
    assert path.exists()
    _same(frame, sdckit.read(path))
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left behind


@pytest.mark.parametrize("sep", [";", "\t", "|", ","])
def test_csv_delimiter_is_sniffed(tmp_path, frame, sep):
    path = tmp_path / "d.csv"
    frame.to_csv(path, sep=sep, index=False)
    _same(frame, sdckit.read(path))


def test_sniffer_on_crlf_and_quotes():
    assert sniff_delimiter('"a";"b"\r\n"1,5";"2"\r\n"3";"4"\r\n') == ";"
    assert sniff_delimiter("x\n1\n2\n") == ","


def test_csv_with_bom_and_latin1(tmp_path):
    (tmp_path / "bom.csv").write_bytes("\ufeffa,b\n1,2\n".encode("utf-8"))
    assert list(sdckit.read(tmp_path / "bom.csv").columns) == ["a", "b"]
    (tmp_path / "l1.csv").write_bytes("name,x\nJosé,1\n".encode("latin-1"))
    # "name,x\n" is bytes 0-6, "Jos" 7-9, so the latin-1 byte of "é" (0xe9) sits at 10
    with pytest.raises(DataError, match=r"Cannot decode .*l1.csv.* 0xe9 at position 10.*encoding="):
        sdckit.read(tmp_path / "l1.csv")
    assert sdckit.read(tmp_path / "l1.csv", encoding="latin-1")["name"][0] == "José"


def test_sas_is_read(tmp_path):
    # small.sas7bdat holds exactly these values (see tests/data/make_sas7bdat.py)
    got = sdckit.read(DATA / "small.sas7bdat")
    assert got["ID"].tolist() == [1, 2, 3, 4]
    assert got["INCOME"].tolist() == [52000.5, 61000.0, 38000.25, 75500.0]
    assert got["REGION"].tolist() == ["north", "south", "east", "west"]
    with pytest.raises(ParameterError, match="cannot write sas"):
        sdckit.write(got, tmp_path / "x.sas7bdat")


def test_duckdb_tables_and_queries(tmp_path, frame):
    path = tmp_path / "db.duckdb"
    sdckit.write(frame, path, table="people")
    sdckit.write(frame.head(2), path, table="few")  # a second table; the first is kept
    with pytest.raises(DataError, match="holds 2 tables"):
        sdckit.read(path)
    _same(frame, sdckit.read(path, table="people"))
    assert len(sdckit.read(path, table="few")) == 2
    q = sdckit.read(path, query="SELECT AGE FROM people WHERE AGE > 40 ORDER BY AGE")
    assert q["AGE"].tolist() == [45, 61]
    with pytest.raises(DataError, match="no table 'nope'"):
        sdckit.read(path, table="nope")
    with pytest.raises(DataError, match="query"):
        sdckit.read(path, query="SELECT * FROM nope")
    with pytest.raises(ParameterError, match="not both"):
        sdckit.read(path, table="few", query="SELECT 1")


def test_duckdb_made_elsewhere(tmp_path, frame):
    path = tmp_path / "ext.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.close()
    _same(frame, sdckit.read(path))


def test_format_detection():
    assert detect_format("a/b.CSV") == "csv"
    assert detect_format("b.csv.gz") == "csv"
    assert detect_format("b.dat", "parquet") == "parquet"
    assert detect_format("b", "dta") == "stata"
    with pytest.raises(ParameterError, match=r"'\.xlsx'.*format="):
        detect_format("b.xlsx")
    with pytest.raises(ParameterError, match="Unknown format 'excel'"):
        detect_format("b.csv", "excel")


def test_read_errors(tmp_path):
    with pytest.raises(DataError, match="File not found: .*missing.csv"):
        sdckit.read(tmp_path / "missing.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty.csv.* is empty"):
        sdckit.read(tmp_path / "empty.csv")
    (tmp_path / "blank.csv").write_text("\n\n  \n")
    with pytest.raises(DataError, match="no data"):
        sdckit.read(tmp_path / "blank.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataError, match="is a directory"):
        sdckit.read(tmp_path / "dir.csv")
    (tmp_path / "bad.parquet").write_text("not parquet at all")
    with pytest.raises(DataError, match="Cannot read .*bad.parquet.* as parquet"):
        sdckit.read(tmp_path / "bad.parquet")
    (tmp_path / "bad.csv").write_text('a,b\n1,"2\n3,4\n')
    with pytest.raises(DataError, match="bad.csv"):
        sdckit.read(tmp_path / "bad.csv")


def test_write_never_replaces_an_input(tmp_path, frame):
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    before = path.read_bytes()
    data = sdckit.read(path)
    with pytest.raises(DataError, match="Refusing to overwrite the input file"):
        sdckit.write(data, path)
    other = tmp_path / "other.csv"
    with pytest.raises(DataError, match="input file"):
        sdckit.write(data, other, inputs=(other,))
    assert path.read_bytes() == before and not other.exists()


def test_failed_write_leaves_nothing(tmp_path):
    # Stata cannot store a column name with a space: the writer fails, nothing is left
    bad = pd.DataFrame({"a b": [1, 2]})
    target = tmp_path / "out.dta"
    with pytest.raises(DataError, match="out.dta"):
        sdckit.write(bad, target)
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_previous_file(tmp_path, frame):
    target = tmp_path / "out.dta"
    sdckit.write(frame, target)
    before = target.read_bytes()
    with pytest.raises(DataError):
        sdckit.write(pd.DataFrame({"a b": [1]}), target)
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["out.dta"]
