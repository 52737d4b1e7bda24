"""The SQL subset analysts may write, parsed with sqlglot into a frozen :class:`Query`.

Supported (seed 002 section 4.6.2: statistical queries over query sets defined by predicates)::

    SELECT [group columns,] COUNT(*) | SUM(col) | AVG(col) | MEDIAN(col) | QUANTILE_CONT(col, q)
           | MIN(col) | MAX(col)                       -- the quantiles 0 and 1: dp mode only
           | VAR_POP(col) | STDDEV_POP(col) | COUNT(DISTINCT col)   -- the last three: dp mode only
           [AS name], ...                              -- or BOUNDS(col) alone, no GROUP BY (dp mode;
                                                       -- sdckit.query.bounds)
    FROM table [[INNER | LEFT] JOIN other ON table.col = other.col]   -- dp mode: a public table,
                               -- or a private one of the same privacy unit (sdckit.query.joins)
    [WHERE predicate]          -- col op literal (=, <>, !=, <, <=, >, >=), col [NOT] IN (...),
                               -- col [NOT] BETWEEN a AND b, AND, OR, NOT, parentheses
    [GROUP BY col, ...]        -- columns with a declared domain, or (dp mode, (epsilon, delta)
                               -- budgets) columns listed in `keys_from_data`: their keys are
                               -- taken from the data and released by thresholding
                               -- (sdckit.query.keys), or (dp mode) binned columns:
                               -- FLOOR(age / 10) * 10, WIDTH_BUCKET(x, lo, hi, n),
                               -- CASE WHEN ... THEN 'label' ... END, or a selected one's alias

    In dp mode SUM, AVG, VAR_POP and STDDEV_POP also take an expression of one column with
    literals (SUM(income * 12), SUM(CASE WHEN sex = 'F' THEN income ELSE 0 END)); binned and derived
    columns, their bins and bounds: :mod:`sdckit.query.derived`.

Everything else is refused with :class:`UnsupportedQuery` naming what is not supported: other joins,
sub-queries, functions other than these aggregates (and the binning and arithmetic above), several statements, comments, ORDER
BY, LIMIT, HAVING, DISTINCT, column-to-column comparisons, NULL tests, undeclared columns.
The analyst's text never reaches the database: :mod:`sdckit.query.generate` writes the SQL
from the :class:`Query` object.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from sdckit.core.result import Result, plain
from sdckit.query.config import ServiceConfig, TableConfig
from sdckit.query.joins import Join, JoinedTable, parse_join
from sdckit.query.derived import Derived, check_groups, group_item
from sdckit.query.sqlnodes import UnknownTable, UnsupportedQuery, column_name, node_name, table_name
from sdckit.query.sqloutputs import Output, parse_output
from sdckit.query.sqlwhere import (MAX_DEPTH, And, Between, Compare, InList, Not, Or, Predicate, parse_predicate,
                                   predicate_columns, predicate_dict)

__all__ = ["MAX_DEPTH", "MAX_SQL", "And", "Between", "Compare", "InList", "Not", "Or", "Output", "Predicate", "Query",
           "UnknownTable", "UnsupportedQuery", "parse", "predicate_columns"]

#: Longest SQL text accepted.
MAX_SQL = 10_000

_DIALECT = "duckdb"


@dataclass(frozen=True)
class Query(Result):
    """A parsed, validated query: only declared names and literal values, nothing else."""

    table: str
    outputs: tuple[Output, ...]
    where: Predicate | None
    group_by: tuple[str, ...]
    join: Join | None = None  # (sdckit.query.joins; the join's columns are named as its JoinedTable names them)

    @property
    def aggregates(self) -> tuple[Output, ...]:
        return tuple(o for o in self.outputs if o.kind != "group")

    def to_dict(self) -> dict[str, Any]:
        """A canonical, JSON-serialisable form (cache key, ledger): outputs and conditions as
        lists (``["cmp", column, op, value]`` ...), never changed, since the stored answers are
        found by it."""
        out = {"table": self.table,
               "outputs": [[o.kind, o.column, o.label] + ([o.q] if o.q is not None else []) for o in self.outputs],
               "where": predicate_dict(self.where), "group_by": self.group_by}
        return plain(out if self.join is None else {**out, "join": self.join})

    @functools.cached_property
    def ledger_text(self) -> str:
        """``json.dumps(self.to_dict())`` (the ledger's record of the query), computed once per
        parsed query (the service's parse cache hands out the same object for the same text)."""
        return json.dumps(self.to_dict())

    @functools.cached_property
    def key_text(self) -> str:
        """``json.dumps(self.to_dict(), sort_keys=True)``, computed once (the stored answers' key)."""
        return json.dumps(self.to_dict(), sort_keys=True)


# ---------------------------------------------------------------- parsing
_SELECT_ARGS = {"expressions", "from", "from_", "where", "group", "kind", "joins"}
_CLAUSES = {"joins": "JOIN", "laterals": "LATERAL", "having": "HAVING", "order": "ORDER BY",
            "limit": "LIMIT", "offset": "OFFSET", "distinct": "DISTINCT", "with": "WITH (common table expressions)",
            "with_": "WITH (common table expressions)", "qualify": "QUALIFY", "windows": "WINDOW",
            "sample": "SAMPLE", "into": "INTO", "pivots": "PIVOT", "prewhere": "PREWHERE",
            "settings": "SETTINGS", "locks": "FOR UPDATE", "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE",
            "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "sort": "SORT BY", "operation_modifiers": "modifiers",
            "hint": "hints", "options": "OPTION", "fetch": "FETCH"}


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
        raise UnsupportedQuery(f"Only SELECT is supported; got {node_name(tree)}.")
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
    group_by, bins = _group(tree, table)
    if isinstance(table, JoinedTable):
        table.check_groups(group_by)
    outputs = []
    for item in tree.expressions:
        label = None
        if isinstance(item, exp.Alias):
            label = item.alias
            item = item.this
        outputs.append(parse_output(item, label, table, group_by))
    if not any(o.kind != "group" for o in outputs):
        raise UnsupportedQuery("Select at least one aggregate: COUNT(*), SUM(column) or AVG(column).")
    check_groups(outputs, group_by, table, bins)
    if isinstance(table, JoinedTable) and (bins or any(o.derived is not None for o in outputs)):
        raise UnsupportedQuery("Binned or derived columns over a JOIN are not supported: bin or derive over one table.")
    labels = [o.label for o in outputs]
    if len(set(labels)) != len(labels):
        raise UnsupportedQuery("Two output columns have the same name: give them different aliases (AS name).")
    where = tree.args.get("where")
    predicate = parse_predicate(where.this, table) if where is not None else None
    return Query(table.name, tuple(outputs), predicate, group_by, table.join if isinstance(table, JoinedTable) else None)


def _from(tree: exp.Select, config: ServiceConfig) -> TableConfig:
    source = tree.args.get("from") or tree.args.get("from_")
    if source is None:
        raise UnsupportedQuery("FROM is required: name one of the service's tables.")
    node = source.this
    name = table_name(node, "FROM")
    for declared, table in config.tables.items():
        if declared.lower() == name.lower():
            return parse_join(tree, config, table, node.alias)
    if any(n.lower() == name.lower() for n in config.public_tables):
        raise UnsupportedQuery(f"{name!r} is a public table: read it whole (GET /v1/public/{name}), or JOIN it to a "
                               "private table (FROM private JOIN public ON ...); two public tables are not joined.")
    raise UnknownTable(f"Unknown table {name!r}: the service serves {', '.join(sorted(config.tables))}.")


def _group(tree: exp.Select, table: TableConfig) -> tuple[tuple[str, ...], dict[str, Derived]]:
    """The GROUP BY columns, and the binned ones among them (:mod:`sdckit.query.derived`)."""
    group = tree.args.get("group")
    bins: dict[str, Derived] = {}
    if group is None:
        return (), bins
    for key, value in group.args.items():
        if key != "expressions" and value:
            raise UnsupportedQuery(f"GROUP BY {key.upper()} is not supported.")
    columns = []
    for item in group.expressions:
        binned = group_item(item, tree.expressions, table)
        if binned is not None:
            bins[binned.name] = binned
        column = binned.name if binned is not None else column_name(item, table, "A GROUP BY item")
        if binned is None and column not in table.domains and column not in table.key_columns:
            raise UnsupportedQuery(f"GROUP BY {column!r} needs a declared domain ([table.domains] in the configuration), "
                                   "or, in dp mode, its keys taken from the data ('keys_from_data').")
        if column in columns:
            raise UnsupportedQuery(f"GROUP BY names {column!r} twice.")
        columns.append(column)
    return tuple(columns), bins
