"""The DuckDB SQL the service runs, written by sdckit from a :class:`~sdckit.query.sql.Query`.

The analyst's text never reaches DuckDB: the statement is built with sqlglot's expression
builders from the parsed query object; identifiers are the *configuration's* names (checked
again here against the table's declared columns and quoted), and every literal value is a bound
parameter (``?``). The only strings in the generated SQL are therefore sdckit's keywords, the
configured names and sdckit's internal names.

Relations (created by :mod:`sdckit.query.data` when the service starts):

* ``"sdc_<table>"``: the table as loaded, with ``"__sdc_row"`` (0..n-1), the fixed order of the
  records the restricted mode's membership vectors use;
* ``"sdc_dp_<table>"``: the same after bounding each privacy unit's contribution to
  ``max_rows_per_unit`` rows (dp mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sdckit.core.errors import ParameterError
from sdckit.query.config import IDENTIFIER, TableConfig
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Predicate, Query

#: The row-order column of every loaded table.
ROW = "__sdc_row"

_OPS = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}


@dataclass(frozen=True)
class Generated:
    """A statement and its bound parameters, ready for ``duckdb.execute(sql, params)``."""

    sql: str
    params: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "params": list(self.params)}


def relation_name(table: TableConfig, mode: str) -> str:
    """Name of the DuckDB relation that serves ``table`` in ``mode`` (``"dp"`` or ``"restricted"``)."""
    return f"sdc_dp_{table.name}" if mode == "dp" else f"sdc_{table.name}"


def _ident(name: str, table: TableConfig) -> exp.Identifier:
    if name not in table.columns or not IDENTIFIER.match(name):
        raise ParameterError(f"Internal check: column {name!r} is not declared for table {table.name!r}.")
    return exp.to_identifier(name, quoted=True)


def _col(name: str, table: TableConfig) -> exp.Column:
    return exp.Column(this=_ident(name, table))


class _Params:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> exp.Placeholder:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ParameterError("Internal check: a query value is not a number or a string.")
        self.values.append(value)
        return exp.Placeholder()


def _condition(p: Predicate, table: TableConfig, bind: _Params) -> exp.Expression:
    if isinstance(p, Compare):
        return _OPS[p.op](this=_col(p.column, table), expression=bind(p.value))
    if isinstance(p, InList):
        node = exp.In(this=_col(p.column, table), expressions=[bind(v) for v in p.values])
        return exp.Not(this=exp.Paren(this=node)) if p.negated else node
    if isinstance(p, Between):
        node = exp.Between(this=_col(p.column, table), low=bind(p.low), high=bind(p.high))
        return exp.Not(this=exp.Paren(this=node)) if p.negated else node
    if isinstance(p, And | Or):
        cls = exp.And if isinstance(p, And) else exp.Or
        parts = [exp.Paren(this=_condition(i, table, bind)) for i in p.items]
        node = parts[0]
        for part in parts[1:]:
            node = cls(this=node, expression=part)
        return node
    if isinstance(p, Not):
        return exp.Not(this=exp.Paren(this=_condition(p.item, table, bind)))
    raise ParameterError("Internal check: unknown predicate.")


def _number(value: float) -> exp.Expression:
    literal = exp.Literal.number(repr(float(abs(value))))
    return exp.Neg(this=literal) if value < 0 else literal


def _clamped(column: str, table: TableConfig, bounds: dict[str, tuple[float, float]]) -> exp.Expression:
    """``LEAST(GREATEST(COALESCE(col, 0), low), high)``: a missing value counts as 0, then clamped.

    The bounds are the configuration's numbers (public), written as literals."""
    low, high = bounds[column]
    value = exp.cast(exp.Coalesce(this=_col(column, table), expressions=[exp.Literal.number(0)]), "DOUBLE")
    greatest = exp.Anonymous(this="GREATEST", expressions=[value, _number(low)])
    return exp.Anonymous(this="LEAST", expressions=[greatest, _number(high)])


def aggregate_sql(query: Query, table: TableConfig, mode: str, bounds: dict[str, tuple[float, float]],
                  clamp: bool = True) -> Generated:
    """``SELECT group columns, COUNT(*), SUM(clamped col), ... FROM relation WHERE ... GROUP BY ...``.

    One ``COUNT(*)`` comes first, then one clamped ``SUM`` per distinct summed/averaged column
    (in order of first use); the group columns follow, so the result's columns are
    ``count, sum_1, ..., group_1, ...``. ``bounds`` holds the bounds in force (declared, or read
    from the data when the configuration allows it); ``clamp=False`` (restricted mode, exact
    answers) sums the values as they are.
    """
    bind = _Params()
    selects: list[exp.Expression] = [exp.Count(this=exp.Star())]
    for column in summed_columns(query):
        value = _clamped(column, table, bounds) if clamp else _col(column, table)
        selects.append(exp.Sum(this=value))
    groups = [_col(c, table) for c in query.group_by]
    selects.extend(groups)
    statement = exp.Select(expressions=selects).from_(
        exp.Table(this=exp.to_identifier(relation_name(table, mode), quoted=True)), copy=False)
    # parameters must be bound in the order they appear: select list first, then WHERE
    if query.where is not None:
        statement = statement.where(_condition(query.where, table, bind), copy=False)
    if groups:
        statement = statement.group_by(*[_col(c, table) for c in query.group_by], copy=False)
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def membership_sql(query: Query, table: TableConfig) -> Generated:
    """``SELECT __sdc_row, group columns FROM sdc_<table> WHERE ...``: the query set's records."""
    bind = _Params()
    selects: list[exp.Expression] = [exp.Column(this=exp.to_identifier(ROW, quoted=True))]
    selects.extend(_col(c, table) for c in query.group_by)
    statement = exp.Select(expressions=selects).from_(
        exp.Table(this=exp.to_identifier(relation_name(table, "restricted"), quoted=True)), copy=False)
    if query.where is not None:
        statement = statement.where(_condition(query.where, table, bind), copy=False)
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def summed_columns(query: Query) -> tuple[str, ...]:
    """Distinct columns under SUM or AVG, in order of first use."""
    return tuple(dict.fromkeys(o.column for o in query.aggregates if o.kind in ("sum", "avg")))
