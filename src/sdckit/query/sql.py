"""The SQL subset analysts may write, parsed with sqlglot into a frozen :class:`Query`.

Supported (seed 002 section 4.6.2: statistical queries over query sets defined by predicates)::

    SELECT [group columns,] COUNT(*) | SUM(col) | AVG(col) | MEDIAN(col) | QUANTILE_CONT(col, q)
           | VAR_POP(col) | STDDEV_POP(col) | COUNT(DISTINCT col)   -- the last three: dp mode only
           [AS name], ...
    FROM table
    [WHERE predicate]          -- col op literal (=, <>, !=, <, <=, >, >=), col [NOT] IN (...),
                               -- col [NOT] BETWEEN a AND b, AND, OR, NOT, parentheses
    [GROUP BY col, ...]        -- columns with a declared domain, or (dp mode, (epsilon, delta)
                               -- budgets) columns listed in `keys_from_data`: their keys are
                               -- taken from the data and released by thresholding
                               -- (sdckit.query.keys)

Everything else is refused with :class:`UnsupportedQuery` naming what is not supported: joins,
sub-queries, functions other than these aggregates, several statements, comments, ORDER
BY, LIMIT, HAVING, DISTINCT, column-to-column comparisons, NULL tests, undeclared columns.
The analyst's text never reaches the database: :mod:`sdckit.query.generate` writes the SQL
from the :class:`Query` object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Union

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result, plain
from sdckit.query.config import ServiceConfig, TableConfig

#: Longest SQL text accepted.
MAX_SQL = 10_000
#: Deepest WHERE tree accepted.
MAX_DEPTH = 64

_DIALECT = "duckdb"


class UnsupportedQuery(ParameterError):
    """The SQL cannot be parsed or uses something the service does not support (HTTP 400)."""


class UnknownTable(UnsupportedQuery):
    """The FROM table is not one the service serves."""


# ---------------------------------------------------------------- the query object
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


@dataclass(frozen=True)
class Output:
    """One column of the answer: a group column or an aggregate.

    ``kind`` is ``"group"``, ``"count"``, ``"sum"``, ``"avg"``, ``"quantile"`` (level ``q``),
    ``"var"`` (``VAR_POP``), ``"stddev"`` (``STDDEV_POP``) or ``"count_distinct"``;
    ``column`` the grouped or aggregated column (``None`` for ``COUNT(*)``); ``label`` the name
    shown to the analyst.
    """

    kind: str
    column: str | None
    label: str
    q: float | None = None  # the quantile's level (kind "quantile")


@dataclass(frozen=True)
class Query(Result):
    """A parsed, validated query: only declared names and literal values, nothing else."""

    table: str
    outputs: tuple[Output, ...]
    where: Predicate | None
    group_by: tuple[str, ...]

    @property
    def aggregates(self) -> tuple[Output, ...]:
        return tuple(o for o in self.outputs if o.kind != "group")

    def to_dict(self) -> dict[str, Any]:
        """A canonical, JSON-serialisable form (cache key, ledger): outputs and conditions as
        lists (``["cmp", column, op, value]`` ...), never changed, since the stored answers are
        found by it."""
        return plain({"table": self.table,
                      "outputs": [[o.kind, o.column, o.label] + ([o.q] if o.q is not None else []) for o in self.outputs],
                      "where": _pred_dict(self.where), "group_by": self.group_by})


def _pred_dict(p: Predicate | None) -> Any:
    if p is None:
        return None
    if isinstance(p, Compare):
        return ["cmp", p.column, p.op, p.value]
    if isinstance(p, InList):
        return ["in", p.column, list(p.values), p.negated]
    if isinstance(p, Between):
        return ["between", p.column, p.low, p.high, p.negated]
    if isinstance(p, And):
        return ["and", [_pred_dict(i) for i in p.items]]
    if isinstance(p, Or):
        return ["or", [_pred_dict(i) for i in p.items]]
    return ["not", _pred_dict(p.item)]


def predicate_columns(p: Predicate | None) -> set[str]:
    """Columns a predicate names."""
    if p is None:
        return set()
    if isinstance(p, And | Or):
        return set().union(*(predicate_columns(i) for i in p.items))
    if isinstance(p, Not):
        return predicate_columns(p.item)
    return {p.column}


# ---------------------------------------------------------------- parsing
_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SELECT_ARGS = {"expressions", "from", "from_", "where", "group", "kind"}
_CLAUSES = {"joins": "JOIN", "laterals": "LATERAL", "having": "HAVING", "order": "ORDER BY",
            "limit": "LIMIT", "offset": "OFFSET", "distinct": "DISTINCT", "with": "WITH (common table expressions)",
            "with_": "WITH (common table expressions)", "qualify": "QUALIFY", "windows": "WINDOW",
            "sample": "SAMPLE", "into": "INTO", "pivots": "PIVOT", "prewhere": "PREWHERE",
            "settings": "SETTINGS", "locks": "FOR UPDATE", "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE",
            "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "sort": "SORT BY", "operation_modifiers": "modifiers",
            "hint": "hints", "options": "OPTION", "fetch": "FETCH"}


def _name(node: exp.Expression) -> str:
    return type(node).__name__.upper()


def _tokens_check(sql: str) -> list:
    try:
        tokens = sqlglot.Dialect.get_or_raise(_DIALECT).tokenize(sql)
    except (TokenError, ParseError, ValueError) as exc:
        raise UnsupportedQuery(f"The SQL cannot be read ({_short(exc)}).") from None
    if any(t.comments for t in tokens):
        raise UnsupportedQuery("Comments (-- or /* */) are not supported: send the query without them.")
    for i, t in enumerate(tokens):
        if t.token_type == TokenType.SEMICOLON and i != len(tokens) - 1:
            raise UnsupportedQuery("Several statements are not supported: send one SELECT (no ';' between statements).")
    if not tokens:
        raise UnsupportedQuery("The SQL is empty: send one SELECT statement.")
    return tokens


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:160]


def parse(sql: str, config: ServiceConfig) -> Query:
    """Parse ``sql`` against the declared tables; :class:`UnsupportedQuery` names what is refused."""
    if not isinstance(sql, str):
        raise UnsupportedQuery("The 'sql' field must be a string holding one SELECT statement.")
    if len(sql) > MAX_SQL:
        raise UnsupportedQuery(f"The SQL is longer than {MAX_SQL} characters.")
    tokens = _tokens_check(sql)
    try:
        parser = sqlglot.Dialect.get_or_raise(_DIALECT).parser()
        statements = [s for s in parser.parse(tokens, sql) if s is not None]
    except (ParseError, TokenError, ValueError, RecursionError) as exc:
        raise UnsupportedQuery(f"The SQL cannot be parsed ({_short(exc)}).") from None
    if len(statements) != 1:
        raise UnsupportedQuery("Several statements are not supported: send exactly one SELECT.")
    tree = statements[0]
    if not isinstance(tree, exp.Select):
        raise UnsupportedQuery(f"Only SELECT is supported; got {_name(tree)}.")
    return _select(tree, config)


def _select(tree: exp.Select, config: ServiceConfig) -> Query:
    for key, value in tree.args.items():
        if key in _SELECT_ARGS or value in (None, [], False):
            continue
        raise UnsupportedQuery(f"{_CLAUSES.get(key, key.upper())} is not supported.")
    for node in tree.find_all(exp.Subquery, exp.Select, exp.Union, exp.Except, exp.Intersect):
        if node is not tree:
            raise UnsupportedQuery("Sub-queries are not supported.")
    table = _from(tree, config)
    group_by = _group(tree, table)
    outputs = []
    for item in tree.expressions:
        label = None
        if isinstance(item, exp.Alias):
            label = item.alias
            item = item.this
        outputs.append(_output(item, label, table, group_by))
    if not any(o.kind != "group" for o in outputs):
        raise UnsupportedQuery("Select at least one aggregate: COUNT(*), SUM(column) or AVG(column).")
    labels = [o.label for o in outputs]
    if len(set(labels)) != len(labels):
        raise UnsupportedQuery("Two output columns have the same name: give them different aliases (AS name).")
    where = tree.args.get("where")
    predicate = _predicate(where.this, table, 0) if where is not None else None
    return Query(table.name, tuple(outputs), predicate, group_by)


def _from(tree: exp.Select, config: ServiceConfig) -> TableConfig:
    source = tree.args.get("from") or tree.args.get("from_")
    if source is None:
        raise UnsupportedQuery("FROM is required: name one of the service's tables.")
    node = source.this
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise UnsupportedQuery(f"FROM must name one table; {_name(node)} is not supported.")
    if node.args.get("db") or node.args.get("catalog"):
        raise UnsupportedQuery("Schema-qualified table names are not supported: name the table alone.")
    if node.alias:
        raise UnsupportedQuery("Table aliases are not supported.")
    for key in ("joins", "laterals", "pivots", "sample", "version", "when", "only", "partition", "changes"):
        if node.args.get(key):
            raise UnsupportedQuery(f"{key.upper()} on the table is not supported.")
    name = node.this.this
    for table_name, table in config.tables.items():
        if table_name.lower() == name.lower():
            return table
    raise UnknownTable(f"Unknown table {name!r}: the service serves {', '.join(sorted(config.tables))}.")


def _column(node: exp.Expression, table: TableConfig, what: str) -> str:
    if isinstance(node, exp.Paren):
        return _column(node.this, table, what)
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        raise UnsupportedQuery(f"{what} must be a column; {_name(node)} is not supported there.")
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


def _group(tree: exp.Select, table: TableConfig) -> tuple[str, ...]:
    group = tree.args.get("group")
    if group is None:
        return ()
    for key, value in group.args.items():
        if key != "expressions" and value:
            raise UnsupportedQuery(f"GROUP BY {key.upper()} is not supported.")
    columns = []
    for item in group.expressions:
        column = _column(item, table, "A GROUP BY item")
        if column not in table.domains and column not in table.key_columns:
            raise UnsupportedQuery(f"GROUP BY {column!r} needs a declared domain ([table.domains] in the configuration), "
                                   "or, in dp mode, its keys taken from the data ('keys_from_data').")
        if column in columns:
            raise UnsupportedQuery(f"GROUP BY names {column!r} twice.")
        columns.append(column)
    return tuple(columns)


def _output(node: exp.Expression, label: str | None, table: TableConfig, group_by: tuple[str, ...]) -> Output:
    if isinstance(node, exp.Star):
        raise UnsupportedQuery("SELECT * is not supported: select COUNT(*), SUM(column) or AVG(column).")
    if isinstance(node, exp.Column):
        column = _column(node, table, "A selected item")
        if column not in group_by:
            raise UnsupportedQuery(f"Column {column!r} is selected but not in GROUP BY: only group columns and aggregates may be selected.")
        return Output("group", column, label or column)
    if isinstance(node, exp.Count):
        inner = node.this
        if isinstance(inner, exp.Star):
            return Output("count", None, label or "count")
        if isinstance(inner, exp.Distinct):
            if len(inner.expressions) != 1 or any(inner.args.get(key) for key in inner.args if key != "expressions"):
                raise UnsupportedQuery("COUNT(DISTINCT ...) takes one column: COUNT(DISTINCT column).")
            column = _column(inner.expressions[0], table, "The argument of COUNT(DISTINCT ...)")
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
            column = _column(node.this, table, f"The argument of {word}")
            if column not in table.bounds and not table.bounds_from_data:
                raise UnsupportedQuery(f"{word}({column}) needs public bounds of {column!r} ([table.bounds] in the configuration).")
            for key, value in node.args.items():
                if key != "this" and value:
                    raise UnsupportedQuery(f"{word} with extra arguments is not supported.")
            return Output(kind, column, label or f"{kind}_{column}")
    if isinstance(node, exp.Median | exp.Quantile | exp.PercentileCont):
        if isinstance(node, exp.Median):
            level: Any = 0.5
        else:
            level_node = node.args.get("quantile") if isinstance(node, exp.Quantile) else node.args.get("expression")
            if level_node is None:
                raise UnsupportedQuery("QUANTILE_CONT(column, q) needs a level q between 0 and 1.")
            level = _literal(level_node)
        if isinstance(level, str) or not 0 < level < 1:
            raise UnsupportedQuery("A quantile's level q must be a number strictly between 0 and 1.")
        column = _column(node.this, table, "The argument of a quantile")
        if column not in table.bounds and not table.bounds_from_data:
            raise UnsupportedQuery(f"A quantile of {column!r} needs public bounds ([table.bounds] in the configuration).")
        name = "median" if isinstance(node, exp.Median) else f"q{level:g}"
        return Output("quantile", column, label or f"{name}_{column}", float(level))
    if isinstance(node, exp.WithinGroup | exp.PercentileDisc | exp.ApproxQuantile):
        raise UnsupportedQuery("This quantile form is not supported: write MEDIAN(column) or QUANTILE_CONT(column, q).")
    if isinstance(node, exp.Func):
        name = node.sql_name() if hasattr(node, "sql_name") else _name(node)
        raise UnsupportedQuery(f"The function {name} is not supported: only COUNT(*), SUM, AVG, MEDIAN, QUANTILE_CONT, "
                               "VAR_POP, STDDEV_POP and COUNT(DISTINCT column).")
    raise UnsupportedQuery(f"{_name(node)} in the select list is not supported: only group columns and COUNT(*), SUM, AVG, "
                           "MEDIAN, QUANTILE_CONT, VAR_POP, STDDEV_POP, COUNT(DISTINCT column).")


def _literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Paren):
        return _literal(node.this)
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
        raise UnsupportedQuery(f"The function {_name(node)} is not supported in conditions: use literal values.")
    raise UnsupportedQuery(f"{_name(node)} is not supported as a value: use a literal number or 'string'.")


def _typed(value: Any, column: str, table: TableConfig) -> Any:
    if column not in table.columns:
        raise UnsupportedQuery(f"Column {column!r} is only a GROUP BY column with keys from the data: a condition may "
                               "name it only if it has bounds or a domain in the configuration.")
    numeric = column in table.bounds or (column in table.domains and not isinstance(table.domains[column][0], str))
    if numeric and isinstance(value, str):
        raise UnsupportedQuery(f"Column {column!r} is numeric: compare it with a number, not a string.")
    if not numeric and not isinstance(value, str):
        raise UnsupportedQuery(f"Column {column!r} holds text: compare it with a 'string'.")
    return value


def _predicate(node: exp.Expression, table: TableConfig, depth: int) -> Predicate:
    if depth > MAX_DEPTH:
        raise UnsupportedQuery(f"The WHERE clause is nested more than {MAX_DEPTH} levels deep.")
    if isinstance(node, exp.Paren):
        return _predicate(node.this, table, depth + 1)
    if isinstance(node, exp.And):
        return And((_predicate(node.this, table, depth + 1), _predicate(node.expression, table, depth + 1)))
    if isinstance(node, exp.Or):
        return Or((_predicate(node.this, table, depth + 1), _predicate(node.expression, table, depth + 1)))
    if isinstance(node, exp.Not):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.In):
            p = _predicate(inner, table, depth + 1)
            return InList(p.column, p.values, not p.negated)
        if isinstance(inner, exp.Between):
            p = _predicate(inner, table, depth + 1)
            return Between(p.column, p.low, p.high, not p.negated)
        return Not(_predicate(node.this, table, depth + 1))
    for cls, op in _COMPARISONS.items():
        if type(node) is cls:
            left, right = node.this, node.expression
            for side in (left, right):
                if isinstance(side, exp.Func):
                    raise UnsupportedQuery(f"The function {_name(side)} is not supported in WHERE: compare a column with a literal value.")
            if isinstance(left, exp.Column | exp.Paren) and not isinstance(right, exp.Column):
                column = _column(left, table, "The left side of a comparison")
                return Compare(column, op, _typed(_literal(right), column, table))
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                column = _column(right, table, "The right side of a comparison")
                return Compare(column, _FLIP[op], _typed(_literal(left), column, table))
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                raise UnsupportedQuery("Comparing a column with another column is not supported: compare with a literal value.")
            raise UnsupportedQuery("A comparison must have a column on one side and a literal value on the other.")
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise UnsupportedQuery("IN with a sub-query is not supported: list literal values.")
        column = _column(node.this, table, "The left side of IN")
        values = tuple(_typed(_literal(v), column, table) for v in node.expressions)
        if not values:
            raise UnsupportedQuery("IN needs at least one value.")
        return InList(column, values)
    if isinstance(node, exp.Between):
        column = _column(node.this, table, "The left side of BETWEEN")
        low = _typed(_literal(node.args["low"]), column, table)
        high = _typed(_literal(node.args["high"]), column, table)
        return Between(column, low, high)
    if isinstance(node, exp.Is):
        raise UnsupportedQuery("IS [NOT] NULL is not supported.")
    if isinstance(node, exp.Like | exp.ILike):
        raise UnsupportedQuery("LIKE is not supported: use = or IN with the domain's values.")
    if isinstance(node, exp.Func):
        raise UnsupportedQuery(f"The function {_name(node)} is not supported in WHERE.")
    raise UnsupportedQuery(f"{_name(node)} is not supported in WHERE: use comparisons, IN, BETWEEN, AND, OR, NOT.")
