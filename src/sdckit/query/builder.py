"""The SQL the query service accepts, built from Python arguments (issue 32 item 5).

:func:`select_sql` writes one ``SELECT`` of the subset :mod:`sdckit.query.sql` parses: one
aggregate (``COUNT(*)``, ``SUM``, ``AVG``, ``MEDIAN``, ``QUANTILE_CONT``, ``MIN``, ``MAX``, ...,
``BOUNDS``), the group columns, a
``WHERE`` from a dict of conditions and/or SQL condition strings, ``GROUP BY``. The client's
:meth:`~sdckit.query.client.Client.count` and its siblings send it.

Nothing the caller passes can change what the query means:

* table, column and output names must match :data:`IDENTIFIER` and are written double-quoted;
* string values are written single-quoted with every ``'`` doubled (the service's dialect,
  DuckDB's, has no backslash escapes), numbers by their shortest ``repr``;
* a SQL condition string is split into tokens by the service's own tokenizer (sqlglot, DuckDB
  dialect) and refused unless its brackets balance, with no comment and no ``;``; it is then
  written inside parentheses, so that it can neither leave them nor take a clause of its own.

The service parses the text again and refuses anything outside its subset
(:class:`~sdckit.query.sql.UnsupportedQuery`); this module only makes sure that what it sends
is what the caller meant. The client imports it at the first such call.
"""

from __future__ import annotations

import builtins
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sdckit.core.duckdb_session import quote_identifier, quote_literal
from sdckit.core.errors import ParameterError
from sdckit.dp.epsilon import brief

#: A table, column or output name the builder writes: a letter or ``_``, then letters, digits, ``_``.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

#: The aggregates and their SQL function.
AGGREGATES = {"count": "COUNT", "sum": "SUM", "avg": "AVG", "median": "MEDIAN", "quantile": "QUANTILE_CONT",
              "var": "VAR_POP", "stddev": "STDDEV_POP", "count_distinct": "COUNT", "min": "MIN", "max": "MAX",
              "bounds": "BOUNDS"}

#: What ``where`` may be, for the messages.
WHERE_FORMS = ("a dict {column: value, [values] or (low, high)}, a SQL condition string, "
               "or a list of these (joined by AND)")

_OPEN = {"L_PAREN": "R_PAREN", "L_BRACKET": "R_BRACKET", "L_BRACE": "R_BRACE"}


def identifier(name: Any, what: str, owner: str) -> str:
    """``name`` double-quoted, or :class:`ParameterError` unless it matches :data:`IDENTIFIER`."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ParameterError(f"The {what} of {owner} must be a name of letters, digits and _ (not starting "
                             f"with a digit), as declared in the service's configuration; got {brief(name)}.")
    return quote_identifier(name)


def literal(value: Any, column: str, owner: str) -> str:
    """A string or number as a SQL literal: ``'it''s'``, ``42``, ``-0.5``, ``1e-05``."""
    if isinstance(value, str):
        return quote_literal(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value)):
        return repr(float(value))
    raise ParameterError(f"The value for column {column!r} in the 'where' of {owner} must be a string or a "
                         f"finite number; got {brief(value)}.")


def condition(column: Any, spec: Any, owner: str) -> str:
    """One ``where`` dict entry: a value (``=``), a list of values (``IN``), a tuple
    ``(low, high)`` (``BETWEEN``, both ends included; ``None`` for an open end: ``>=`` or ``<=``)."""
    name = identifier(column, "'where' column", owner)
    if isinstance(spec, tuple):
        if len(spec) != 2 or (spec[0] is None and spec[1] is None):
            raise ParameterError(f"The range for column {column!r} in the 'where' of {owner} must be a tuple "
                                 f"(low, high) with at most one end None; got {brief(spec)}.")
        low, high = spec
        if low is None:
            return f"{name} <= {literal(high, column, owner)}"
        if high is None:
            return f"{name} >= {literal(low, column, owner)}"
        low_text, high_text = literal(low, column, owner), literal(high, column, owner)
        if not isinstance(low, str) and not isinstance(high, str) and low > high:
            raise ParameterError(f"The range for column {column!r} in the 'where' of {owner} is empty: "
                                 f"low {brief(low)} > high {brief(high)}; give (low, high) with low <= high.")
        return f"{name} BETWEEN {low_text} AND {high_text}"
    if isinstance(spec, list):
        if not spec:
            raise ParameterError(f"The list of values for column {column!r} in the 'where' of {owner} is empty: "
                                 "give at least one value.")
        return f"{name} IN ({', '.join(literal(v, column, owner) for v in spec)})"
    if isinstance(spec, str | numbers.Real) and not isinstance(spec, bool):
        return f"{name} = {literal(spec, column, owner)}"
    raise ParameterError(f"The 'where' of {owner} gives column {column!r} {brief(spec)}: give a value, a list "
                         "of values or a tuple (low, high).")


def sql_condition(text: str, owner: str) -> str:
    """A SQL condition string, checked with the service's tokenizer and put in parentheses."""
    import sqlglot  # only for a condition string: the client starts with httpx alone
    from sqlglot.errors import ParseError, TokenError

    if not text.strip():
        raise ParameterError(f"A SQL condition in the 'where' of {owner} is empty: leave it out or write one.")
    try:
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(text)
    except (TokenError, ParseError, ValueError):
        raise ParameterError(f"The SQL condition {brief(text)} in the 'where' of {owner} cannot be read "
                             "(an unclosed quote?).") from None
    stack: list[str] = []
    for token in tokens:
        kind = token.token_type.name
        if token.comments:
            raise ParameterError(f"The SQL condition {brief(text)} in the 'where' of {owner} holds a comment: "
                                 "send it without -- or /* */.")
        if kind == "SEMICOLON":
            raise ParameterError(f"The SQL condition {brief(text)} in the 'where' of {owner} holds ';': "
                                 "send one condition.")
        if kind in _OPEN:
            stack.append(_OPEN[kind])
        elif kind in _OPEN.values() and (not stack or stack.pop() != kind):
            stack.append("unbalanced")
            break
    if stack:
        raise ParameterError(f"The SQL condition {brief(text)} in the 'where' of {owner} has unbalanced "
                             "brackets: close every ( [ { it opens, and no other.")
    return f"({text.strip()})"


def where_sql(where: Any, owner: str) -> str | None:
    """The text after ``WHERE`` (conditions joined by ``AND``), or None for no condition."""
    if where is None:
        return None
    parts: list[str] = []
    items = where if isinstance(where, list) else [where]
    for item in items:
        if isinstance(item, str):
            parts.append(sql_condition(item, owner))
        elif isinstance(item, Mapping):
            parts.extend(condition(column, spec, owner) for column, spec in item.items())
        else:
            raise ParameterError(f"The 'where' of {owner} must be {WHERE_FORMS}; got {brief(item)}.")
    if not parts:
        raise ParameterError(f"The 'where' of {owner} holds no condition: leave it out (None) or give one.")
    return " AND ".join(parts)


def group_columns(by: Any, owner: str) -> list[str]:
    """``by`` as a list of names: None (no groups), one name or a non-empty list of distinct names."""
    if by is None:
        return []
    names = [by] if isinstance(by, str) else by
    if not isinstance(names, Sequence) or isinstance(names, bytes) or not names:
        raise ParameterError(f"The 'by' of {owner} must be a column name or a non-empty list of column names "
                             f"(with a declared domain); got {brief(by)}. Leave it out for one total.")
    for name in names:
        identifier(name, "'by' column", owner)
    if len(set(names)) != len(names):
        raise ParameterError(f"The 'by' of {owner} names a column twice: {brief(list(names))}.")
    return list(names)


def join_sql(join: Any, table: str, owner: str) -> str:
    """`` [LEFT] JOIN "other" ON "table"."column" = "other"."other_column"`` from ``join`` =
    ``(other, column, other_column[, "left"])``; every name checked and quoted."""
    if (isinstance(join, str | bytes) or not isinstance(join, Sequence) or len(join) not in (3, 4)
            or (len(join) == 4 and join[3] not in ("left", "inner"))):
        raise ParameterError(f"The 'join' of {owner} must be (other_table, column, other_column) or (other_table, "
                             f"column, other_column, 'left'); got {brief(join)}.")
    other = identifier(join[0], "joined table", owner)
    on = f"{identifier(table, 'table', owner)}.{identifier(join[1], 'join column', owner)} = " \
         f"{other}.{identifier(join[2], 'join column', owner)}"
    return f" {'LEFT ' if len(join) == 4 and join[3] == 'left' else ''}JOIN {other} ON {on}"


def select_sql(table: str, aggregate: str, column: str | None = None, *, q: float | None = None,
               where: Any = None, by: Any = None, name: str | None = None, owner: str = "select_sql",
               join: Any = None) -> str:
    """The ``SELECT`` of one aggregate over ``table``, in the SQL the query service accepts.

    Parameters
    ----------
    table : str
        A table the service serves.
    aggregate : {"count", "sum", "avg", "median", "quantile", "var", "stddev", "count_distinct", "min", "max", "bounds"}
        ``COUNT(*)``; ``SUM``, ``AVG``, ``MEDIAN``, ``VAR_POP``, ``STDDEV_POP``, ``MIN``, ``MAX``,
        ``BOUNDS`` of ``column``; ``QUANTILE_CONT(column, q)``; ``COUNT(DISTINCT column)``.
    column : str, optional
        The aggregated column (bounded in the configuration); none for ``"count"``.
    q : float, optional
        The quantile's level, strictly between 0 and 1 (``"quantile"`` only).
    where : dict, str or list of these, optional
        Conditions, all of which a row must meet: a dict maps a column to a value (``=``), a
        list of values (``IN``) or a tuple ``(low, high)`` (``BETWEEN``; ``None`` leaves an end
        open); a string is a SQL condition of the subset (``"AGE > 30 OR SEX = 'F'"``).
    by : str or list of str, optional
        The group columns (each with a declared domain): one row per combination.
    name : str, optional
        The answer's column (``AS name``); the service's default is ``count``, ``sum_<column>``,
        ``avg_<column>``, ``median_<column>``, ``q<level>_<column>``, ``var_<column>``,
        ``stddev_<column>``, ``count_distinct_<column>``, ``min_<column>``, ``max_<column>``
        (``BOUNDS``: ``<name>_lower_bound`` and ``<name>_upper_bound``, ``<column>_...`` by default).
    owner : str
        The caller named in error messages.
    join : tuple, optional
        ``(other, column, other_column)``, or with a fourth item ``"left"``: ``[LEFT] JOIN "other"
        ON "table"."column" = "other"."other_column"`` (:func:`join_sql`).

    Returns
    -------
    str
        E.g. ``SELECT "region", COUNT(*) FROM "census" WHERE "age" BETWEEN 18 AND 65 GROUP BY "region"``.

    Raises
    ------
    ParameterError
        A name that is not an identifier, an unknown ``where`` form, an empty ``by``, a value that
        is neither a string nor a finite number, a level outside (0, 1).
    """
    if aggregate not in AGGREGATES:
        raise ParameterError(f"The aggregate of {owner} must be one of {', '.join(AGGREGATES)}; got {brief(aggregate)}.")
    source = identifier(table, "table", owner)
    if aggregate == "count":
        if column is not None:
            raise ParameterError(f"{owner} counts rows (COUNT(*)): give no column; a condition goes in 'where'.")
        call = "COUNT(*)"
    else:
        argument = identifier(column, "column", owner)
        if aggregate == "quantile":
            if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < float(q) < 1:
                raise ParameterError(f"The 'q' of {owner} must be a number strictly between 0 and 1; got {brief(q)}.")
            argument += f", {literal(q, 'q', owner)}"
        if aggregate == "count_distinct":
            argument = f"DISTINCT {argument}"
        call = f"{AGGREGATES[aggregate]}({argument})"
    if name is not None:
        call += f" AS {identifier(name, 'name', owner)}"
    groups = [identifier(g, "'by' column", owner) for g in group_columns(by, owner)]
    text = f"SELECT {', '.join([*groups, call])} FROM {source}"
    if join is not None:
        text += join_sql(join, table, owner)
    condition_text = where_sql(where, owner)
    if condition_text is not None:
        text += f" WHERE {condition_text}"
    if groups:
        text += f" GROUP BY {', '.join(groups)}"
    return text


#: Most bins :func:`histogram_sql` writes (the service reads at most 10,000 characters of SQL);
#: for more equal bins write ``WIDTH_BUCKET(column, low, high, n)`` in SQL.
MAX_BINS = 200


def histogram_sql(table: str, column: str, edges: Sequence[Any] | None = None, *, bins: int | None = None,
                  range: tuple[Any, Any] | None = None, where: Any = None, name: str | None = None,
                  owner: str = "histogram_sql") -> str:
    """The noisy histogram of ``column`` over ``edges`` (or ``bins`` equal bins of ``range``) as
    the binned GROUP BY the service answers (:mod:`sdckit.query.derived`).

    Bin ``i`` is ``[edges[i], edges[i + 1])``, the last one closed; a row outside
    ``[edges[0], edges[-1]]`` (or missing) is in no bin. The SQL is ::

        SELECT CASE WHEN "x" < e1 THEN e0 WHEN "x" < e2 THEN e1 ... ELSE e(m-1) END AS "bin",
               COUNT(*) AS "count" FROM "t" WHERE "x" BETWEEN e0 AND em [AND where] GROUP BY "bin"

    so each bin is labelled by its lower edge, and every bin is an answer row (its count noisy,
    an empty one too): the bins follow from the edges, never from the data.

    Parameters
    ----------
    table, column : str
        The table and a numeric column with declared bounds.
    edges : sequence of numbers, optional
        At least two strictly increasing finite numbers (at most :data:`MAX_BINS` + 1).
    bins : int, optional
        Instead of ``edges``: this many equal bins of ``range`` (``low < high``), 1 to :data:`MAX_BINS`.
    range : tuple, optional
        ``(low, high)`` for ``bins`` (the client does not know the declared bounds).
    where, name, owner
        As :func:`select_sql` (``name``: the count's column, ``count`` by default).

    Raises
    ------
    ParameterError
        Both or neither of ``edges`` and ``bins``, ``bins`` without ``range``, edges that are not
        increasing finite numbers, too many bins.
    """
    source, target = identifier(table, "table", owner), identifier(column, "column", owner)
    if (edges is None) == (bins is None):
        raise ParameterError(f"{owner} needs either 'edges' (a list of bin edges) or 'bins' (a number of equal bins "
                             "with 'range'); got " + ("both." if edges is not None else "neither."))
    if bins is not None:
        if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or not 1 <= bins <= MAX_BINS:
            raise ParameterError(f"The 'bins' of {owner} must be an int from 1 to {MAX_BINS}; got {brief(bins)}.")
        if not isinstance(range, tuple) or len(range) != 2:
            raise ParameterError(f"The 'bins' of {owner} need 'range' = (low, high), the values to bin (the client does "
                                 f"not know the declared bounds); got {brief(range)}.")
        low, high = (_finite(v, "range", owner) for v in range)
        edges = [low + (high - low) * i / int(bins) for i in builtins.range(int(bins))] + [high]
    values = [_finite(v, "edges", owner) for v in edges]
    if not 2 <= len(values) <= MAX_BINS + 1 or any(a >= b for a, b in zip(values, values[1:])):
        raise ParameterError(f"The 'edges' of {owner} must be 2 to {MAX_BINS + 1} strictly increasing numbers; "
                             f"got {brief(list(edges))}.")
    texts = [literal(v, column, owner) for v in values]
    arms = " ".join(f"WHEN {target} < {texts[i + 1]} THEN {texts[i]}" for i in builtins.range(len(texts) - 2))
    case = f"CASE {arms} ELSE {texts[-2]} END" if arms else f"CASE WHEN {target} <= {texts[-1]} THEN {texts[0]} END"
    count = f"COUNT(*) AS {identifier(name, 'name', owner)}" if name is not None else "COUNT(*)"
    text = f'SELECT {case} AS "bin", {count} FROM {source} WHERE {target} BETWEEN {texts[0]} AND {texts[-1]}'
    condition_text = where_sql(where, owner)
    if condition_text is not None:
        text += f" AND ({condition_text})"
    return text + ' GROUP BY "bin"'


def _finite(value: Any, what: str, owner: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ParameterError(f"The '{what}' of {owner} must hold finite numbers; got {brief(value)}.")
    return value if isinstance(value, numbers.Integral) else float(value)
