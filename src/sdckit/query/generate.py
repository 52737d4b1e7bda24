"""The DuckDB SQL the service runs, written by sdckit from a :class:`~sdckit.query.sql.Query`.

The analyst's text never reaches DuckDB: the statement is built with sqlglot's expression
builders from the parsed query object; identifiers are the *configuration's* names (checked
again here against the table's declared columns and quoted), and every literal value is a bound
parameter (``?``). The only strings in the generated SQL are therefore sdckit's keywords, the
configured names and sdckit's internal names.

Relations (created by :mod:`sdckit.query.data` when the service starts):

* ``"sdc_<table>"``: the table as loaded, with ``"__sdc_row"`` (0..n-1), the fixed order of the
  records the restricted mode's membership vectors use, and ``"__sdc_code_<col>"`` for each
  text-domain column (its value's index in the domain, -1 outside it);
* ``"sdc_dp_<table>"``: the same after bounding each privacy unit's contribution to
  ``max_rows_per_unit`` rows, with ``"__sdc_clamp_<col>"`` (the bounded column clamped, DOUBLE)
  and ``"__sdc_rank"`` (the row's rank among its person's rows, 1-based, file order): a query
  asking a smaller bound ``k'`` (:func:`rows_per_unit`) keeps ``"__sdc_rank" <= k'`` (bound).

``=``, ``<>`` and ``IN`` on a text-domain column compare the code when the value is in the domain
(the same rows, faster) and the text otherwise; GROUP BY groups on the code. A binned group column
is its bin code and a derived value its expression clamped to its bounds
(:mod:`sdckit.query.derivedsql`); a statement with a binned column groups ``BY ALL``. The result
columns are sdckit's aliases ``n``, ``s0``, ..., ``g0``, ...
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from sqlglot import exp

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result
from sdckit.query.config import IDENTIFIER, TableConfig
from sdckit.query.grid import QUANTILE_GRID, quantile_bins
from sdckit.query.groupbounds import GroupBounds, truncated
from sdckit.query.joins import JoinedTable
from sdckit.query.relnames import RANK, ROW, clamp_column, code_column, is_text_domain, relation_name
from sdckit.query.derived import find, is_derived_name
from sdckit.query.derivedsql import expression_sql
from sdckit.query.sql import And, Between, Compare, InList, Not, Or, Predicate, Query
from sdckit.query.squares import Scaling, scaling


#: Aliases of the aggregate query's result columns (sdckit's own names).
COUNT_ALIAS = "n"
#: The number of distinct privacy units per group (keys taken from the data, :mod:`sdckit.query.keys`).
PERSONS_ALIAS = "p"

_OPS = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}


def sum_alias(i: int) -> str:
    return f"s{i}"


def square_alias(i: int) -> str:
    """The i-th squared-deviation sum (VAR_POP/STDDEV_POP) of :func:`aggregate_sql`."""
    return f"q{i}"


def distinct_alias(i: int) -> str:
    """The i-th ``COUNT(DISTINCT column)`` of :func:`aggregate_sql`."""
    return f"d{i}"


@functools.lru_cache(maxsize=1024)
def midpoint_sensitivity(lo: float, hi: float, k: int) -> tuple[float, float]:
    """``(m, sensitivity)`` of the sum of deviations ``clamp(x) - m`` from the midpoint
    ``m = (lo + hi) / 2`` for ``k`` rows per person: ``k max(hi - m, m - lo)`` computed exactly
    and rounded up to a double (``m`` is the double nearest the midpoint). Memoised."""
    m = lo / 2 + hi / 2  # no overflow; exact unless an operand is subnormal
    exact_sens = k * max(Fraction(hi) - Fraction(m), Fraction(m) - Fraction(lo))
    sens = float(exact_sens)
    if Fraction(sens) < exact_sens:
        sens = math.nextafter(sens, math.inf)
    return m, sens


@functools.lru_cache(maxsize=1024)
def square_cap(lo: float, hi: float) -> float:
    """The largest double ``cap <= a**2``, ``a = max(hi - m, m - lo)`` the largest deviation of a
    clamped value from the midpoint ``m`` (:func:`midpoint_sensitivity`): every squared deviation
    is taken as ``LEAST((clamp(x) - m)**2, cap)`` in ``[0, cap]`` (the ``LEAST`` only absorbs
    rounding), and ``cap`` is the largest population variance a column in ``[lo, hi]`` can have (memoised)."""
    m = midpoint_sensitivity(lo, hi, 1)[0]
    exact_a = max(Fraction(hi) - Fraction(m), Fraction(m) - Fraction(lo))
    cap = float(exact_a * exact_a)
    if Fraction(cap) > exact_a * exact_a:
        cap = math.nextafter(cap, 0.0)
    return cap


def group_alias(i: int) -> str:
    return f"g{i}"


@dataclass(frozen=True)
class Generated(Result):
    """A statement and its bound parameters, ready for ``duckdb.execute(sql, params)``."""

    sql: str
    params: tuple[Any, ...]


def rows_per_unit(table: TableConfig, asked: int | None = None) -> int:
    """The contribution bound ``k`` a dp query uses: the rows per privacy unit the query asks
    (``asked``, ``1 <= asked <= max_rows_per_unit``, checked by the service) or the configured
    ``max_rows_per_unit`` (1 when one row is one person). Every sensitivity scales with it."""
    configured = table.max_rows_per_unit if table.privacy_unit else 1
    if asked is None:
        return configured
    if isinstance(asked, bool) or not isinstance(asked, int) or not 1 <= asked <= configured:
        raise ParameterError(f"Internal check: max_rows_per_unit {asked!r} is not an int from 1 to {configured}.")
    return asked


def contribution_bound(table: TableConfig, rows: int | None = None) -> int:
    """The rows of the relation a dp query aggregates that one person changes, the ``k`` of every
    sensitivity: :func:`rows_per_unit`, times a join's stability (:meth:`JoinedTable.bound`)."""
    k = rows_per_unit(table, rows)
    return table.bound(k) if isinstance(table, JoinedTable) else k


def _source(table: TableConfig, mode: str, bind: _Params, rows: int | None = None) -> exp.Expression:
    """The FROM of a statement: the table's relation, or the join of a :class:`JoinedTable`
    (``rows``: a dp query's smaller bound, applied before a private join's truncation per key)."""
    if isinstance(table, JoinedTable):
        asked = rows if mode == "dp" and rows is not None and rows != rows_per_unit(table) else None
        return table.source(relation_name(table, mode), bind, asked)
    return exp.Table(this=exp.to_identifier(relation_name(table, mode), quoted=True))


def _rank_condition(table: TableConfig, rows: int | None, bind: _Params) -> exp.Expression | None:
    """``"__sdc_rank" <= ?`` (``rows`` bound) when a dp query asks fewer rows per person than the
    dp relation keeps; ``None`` otherwise (the relation is already bounded)."""
    if rows is None or rows == rows_per_unit(table):
        return None
    return exp.LTE(this=exp.Column(this=exp.to_identifier(RANK, quoted=True)),
                   expression=bind(rows_per_unit(table, rows)))


def _where_parts(query: Query, table: TableConfig, bind: _Params, rows: int | None) -> list[exp.Expression]:
    """The query's WHERE and, in dp mode, the asked contribution bound (each parenthesised when two)."""
    parts = [] if query.where is None else [_condition(query.where, table, bind)]
    rank = _rank_condition(table, rows, bind)
    if rank is not None:
        parts.append(rank)
    return [exp.Paren(this=part) if len(parts) > 1 else part for part in parts]


def _where(statement: exp.Select, query: Query, table: TableConfig, bind: _Params, rows: int | None) -> exp.Select:
    """``statement`` with the query's WHERE and, in dp mode, the asked contribution bound."""
    for part in _where_parts(query, table, bind, rows):
        statement = statement.where(part, copy=False)
    return statement


def _from(query: Query, table: TableConfig, mode: str, bind: _Params, rows: int | None,
          groups: GroupBounds | None) -> exp.Expression:
    """The FROM of a statement; under per-group bounds the person's rows truncated per group
    (:func:`sdckit.query.groupbounds.truncated`: the WHERE and rank bound applied first)."""
    if groups is None:
        return _source(table, mode, bind, rows)
    keys = [_group_expression(c, table, query, bind) for c in query.group_by]
    parts = _where_parts(query, table, bind, rows)
    where = None if not parts else parts[0] if len(parts) == 1 else exp.And(this=parts[0], expression=parts[1])
    return truncated(_source(table, mode, bind, rows), table.privacy_unit, keys, where, groups, bind,
                     None if isinstance(table, JoinedTable) else rows_per_unit(table))  # its most __sdc_rank


def _ident(name: str, table: TableConfig) -> exp.Identifier:
    internal = {code_column(c) for c in table.domains} | {clamp_column(c) for c in table.bounds}
    if not (name in table.queryable or name in internal) or not (IDENTIFIER.match(name) or name in internal):
        raise ParameterError(f"Internal check: column {name!r} is not declared for table {table.name!r}.")
    return exp.to_identifier(name, quoted=True)


def _col(name: str, table: TableConfig) -> exp.Column:
    return exp.Column(this=_ident(name, table))


def _alias(node: exp.Expression, name: str) -> exp.Alias:
    return exp.Alias(this=node, alias=exp.to_identifier(name, quoted=True))


class _Params:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> exp.Placeholder:
        if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):  # a domain (a join's codes)
            self.values.append(list(value))
            return exp.Placeholder()
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ParameterError("Internal check: a query value is not a number or a string.")
        self.values.append(value)
        return exp.Placeholder()


def _in(column: exp.Expression, values: list[Any], bind: _Params) -> exp.Expression:
    return exp.In(this=column, expressions=[bind(v) for v in values])


def _text_condition(p: Compare | InList, table: TableConfig, bind: _Params) -> exp.Expression | None:
    """``=``, ``<>`` and ``IN`` on a text-domain column, on its integer code where the value is
    in the domain (the same rows: a code equals i exactly when the value is the domain's i-th)."""
    domain = {v: i for i, v in enumerate(table.domains[p.column])}
    code = _col(code_column(p.column), table)
    if isinstance(p, Compare):
        if p.op not in ("=", "<>") or p.value not in domain:
            return None
        return _OPS[p.op](this=code, expression=bind(domain[p.value]))
    inside = [domain[v] for v in dict.fromkeys(p.values) if v in domain]
    outside = [v for v in dict.fromkeys(p.values) if v not in domain]
    parts = []
    if inside:
        parts.append(_in(code, inside, bind))
    if outside:
        parts.append(_in(_col(p.column, table), outside, bind))
    node = parts[0] if len(parts) == 1 else exp.Or(this=exp.Paren(this=parts[0]), expression=exp.Paren(this=parts[1]))
    return exp.Not(this=exp.Paren(this=node)) if p.negated else node


def _condition(p: Predicate, table: TableConfig, bind: _Params) -> exp.Expression:
    if isinstance(p, Compare | InList) and is_text_domain(table, p.column):
        node = _text_condition(p, table, bind)
        if node is not None:
            return node
    if isinstance(p, Compare):
        return _OPS[p.op](this=_col(p.column, table), expression=bind(p.value))
    if isinstance(p, InList):
        node = _in(_col(p.column, table), list(p.values), bind)
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


def _group_expression(column: str, table: TableConfig, query: Query, bind: _Params, mode: str = "dp") -> exp.Expression:
    """A group column (a text domain's code), or a binned column's code (:mod:`sdckit.query.derived`)."""
    binned = find(query, column, "bin")
    if binned is not None:
        return _derived(binned, table, bind, mode == "dp" and binned.column in table.bounds)
    return _col(code_column(column) if is_text_domain(table, column) else column, table)


def _derived(d: Any, table: TableConfig, bind: _Params, clamped: bool = True) -> exp.Expression:
    return expression_sql(d, bind, lambda name, clamp: _col(clamp_column(name) if clamp else name, table),
                          lambda p: _condition(p, table, bind), clamped)


def _value(column: str, table: TableConfig, query: Query, mode: str, bind: _Params) -> exp.Expression:
    """A summed column (clamped in dp mode), or a derived value (:mod:`sdckit.query.derived`)."""
    derived = find(query, column, "value")
    if derived is not None:
        return _derived(derived, table, bind)
    return _col(clamp_column(column) if mode == "dp" else column, table)


def _statement(selects: list[exp.Expression], query: Query, table: TableConfig, mode: str,
               bind: _Params, group: bool, rows: int | None = None, groups: GroupBounds | None = None) -> Generated:
    statement = exp.Select(expressions=selects).from_(_from(query, table, mode, bind, rows, groups), copy=False)
    statement = _where(statement, query, table, bind, rows if mode == "dp" else None)
    if group and query.group_by:
        if any(find(query, c, "bin") is not None for c in query.group_by):  # a bin's parameters: bound once, in SELECT
            statement.set("group", exp.Group(all=True))  # (its only non-aggregates are the group columns)
        else:
            statement = statement.group_by(*[_group_expression(c, table, query, bind) for c in query.group_by], copy=False)
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def aggregate_sql(query: Query, table: TableConfig, mode: str, persons: bool = False,
                  rows: int | None = None, groups: GroupBounds | None = None) -> Generated:
    """``SELECT COUNT(*) AS n, SUM(..) AS s0, .., group AS g0, .. FROM relation WHERE .. GROUP BY ..``.

    One ``COUNT(*)`` (``n``), one ``SUM`` per distinct summed/averaged column in order of first
    use (``s0``, ...), one sum of capped squared deviations from the bounds' midpoint per column
    under VAR_POP/STDDEV_POP (``q0``, ...; :func:`square_cap`), one ``COUNT(DISTINCT column)``
    per column under it (``d0``, ...; the values as they are, a missing one not counted) and the group columns (``g0``, ...; a text-domain column as its code, a
    column with keys from the data as it is). In dp mode the sums are over the clamped columns
    (bounds in force when the data was loaded), in restricted mode over the values as they are.
    ``persons``: also ``COUNT(DISTINCT privacy unit) AS p`` (``COUNT(*)`` when one row is one
    person), each group's number of persons, for the thresholded release of data keys.
    ``rows`` (dp mode): the contribution bound the query asks (:func:`rows_per_unit`); the rows
    of rank above it are left out; ``groups``: per-group bounds (:mod:`sdckit.query.groupbounds`).
    """
    bind = _Params()
    selects: list[exp.Expression] = [_alias(exp.Count(this=exp.Star()), COUNT_ALIAS)]
    if persons:
        unit: exp.Expression = exp.Star()
        if table.privacy_unit is not None:
            if not IDENTIFIER.match(table.privacy_unit):
                raise ParameterError(f"Internal check: the privacy unit {table.privacy_unit!r} is not a plain name.")
            unit = exp.Distinct(expressions=[exp.Column(this=exp.to_identifier(table.privacy_unit, quoted=True))])
        selects.append(_alias(exp.Count(this=unit), PERSONS_ALIAS))
    for i, column in enumerate(summed_columns(query)):
        selects.append(_alias(exp.Sum(this=_value(column, table, query, mode, bind)), sum_alias(i)))
    for i, column in enumerate(squared_columns(query)):
        selects.append(_alias(_square_sum(column, table, mode, bind, query), square_alias(i)))
    for i, column in enumerate(distinct_columns(query)):
        selects.append(_alias(exp.Count(this=exp.Distinct(expressions=[_col(column, table)])), distinct_alias(i)))
    selects.extend(_alias(_group_expression(c, table, query, bind, mode), group_alias(i)) for i, c in enumerate(query.group_by))
    return _statement(selects, query, table, mode, bind, group=True, rows=rows, groups=groups)


def _square(column: str, table: TableConfig, mode: str, bind: _Params, query: Query | None = None) -> exp.Expression:
    """``LEAST((x - m) * (x - m), cap)``, ``m`` and ``cap`` bound (:func:`square_cap`); ``x`` the
    column (clamped in dp mode) or, with ``query``, its derived value (:func:`_value`)."""
    lo, hi = table.bounds[column]
    m = midpoint_sensitivity(lo, hi, 1)[0]

    def value() -> exp.Expression:  # built twice: a derived value's parameters are bound in SQL order
        return _value(column, table, query, mode, bind) if query is not None else \
            _col(clamp_column(column) if mode == "dp" else column, table)
    square = exp.Mul(this=exp.Paren(this=exp.Sub(this=value(), expression=bind(m))),
                     expression=exp.Paren(this=exp.Sub(this=value(), expression=bind(m))))
    return exp.Anonymous(this="LEAST", expressions=[square, bind(square_cap(lo, hi))])


def square_scaling(column: str, table: TableConfig, query: Query | None = None) -> Scaling | None:
    """The exact integer squares of ``column`` in a dp query (:mod:`sdckit.query.squares`), or ``None``
    (a double sum): a column of ``table.square_bits``, not a derived value of ``query``, no join."""
    bits = None if isinstance(table, JoinedTable) else table.square_bits.get(column)
    if bits is None or (query is not None and find(query, column, "value") is not None):
        return None
    lo, hi = table.bounds[column]
    return scaling(lo, hi, midpoint_sensitivity(lo, hi, 1)[0], square_cap(lo, hi), bits)


def _square_sum(column: str, table: TableConfig, mode: str, bind: _Params, query: Query | None = None) -> exp.Expression:
    """``SUM(`` :func:`_square` ``)``, or for a column of :func:`square_scaling` the exact integer sum of
    ``LEAST((CAST(x 2**(b+1)) - M)**2, C)`` as text (each placeholder bound once: built twice)."""
    found = square_scaling(column, table, query) if mode == "dp" else None
    if found is None:
        return exp.Sum(this=_square(column, table, mode, bind, query))
    kind, scaled = found.sql_type, lambda: exp.Mul(this=_col(clamp_column(column), table), expression=bind(float(2 ** (found.bits + 1))))
    deviations = [exp.Paren(this=exp.Sub(this=exp.cast(scaled(), kind), expression=exp.cast(bind(found.midpoint), kind))) for _ in range(2)]
    least = [exp.Mul(this=deviations[0], expression=deviations[1]), exp.cast(bind(found.cap), kind)]
    return exp.cast(exp.Sum(this=exp.Anonymous(this="LEAST", expressions=least)), "VARCHAR")


def cube_sql(table: TableConfig, keys: list[str], squares: list[str], column: str | None = None) -> Generated:
    """``SELECT k AS g0, .., COUNT(*) AS n, SUM(square) AS q0, .. [bin AS b] FROM sdc_dp_<t> GROUP BY ..``:
    the dp relation grouped by the columns ``keys`` as they are (and by ``column``'s bin on the
    finest quantile grid, :data:`~sdckit.query.grid.QUANTILE_GRID` bins, when given), with the sums of squared deviations of ``squares``: the very expressions of
    :func:`aggregate_sql` and :func:`histogram_sql`, for :mod:`sdckit.query.cube_moments`."""
    bind = _Params()
    selects: list[exp.Expression] = [_alias(_col(c, table), group_alias(i)) for i, c in enumerate(keys)]
    selects.append(_alias(exp.Count(this=exp.Star()), COUNT_ALIAS))
    selects.extend(_alias(_square_sum(c, table, "dp", bind), square_alias(i)) for i, c in enumerate(squares))
    if column is not None:
        selects.append(_alias(_bin(column, table, bind, QUANTILE_GRID), BIN_ALIAS))
    statement = exp.Select(expressions=selects).from_(
        exp.Table(this=exp.to_identifier(relation_name(table, "dp"), quoted=True)), copy=False)
    if keys or column is not None:  # by the keys and the bin (never by alias: a column may be named "g0" or "b")
        statement.set("group", exp.Group(all=True))
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def membership_sql(query: Query, table: TableConfig) -> Generated:
    """``SELECT __sdc_row, group AS g0, .. FROM sdc_<table> WHERE ..``: the query set's records."""
    bind = _Params()
    selects: list[exp.Expression] = [exp.Column(this=exp.to_identifier(ROW, quoted=True))]
    selects.extend(_alias(_group_expression(c, table, query, bind, "restricted"), group_alias(i))
                   for i, c in enumerate(query.group_by))
    return _statement(selects, query, table, "restricted", bind, group=False)


def values_sql(table: TableConfig, column: str) -> Generated:
    """``SELECT __sdc_row, CAST(column AS DOUBLE) AS s0 FROM sdc_<table>``: every record's value
    as it is (restricted mode's interval audit)."""
    selects: list[exp.Expression] = [exp.Column(this=exp.to_identifier(ROW, quoted=True)),
                                     _alias(exp.Cast(this=_col(column, table), to=exp.DataType.build("DOUBLE")),
                                            sum_alias(0))]
    statement = exp.Select(expressions=selects).from_(
        exp.Table(this=exp.to_identifier(relation_name(table, "restricted"), quoted=True)), copy=False)
    return Generated(statement.sql(dialect="duckdb"), ())


def cell_indices(table: TableConfig, group_by: tuple[str, ...], result: dict[str, np.ndarray], size: int) -> np.ndarray:
    """The cell (index into the product of the declared domains, first column slowest) of each
    result row from its ``g0, g1, ...`` columns; -1 for a row outside the domains or missing."""
    index = np.zeros(size, dtype=np.int64)
    valid = np.ones(size, dtype=bool)
    for i, column in enumerate(group_by):
        raw = result[group_alias(i)]
        domain = table.domains[column]
        mask = np.ma.getmaskarray(raw) if isinstance(raw, np.ma.MaskedArray) else np.zeros(size, dtype=bool)
        if is_text_domain(table, column) or is_derived_name(column):  # codes (a bin's: sdckit.query.derived)
            codes = np.asarray(np.ma.filled(raw, -1) if isinstance(raw, np.ma.MaskedArray) else raw, dtype=np.int64)
        else:  # integers matched as integers (as doubles, 2**53 + 1 would be 2**53's cell too: two groups, one cell)
            kind = np.int64 if (np.can_cast(np.ma.getdata(raw).dtype, np.int64)
                                and all(type(v) is int and abs(v) < 2**63 for v in domain)) else float
            values = np.asarray(np.ma.filled(raw.astype(kind), 0 if kind is np.int64 else np.nan)
                                if isinstance(raw, np.ma.MaskedArray) else raw, dtype=kind)
            order = np.argsort(np.asarray(domain, dtype=kind), kind="stable")
            sorted_domain = np.asarray(domain, dtype=kind)[order]
            pos = np.clip(np.searchsorted(sorted_domain, values), 0, len(domain) - 1)
            hit = sorted_domain[pos] == values
            codes = np.where(hit, order[pos], -1)
        codes = np.where(mask | (codes >= len(domain)), -1, codes)
        valid &= codes >= 0
        index = index * len(domain) + np.where(codes >= 0, codes, 0)
    return np.where(valid, index, -1)


#: Alias of the bin index in :func:`histogram_sql`.
BIN_ALIAS = "b"


def histogram_sql(query: Query, table: TableConfig, column: str, rows: int | None = None,
                  groups: GroupBounds | None = None) -> Generated:
    """``SELECT group AS g0, .., bin AS b, COUNT(*) AS n FROM sdc_dp_<t> WHERE .. GROUP BY ..``:
    the clamped ``column``'s histogram over :func:`~sdckit.query.grid.quantile_bins` equal bins of its
    bounds (the last bin holds the upper bound), per cell, for a dp quantile; ``rows`` as :func:`aggregate_sql`."""
    bind = _Params()
    selects: list[exp.Expression] = [_alias(_group_expression(c, table, query, bind), group_alias(i))
                                     for i, c in enumerate(query.group_by)]
    bins = quantile_bins(math.prod(len(table.domains[c]) for c in query.group_by))
    selects.append(_alias(_bin(column, table, bind, bins), BIN_ALIAS))  # bound after the groups: their order in the SQL
    selects.append(_alias(exp.Count(this=exp.Star()), COUNT_ALIAS))
    statement = exp.Select(expressions=selects).from_(_from(query, table, "dp", bind, rows, groups), copy=False)
    statement = _where(statement, query, table, bind, rows)
    statement.set("group", exp.Group(all=True))  # by the groups and the bin (never by alias: a column may be named "b")
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def magnitude_histogram_sql(query: Query, table: TableConfig, column: str, lowest: int, highest: int,
                            rows: int | None = None, keys: tuple[str, ...] = ()) -> Generated:
    """``SELECT [k AS g0, ..,] bin AS b, COUNT(*) AS n FROM sdc_dp_<t> WHERE .. GROUP BY ..``: the raw (not
    clamped) ``column``'s signed powers-of-2 histogram (:mod:`sdckit.query.bounds`), bin
    ``sign(x) (j - lowest + 1)`` for ``2**(j-1) < |x| <= 2**j``, ``j`` clipped to ``[lowest,
    highest]`` (``ceil(log2 |x|)`` corrected exactly upward), 0 for ``x = 0``, NULL for a missing
    value; ``rows`` as :func:`aggregate_sql`; grouped by the columns ``keys`` too (the cube's: :mod:`~sdckit.query.boundscube`)."""
    bind = _Params()

    def clipped() -> exp.Expression:  # LEAST(GREATEST(CEIL(LOG2(ABS(x))), lowest), highest), parameters bound anew
        log2 = exp.Anonymous(this="LOG2", expressions=[exp.Abs(this=_col(column, table))])
        return exp.Anonymous(this="LEAST", expressions=[
            exp.Anonymous(this="GREATEST", expressions=[exp.Ceil(this=log2), bind(lowest)]), bind(highest)])
    first = clipped()
    above = exp.cast(exp.GT(this=exp.Abs(this=_col(column, table)), expression=exp.Pow(this=bind(2.0), expression=clipped())),
                     "INTEGER")
    j = exp.Anonymous(this="LEAST", expressions=[exp.Add(this=first, expression=above), bind(highest)])
    signed = exp.Mul(this=exp.Anonymous(this="SIGN", expressions=[_col(column, table)]),
                     expression=exp.Paren(this=exp.Add(this=exp.Sub(this=j, expression=bind(lowest)), expression=bind(1))))
    selects: list[exp.Expression] = [*(_alias(_col(c, table), group_alias(i)) for i, c in enumerate(keys)),
                                     _alias(exp.cast(signed, "BIGINT"), BIN_ALIAS),
                                     _alias(exp.Count(this=exp.Star()), COUNT_ALIAS)]
    statement = exp.Select(expressions=selects).from_(
        exp.Table(this=exp.to_identifier(relation_name(table, "dp"), quoted=True)), copy=False)
    statement = _where(statement, query, table, bind, rows)
    statement.set("group", exp.Group(all=True))  # by the keys and bin (never by alias: a column may be named "b")
    return Generated(statement.sql(dialect="duckdb"), tuple(bind.values))


def _bin(column: str, table: TableConfig, bind: _Params, bins: int) -> exp.Expression:
    """The clamped ``column``'s bin, ``LEAST(FLOOR((x - low) * bins / (high - low)), bins - 1)``."""
    low, high = table.bounds[column]
    scaled = exp.Mul(this=exp.Paren(this=exp.Sub(this=_col(clamp_column(column), table), expression=bind(float(low)))),
                     expression=bind(bins / (float(high) - float(low))))
    index = exp.Anonymous(this="LEAST", expressions=[exp.Floor(this=scaled), bind(bins - 1)])
    return exp.cast(index, "BIGINT")


def quantile_columns(query: Query) -> tuple[str, ...]:
    """Distinct columns under a quantile, in order of first use."""
    return tuple(dict.fromkeys(o.column for o in query.aggregates if o.kind == "quantile"))


def summed_columns(query: Query) -> tuple[str, ...]:
    """Distinct columns under SUM, AVG, VAR_POP or STDDEV_POP, in order of first use."""
    return tuple(dict.fromkeys(o.column for o in query.aggregates if o.kind in ("sum", "avg", "var", "stddev")))


def squared_columns(query: Query) -> tuple[str, ...]:
    """Distinct columns under VAR_POP or STDDEV_POP, in order of first use."""
    return tuple(dict.fromkeys(o.column for o in query.aggregates if o.kind in ("var", "stddev")))


def distinct_columns(query: Query) -> tuple[str, ...]:
    """Distinct columns under COUNT(DISTINCT ...), in order of first use."""
    return tuple(dict.fromkeys(o.column for o in query.aggregates if o.kind == "count_distinct"))
