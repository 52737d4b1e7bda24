"""Binned GROUP BY columns and values derived before aggregating (issue 32; DESIGN.md section 7).

Two forms of an expression over *one* declared column and literals (bins in both modes — in
restricted mode of a public dimension, each bin's record set audited as any query set —, derived
values in dp mode only):

* **A binned group column** (a histogram, as Tumult Analytics' ``BinningSpec`` with its bins
  as the group keys): ``GROUP BY`` an expression that maps the column to finitely many public
  labels --

  - ``CASE WHEN cond THEN 'label' [WHEN ...] [ELSE 'label'] END``: every condition a predicate
    on the one column (as in WHERE, on the value as stored), every THEN/ELSE a literal (all
    strings or all numbers); the bins are the distinct labels in the order written (a row that
    meets no condition and has no ELSE is in no bin);
  - ``outer(FLOOR(inner))``, ``CEIL``, or ``WIDTH_BUCKET(inner, low, high, n)`` (PostgreSQL's:
    0 below ``low``, ``n + 1`` from ``high`` on, else ``floor((v - low) / (high - low) n) + 1``),
    ``inner`` arithmetic of the column and ``outer`` arithmetic of the step and literals (e.g.
    ``FLOOR(age / 10) * 10``): the column (a NULL stays NULL: no bin) is clamped to its declared
    bounds (or the range of its numeric domain) first, so the step takes the integers ``j`` from
    the step of the interval's ends to the step of its other end; each is a bin, labelled
    ``outer(j)`` computed exactly.

  The bins follow from the expression and the declared bounds or domain alone: every bin is an
  answer row, an empty one answered with noise, never a key from the data. The generated SQL
  computes a bin's *code* (its index, ``BIGINT``; the labels never reach DuckDB), and a row whose
  code falls outside (rounding at an edge) belongs to no bin, as a value outside a declared domain.
  One person's ``k`` rows are each in at most one bin, so the histogram is a plain noisy COUNT
  per bin (L1 sensitivity ``k``, parallel composition), as any GROUP BY of declared domains.

* **A derived value** under ``SUM``, ``AVG``, ``VAR_POP`` or ``STDDEV_POP``: ``+ - *``, ``/`` by a
  literal (never by a column), unary minus, ``FLOOR``, ``CEIL``, ``ABS``, ``WIDTH_BUCKET`` and
  ``CASE WHEN cond THEN value ... ELSE value END`` (its conditions any WHERE predicates, its ELSE
  required); the arithmetic reads at most one column, which needs declared bounds. **Rule**: the
  column is clamped to its bounds ``[lo, hi]`` first (a missing value as 0, clamped: the dp
  relation's clamped column, as SUM reads it), then the expression is computed in doubles, and
  the result is clamped to ``[lo', hi']``, the interval that interval arithmetic (Moore 1966,
  *Interval Analysis*, ch. 2) gives over
  ``[lo, hi]`` (exact rationals, rounded outwards to doubles): ``[a, b] + [c, d] = [a + c, b + d]``,
  ``[a, b] - [c, d] = [a - d, b - c]``, a product the smallest and largest of the four products,
  ``/ c`` as ``* (1 / c)``, ``FLOOR``/``CEIL``/``WIDTH_BUCKET`` of the ends (monotone), ``ABS``
  ``[0, max(|a|, |b|)]`` when ``a < 0 < b``, a CASE the hull of its values. The derived value is
  then aggregated as a column with bounds ``[lo', hi']``: SUM's sensitivity ``k max(|lo'|, |hi'|)``,
  AVG's and VAR_POP's from the midpoint of ``[lo', hi']`` — exact, since every value lies in it
  (the final clamp absorbs rounding).

Everything else — two columns in one expression's arithmetic, a division by a column, an unknown
function or operator, a string in arithmetic — is :class:`UnsupportedQuery` in one line naming it.
A derived column's name is its canonical text (``FLOOR(age / 10) * 10``, declared names and
literals written back), never an identifier, so it cannot collide with a declared column; it is
the column of the query's :class:`~sdckit.query.sqloutputs.Output` and so part of the stored
answer's key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from sdckit.core.result import Result, plain
from sdckit.query.config import IDENTIFIER, MAX_GROUPS, TableConfig
from sdckit.query.sqlnodes import UnsupportedQuery, column_name, literal, node_name
from sdckit.query.sqlwhere import MAX_DEPTH, And, Between, Compare, InList, Or, Predicate, parse_predicate, predicate_columns

__all__ = ["ARITHMETIC", "Derived", "EXPRESSIONS", "STEPS", "derived_of", "describe", "dp_table", "find", "group_item", "is_derived_name",
           "has_column", "is_derived_name", "parse_bin", "parse_value", "step_of", "walk"]

#: The sqlglot nodes read as an expression (anything else in one is refused, naming it).
EXPRESSIONS = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.Paren, exp.Floor, exp.Ceil, exp.Abs, exp.Case,
               exp.WidthBucket, exp.Mod, exp.IntDiv, exp.Pow)
ARITHMETIC = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
STEPS = ("floor", "ceil", "width_bucket")
_SUPPORTED = "+ - * / (by a literal), FLOOR, CEIL, ABS, WIDTH_BUCKET and CASE WHEN ... THEN ... ELSE ... END"


@dataclass(frozen=True)
class Derived(Result):
    """A binned group column (``kind = "bin"``) or a derived value (``kind = "value"``).

    ``name`` is the canonical text; ``column`` the declared column the arithmetic reads (None:
    only literals); ``tree`` the expression as nested tuples (``("col", c)``, ``("lit", v)``,
    ``("+", a, b)``, ``("neg", a)``, ``("floor", a)``, ``("width_bucket", a, low, high, n)``,
    ``("case", ((predicate, a), ...), default)``); a bin's ``labels`` (in code order) and
    ``first`` (the step's value of code 0); a value's ``bounds`` ``[lo', hi']``.
    """

    name: str
    kind: str
    column: str | None
    tree: tuple
    labels: tuple = ()
    first: int = 0
    bounds: tuple[float, float] | None = None
    source: tuple[float, float] | None = None  # the column's interval (bins of a step, values)

    def to_dict(self) -> dict[str, Any]:
        return plain({"name": self.name, "kind": self.kind, "column": self.column, "bins": len(self.labels),
                      "labels": list(self.labels), "bounds": self.bounds, "source_bounds": self.source})


def is_derived_name(name: str) -> bool:
    """Whether ``name`` is a derived column's (never an identifier, unlike every declared name)."""
    return IDENTIFIER.match(name) is None


# ---------------------------------------------------------------- reading sqlglot's tree
def _tree(node: exp.Expression, table: TableConfig, reads: list[str], depth: int = 0) -> tuple:
    if depth == 0 and node.find(exp.AggFunc) is not None:
        raise UnsupportedQuery(f"{node_name(node)} over an aggregate is not supported: select the aggregate and compute "
                               "from the answer (an expression may read one column and literals).")
    if depth > MAX_DEPTH:
        raise UnsupportedQuery(f"An expression is nested more than {MAX_DEPTH} levels deep.")
    if isinstance(node, exp.Paren):
        return _tree(node.this, table, reads, depth + 1)
    if isinstance(node, exp.Column):
        name = column_name(node, table, "A column in an expression")
        reads.append(name)
        return ("col", name)
    if isinstance(node, exp.Literal | exp.Null | exp.Boolean):
        return ("lit", literal(node))
    if isinstance(node, exp.Neg):
        inner = node.this
        while isinstance(inner, exp.Neg | exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal):
            return ("lit", literal(node))
        return ("neg", _tree(node.this, table, reads, depth + 1))
    for cls, op in ARITHMETIC.items():
        if type(node) is cls:
            left, right = _tree(node.this, table, reads, depth + 1), _tree(node.expression, table, reads, depth + 1)
            if op == "/" and right[0] != "lit":
                raise UnsupportedQuery("Division by a column or an expression is not supported: divide by a literal number.")
            if op == "/" and right[1] == 0:
                raise UnsupportedQuery("Division by zero is not supported.")
            return (op, left, right)
    if isinstance(node, exp.Mod | exp.IntDiv | exp.Pow):
        raise UnsupportedQuery(f"The operator {node_name(node)} is not supported in an expression: only {_SUPPORTED}.")
    if isinstance(node, exp.Floor | exp.Ceil | exp.Abs):
        if any(v for k, v in node.args.items() if k != "this"):
            raise UnsupportedQuery(f"{node_name(node)} with a second argument is not supported: write {node_name(node)}(x).")
        return (node_name(node).lower(), _tree(node.this, table, reads, depth + 1))
    if isinstance(node, exp.WidthBucket):
        ends = [literal(node.args.get(k)) if node.args.get(k) is not None else None
                for k in ("min_value", "max_value", "num_buckets")]
        low, high, n = ends
        if any(e is None or isinstance(e, str) for e in ends) or not low < high:
            raise UnsupportedQuery("WIDTH_BUCKET(x, low, high, n) needs literal numbers low < high and n.")
        if not isinstance(n, int) or not 1 <= n <= MAX_GROUPS:
            raise UnsupportedQuery(f"The number of buckets of WIDTH_BUCKET must be an integer from 1 to {MAX_GROUPS}.")
        return ("width_bucket", _tree(node.this, table, reads, depth + 1), low, high, n)
    if isinstance(node, exp.Case):
        if node.args.get("this") is not None:
            raise UnsupportedQuery("CASE column WHEN value ... is not supported: write CASE WHEN column = value THEN ... END.")
        arms = tuple((parse_predicate(arm.this, table), _tree(arm.args["true"], table, reads, depth + 1))
                     for arm in node.args.get("ifs") or [])
        default = node.args.get("default")
        return ("case", arms, None if default is None else _tree(default, table, reads, depth + 1))
    if isinstance(node, exp.Func):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        raise UnsupportedQuery(f"The function {name.upper()} is not supported in an expression: only {_SUPPORTED}.")
    raise UnsupportedQuery(f"{node_name(node)} is not supported in an expression: only {_SUPPORTED}.")


def _text(t: Any) -> str:
    """The canonical text of a tree (declared names, literals written back)."""
    kind = t[0]
    if kind == "col":
        return t[1]
    if kind == "lit":
        return _literal_text(t[1])
    if kind in ARITHMETIC.values():
        return f"{_wrapped(t[1])} {kind} {_wrapped(t[2])}"
    if kind == "neg":
        return f"-{_wrapped(t[1])}"
    if kind == "width_bucket":
        return f"WIDTH_BUCKET({_text(t[1])}, {t[2]!r}, {t[3]!r}, {t[4]!r})"
    if kind == "case":
        arms = " ".join(f"WHEN {_predicate_text(p)} THEN {_text(v)}" for p, v in t[1])
        return f"CASE {arms}{'' if t[2] is None else ' ELSE ' + _text(t[2])} END"
    return f"{kind.upper()}({_text(t[1])})"


def _literal_text(value: Any) -> str:
    """A literal as the canonical text shows it: a string quoted (``'`` doubled), a number by repr."""
    return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else repr(value)


def _wrapped(t: tuple) -> str:
    return f"({_text(t)})" if t[0] in ARITHMETIC.values() or t[0] == "neg" else _text(t)


def _predicate_text(p: Predicate) -> str:
    if isinstance(p, Compare):
        return f"{p.column} {p.op} {_literal_text(p.value)}"
    if isinstance(p, InList):
        return f"{p.column} {'NOT ' if p.negated else ''}IN ({', '.join(_literal_text(v) for v in p.values)})"
    if isinstance(p, Between):
        return f"{p.column} {'NOT ' if p.negated else ''}BETWEEN {_literal_text(p.low)} AND {_literal_text(p.high)}"
    if isinstance(p, And | Or):
        return f" {type(p).__name__.upper()} ".join(f"({_predicate_text(i)})" for i in p.items)
    return f"NOT ({_predicate_text(p.item)})"


def walk(t: Any):
    """Every node of a tree, depth first (a CASE's values, not its predicates)."""
    yield t
    if t[0] == "case":
        for _, value in t[1]:
            yield from walk(value)
        if t[2] is not None:
            yield from walk(t[2])
    elif t[0] not in ("col", "lit"):
        yield from walk(t[1])
        if t[0] in ARITHMETIC.values():
            yield from walk(t[2])


def _number(t: tuple, what: str) -> None:
    for sub in walk(t):
        if sub[0] == "lit" and isinstance(sub[1], str):
            raise UnsupportedQuery(f"The string {_literal_text(sub[1])} in {what} is not supported: arithmetic takes numbers.")


# ---------------------------------------------------------------- intervals (exact) and values (doubles)
def _interval(t: tuple, lo: Fraction, hi: Fraction) -> tuple[Fraction, Fraction]:
    kind = t[0]
    if kind == "col":
        return lo, hi
    if kind == "lit":
        return Fraction(t[1]), Fraction(t[1])
    if kind == "case":
        parts = [_interval(v, lo, hi) for _, v in t[1]] + ([_interval(t[2], lo, hi)] if t[2] is not None else [])
        return min(p[0] for p in parts), max(p[1] for p in parts)
    a, b = _interval(t[1], lo, hi)
    if kind in ("+", "-", "*", "/"):
        c, d = _interval(t[2], lo, hi)
        if kind == "+":
            return a + c, b + d
        if kind == "-":
            return a - d, b - c
        if kind == "/":
            c, d = 1 / d, 1 / c
        products = [a * c, a * d, b * c, b * d]
        return min(products), max(products)
    if kind == "neg":
        return -b, -a
    if kind == "abs":
        return (Fraction(0) if a < 0 < b else min(abs(a), abs(b))), max(abs(a), abs(b))
    step = _step_function(t)
    return Fraction(step(a)), Fraction(step(b))


def _step_function(t: tuple) -> Callable[[Any], int]:
    """The step of a ``floor``, ``ceil`` or ``width_bucket`` node, on a number (exact or double)."""
    if t[0] == "floor":
        return math.floor
    if t[0] == "ceil":
        return math.ceil
    low, high, n = t[2], t[3], t[4]
    width = float(high) - float(low)

    def bucket(v: Any) -> int:
        if v < low:
            return 0
        if v >= high:
            return n + 1
        return min(math.floor((float(v) - low) / width * n) + 1, n)
    return bucket


def _double(t: tuple, x: float) -> float:
    """The tree computed in doubles at ``x``, as DuckDB computes the generated SQL."""
    kind = t[0]
    if kind == "col":
        return x
    if kind == "lit":
        return float(t[1])
    a = _double(t[1], x)
    if kind in ("+", "-", "*", "/"):
        b = _double(t[2], x)
        return a + b if kind == "+" else a - b if kind == "-" else a * b if kind == "*" else a / b
    if kind == "neg":
        return -a
    if kind == "abs":
        return abs(a)
    return float(_step_function(t)(a))


def _exact(t: tuple, step_value: int) -> Fraction:
    """An outer tree (its one step node given ``step_value``) computed exactly: a bin's label."""
    kind = t[0]
    if kind in STEPS:
        return Fraction(step_value)
    if kind == "lit":
        return Fraction(t[1])
    a = _exact(t[1], step_value) if has_column(t[1]) else _interval(t[1], Fraction(0), Fraction(0))[0]
    if kind in ("+", "-", "*", "/"):
        b = _exact(t[2], step_value) if has_column(t[2]) else _interval(t[2], Fraction(0), Fraction(0))[0]
        return a + b if kind == "+" else a - b if kind == "-" else a * b if kind == "*" else a / b
    return -a if kind == "neg" else abs(a)


def has_column(t: tuple) -> bool:
    """Whether a tree reads the column."""
    return any(sub[0] == "col" for sub in walk(t))


def _outward(lo: Fraction, hi: Fraction) -> tuple[float, float]:
    """``[lo, hi]`` rounded outwards to doubles."""
    a, b = float(lo), float(hi)
    if Fraction(a) > lo:
        a = math.nextafter(a, -math.inf)
    if Fraction(b) < hi:
        b = math.nextafter(b, math.inf)
    return a, b


def _source(column: str, table: TableConfig, what: str) -> tuple[float, float]:
    """The public interval of ``column``: its declared bounds, else the range of a numeric domain."""
    if column in table.data_bounds or (column not in table.bounds and table.bounds_from_data):
        raise UnsupportedQuery(f"{what} reads {column!r}, whose bounds are read from the data: declare them "
                               "([table.bounds]) to bin or derive it.")
    if column in table.bounds:
        return table.bounds[column]
    values = table.domains.get(column, ())
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return min(values), max(values)
    raise UnsupportedQuery(f"{what} computes with {column!r}, which has no declared bounds (nor a numeric domain).")


def _one_column(columns: set[str], text: str) -> str | None:
    if len(columns) > 1:
        raise UnsupportedQuery(f"An expression may read one column; {text} reads {', '.join(sorted(columns))}.")
    return next(iter(columns), None)


# ---------------------------------------------------------------- the two forms
def parse_bin(node: exp.Expression, table: TableConfig) -> Derived:
    """The binned group column of a GROUP BY (or selected) expression."""
    reads: list[str] = []
    t = _tree(node, table, reads)
    name = _text(t)
    conditions = set().union(*(predicate_columns(p) for sub in walk(t) if sub[0] == "case" for p, _ in sub[1]))
    column = _one_column(set(reads) | conditions, name)
    if column is None:
        raise UnsupportedQuery(f"The GROUP BY expression {name} reads no column.")
    if t[0] == "case":
        arms = [v for _, v in t[1]] + ([t[2]] if t[2] is not None else [])
        if any(v[0] != "lit" for v in arms):
            raise UnsupportedQuery(f"The bins of {name} must be literals: CASE WHEN ... THEN 'label' ... ELSE 'label' END.")
        labels = tuple(dict.fromkeys(v[1] for v in arms))
        if len({isinstance(v, str) for v in labels}) > 1:
            raise UnsupportedQuery(f"The labels of {name} must be all strings or all numbers.")
        return Derived(name, "bin", column, t, labels)
    _number(t, name)
    steps = [sub for sub in walk(t) if sub[0] in STEPS and has_column(sub)]
    if not steps or not _outer_path(t, steps[0]):
        raise UnsupportedQuery(f"GROUP BY {name} does not bin its column: use FLOOR(...), CEIL(...), "
                               "WIDTH_BUCKET(x, low, high, n) (arithmetic outside of it with literals only) or CASE "
                               "WHEN ... THEN 'label' ... END.")
    step = steps[0]  # (step_of finds it again)
    lo, hi = _source(column, table, f"GROUP BY {name}")
    a, b = _interval(step[1], Fraction(lo), Fraction(hi))
    function = _step_function(step)
    ends = [function(a), function(b), function(_double(step[1], float(lo))), function(_double(step[1], float(hi)))]
    first, last = min(ends), max(ends)
    if last - first + 1 > MAX_GROUPS:
        raise UnsupportedQuery(f"GROUP BY {name} makes {last - first + 1} bins over [{lo}, {hi}]: at most {MAX_GROUPS}.")
    labels = tuple(_label(_exact(t, j)) for j in range(first, last + 1))
    if len(set(labels)) != len(labels):
        raise UnsupportedQuery(f"Two bins of {name} have the same label: the arithmetic outside the step must not merge them.")
    return Derived(name, "bin", column, t, labels, first, None, (lo, hi))


def step_of(tree: tuple) -> tuple:
    """The step node (``floor``, ``ceil``, ``width_bucket``) that makes a bin of ``tree``."""
    return next(sub for sub in walk(tree) if sub[0] in STEPS and has_column(sub))


def _outer_path(t: tuple, step: tuple) -> bool:
    """Whether ``step`` is the one node of ``t`` that reads the column, reached through
    arithmetic whose other operands are literals only."""
    if t is step:
        return True
    if t[0] in ARITHMETIC.values():
        left, right = has_column(t[1]), has_column(t[2])
        return (left != right) and _outer_path(t[1] if left else t[2], step)
    return t[0] in ("neg", "abs") and _outer_path(t[1], step)


def _label(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def parse_value(node: exp.Expression, table: TableConfig, what: str) -> Derived | None:
    """The derived value under an aggregate, or None when ``node`` is a plain column."""
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Column):
        return None
    reads: list[str] = []
    t = _tree(node, table, reads)
    name = _text(t)
    column = _one_column(set(reads), name)
    _number(t, name)
    if any(sub[0] == "case" and sub[2] is None for sub in walk(t)):
        raise UnsupportedQuery(f"A CASE in {what} needs an ELSE value (e.g. ELSE 0).")
    lo, hi = (0.0, 0.0) if column is None else _source(column, table, f"{what} {name}")
    if column is not None and column not in table.bounds:
        raise UnsupportedQuery(f"{what} {name} needs public bounds of {column!r} ([table.bounds] in the configuration).")
    bounds = _outward(*_interval(t, Fraction(lo), Fraction(hi)))
    if not all(math.isfinite(b) for b in bounds):
        raise UnsupportedQuery(f"The bounds of {name} are not finite numbers.")
    return Derived(name, "value", column, t, bounds=bounds, source=None if column is None else (lo, hi))


def group_item(item: exp.Expression, selected: list[exp.Expression], table: TableConfig) -> Derived | None:
    """The binned column of a GROUP BY item: an expression, or the alias of a selected one (a
    declared column's name is the column). None for a plain column."""
    if isinstance(item, exp.Column) and isinstance(item.this, exp.Identifier) and not item.table:
        name = item.this.this
        if not any(c.lower() == name.lower() for c in table.queryable):
            for s in selected:
                if (isinstance(s, exp.Alias) and s.alias.lower() == name.lower() and not isinstance(s.this, exp.Column)
                        and s.this.find(exp.AggFunc) is None):
                    return parse_bin(s.this, table)
        return None
    return parse_bin(item, table) if isinstance(item, EXPRESSIONS) else None


def dp_table(query: Any, table: TableConfig) -> TableConfig:
    """``table`` with the query's derived columns as declared ones: a bin's labels as its domain,
    a value's ``[lo', hi']`` as its bounds (what the plans and the answers read)."""
    found = derived_of(query)
    if not found:
        return table
    bounds = {**table.bounds, **{d.name: d.bounds for d in found if d.kind == "value"}}
    domains = {**table.domains, **{d.name: d.labels for d in found if d.kind == "bin"}}
    return dataclasses.replace(table, bounds=bounds, domains=domains)


def derived_of(query: Any) -> tuple[Derived, ...]:
    """The derived columns of a query's outputs, each once."""
    return tuple({(o.derived.kind, o.derived.name): o.derived for o in query.outputs if o.derived is not None}.values())


def find(query: Any, name: str, kind: str) -> Derived | None:
    """The query's derived column ``name`` of ``kind`` (``"bin"`` or ``"value"``), if any."""
    return next((d for d in derived_of(query) if d.name == name and d.kind == kind), None)


def check_groups(outputs: Any, group_by: tuple[str, ...], table: TableConfig, bins: dict[str, Derived]) -> None:
    """Every binned GROUP BY column is selected (its labels are the rows) and the groups are at most
    :data:`MAX_GROUPS`."""
    selected = {o.column for o in outputs if o.kind == "group"}
    size = 1
    for column in group_by:
        if column in bins and column not in selected:
            raise UnsupportedQuery(f"Select the binned GROUP BY column {column} (its bins label the rows).")
        size *= len(bins[column].labels) if column in bins else len(table.domains.get(column, (0,)))
    if size > MAX_GROUPS:
        raise UnsupportedQuery(f"The GROUP BY makes {size} groups: at most {MAX_GROUPS}.")


def describe(query: Any) -> str:
    """The sentence an answer's mechanism adds for the query's derived columns."""
    parts = []
    for d in derived_of(query):
        if d.kind == "bin" and d.source is not None:
            parts.append(f"GROUP BY {d.name}: {len(d.labels)} bins that follow from the expression and the declared range "
                         f"[{d.source[0]:g}, {d.source[1]:g}] of {d.column} (the value clamped to it first, a missing "
                         "value in no bin), every bin answered, never keys from the data")
        elif d.kind == "bin":
            parts.append(f"GROUP BY {d.name}: {len(d.labels)} bins, its THEN/ELSE labels, every bin answered, never "
                         "keys from the data")
        else:
            source = "" if d.source is None else f"{d.column} clamped to [{d.source[0]:g}, {d.source[1]:g}] first (a missing value as 0), then "
            parts.append(f"{d.name}: {source}computed and clamped to [{d.bounds[0]:g}, {d.bounds[1]:g}] (interval "
                         "arithmetic over the declared bounds), aggregated as a column with these bounds")
    return "; ".join(parts)
