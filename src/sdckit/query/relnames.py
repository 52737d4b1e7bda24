"""Names of the DuckDB relations and internal columns the service loads (DESIGN.md section 7).

The one place these names are made: :mod:`sdckit.query.data` creates the relations under them,
:mod:`sdckit.query.generate` and :mod:`sdckit.query.joins` write SQL over them (``generate``
re-exports them, its importers unchanged).
"""

from __future__ import annotations

from sdckit.query.config import TableConfig

#: DuckDB's numeric column types (a bounded column must be one).
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL")
#: The row-order column of every loaded table.
ROW = "__sdc_row"
#: The dp relation's rank of a row among its person's rows (1-based, in :data:`ROW` order).
RANK = "__sdc_rank"


def code_column(column: str) -> str:
    """The integer code of a text-domain column: the value's index in the declared domain, -1
    for a value outside it, NULL for a missing value (made when the data is loaded)."""
    return f"__sdc_code_{column}"


def clamp_column(column: str) -> str:
    """A bounded column clamped to its bounds as DOUBLE, a missing value as 0 (dp relation)."""
    return f"__sdc_clamp_{column}"


def is_text_domain(table: TableConfig, column: str) -> bool:
    """Whether ``column`` has a domain of strings (and so a code column)."""
    values = table.domains.get(column)
    return values is not None and isinstance(values[0], str) and column not in table.bounds


def relation_name(table: TableConfig, mode: str) -> str:
    """Name of the DuckDB relation that serves ``table`` in ``mode`` (``"dp"`` or ``"restricted"``)."""
    return f"sdc_dp_{table.name}" if mode == "dp" else f"sdc_{table.name}"


def public_relation(name: str) -> str:
    """Name of the DuckDB relation of the public table ``name`` (:mod:`sdckit.query.joins`)."""
    return f"sdc_pub_{name}"
