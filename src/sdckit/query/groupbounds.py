"""Per-group contribution bounds chosen per query (issue 32; Tumult Analytics' ``MaxGroupsPerID``
and ``MaxRowsPerGroupPerID``).

A dp GROUP BY query may send ``"max_groups_per_unit": g`` and ``"max_rows_per_group": r`` beside
its SQL (each an int from 1 to the table's configured ``max_rows_per_unit``; a missing one is the
rows per person ``k'`` the query counts, :func:`sdckit.query.generate.rows_per_unit`). The SQL
that runs (:func:`truncated`) keeps, of each person's rows that meet the WHERE (and the rank bound
``k'``):

* at most ``r`` rows in each group (cell of the GROUP BY columns, a bin's code, a value outside
  the domains too), her first ones in file order (``row_number() OVER (PARTITION BY unit, group
  ORDER BY __sdc_row)``), and
* the rows of at most ``g`` groups, her *first* groups: ordered by the file position of their
  first row among her rows (``dense_rank() OVER (PARTITION BY unit ORDER BY that first row)``).

Both choices read her own rows only (and the query's public WHERE), never another person's, so
removing her changes only her kept rows: at most ``min(g, k')`` cells, at most ``r`` rows in each,
at most ``k'`` in all. Hence (:class:`GroupBounds`) the L1 sensitivity of the vector of group
counts is ``min(g r, k')`` (``g r`` when ``g r <= k'``; the pure-epsilon Laplace and geometric
noise, and every sum's clamp, scale with it) and its L2 sensitivity ``sqrt(q r**2 + s**2)`` with
``q = min(g, k' // r)`` full groups and the rest ``s = k' - q r`` in one more group when ``q < g``
(the largest sum of squares under those limits; ``sqrt(g) r`` when ``g r <= k'``): the Gaussian
mechanisms (``(epsilon, delta)`` and rho-zCDP) scale with it, which is where the per-group bound
gains (Tumult: L1 ``g r``, L2 ``sqrt(g) r``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from sdckit.core.errors import ParameterError
from sdckit.core.result import Result
from sdckit.query.relnames import RANK, ROW

#: The request fields (the client's keywords of the same names).
GROUPS_FIELD = "max_groups_per_unit"
GROUP_ROWS_FIELD = "max_rows_per_group"
FIELDS = (GROUPS_FIELD, GROUP_ROWS_FIELD)
#: Internal columns of the truncation's subqueries.
KEY_PREFIX = "__sdc_gkey"
FIRST = "__sdc_gfirst"


@dataclass(frozen=True)
class GroupBounds(Result):
    """At most ``groups`` (g) groups per person, ``rows`` (r) rows per group, ``per_unit`` (k')
    rows per person in all; the sensitivities they give (module docstring)."""

    groups: int
    rows: int
    per_unit: int

    @property
    def l1(self) -> int:
        """The rows one person changes over all groups: ``min(g r, k')``."""
        return min(self.groups * self.rows, self.per_unit)

    @property
    def l2_squared(self) -> int:
        """The largest sum over groups of the squared rows one person changes (an integer)."""
        full = min(self.groups, self.per_unit // self.rows)
        rest = self.per_unit - full * self.rows if full < self.groups else 0
        return full * self.rows ** 2 + min(rest, self.rows) ** 2

    @property
    def cells(self) -> int:
        """The most groups one person touches: ``min(g, k')``."""
        return min(self.groups, self.per_unit)

    def l2_times(self, value: float) -> float:
        """``sqrt(l2_squared) * value`` rounded up to a double (exactly: never below)."""
        want = Fraction(value) ** 2 * self.l2_squared
        out = math.sqrt(self.l2_squared) * value
        while Fraction(out) ** 2 < want:
            out = math.nextafter(out, math.inf)
        return out

    def statement(self) -> dict[str, Any]:
        """What an answer states: the bounds, both sensitivities' factors and a sentence."""
        l2 = math.sqrt(self.l2_squared)
        text = (f"per-group bounds (as Tumult's MaxGroupsPerID, MaxRowsPerGroupPerID): each person's rows in at most "
                f"{self.groups} group(s) (her first ones, by their first row in file order) and at most {self.rows} "
                f"row(s) per group (her first ones), of at most {self.per_unit} row(s): L1 sensitivity factor "
                f"{self.l1} (a count's; a sum's times its clamp), L2 {l2:.6g} (sqrt {self.l2_squared})")
        return {GROUPS_FIELD: self.groups, GROUP_ROWS_FIELD: self.rows, "l1": self.l1, "l2": l2,
                "l2_squared": self.l2_squared, "text": text}


def asked(body: dict[str, Any], most: int, per_unit: int, name: str) -> GroupBounds | None:
    """The per-group bounds a dp request asks (``None``: neither field); a one-line
    :class:`ParameterError` for a value that is not an int from 1 to ``most`` (the table
    ``name``'s configured bound). A missing field is ``per_unit`` (no limit beyond ``k'``)."""
    if not any(f in body for f in FIELDS):
        return None
    values = []
    for f in FIELDS:
        value = body.get(f, per_unit)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            shown = " ".join(str(value).split())[:40] if not isinstance(value, str) else repr(value[:40])
            raise ParameterError(f"{f!r} must be an int from 1 to {most} (the table {name!r}'s configured "
                                 f"max_rows_per_unit); got {shown}.")
        values.append(value)
    return GroupBounds(values[0], values[1], per_unit)


#: Internal names of the rank-mask form of the truncation (:func:`truncated`).
ROWS_CTE, KEPT, MASK, FIRST_RANK = "__sdc_gwhere", "__sdc_gkept", "__sdc_gmask", "__sdc_gfirstrank"
#: The most rank the mask form takes (one bit per rank of a UBIGINT, ``2 << rank`` in range).
MASK_RANKS = 62


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True),
                      table=exp.to_identifier(table, quoted=True) if table else None)


def _bits(shift: exp.Expression, one: int = 1) -> exp.Expression:
    """``CAST(one AS UBIGINT) << shift``."""
    return exp.BitwiseLeftShift(this=exp.Cast(this=exp.Literal.number(one), to=exp.DataType.build("UBIGINT", dialect="duckdb")),
                                expression=shift)


def truncated(base: exp.Expression, unit: str | None, keys: list[exp.Expression], where: exp.Expression | None,
              bounds: GroupBounds, bind: Any, ranks: int | None = None) -> exp.Subquery:
    """The FROM of a statement under per-group bounds, built in the text order of its bound
    parameters (``keys``, then ``where``, built by the caller; then ``g`` and ``r`` in the order
    each form's text holds them).

    ``ranks``: the most ``__sdc_rank`` of ``base`` (a dp relation: each person's rows ranked 1, 2,
    .. in ``__sdc_row`` order). Up to :data:`MASK_RANKS`, the rows are chosen with hash aggregates
    and a join instead of windows over every row (about half the time; the same rows)::

        (WITH w AS NOT MATERIALIZED (SELECT *, <group> AS __sdc_gkey0, .. FROM base WHERE ..)
         SELECT w.* FROM w JOIN (SELECT unit, key.., BIT_OR(1 << __sdc_rank) AS mask, MIN(__sdc_rank) AS first
                                 FROM w GROUP BY unit, key..
                                 QUALIFY DENSE_RANK() OVER (PARTITION BY unit ORDER BY first) <= g) AS kept
         ON w.unit = kept.unit AND w.key IS NOT DISTINCT FROM kept.key ..
         WHERE BIT_COUNT(kept.mask & ((2 << w.__sdc_rank) - 1)) <= r)

    ``mask`` holds the ranks of a (person, group)'s rows, ``first`` the rank of its first row (its
    rows' order is their ranks' order); a group's ``dense_rank`` by ``first`` is its rank among her
    groups by first row, and the rows of its mask up to a row's rank are that row's ``row_number()``
    in the group. Above (or ``ranks`` unknown), the windows of the rule themselves::

        (SELECT * FROM (SELECT *, MIN(__sdc_row) OVER (PARTITION BY unit, key..) AS __sdc_gfirst
                        FROM (SELECT *, <group> AS __sdc_gkey0, .. FROM base WHERE ..)
                        QUALIFY row_number() OVER (PARTITION BY unit, key.. ORDER BY __sdc_row) <= r)
         QUALIFY dense_rank() OVER (PARTITION BY unit ORDER BY __sdc_gfirst) <= g)

    ``unit``: the privacy unit column (``None``: one row is one person, ``__sdc_row``)."""
    names = [f"{KEY_PREFIX}{i}" for i in range(len(keys))]
    inner = exp.Select(expressions=[exp.Star(), *(exp.Alias(this=k, alias=exp.to_identifier(n, quoted=True))
                                                   for k, n in zip(keys, names, strict=True))]).from_(base, copy=False)
    if where is not None:
        inner = inner.where(where, copy=False)
    person = unit if unit is not None else ROW
    alias = exp.TableAlias(this=exp.to_identifier("__sdc_grouped", quoted=True))
    if ranks is not None and ranks <= MASK_RANKS:
        return exp.Subquery(this=_masked(inner, person, names, bounds, bind), alias=alias)
    partition = [_col(person), *(_col(n) for n in names)]
    first = exp.Window(this=exp.Min(this=_col(ROW)), partition_by=[p.copy() for p in partition])
    middle = exp.Select(expressions=[exp.Star(), exp.Alias(this=first, alias=exp.to_identifier(FIRST, quoted=True))]
                        ).from_(exp.Subquery(this=inner), copy=False)
    order = exp.Window(this=exp.Anonymous(this="DENSE_RANK"), partition_by=[_col(person)],
                       order=exp.Order(expressions=[exp.Ordered(this=_col(FIRST))]))
    rank = exp.Window(this=exp.RowNumber(), partition_by=partition,
                      order=exp.Order(expressions=[exp.Ordered(this=_col(ROW))]))
    middle.set("qualify", exp.Qualify(this=exp.LTE(this=rank, expression=bind(bounds.rows))))
    outer = exp.Select(expressions=[exp.Star()]).from_(exp.Subquery(this=middle), copy=False)
    outer.set("qualify", exp.Qualify(this=exp.LTE(this=order, expression=bind(bounds.groups))))
    return exp.Subquery(this=outer, alias=alias)


def _masked(inner: exp.Select, person: str, names: list[str], bounds: GroupBounds, bind: Any) -> exp.Select:
    """The rank-mask form of :func:`truncated` (its docstring)."""
    grouping = [person, *names]
    mask = exp.Anonymous(this="BIT_OR", expressions=[_bits(_col(RANK))])
    kept = exp.Select(expressions=[*(_col(n) for n in grouping),
                                   exp.Alias(this=mask, alias=exp.to_identifier(MASK, quoted=True)),
                                   exp.Alias(this=exp.Min(this=_col(RANK)), alias=exp.to_identifier(FIRST_RANK, quoted=True))]
                      ).from_(exp.Table(this=exp.to_identifier(ROWS_CTE, quoted=True)), copy=False)
    kept = kept.group_by(*(_col(n) for n in grouping), copy=False)
    order = exp.Window(this=exp.Anonymous(this="DENSE_RANK"), partition_by=[_col(person)],
                       order=exp.Order(expressions=[exp.Ordered(this=_col(FIRST_RANK))]))
    kept.set("qualify", exp.Qualify(this=exp.LTE(this=order, expression=bind(bounds.groups))))
    on: exp.Expression = exp.EQ(this=_col(person, ROWS_CTE), expression=_col(person, KEPT))
    for n in names:  # a missing group value is a group too (as in PARTITION BY)
        on = exp.And(this=on, expression=exp.NullSafeEQ(this=_col(n, ROWS_CTE), expression=_col(n, KEPT)))
    upto = exp.Paren(this=exp.Sub(this=_bits(_col(RANK, ROWS_CTE), 2), expression=exp.Literal.number(1)))
    row_number = exp.Anonymous(this="BIT_COUNT", expressions=[exp.BitwiseAnd(this=_col(MASK, KEPT), expression=upto)])
    statement = exp.Select(expressions=[exp.Column(this=exp.Star(), table=exp.to_identifier(ROWS_CTE, quoted=True))]
                           ).from_(exp.Table(this=exp.to_identifier(ROWS_CTE, quoted=True)), copy=False)
    statement = statement.join(exp.Subquery(this=kept, alias=exp.TableAlias(this=exp.to_identifier(KEPT, quoted=True))),
                               on=on, copy=False)
    statement = statement.where(exp.LTE(this=row_number, expression=bind(bounds.rows)), copy=False)
    cte = exp.CTE(this=inner, alias=exp.TableAlias(this=exp.to_identifier(ROWS_CTE, quoted=True)), materialized=False)
    statement.set("with_", exp.With(expressions=[cte]))
    return statement
