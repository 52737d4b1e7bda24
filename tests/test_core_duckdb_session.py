"""sdckit.core.duckdb_session: the one DuckDB session and SQL quoting (issue 29 item 5).

Oracles: DuckDB itself (a quoted literal evaluates back to the value, a quoted name names the
table and column back), ``current_setting`` for the session settings, hand-written files for
the relations.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.duckdb_session import check_columns, connect, quote_identifier, quote_literal, relation
from sdckit.core.errors import DataError, ParameterError

CON = duckdb.connect()


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_any_string_literal_evaluates_back(s):
    assert CON.execute(f"SELECT {quote_literal(s)}").fetchone()[0] == s


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.none(), st.booleans(), st.integers(-2**63 + 1, 2**63 - 1),
                 st.floats(allow_nan=False, allow_infinity=False)))
def test_any_number_literal_evaluates_back(v):
    got = CON.execute(f"SELECT {quote_literal(v)}").fetchone()[0]
    assert got == v and type(got) is type(v)
    if isinstance(v, float):
        assert math.copysign(1.0, got) == math.copysign(1.0, v)  # -0.0 stays -0.0


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=1))
def test_any_identifier_names_a_table_and_column_back(name):
    q = quote_identifier(name)
    cur = CON.cursor()
    try:
        cur.execute(f"CREATE OR REPLACE TEMP TABLE {q} ({q} INTEGER)")
        cur.execute(f"INSERT INTO {q} ({q}) VALUES (?)", [7])
        result = cur.execute(f"SELECT {q} FROM {q}")
        assert result.description[0][0] == name and result.fetchall() == [(7,)]
        tables = [r[0] for r in cur.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()]
        assert name in tables
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {q}")
        cur.close()


def test_quoting_by_hand_worked_examples():
    assert quote_identifier('a"b') == '"a""b"'
    assert quote_literal("it's") == "'it''s'"
    assert quote_literal(Path("/x/o'k.csv")) == "'/x/o''k.csv'"
    assert quote_literal(None) == "NULL" and quote_literal(True) == "TRUE" and quote_literal(12) == "12"
    with pytest.raises(ParameterError, match="non-empty str"):
        quote_identifier("")
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ParameterError, match="finite"):
            quote_literal(bad)
    with pytest.raises(ParameterError, match="bytes"):
        quote_literal(b"x")


def test_connect_applies_the_settings(tmp_path):
    spill = tmp_path / "sp'ill"
    con = connect(memory_limit=200 * 2**20, temp_directory=spill, threads=2)
    try:
        limit, threads, temp = con.execute("SELECT current_setting('memory_limit'), current_setting('threads'), "
                                           "current_setting('temp_directory')").fetchone()
    finally:
        con.close()
    assert limit == "200.0 MiB" and threads == 2 and temp == str(spill)
    default = connect()
    try:  # unset settings keep DuckDB's own defaults
        assert default.execute("SELECT current_setting('threads')").fetchone()[0] == \
            CON.execute("SELECT current_setting('threads')").fetchone()[0]
    finally:
        default.close()


def test_relation_reads_each_format_and_checks_columns(tmp_path):
    csv = tmp_path / "o'dd.csv"
    csv.write_text("code,Value\n01,1.5\n02,2.5\n")
    tsv = tmp_path / "t.tsv"
    tsv.write_text("code\tValue\n01\t1.5\n")
    pq = tmp_path / "p.parquet"
    db = tmp_path / "d.duckdb"
    con = connect()
    try:
        con.execute(f"COPY (SELECT * FROM read_csv({quote_literal(csv)}, all_varchar=true)) TO {quote_literal(pq)} "
                    "(FORMAT parquet)")
        with connect(db) as file_con:
            file_con.execute("CREATE TABLE t AS SELECT 1 AS code, 2.5 AS \"Value\"")
        text = relation(con, csv, "csv", columns=["code"], all_varchar=True)
        assert text.types == {"code": "VARCHAR", "Value": "VARCHAR"}
        assert con.execute(f"SELECT code FROM {text.sql} ORDER BY 1").fetchall() == [("01",), ("02",)]
        typed = relation(con, csv, "csv", row_numbers=True)
        assert typed.types["Value"] == "DOUBLE"
        assert con.execute(f"SELECT file_row_number, Value FROM {typed.sql}").fetchall() == [(0, 1.5), (1, 2.5)]
        assert relation(con, tsv, "tsv").columns == ["code", "Value"]
        parquet = relation(con, pq, "parquet", row_numbers=True)
        assert con.execute(f"SELECT max(file_row_number) FROM {parquet.sql}").fetchone()[0] == 1
        table = relation(con, db, "duckdb", table="t", alias="src_t", columns=["Value"])
        assert con.execute(f"SELECT code FROM {table.sql}").fetchall() == [(1,)]
        with pytest.raises(DataError) as e:
            relation(con, csv, "csv", columns=["value"], role="response")
        assert str(e.value) == ("The response column 'value' is not in \"o'dd.csv\" (did you mean 'Value'? names are "
                                "case-sensitive); its columns are: code, Value.")
        with pytest.raises(DataError, match=r"^'nope.parquet' cannot be read as parquet: \w+\.$"):
            relation(con, tmp_path / "nope.parquet", "parquet")
        with pytest.raises(ParameterError, match="xlsx"):
            relation(con, csv, "xlsx")
    finally:
        con.close()


def test_check_columns_lists_at_most_thirty():
    with pytest.raises(DataError, match=r"'z' is not in the data; its columns are: c0, .*c29, \.\.\. \(40 in all\)\.$"):
        check_columns(["c0", "z"], [f"c{i}" for i in range(40)], "the data")


def test_importing_the_module_does_not_import_duckdb():
    code = "import sys, sdckit.core.duckdb_session; print('duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_callers_turn_an_unreadable_file_into_one_data_error(tmp_path):
    """frequency_table and reverse_map_file read through relation(): a file DuckDB cannot read is a
    one-line DataError naming the file (before: DuckDB's own exception escaped)."""
    from sdckit.engine.aggregate import frequency_table
    from sdckit.engine.external_sort import reverse_map_file

    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a parquet file at all")
    with pytest.raises(DataError, match=r"^'bad.parquet' cannot be read as parquet: \w+\.$"):
        frequency_table(bad, ["a"], engine="duckdb")
    with pytest.raises(DataError, match=r"^'bad.parquet' cannot be read as parquet: \w+\.$"):
        reverse_map_file(bad, bad, tmp_path / "z.parquet", ["a"])


def test_the_query_service_names_a_declared_column_missing_from_its_file(tmp_path):
    from sdckit.query.config import load_config
    from sdckit.query.data import Database

    (tmp_path / "t.csv").write_text("pid,Age\n1,30\n")
    (tmp_path / "s.toml").write_text('[[table]]\nname = "t"\npath = "t.csv"\nprivacy_unit = "pid"\n'
                                     "[table.bounds]\nage = [0, 100]\n")
    with pytest.raises(DataError) as e:
        Database(load_config(tmp_path / "s.toml"))
    assert str(e.value) == ("The declared column 'age' is not in 't.csv' (table 't') (did you mean 'Age'? names are "
                            "case-sensitive); its columns are: pid, Age.")
