"""What every part of the SQL parser shares: its error, node names, columns and literal values.

The analyst's SQL is read with sqlglot (:mod:`sdckit.query.sql`); these helpers turn one node into a
declared column name or a literal value, or refuse it with :class:`UnsupportedQuery` in one line.
"""

from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from sdckit.core.errors import ParameterError
from sdckit.query.config import TableConfig


class UnsupportedQuery(ParameterError):
    """The SQL cannot be parsed or uses something the service does not support (HTTP 400)."""


class UnknownTable(UnsupportedQuery):
    """The FROM table is not one the service serves."""


def node_name(node: exp.Expression) -> str:
    """The upper-case type name of a node, as messages show it."""
    return type(node).__name__.upper()


def column_name(node: exp.Expression, table: TableConfig, what: str) -> str:
    """The declared name of the column ``node`` names (``what`` says where, for the message)."""
    if isinstance(node, exp.Paren):
        return column_name(node.this, table, what)
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        raise UnsupportedQuery(f"{what} must be a column; {node_name(node)} is not supported there.")
    resolve = getattr(table, "resolve_column", None)  # a joined table (sdckit.query.joins) names both tables' columns
    if resolve is not None:
        return resolve(node, what)
    qualifier = node.table
    if node.args.get("db") or node.args.get("catalog") or (qualifier and qualifier.lower() != table.name.lower()):
        raise UnsupportedQuery(f"A column qualifier other than the table {table.name!r} is not supported.")
    name = node.this.this
    for declared in table.queryable:
        if declared.lower() == name.lower():
            return declared
    raise UnsupportedQuery(
        f"Column {name!r} is not declared for table {table.name!r}; the declared columns are "
        f"{', '.join(table.queryable) or 'none'} (bounds or domain in the service configuration).")


def literal(node: exp.Expression) -> Any:
    """The number or string a literal node holds (a leading minus applied)."""
    if isinstance(node, exp.Paren):
        return literal(node.this)
    negative = False
    while isinstance(node, exp.Neg):
        negative = not negative
        node = node.this
    if isinstance(node, exp.Literal):
        if node.is_string:
            if negative:
                raise UnsupportedQuery("A minus sign before a string is not supported.")
            return node.this
        text = node.this
        try:
            value: Any = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise UnsupportedQuery("A number literal cannot be read.") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise UnsupportedQuery("A number literal is not finite.")
        if isinstance(value, int) and abs(value) > 2**63 - 1:
            raise UnsupportedQuery("An integer literal is too large.")
        return -value if negative else value
    if isinstance(node, exp.Null):
        raise UnsupportedQuery("NULL is not supported in conditions.")
    if isinstance(node, exp.Boolean):
        raise UnsupportedQuery("TRUE/FALSE literals are not supported in conditions.")
    if isinstance(node, exp.Column):
        raise UnsupportedQuery("Comparing a column with another column is not supported: compare with a literal value.")
    if isinstance(node, exp.Func):
        raise UnsupportedQuery(f"The function {node_name(node)} is not supported in conditions: use literal values.")
    raise UnsupportedQuery(f"{node_name(node)} is not supported as a value: use a literal number or 'string'.")


#: Table arguments sqlglot may fill that the service does not support on a FROM or JOIN table.
_TABLE_EXTRAS = ("joins", "laterals", "pivots", "sample", "version", "when", "only", "partition", "changes")


def table_name(node: exp.Expression, clause: str) -> str:
    """The plain name of the one table ``node`` names in ``clause`` (``"FROM"`` or ``"JOIN"``):
    no schema, no sample, pivot or other table arguments (each refused in one line)."""
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise UnsupportedQuery(f"{clause} must name one table; {node_name(node)} is not supported.")
    if node.args.get("db") or node.args.get("catalog"):
        raise UnsupportedQuery("Schema-qualified table names are not supported: name the table alone.")
    for key in _TABLE_EXTRAS:
        if node.args.get(key):
            raise UnsupportedQuery(f"{key.upper()} on the {'joined ' if clause == 'JOIN' else ''}table is not supported.")
    return node.this.this
