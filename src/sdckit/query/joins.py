"""Joins in dp queries (issue 32): a private table with a public lookup table, or two private
tables of the same privacy unit with a bound on the rows kept per join key.

``SELECT r.region_name, COUNT(*) FROM census JOIN regions r ON census.region = r.code GROUP BY
r.region_name``: one ``[INNER | LEFT] JOIN ... ON a.col = b.col`` after the FROM table (a private
table), an equality of one column of each table. The parser (:mod:`sdckit.query.sql`) turns the
pair into a :class:`JoinedTable`, a table configuration holding the declared columns of both (the
joined table's under their own names, or ``<table>__<column>`` where a name is taken), so the
WHERE, GROUP BY and select list are parsed, generated and answered as for one table; the
:class:`Join` is part of the :class:`~sdckit.query.sql.Query` (the stored answer's key).

*Public tables* (``[public_tables.<name>] path = "file.csv"`` in the configuration): no
protection; ``GET /v1/public/<name>`` returns one whole. When the service starts each is loaded
(``sdc_pub_<name>``) and every column's distinct values (its public domain: GROUP BY returns
each of them, WHERE may name it; at most ``MAX_GROUPS`` values, else it can only be a join key)
and *multiplicity* ``M`` (the largest number of its rows holding one value) are read. A private
row matches at most ``M`` rows of the public table on that column (1 row, unmatched, in a LEFT
JOIN), so a person's at most ``k`` rows become at most ``k M`` joined rows (``M = 1``: a unique
key, the sensitivity unchanged): every sensitivity of :mod:`sdckit.query.noisy` and
:mod:`sdckit.query.noisy_gaussian` uses ``k M`` where it used ``k``
(:func:`sdckit.query.generate.contribution_bound`). The join is a stable transformation of the
bounded relation (McSherry 2009, PINQ's ``Join``: a row's partners are public).

*Two private tables* (inner join only; both declare the same ``privacy_unit`` column, which
identifies the same persons): each side keeps at most ``t`` rows per value of its join key
(``max_rows_per_join_key`` of its table, default 1; the first in file order among the rows its
dp relation holds) — Tumult Analytics' ``join_private`` with ``TruncationStrategy.DropExcess``.
Removing a person removes her at most ``k_L`` (``k_R``) rows of each side; each removed row
that was kept may let one other row of its key in, so each truncated side changes by at most
``2 k_L`` (``2 k_R``) rows, and a changed row of one side meets at most ``t`` rows of the other:
the joined relation changes by at most ``2 (k_L t_R + k_R t_L)`` rows (Tumult states it as
``T_L S_R M_L + T_R S_L M_R`` with stability ``S = 2`` for ``DropExcess``). Joined on the privacy
units themselves (``ON a.unit = b.unit``), a key holds one person's rows only, nobody else's row
can come in, and the bound is ``min(k_L, t_L) min(k_R, t_R)``. A query-time
``max_rows_per_unit`` ``k'`` bounds the FROM table's rows before its truncation per key (``k_L =
k'``).

A public join on a cube column of the FROM table is answered from its cube joined in numpy
(:meth:`sdckit.query.cube.Cube.joined`, :meth:`sdckit.query.data.Database.fast_cells`: the same
counts and sums), a private join at the configured bounds from the cube of the joined relation
(:mod:`sdckit.query.joincube`, built on its first query); a text-domain key whose domain holds every public key value is joined on
integer codes in DuckDB (:attr:`JoinedTable.key_domain`). Every answer of a join states the join, the multiplicity or the truncation, and the bound used
(``join``, and the end of ``mechanism``). Refused (400, one line): joins in restricted mode, a
GROUP BY with keys from the data, cross joins, ``USING``/``NATURAL``/``RIGHT``/``FULL``, a join
condition other than one equality of a column of each table, an undeclared column, two public
tables, a table joined with itself, more than one JOIN. The SQL that runs is built with sqlglot's
builders from configured names only (quoted) and ``?`` parameters (:meth:`JoinedTable.source`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sdckit.core.duckdb_session import quote_identifier, relation
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.result import Result, plain
from sdckit.query.config import IDENTIFIER, MAX_GROUPS, PublicTable, ServiceConfig, TableConfig
from sdckit.query.relnames import NUMERIC_TYPES, RANK, ROW, clamp_column, code_column, is_text_domain, public_relation, relation_name
from sdckit.query.sqlnodes import UnknownTable, UnsupportedQuery, table_name

#: Aliases of the joined relation and of its two sides in the generated SQL (sdckit's own names).
JOINED, LEFT, RIGHT, KEY = "__sdc_joined", "__sdc_l", "__sdc_r", "__sdc_key"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JOIN_ARGS = {"this", "on", "side", "kind"}


@dataclass(frozen=True)
class Join(Result):
    """``[LEFT] JOIN other ON <FROM table>.key = other.other_key`` (``private``: other is private)."""

    other: str
    key: str
    other_key: str
    kind: str = "inner"
    private: bool = False

    def to_dict(self) -> dict[str, Any]:
        return plain({"other": self.other, "key": self.key, "other_key": self.other_key, "kind": self.kind,
                      "private": self.private})


@dataclass(frozen=True)
class JoinedTable(TableConfig):
    """The FROM table's configuration with the joined table's columns added (renamed where a
    name is taken), and what the SQL and the sensitivity of the join need."""

    join: Join | None = None
    #: the joined table's columns as its relation names them -> as the query names them
    renamed: dict[str, str] = field(default_factory=dict)
    #: (column of the joined table's relation, name in the joined relation), internal ones included
    projections: tuple[tuple[str, str], ...] = ()
    other_relation: str = ""
    #: the FROM table's own declared columns and the qualifiers (lower case) naming each side
    own_columns: tuple[str, ...] = ()
    left_names: tuple[str, ...] = ()
    right_names: tuple[str, ...] = ()
    #: public join: the largest number of the public table's rows sharing a key value
    multiplicity: int = 1
    #: private join: rows per person of the joined table; rows kept per key value (FROM, joined)
    other_rows: int = 1
    key_rows: tuple[int, int] = (1, 1)
    on_units: bool = False
    #: public join on a text-domain column whose domain holds every public key value: the join
    #: compares the row's integer code with the public value's index in that domain (same rows)
    key_domain: tuple[str, ...] = ()

    def bound(self, k: int) -> int:
        """The joined rows one person changes when she has at most ``k`` rows in the FROM table."""
        if not self.join.private:
            return k * self.multiplicity
        t_left, t_right = self.key_rows
        if self.on_units:
            return min(k, t_left) * min(self.other_rows, t_right)
        return 2 * (k * t_right + self.other_rows * t_left)

    def statement(self, k: int) -> dict[str, Any]:
        """The ``join`` field of an answer: the join, its multiplicity or truncation, the bound."""
        j = self.join
        on = f"{self.name}.{j.key} = {j.other}.{j.other_key}"
        out: dict[str, Any] = {"table": j.other, "public": not j.private, "kind": j.kind, "on": on,
                               "rows_per_unit": k, "contribution_bound": self.bound(k)}
        if not j.private:
            out["multiplicity"] = self.multiplicity
            out["text"] = (f"{j.kind.upper()} JOIN of the public table {j.other} ON {on}: a row of {self.name} matches "
                           f"at most {self.multiplicity} row(s) of {j.other} (the most rows of {j.other} sharing a "
                           f"value of {j.other_key}{'; a unique key' if self.multiplicity == 1 else ''}), so one "
                           f"person's at most {k} row(s) become at most {self.bound(k)} joined row(s): every "
                           f"sensitivity uses {self.bound(k)}")
            return out
        t_left, t_right = self.key_rows
        out.update({"other_rows_per_unit": self.other_rows, "max_rows_per_join_key": [t_left, t_right]})
        kept = (f"at most {t_left} row(s) of {self.name} and {t_right} of {j.other} kept per value of the join key "
                "(the first in file order; Tumult's DropExcess truncation)")
        if self.on_units:
            why = (f"joined on the privacy unit, a key holds one person's rows only: she changes at most "
                   f"min({k}, {t_left}) x min({self.other_rows}, {t_right}) = {self.bound(k)} joined row(s)")
        else:
            why = (f"a person's at most {k} and {self.other_rows} row(s) change each truncated side by at most twice "
                   f"that (a removed row lets one other row of its key in), and a changed row meets at most the "
                   f"other side's truncation: 2 ({k} x {t_right} + {self.other_rows} x {t_left}) = {self.bound(k)} "
                   "joined row(s) (Tumult: T_L S_R M_L + T_R S_L M_R, S = 2)")
        out["text"] = (f"INNER JOIN of two private tables of the same privacy unit, {self.name} and {j.other}, ON {on}: "
                       f"{kept}; {why}: every sensitivity uses {self.bound(k)}")
        return out

    def resolve_column(self, node: exp.Column, what: str) -> str:
        """The joined relation's name of the column ``node`` names (called by
        :func:`sdckit.query.sqlnodes.column_name`)."""
        name, qualifier = node.this.this, (node.table or "").lower()
        if node.args.get("db") or node.args.get("catalog"):
            raise UnsupportedQuery("Schema-qualified column names are not supported: write table.column.")
        own = next((c for c in self.own_columns if c.lower() == name.lower()), None)
        other = next((m for c, m in self.renamed.items() if c.lower() == name.lower()), None)
        if qualifier and qualifier not in self.left_names + self.right_names:
            raise UnsupportedQuery(f"The qualifier {node.table!r} names neither joined table: write "
                                   f"{self.name}.column or {self.join.other}.column (or their aliases).")
        if qualifier in self.left_names:
            found, table = own, self.name
        elif qualifier in self.right_names:
            found, table = other, self.join.other
        else:
            if own is not None and other is not None:
                raise UnsupportedQuery(f"Column {name!r} is in both joined tables: qualify it ({self.name}.{name} or "
                                       f"{self.join.other}.{name}).")
            found, table = own or other, f"{self.name} or {self.join.other}"
        if found is None:
            raise UnsupportedQuery(f"{what}: column {name!r} is not a declared column of {table} (bounds or domain in "
                                   "the configuration; a public table's column with at most "
                                   f"{MAX_GROUPS} distinct values).")
        return found

    def check_groups(self, group_by: tuple[str, ...]) -> None:
        """A GROUP BY over the joined table's columns has at most ``MAX_GROUPS`` cells."""
        size = 1
        for column in group_by:
            size *= len(self.domains.get(column, (None,)))
        if size > MAX_GROUPS:
            raise UnsupportedQuery(f"The GROUP BY has {size} groups (the product of its columns' values): at most "
                                   f"{MAX_GROUPS}; group by fewer or smaller columns.")

    def source(self, left_relation: str, bind: Any, rows: int | None = None) -> exp.Expression:
        """``(SELECT l.*, r.col AS name, .. FROM <left> AS l [LEFT] JOIN <right> AS r ON l.key =
        r.key) AS __sdc_joined``; each side of a private join truncated to its rows per key, the
        FROM table's after keeping the ``rows`` of rank <= a smaller bound the query asks (so the
        truncation admits no more rows than she held; ``bind``: the statement's parameters, called
        in text order)."""
        j = self.join
        if j.private:
            left: exp.Expression = exp.Subquery(this=_truncated(left_relation, j.key, self.key_rows[0], bind, rows,
                                                                j.key == self.privacy_unit),
                                                alias=exp.TableAlias(this=_ident(LEFT)))
            right: exp.Expression = exp.Subquery(this=_truncated(self.other_relation, j.other_key, self.key_rows[1], bind,
                                                                 unit=j.other_key == self.privacy_unit),
                                                 alias=exp.TableAlias(this=_ident(RIGHT)))
        else:
            left = exp.Table(this=_ident(left_relation), alias=exp.TableAlias(this=_ident(LEFT)))
            right = exp.Table(this=_ident(self.other_relation), alias=exp.TableAlias(this=_ident(RIGHT)))
        on = exp.EQ(this=_qualified(j.key, LEFT), expression=_qualified(j.other_key, RIGHT))
        if self.key_domain:  # integer codes: a hash join on integers, ~3x faster than on text at 1e6 rows
            position = exp.Anonymous(this="list_position", expressions=[bind(self.key_domain), exp.Column(
                this=_ident(j.other_key))])
            right = exp.Subquery(this=exp.Select(expressions=[exp.Star(), exp.Alias(
                this=exp.Sub(this=position, expression=exp.Literal.number(1)), alias=_ident(KEY))]).from_(
                _table(self.other_relation), copy=False), alias=exp.TableAlias(this=_ident(RIGHT)))
            on = exp.EQ(this=_qualified(code_column(j.key), LEFT), expression=_qualified(KEY, RIGHT))
        selects: list[exp.Expression] = [exp.Column(this=exp.Star(), table=_ident(LEFT))]
        selects += [exp.Alias(this=_qualified(column, RIGHT), alias=_ident(name)) for column, name in self.projections]
        statement = exp.Select(expressions=selects).from_(left, copy=False)
        statement = statement.join(right, on=on, join_type="LEFT" if j.kind == "left" else None, copy=False)
        return exp.Subquery(this=statement, alias=exp.TableAlias(this=_ident(JOINED)))


def _ident(name: str) -> exp.Identifier:
    if not _NAME.match(name):
        raise ParameterError(f"Internal check: {name!r} is not a plain name.")
    return exp.to_identifier(name, quoted=True)


def _table(name: str) -> exp.Table:
    return exp.Table(this=_ident(name))


def _qualified(column: str, table: str) -> exp.Column:
    return exp.Column(this=_ident(column), table=_ident(table))


def _truncated(relation_: str, key: str, rows: int, bind: Any, rank: int | None = None,
               unit: bool = False) -> exp.Select:
    """``SELECT * FROM relation [WHERE __sdc_rank <= ?] QUALIFY row_number() OVER (PARTITION BY
    key ORDER BY __sdc_row) <= ?``; ``SELECT * FROM relation WHERE __sdc_rank <= ?`` (``min(rank,
    rows)``) when the key is the privacy unit (``unit``): the same rows, without a window. (A dp
    relation holds each person's rows of rank 1..k, ``__sdc_rank`` being their ``row_number()``
    over the person in ``__sdc_row`` order; those of rank <= ``rank`` are her first ones, so their
    ``row_number()`` over the key, her, is their rank.)"""
    statement = exp.Select(expressions=[exp.Star()]).from_(_table(relation_), copy=False)
    if unit:
        most = rows if rank is None else min(rank, rows)
        return statement.where(exp.LTE(this=exp.Column(this=_ident(RANK)), expression=bind(most)), copy=False)
    window = exp.Window(this=exp.RowNumber(), partition_by=[exp.Column(this=_ident(key))],
                        order=exp.Order(expressions=[exp.Ordered(this=exp.Column(this=_ident(ROW)))]))
    if rank is not None:
        statement = statement.where(exp.LTE(this=exp.Column(this=_ident(RANK)), expression=bind(rank)), copy=False)
    statement.set("qualify", exp.Qualify(this=exp.LTE(this=window, expression=bind(rows))))
    return statement


# ------------------------------------------------------------------ parsing
def parse_join(tree: exp.Select, config: ServiceConfig, left: TableConfig, alias: str) -> TableConfig:
    """The FROM table ``left`` (named ``alias`` too, if given) joined as the query's JOIN says
    (:class:`JoinedTable`), or ``left`` itself when there is no JOIN."""
    joins = tree.args.get("joins") or []
    if not joins:
        if alias:
            raise UnsupportedQuery("Table aliases are not supported (without a JOIN).")
        return left
    if len(joins) > 1:
        raise UnsupportedQuery("One JOIN per query is supported.")
    node = joins[0]
    kind, side = str(node.args.get("kind") or "").upper(), str(node.args.get("side") or "").upper()
    if kind == "CROSS" or (node.args.get("on") is None and not node.args.get("using") and not node.args.get("method")):
        raise UnsupportedQuery("Cross joins (CROSS JOIN, FROM a, b, a JOIN without ON) are not supported: write "
                               "JOIN other ON table.column = other.column.")
    if node.args.get("method"):
        raise UnsupportedQuery(f"{str(node.args['method']).upper()} JOIN is not supported: write JOIN other ON "
                               "table.column = other.column.")
    if node.args.get("using"):
        raise UnsupportedQuery("JOIN ... USING is not supported: write JOIN other ON table.column = other.column.")
    if side in ("RIGHT", "FULL") or kind not in ("", "INNER", "OUTER") or (kind == "OUTER" and side != "LEFT"):
        raise UnsupportedQuery(f"{' '.join(w for w in (side, kind) if w)} JOIN is not supported: only [INNER] JOIN and "
                               "LEFT JOIN.")
    for key, value in node.args.items():
        if key not in _JOIN_ARGS and value not in (None, [], False):
            raise UnsupportedQuery(f"{key.upper()} in a JOIN is not supported.")
    target = node.this
    name = table_name(target, "JOIN")
    if name.lower() == left.name.lower():
        raise UnsupportedQuery(f"A JOIN of the table {left.name!r} with itself is not supported.")
    public = next((p for n, p in config.public_tables.items() if n.lower() == name.lower()), None)
    private = next((t for n, t in config.tables.items() if n.lower() == name.lower()), None)
    if public is None and private is None:
        served = sorted([*config.tables, *config.public_tables])
        raise UnknownTable(f"Unknown table {name!r} in JOIN: the service serves {', '.join(served)}.")
    left_names = tuple(dict.fromkeys(n.lower() for n in (left.name, alias) if n))
    right_names = tuple(dict.fromkeys(n.lower() for n in (name, target.alias) if n))
    if set(left_names) & set(right_names):
        raise UnsupportedQuery("The two joined tables need different names or aliases.")
    other = public.name if public is not None else private.name
    key, other_key = _on(node.args["on"], left, public, private, left_names, right_names)
    join = Join(other, key, other_key, "left" if side == "LEFT" else "inner", private is not None)
    return joined_table(config, left, join, left_names, right_names)


def _on(condition: exp.Expression, left: TableConfig, public: PublicTable | None, private: TableConfig | None,
        left_names: tuple[str, ...], right_names: tuple[str, ...]) -> tuple[str, str]:
    """``(key of the FROM table, key of the joined table)`` of ``ON a.col = b.col``."""
    while isinstance(condition, exp.Paren):
        condition = condition.this
    if (not isinstance(condition, exp.EQ) or not isinstance(condition.this, exp.Column)
            or not isinstance(condition.expression, exp.Column)):
        raise UnsupportedQuery("The join condition must be one equality of a column of each table: "
                               "ON table.column = other.column.")
    unit = left.privacy_unit if private is not None else None
    left_keys = [*left.columns, *([unit] if unit else [])]
    right_keys = list(public.columns) if public is not None else [*private.columns, *([private.privacy_unit] if private.privacy_unit else [])]
    sides: dict[str, str] = {}
    for column in (condition.this, condition.expression):
        if not isinstance(column.this, exp.Identifier) or column.args.get("db") or column.args.get("catalog"):
            raise UnsupportedQuery("The join condition must compare two plain columns: ON table.column = other.column.")
        name, qualifier = column.this.this, (column.table or "").lower()
        in_left = next((c for c in left_keys if c.lower() == name.lower()), None)
        in_right = next((c for c in right_keys if c.lower() == name.lower()), None)
        if qualifier and qualifier not in left_names + right_names:
            raise UnsupportedQuery(f"The qualifier {column.table!r} in the join condition names neither joined table.")
        side = "left" if qualifier in left_names else "right" if qualifier in right_names else None
        if side is None and in_left is not None and in_right is not None:
            raise UnsupportedQuery(f"Column {name!r} is in both joined tables: qualify it in the join condition.")
        side = side or ("left" if in_left is not None else "right")
        found = in_left if side == "left" else in_right
        if found is None:
            raise UnsupportedQuery(f"The join key {name!r} is not a declared column of "
                                   f"{left.name if side == 'left' else (public or private).name} (bounds or domain in the "
                                   "configuration).")
        if side in sides:
            raise UnsupportedQuery("The join condition must compare a column of each table: ON table.column = other.column.")
        sides[side] = found
    kinds = (_numeric(left, sides["left"]),
             sides["right"] in public.numeric if public is not None else _numeric(private, sides["right"]))
    if None not in kinds and kinds[0] != kinds[1]:
        raise UnsupportedQuery(f"The join keys {sides['left']!r} and {sides['right']!r} hold different types (a number "
                               "and text): join columns of one type.")
    return sides["left"], sides["right"]


def _numeric(table: TableConfig, column: str) -> bool | None:
    if column == table.privacy_unit:
        return None
    return column in table.bounds or not is_text_domain(table, column)


def joined_table(config: ServiceConfig, left: TableConfig, join: Join, left_names: tuple[str, ...] = (),
                 right_names: tuple[str, ...] = ()) -> JoinedTable:
    """The :class:`JoinedTable` of ``left`` and ``join`` (qualifiers: for parsing only)."""
    taken = {c.lower() for c in left.queryable} | ({left.privacy_unit.lower()} if left.privacy_unit else set())
    renamed: dict[str, str] = {}

    def name_of(column: str) -> str:
        mapped = column if column.lower() not in taken else f"{join.other}__{column}"
        if mapped.lower() in taken:
            raise UnsupportedQuery(f"The column {column!r} of {join.other!r} cannot be named in this join: rename it.")
        taken.add(mapped.lower())
        renamed[column] = mapped
        return mapped

    bounds, domains, data_bounds = dict(left.bounds), dict(left.domains), left.data_bounds
    projections: list[tuple[str, str]] = []
    extra: dict[str, Any] = {}
    if join.private:
        right = config.tables[join.other]
        if left.mode == "tables" or right.mode == "tables":
            raise UnsupportedQuery("A table served as tables (cell key method) cannot be joined.")
        if join.kind != "inner":
            raise UnsupportedQuery("LEFT JOIN of two private tables is not supported: write [INNER] JOIN.")
        if left.privacy_unit is None or left.privacy_unit != right.privacy_unit:
            raise UnsupportedQuery(f"A JOIN of two private tables needs the same privacy unit: {left.name!r} and "
                                   f"{right.name!r} must both declare privacy_unit, the same column of the same persons.")
        for column in right.columns:
            mapped = name_of(column)
            projections.append((column, mapped))
            if column in right.bounds:
                bounds[mapped] = right.bounds[column]
                projections.append((clamp_column(column), clamp_column(mapped)))
            if column in right.domains:
                domains[mapped] = right.domains[column]
                if is_text_domain(right, column):
                    projections.append((code_column(column), code_column(mapped)))
        data_bounds = left.data_bounds + tuple(renamed[c] for c in right.data_bounds if c in renamed)
        extra = {"other_rows": right.max_rows_per_unit,
                 "key_rows": (left.max_rows_per_join_key, right.max_rows_per_join_key),
                 "on_units": join.key == left.privacy_unit and join.other_key == right.privacy_unit,
                 "other_relation": relation_name(right, "dp")}
    else:
        public = config.public_tables[join.other]
        if left.mode == "tables":
            raise UnsupportedQuery("A table served as tables (cell key method) cannot be joined.")
        for column, values in public.columns.items():
            mapped = name_of(column)
            projections.append((column, mapped))
            if values:
                domains[mapped] = values
                if column not in public.numeric:
                    projections.append((code_column(column), code_column(mapped)))
        values = public.columns.get(join.other_key)
        domain = left.domains.get(join.key, ())
        coded = (is_text_domain(left, join.key) and join.other_key not in public.numeric and values is not None
                 and set(values) <= set(domain))
        extra = {"multiplicity": max(public.multiplicity.get(join.other_key, 1), 1), "key_domain": domain if coded else (),
                 "other_relation": public_relation(public.name)}
    queryable = {c: m for c, m in renamed.items() if m in bounds or m in domains}
    return JoinedTable(**{f.name: getattr(left, f.name) for f in dataclasses.fields(TableConfig)}
                       | {"bounds": bounds, "domains": domains, "bounds_from_data": False, "key_columns": (),
                          "data_bounds": data_bounds},
                       join=join, renamed=queryable, projections=tuple(projections), own_columns=left.columns,
                       left_names=left_names, right_names=right_names, **extra)


def query_table(query: Any, config: ServiceConfig) -> TableConfig:
    """The table a parsed query runs on: its FROM table, or the :class:`JoinedTable` of its join."""
    left = config.tables[query.table]
    return left if query.join is None else joined_table(config, left, query.join)


def private_tables(query: Any) -> tuple[str, ...]:
    """The private tables a query reads (an analyst must be allowed each)."""
    return (query.table,) + ((query.join.other,) if query.join is not None and query.join.private else ())


# ------------------------------------------------------------------ public tables
def load_public(con: Any, public: PublicTable) -> PublicTable:
    """Load a public table as ``sdc_pub_<name>`` (text columns as VARCHAR with their code, the
    index among the sorted distinct values) and fill in its columns' values and multiplicities."""
    if not public.path.exists():
        raise DataError(f"public table {public.name!r}: the file {public.path} does not exist.")
    suffix = public.path.suffix.lower()
    fmt = "parquet" if suffix in (".parquet", ".pq") else "tsv" if suffix == ".tsv" else "csv"
    rel = relation(con, public.path, fmt, where=f"{public.path.name!r} (public table {public.name!r})")
    q = quote_identifier
    raw = f"sdc_pubraw_{public.name}"
    con.execute(f"CREATE TEMP TABLE {q(raw)} AS SELECT * FROM {rel.sql}")
    columns: dict[str, tuple[Any, ...] | None] = {}
    multiplicity, numeric, selects, params = {}, [], [], []
    for column, kind in rel.types.items():
        if not IDENTIFIER.match(column) or column.startswith("__sdc_"):
            raise DataError(f"public table {public.name!r}: the column {column!r} is not a plain name (letters, digits, "
                            "underscores, not starting with __sdc_); rename it.")
        is_number = kind.startswith(NUMERIC_TYPES)
        value = (f"CAST({q(column)} AS {'DOUBLE' if kind.startswith(('DECIMAL', 'HUGEINT', 'UBIGINT')) else kind})"
                 if is_number else f"CAST({q(column)} AS VARCHAR)")
        values = [v for (v,) in con.execute(f"SELECT DISTINCT {value} AS v FROM {q(raw)} WHERE {q(column)} IS NOT NULL "
                                            "ORDER BY v").fetchall()]
        multiplicity[column] = int(con.execute(f"SELECT COALESCE(MAX(c), 0) FROM (SELECT COUNT(*) AS c FROM {q(raw)} "
                                               f"WHERE {q(column)} IS NOT NULL GROUP BY {q(column)})").fetchone()[0])
        columns[column] = tuple(values) if 0 < len(values) <= MAX_GROUPS else None
        selects.append(f"{value} AS {q(column)}")
        if is_number:
            numeric.append(column)
        elif columns[column] is not None:
            selects.append(f"COALESCE(list_position(?, {value}), 0) - 1 AS {q(code_column(column))}")
            params.append(list(values))
    n = con.execute(f"SELECT COUNT(*) FROM {q(raw)}").fetchone()[0]
    con.execute(f"CREATE TABLE {q(public_relation(public.name))} AS SELECT {', '.join(selects)} FROM {q(raw)}", params)
    con.execute(f"DROP TABLE {q(raw)}")
    return dataclasses.replace(public, columns=columns, multiplicity=multiplicity, numeric=tuple(numeric), n_rows=int(n))


def public_sql(public: PublicTable) -> str:
    """``SELECT <its columns> FROM sdc_pub_<name>`` (configured names, quoted): the whole table."""
    return (f"SELECT {', '.join(quote_identifier(c) for c in public.columns)} "
            f"FROM {quote_identifier(public_relation(public.name))}")
