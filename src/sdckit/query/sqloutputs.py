"""The select list: group columns and the aggregates the service answers.

:func:`parse_output` turns one select item into an :class:`Output` (``kind``, column, label, level).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sdckit.query.config import TableConfig
from sdckit.query.derived import EXPRESSIONS, Derived, is_derived_name, parse_bin, parse_value
from sdckit.query.sqlnodes import UnsupportedQuery, column_name, literal, node_name


@dataclass(frozen=True)
class Output:
    """One column of the answer: a group column or an aggregate.

    ``kind`` is ``"group"``, ``"count"``, ``"sum"``, ``"avg"``, ``"quantile"`` (level ``q``;
    ``MIN`` and ``MAX`` are the levels 0 and 1), ``"var"`` (``VAR_POP``), ``"stddev"``
    (``STDDEV_POP``), ``"count_distinct"`` or ``"bounds"`` (``BOUNDS(col)``, :mod:`sdckit.query.bounds`);
    ``column`` the grouped or aggregated column (``None`` for ``COUNT(*)``); ``label`` the name
    shown to the analyst.
    """

    kind: str
    column: str | None
    label: str
    q: float | None = None  # the quantile's level (kind "quantile")
    derived: Derived | None = None  # a binned group column or a derived value (sdckit.query.derived)


def parse_output(node: exp.Expression, label: str | None, table: TableConfig, group_by: tuple[str, ...]) -> Output:
    """The :class:`Output` of one select item (``label`` its alias, if any)."""
    if isinstance(node, exp.Star):
        raise UnsupportedQuery("SELECT * is not supported: select COUNT(*), SUM(column) or AVG(column).")
    if isinstance(node, exp.Column):
        column = column_name(node, table, "A selected item")
        if column not in group_by:
            raise UnsupportedQuery(f"Column {column!r} is selected but not in GROUP BY: only group columns and aggregates may be selected.")
        return Output("group", column, label or column)
    if isinstance(node, EXPRESSIONS) and any(is_derived_name(c) for c in group_by):  # a binned group column
        d = parse_bin(node, table)
        if d.name not in group_by:
            raise UnsupportedQuery(f"{d.name} is selected but not in GROUP BY: only group columns and aggregates may be selected.")
        return Output("group", d.name, label or d.name, derived=d)
    if isinstance(node, exp.Count):
        inner = node.this
        if isinstance(inner, exp.Star):
            return Output("count", None, label or "count")
        if isinstance(inner, exp.Distinct):
            if len(inner.expressions) != 1 or any(inner.args.get(key) for key in inner.args if key != "expressions"):
                raise UnsupportedQuery("COUNT(DISTINCT ...) takes one column: COUNT(DISTINCT column).")
            column = column_name(inner.expressions[0], table, "The argument of COUNT(DISTINCT ...)")
            return Output("count_distinct", column, label or f"count_distinct_{column}")
        raise UnsupportedQuery("COUNT(column) is not supported: use COUNT(*) (with WHERE for a condition).")
    if isinstance(node, exp.Variance | exp.Stddev | exp.StddevSamp):
        raise UnsupportedQuery("The sample variance and standard deviation (VARIANCE, VAR_SAMP, STDDEV, STDDEV_SAMP) "
                               "are not answered: write VAR_POP(column) or STDDEV_POP(column) (population).")
    for cls, kind, word in ((exp.Sum, "sum", "SUM"), (exp.Avg, "avg", "AVG"), (exp.VariancePop, "var", "VAR_POP"),
                            (exp.StddevPop, "stddev", "STDDEV_POP")):
        if isinstance(node, cls):
            if isinstance(node.this, exp.Distinct):
                raise UnsupportedQuery(f"{word}(DISTINCT ...) is not supported.")
            d = parse_value(node.this, table, f"The argument of {word}")
            column = d.name if d is not None else column_name(node.this, table, f"The argument of {word}")
            if d is None and column not in table.bounds and not table.bounds_from_data:
                raise UnsupportedQuery(f"{word}({column}) needs public bounds of {column!r} ([table.bounds] in the configuration).")
            for key, value in node.args.items():
                if key != "this" and value:
                    raise UnsupportedQuery(f"{word} with extra arguments is not supported.")
            return Output(kind, column, label or (f"{kind}_{column}" if d is None else f"{word}({column})"), derived=d)
    if isinstance(node, exp.Median | exp.Quantile | exp.PercentileCont):
        if isinstance(node, exp.Median):
            level: Any = 0.5
        else:
            level_node = node.args.get("quantile") if isinstance(node, exp.Quantile) else node.args.get("expression")
            if level_node is None:
                raise UnsupportedQuery("QUANTILE_CONT(column, q) needs a level q between 0 and 1.")
            level = literal(level_node)
        if isinstance(level, str) or not 0 < level < 1:
            raise UnsupportedQuery("A quantile's level q must be a number strictly between 0 and 1.")
        column = column_name(node.this, table, "The argument of a quantile")
        if column not in table.bounds and not table.bounds_from_data:
            raise UnsupportedQuery(f"A quantile of {column!r} needs public bounds ([table.bounds] in the configuration).")
        name = "median" if isinstance(node, exp.Median) else f"q{level:g}"
        return Output("quantile", column, label or f"{name}_{column}", float(level))
    if isinstance(node, exp.Min | exp.Max):  # the quantiles 0 and 1 (as Tumult Analytics)
        word = "MIN" if isinstance(node, exp.Min) else "MAX"
        if isinstance(node.this, exp.Distinct) or any(v for key, v in node.args.items() if key != "this"):
            raise UnsupportedQuery(f"{word} takes one column: {word}(column).")
        column = column_name(node.this, table, f"The argument of {word}")
        if column not in table.bounds and not table.bounds_from_data:
            raise UnsupportedQuery(f"{word}({column}) needs public bounds of {column!r} ([table.bounds] in the configuration).")
        return Output("quantile", column, label or f"{word.lower()}_{column}", 0.0 if word == "MIN" else 1.0)
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "BOUNDS":
        if len(node.expressions) != 1 or group_by:
            raise UnsupportedQuery("BOUNDS takes one numeric column and no GROUP BY: SELECT BOUNDS(column) FROM table.")
        column = column_name(node.expressions[0], table, "The argument of BOUNDS")
        if column not in table.bounds and not table.bounds_from_data:
            raise UnsupportedQuery(f"BOUNDS({column}) needs a numeric column ([table.bounds] or bounds_from_data).")
        return Output("bounds", column, label or column)
    if isinstance(node, exp.WithinGroup | exp.PercentileDisc | exp.ApproxQuantile):
        raise UnsupportedQuery("This quantile form is not supported: write MEDIAN(column) or QUANTILE_CONT(column, q).")
    if isinstance(node, exp.Func):
        name = node.sql_name() if hasattr(node, "sql_name") else node_name(node)
        raise UnsupportedQuery(f"The function {name} is not supported: only COUNT(*), SUM, AVG, MEDIAN, QUANTILE_CONT, "
                               "MIN, MAX, VAR_POP, STDDEV_POP, COUNT(DISTINCT column) and BOUNDS.")
    raise UnsupportedQuery(f"{node_name(node)} in the select list is not supported: only group columns and COUNT(*), SUM, AVG, "
                           "MEDIAN, QUANTILE_CONT, MIN, MAX, VAR_POP, STDDEV_POP, COUNT(DISTINCT column), BOUNDS.")
