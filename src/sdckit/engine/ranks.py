"""Global ranks out of core: the permutation paradigm's reverse mapping by DuckDB's external sort
(DESIGN.md sections 3 and 8).

Reverse mapping (seed 000, Algorithm 1) needs each released value's rank in its column and the
original column sorted: two sorts and a join per column, which DuckDB runs past memory (it
spills to a temporary directory beyond ``memory``). Ties in the released data are broken by
order of appearance (``ties="first"``), so the result equals
:func:`sdckit.permutation.reverse_map` with ``ties="first"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sdckit.core.atomic import atomic_path, refuse_input_overwrite
from sdckit.core.errors import DataError, ParameterError
from sdckit.engine.sources import source_format
from sdckit.io.files import _quote_ident


def _relation(path: Path, fmt: str) -> str:
    literal = "'" + str(path).replace("'", "''") + "'"
    if fmt == "parquet":
        return f"read_parquet({literal}, file_row_number=true)"
    delim = ", delim='\t'" if fmt == "tsv" else ""
    return f"(SELECT *, row_number() OVER () - 1 AS file_row_number FROM read_csv({literal}, header=true{delim}))"


def reverse_map_file(
    original: str | Path,
    released: str | Path,
    target: str | Path,
    columns: Sequence[str],
    *,
    ties: str = "first",
    memory: int | None = None,
    temp_directory: str | Path | None = None,
) -> Path:
    """Write ``Z`` (Algorithm 1 of seed 000) for files larger than memory, as Parquet.

    Parameters
    ----------
    original, released : path
        ``X`` and ``Y`` (Parquet, or CSV read in file order), the same number of records.
    target : path
        The Parquet file of ``Z`` (``columns``, in the released file's record order), written
        atomically.
    columns : list of str
        Numeric columns to map.
    ties : {"first"}
        Ties of ``Y`` broken by order of appearance (random tie-breaking needs the records in
        memory: :func:`sdckit.permutation.reverse_map`).
    memory : int, optional
        DuckDB's memory limit in bytes (the sorts spill to ``temp_directory`` past it).
    """
    import duckdb

    if ties != "first":
        raise ParameterError(f"The 'ties' parameter of reverse_map_file must be 'first' (order of appearance). "
                             f"Got {ties!r} instead.")
    columns = list(columns)
    if not columns:
        raise ParameterError("The 'columns' parameter of reverse_map_file must name at least one column.")
    original, released, target = Path(original), Path(released), Path(target)
    x_rel = _relation(original, source_format(original))
    y_rel = _relation(released, source_format(released))
    refuse_input_overwrite(target, (original, released))
    con = duckdb.connect()
    try:
        if memory is not None:
            con.execute(f"SET memory_limit = '{int(memory)}B'")
        if temp_directory is not None:
            con.execute("SET temp_directory = '" + str(temp_directory).replace("'", "''") + "'")
        for rel, path in ((x_rel, original), (y_rel, released)):
            available = [d[0] for d in con.execute(f"SELECT * FROM {rel} LIMIT 0").description]
            for name in columns:
                if name not in available:
                    raise DataError(f"Column {name!r} is not in {path.name!r}.")
        n_x = con.execute(f"SELECT count(*) FROM {x_rel}").fetchone()[0]
        n_y = con.execute(f"SELECT count(*) FROM {y_rel}").fetchone()[0]
        if n_x != n_y:
            raise DataError(f"reverse_map_file needs as many released records as original ones; got {n_y} and {n_x}.")
        for name in columns:
            missing = con.execute(f"SELECT count(*) FROM {x_rel} WHERE {_quote_ident(name)} IS NULL").fetchone()[0] + \
                con.execute(f"SELECT count(*) FROM {y_rel} WHERE {_quote_ident(name)} IS NULL").fetchone()[0]
            if missing:
                raise DataError(f"Column {name!r} is missing in {missing} record(s); ranks need complete data.")
        ctes, joins, select = [], [], []
        for j, name in enumerate(columns):
            q = _quote_ident(name)
            ctes.append(f"y{j} AS (SELECT file_row_number AS i, row_number() OVER (ORDER BY {q}, file_row_number) AS r "
                        f"FROM {y_rel})")
            ctes.append(f"x{j} AS (SELECT row_number() OVER (ORDER BY {q}, file_row_number) AS r, {q} AS z FROM {x_rel})")
            ctes.append(f"z{j} AS (SELECT y{j}.i, x{j}.z FROM y{j} JOIN x{j} ON y{j}.r = x{j}.r)")
            select.append(f"z{j}.z AS {q}")
            if j:
                joins.append(f"JOIN z{j} ON z{j}.i = z0.i")
        query = (f"WITH {', '.join(ctes)} SELECT {', '.join(select)} FROM z0 {' '.join(joins)} ORDER BY z0.i")
        with atomic_path(target) as tmp:
            con.execute(f"COPY ({query}) TO '" + str(tmp).replace("'", "''") + "' (FORMAT parquet)")
    finally:
        con.close()
    return target
