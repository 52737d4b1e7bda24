"""The DuckDB expression of a binned column's code or a derived value (:mod:`sdckit.query.derived`).

:func:`expression_sql` writes it with sqlglot's builders for :mod:`sdckit.query.generate`: every
literal of the analyst's is a bound parameter (``CAST(? AS DOUBLE)``), every bin code sdckit's own
(``CAST(? AS BIGINT)``; a label never reaches DuckDB), every column the configuration's (the
generator quotes and checks it). An expression that reads its column several times (the operand
of WIDTH_BUCKET, a clamped source) is built again at each use, so its parameters are bound in the
order of the text.

* A bin of a step: ``CASE WHEN x IS NULL THEN NULL ELSE CAST(step(inner(v)) AS BIGINT) - first
  END``, ``v`` the column clamped to its public range: the dp relation's clamped column for a
  bounded column (a missing value is 0 there, hence the test of ``x`` as stored), else ``LEAST(
  GREATEST(CAST(x AS DOUBLE), lo), hi)`` (the restricted relation, a numeric domain). DuckDB's
  ``LEAST`` and ``GREATEST`` skip a NULL argument: ``v`` is never NULL inside the ELSE.
* A CASE bin: ``CASE WHEN (condition) THEN code ... [ELSE code] END``, the conditions as WHERE's.
* A value: the expression over the dp relation's clamped column, then ``LEAST(GREATEST(value, lo'),
  hi')`` (never NULL: the clamped column is not, a CASE has an ELSE). WIDTH_BUCKET (DuckDB has none)
  as PostgreSQL's: ``CASE WHEN v < low THEN 0 WHEN v >= high THEN n + 1 ELSE LEAST(FLOOR((v - low)
  / (high - low) * n) + 1, n) END``, ``v`` never NULL.

:func:`step_codes` computes a step bin's codes from values in numpy doubles in the same order (the
cube's fast path: one code per distinct value of a few-valued column).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sqlglot import exp

from sdckit.query.derived import ARITHMETIC, Derived, step_of, walk
from sdckit.query.sqlwhere import Predicate

__all__ = ["expression_sql", "step_codes"]


def expression_sql(d: Derived, bind: Callable[[Any], exp.Expression], column: Callable[[str, bool], exp.Expression],
                   condition: Callable[[Predicate], exp.Expression], clamped: bool = True) -> exp.Expression:
    """The DuckDB expression of ``d`` (every literal a bound parameter): a bin's BIGINT code, or a
    value computed from the clamped column and clamped to its bounds. ``column(name, clamped)``
    is the relation's column (the dp relation's clamped one when ``clamped``); ``condition`` the
    WHERE form of a predicate; ``clamped``: whether the relation has the bin's column clamped
    (the dp relation, a bounded column), else the bin clamps it here."""
    def number(value: Any) -> exp.Expression:
        return exp.cast(bind(value), "DOUBLE")

    def code(value: int) -> exp.Expression:
        return exp.cast(bind(value), "BIGINT")

    if d.kind == "bin" and d.tree[0] == "case":
        position = {v: i for i, v in enumerate(d.labels)}
        return _case(d.tree, lambda t: code(position[t[1]]), condition)
    if d.kind == "bin":
        lo, hi = d.source

        def source() -> exp.Expression:  # built again (its parameters bound again) at each use; never NULL
            if clamped:
                return column(d.column, True)
            return exp.Anonymous(this="LEAST", expressions=[exp.Anonymous(this="GREATEST", expressions=[
                exp.cast(column(d.column, False), "DOUBLE"), number(lo)]), number(hi)])
        missing = exp.Is(this=column(d.column, False), expression=exp.Null())
        value = exp.Sub(this=exp.cast(_sql(step_of(d.tree), source, number, condition), "BIGINT"), expression=code(d.first))
        return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=value)
    value = _sql(d.tree, lambda: column(d.column, True), number, condition)
    return exp.Anonymous(this="LEAST", expressions=[
        exp.Anonymous(this="GREATEST", expressions=[value, number(d.bounds[0])]), number(d.bounds[1])])


def _case(t: tuple, arm: Callable[[tuple], exp.Expression], condition: Callable[[Predicate], exp.Expression]) -> exp.Case:
    ifs = [exp.If(this=exp.Paren(this=condition(p)), true=arm(v)) for p, v in t[1]]
    return exp.Case(ifs=ifs, default=None if t[2] is None else arm(t[2]))


def _sql(t: tuple, column: Callable[[], exp.Expression], number: Callable[[Any], exp.Expression],
         condition: Callable[[Predicate], exp.Expression]) -> exp.Expression:
    kind = t[0]
    if kind == "col":
        return column()
    if kind == "lit":
        return number(t[1])
    if kind == "case":
        return _case(t, lambda v: _sql(v, column, number, condition), condition)
    if kind == "width_bucket":  # PostgreSQL's (DuckDB has none), as _step_function; the operand built at each use
        low, high, n = t[2], t[3], t[4]

        def operand() -> exp.Expression:
            return exp.Paren(this=_sql(t[1], column, number, condition))
        below = exp.If(this=exp.LT(this=operand(), expression=number(low)), true=number(0))
        above = exp.If(this=exp.GTE(this=operand(), expression=number(high)), true=number(n + 1))
        scaled = exp.Mul(this=exp.Div(this=exp.Paren(this=exp.Sub(this=operand(), expression=number(low))),
                                      expression=number(float(high) - float(low))), expression=number(n))
        inside = exp.Anonymous(this="LEAST", expressions=[exp.Add(this=exp.Floor(this=scaled), expression=number(1)),
                                                          number(n)])
        return exp.Case(ifs=[below, above], default=inside)
    a = exp.Paren(this=_sql(t[1], column, number, condition))
    if kind in ARITHMETIC.values():
        cls = {v: k for k, v in ARITHMETIC.items()}[kind]
        return cls(this=a, expression=exp.Paren(this=_sql(t[2], column, number, condition)))
    if kind == "neg":
        return exp.Neg(this=a)
    return {"floor": exp.Floor, "ceil": exp.Ceil, "abs": exp.Abs}[kind](this=a)


def step_codes(d: Derived, values: np.ndarray) -> np.ndarray | None:
    """The codes the generated SQL gives a step bin's non-missing ``values`` (one per distinct
    value of a cube column, :mod:`sdckit.query.cube`), computed in doubles in the same order, so
    the same codes; None for a bin this cannot compute (a CASE inside, or a CASE bin)."""
    if d.kind != "bin" or d.tree[0] == "case" or any(sub[0] == "case" for sub in walk(d.tree)):
        return None
    lo, hi = d.source
    clamped = np.minimum(np.maximum(np.asarray(values, dtype=np.float64), float(lo)), float(hi))
    step = _doubles(step_of(d.tree), clamped)
    return step.astype(np.int64) - d.first


def _doubles(t: tuple, x: np.ndarray) -> np.ndarray:
    kind = t[0]
    if kind == "col":
        return x
    if kind == "lit":
        return np.full(x.shape, float(t[1]))
    a = _doubles(t[1], x)
    if kind in ARITHMETIC.values():
        b = _doubles(t[2], x)
        return a + b if kind == "+" else a - b if kind == "-" else a * b if kind == "*" else a / b
    if kind == "width_bucket":
        low, high, n = float(t[2]), float(t[3]), float(t[4])
        inside = np.minimum(np.floor((a - low) / (high - low) * n) + 1.0, n)
        return np.where(a < low, 0.0, np.where(a >= high, n + 1.0, inside))
    return {"neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil}[kind](a)
