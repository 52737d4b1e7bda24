"""The WHERE clause: predicates over declared columns and literal values (seed 002 section 4.6.2).

:func:`parse_predicate` turns sqlglot's tree into frozen :class:`Compare`, :class:`InList`,
:class:`Between`, :class:`And`, :class:`Or` and :class:`Not` values; nothing of the analyst's
text is kept but declared column names and typed literals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from sqlglot import exp

from sdckit.query.config import TableConfig
from sdckit.query.sqlnodes import UnsupportedQuery, column_name, literal, node_name

#: Deepest WHERE tree accepted.
MAX_DEPTH = 64

_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class Compare:
    """``column op value``."""

    column: str
    op: str  # one of = <> < <= > >=
    value: Any


@dataclass(frozen=True)
class InList:
    """``column [NOT] IN (values)``."""

    column: str
    values: tuple[Any, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    """``column [NOT] BETWEEN low AND high`` (both ends included)."""

    column: str
    low: Any
    high: Any
    negated: bool = False


@dataclass(frozen=True)
class And:
    items: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    item: Predicate


Predicate = Union[Compare, InList, Between, And, Or, Not]


def predicate_dict(p: Predicate | None) -> Any:
    """A predicate as JSON lists (``["cmp", column, op, value]`` ...), the form stored answers are found by."""
    if p is None:
        return None
    if isinstance(p, Compare):
        return ["cmp", p.column, p.op, p.value]
    if isinstance(p, InList):
        return ["in", p.column, list(p.values), p.negated]
    if isinstance(p, Between):
        return ["between", p.column, p.low, p.high, p.negated]
    if isinstance(p, And):
        return ["and", [predicate_dict(i) for i in p.items]]
    if isinstance(p, Or):
        return ["or", [predicate_dict(i) for i in p.items]]
    return ["not", predicate_dict(p.item)]


def predicate_columns(p: Predicate | None) -> set[str]:
    """Columns a predicate names."""
    if p is None:
        return set()
    if isinstance(p, And | Or):
        return set().union(*(predicate_columns(i) for i in p.items))
    if isinstance(p, Not):
        return predicate_columns(p.item)
    return {p.column}


def typed_value(value: Any, column: str, table: TableConfig) -> Any:
    """``value`` checked against the column's type (numbers for numeric columns, strings for text)."""
    if column not in table.columns:
        raise UnsupportedQuery(f"Column {column!r} is only a GROUP BY column with keys from the data: a condition may "
                               "name it only if it has bounds or a domain in the configuration.")
    numeric = column in table.bounds or (column in table.domains and not isinstance(table.domains[column][0], str))
    if numeric and isinstance(value, str):
        raise UnsupportedQuery(f"Column {column!r} is numeric: compare it with a number, not a string.")
    if not numeric and not isinstance(value, str):
        raise UnsupportedQuery(f"Column {column!r} holds text: compare it with a 'string'.")
    return value


def parse_predicate(node: exp.Expression, table: TableConfig, depth: int = 0) -> Predicate:
    """The predicate of a WHERE node, at most :data:`MAX_DEPTH` levels deep."""
    if depth > MAX_DEPTH:
        raise UnsupportedQuery(f"The WHERE clause is nested more than {MAX_DEPTH} levels deep.")
    if isinstance(node, exp.Paren):
        return parse_predicate(node.this, table, depth + 1)
    if isinstance(node, exp.And):
        return And((parse_predicate(node.this, table, depth + 1), parse_predicate(node.expression, table, depth + 1)))
    if isinstance(node, exp.Or):
        return Or((parse_predicate(node.this, table, depth + 1), parse_predicate(node.expression, table, depth + 1)))
    if isinstance(node, exp.Not):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.In):
            p = parse_predicate(inner, table, depth + 1)
            return InList(p.column, p.values, not p.negated)
        if isinstance(inner, exp.Between):
            p = parse_predicate(inner, table, depth + 1)
            return Between(p.column, p.low, p.high, not p.negated)
        return Not(parse_predicate(node.this, table, depth + 1))
    for cls, op in _COMPARISONS.items():
        if type(node) is cls:
            left, right = node.this, node.expression
            for side in (left, right):
                if isinstance(side, exp.Func):
                    raise UnsupportedQuery(f"The function {node_name(side)} is not supported in WHERE: compare a column with a literal value.")
            if isinstance(left, exp.Column | exp.Paren) and not isinstance(right, exp.Column):
                column = column_name(left, table, "The left side of a comparison")
                return Compare(column, op, typed_value(literal(right), column, table))
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                column = column_name(right, table, "The right side of a comparison")
                return Compare(column, _FLIP[op], typed_value(literal(left), column, table))
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                raise UnsupportedQuery("Comparing a column with another column is not supported: compare with a literal value.")
            raise UnsupportedQuery("A comparison must have a column on one side and a literal value on the other.")
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise UnsupportedQuery("IN with a sub-query is not supported: list literal values.")
        column = column_name(node.this, table, "The left side of IN")
        values = tuple(typed_value(literal(v), column, table) for v in node.expressions)
        if not values:
            raise UnsupportedQuery("IN needs at least one value.")
        return InList(column, values)
    if isinstance(node, exp.Between):
        column = column_name(node.this, table, "The left side of BETWEEN")
        low = typed_value(literal(node.args["low"]), column, table)
        high = typed_value(literal(node.args["high"]), column, table)
        return Between(column, low, high)
    if isinstance(node, exp.Is):
        raise UnsupportedQuery("IS [NOT] NULL is not supported.")
    if isinstance(node, exp.Like | exp.ILike):
        raise UnsupportedQuery("LIKE is not supported: use = or IN with the domain's values.")
    if isinstance(node, exp.Func):
        raise UnsupportedQuery(f"The function {node_name(node)} is not supported in WHERE.")
    raise UnsupportedQuery(f"{node_name(node)} is not supported in WHERE: use comparisons, IN, BETWEEN, AND, OR, NOT.")
