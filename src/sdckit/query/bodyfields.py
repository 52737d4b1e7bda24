"""The contribution-bound fields of a ``POST /v1/query`` body (issue 32), checked before any charge,
and how a dp answer states them (moved out of :mod:`sdckit.query.service`).

* ``max_rows_per_unit`` (``k'``): at most this many rows per privacy unit, an int from 1 to the
  table's configured bound.
* ``max_groups_per_unit`` (``g``), ``max_rows_per_group`` (``r``): per-group bounds of a GROUP BY
  (:mod:`sdckit.query.groupbounds`), each an int from 1 to the configured bound; dp mode, one
  table, groups of declared domains or bins (not keys from the data).
"""

from __future__ import annotations

import json
from typing import Any

from sdckit.query import groupbounds, joins
from sdckit.query.generate import rows_per_unit
from sdckit.query.groupbounds import GroupBounds
from sdckit.query.sql import UnsupportedQuery

#: The request field of a dp query's contribution bound (issue 32): at most this many rows per
#: privacy unit, ``1 <= k' <= max_rows_per_unit`` of the configuration; stated in the answer.
ROWS_FIELD = "max_rows_per_unit"
#: Every contribution-bound field of a request.
BOUND_FIELDS = (ROWS_FIELD, *groupbounds.FIELDS)
BODY_KEYS = {"sql", "epsilon", "delta", "rho", *BOUND_FIELDS}


def rows_asked(body: dict[str, Any], table: Any) -> int | None:
    """The contribution bound a dp query asks (``max_rows_per_unit``: an int from 1 to the
    table's configured bound), ``None`` when it asks none or the configured bound (the same
    query: the same stored answer, the fast paths); a 400 otherwise, before any charge."""
    if ROWS_FIELD not in body:
        return None
    value, most = body[ROWS_FIELD], rows_per_unit(table)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        shown = " ".join(json.dumps(value).split())[:40]
        raise UnsupportedQuery(f"{ROWS_FIELD!r} must be an int from 1 to {most} (the table {table.name!r}'s configured "
                               f"bound): the most rows per privacy unit this query counts; got {shown}.")
    return None if value == most else value


def groups_asked(body: dict[str, Any], query: Any, table: Any, rows: int | None, data_keys: Any) -> GroupBounds | None:
    """The per-group bounds a dp query asks (:func:`sdckit.query.groupbounds.asked`), ``None``
    when it asks none; a one-line 400 for a bad value or a query they do not apply to."""
    if not any(f in body for f in groupbounds.FIELDS):
        return None
    field = next(f for f in groupbounds.FIELDS if f in body)
    if not query.group_by:
        raise UnsupportedQuery(f"{field!r} bounds a person's rows per group of a GROUP BY: this query has none "
                               f"(send {ROWS_FIELD!r} to bound her rows).")
    if query.join is not None:
        raise UnsupportedQuery(f"{field!r} is not supported over a JOIN (the join's bound is per row): send "
                               f"{ROWS_FIELD!r}, or query one table.")
    if data_keys:
        raise UnsupportedQuery(f"{field!r} is not supported with GROUP BY keys from the data (thresholding counts "
                               "persons per key): group by columns with a declared domain.")
    return groupbounds.asked(body, rows_per_unit(table), rows_per_unit(table, rows), table.name)


def state_bounds(result: dict[str, Any], table: Any, rows: int | None, groups: GroupBounds | None = None) -> None:
    """State in a dp answer the rows per privacy unit it counted, for a join the join and the
    bound every sensitivity used (:meth:`sdckit.query.joins.JoinedTable.statement`), and the
    per-group bounds (``group_bounds``, :meth:`~sdckit.query.groupbounds.GroupBounds.statement`)."""
    result[ROWS_FIELD] = rows_per_unit(table, rows)
    if isinstance(table, joins.JoinedTable):
        result["join"] = table.statement(result[ROWS_FIELD])
        result["mechanism"] += "; " + result["join"]["text"]
    if groups is not None:
        stated = groups.statement()
        result[groupbounds.GROUPS_FIELD] = groups.groups
        result[groupbounds.GROUP_ROWS_FIELD] = groups.rows
        result["group_bounds"] = stated
        result["mechanism"] += "; " + stated["text"]
