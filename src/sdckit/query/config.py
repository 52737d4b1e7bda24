"""The service's configuration file, ``service.toml`` (DESIGN.md section 7).

Everything the protection needs that is *public* is declared here, never read from the data
silently: each table's privacy unit, the bounds of its numeric columns (clamping and
sensitivity) and the domains of its grouping columns (GROUP BY returns every domain value, so
the keys of an answer never depend on the data). Every unknown key and every bad value is a
:class:`~sdckit.core.errors.ParameterError` naming the key.

Example::

    [service]
    state = "state.db"          # analysts (key hashes), budgets, audit log; relative to this file
    cache = true                # the same query asked twice gets the stored answer at no cost
    sync = "full"               # "full": each charge is on disk (fsync) before the answer; "normal":
                                # survives kill -9 of the server but not a power loss (faster)
    # seed = "<32+ hex digits>" # tests only: reproducible noise (a secret; never in production)
    # memory_limit = "4GB"      # large tables: held compressed in a DuckDB file in a private
                                # temporary folder (removed at exit), DuckDB's memory bounded
    # prebuild = ["SELECT SUM(income / 1000) FROM census"]  # derived values and bins of many-valued
                                # columns summed at start-up, not on first use (sdckit.query.derivedcube)
    [restricted]
    min_query_set = 5           # query-set-size control k (Denning)
    collusion = false           # audit each analyst's knowledge alone (false) or all together
    p_percent = 10              # p% rule over all answered SUMs (interval protection); 0 disables
    [[table]]
    name = "census"
    path = "census.csv"         # CSV or Parquet loaded into DuckDB, or a .duckdb file with `table =`
    privacy_unit = "person_id"  # omit when one row is one person
    max_rows_per_unit = 1       # contribution bound per privacy unit (dp mode)
    [table.bounds]
    income = [0, 200000]
    [table.domains]
    region = ["N", "S", "E", "W"]
    # dimensions = ["region"]   # restricted mode: the public columns a condition or GROUP BY may
                                # name (default: the columns with a declared domain); every other
                                # declared column is confidential (SUM/AVG only)
    # max_rows_per_join_key = 1 # dp join with another private table: rows kept per join key
    # keys_from_data = ["city"] # dp mode, (epsilon, delta) budgets: GROUP BY these columns (no
                                # declared domain) with the keys the data holds, released by
                                # thresholding (sdckit.query.keys); `true`: every bounded column
                                # without a domain
    [public_tables.regions]     # a PUBLIC table (no protection; GET /v1/public/regions gives it
    path = "regions.csv"        # whole) that dp queries may JOIN (sdckit.query.joins)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdckit.core.result import Result, plain
from sdckit.core.tomlfile import check_keys, read_toml
from sdckit.core.errors import ParameterError
from sdckit.core.random import is_strong_seed, parse_seed
from sdckit.query.ckmconfig import CkmConfig, parse_mode

#: Names of tables and columns: plain SQL identifiers (they are quoted in generated SQL anyway).
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
#: Largest number of groups a GROUP BY may produce (product of the domains' sizes).
MAX_GROUPS = 100_000

_SERVICE_KEYS = {"state", "cache", "seed", "sync", "memory_limit", "prebuild"}
_RESTRICTED_KEYS = {"min_query_set", "collusion", "p_percent"}
_TABLE_KEYS = {"name", "path", "table", "privacy_unit", "max_rows_per_unit", "bounds", "domains",
               "bounds_from_data", "dimensions", "mode", "ckm", "keys_from_data", "hierarchies",
               "max_rows_per_join_key"}
_TOP_KEYS = {"service", "restricted", "table", "public_tables"}


@dataclass(frozen=True)
class TableConfig(Result):
    """One queryable table and its public metadata.

    Attributes
    ----------
    name : str
        The name analysts write in ``FROM``.
    path : Path
        CSV, Parquet or DuckDB file (absolute).
    source_table : str or None
        Table inside a ``.duckdb`` file.
    privacy_unit : str or None
        Column identifying the person; ``None``: one row is one person.
    max_rows_per_unit : int
        Rows a privacy unit may contribute (dp mode); the rest of its rows are left out.
    bounds : dict
        ``column -> (low, high)``, public bounds of numeric columns.
    domains : dict
        ``column -> tuple of values``, public domains of grouping columns.
    bounds_from_data : bool
        Bounds of numeric columns not declared are read from the data: answers are then NOT
        differentially private, and say so.
    data_bounds : tuple of str
        Columns whose bounds were read from the data (filled in when the data is loaded).
    dimensions : tuple of str or None
        Restricted mode: the *public dimensions*, the only columns a condition or a GROUP BY may
        name; every other declared column is *confidential* (only SUM/AVG of it). ``None`` (the
        key left out): the columns with a declared domain. See :attr:`public_dimensions`.
    mode : str
        ``"query"`` (SQL) or ``"tables"`` (only ``POST /v1/table``; :mod:`sdckit.query.ckmconfig`).
    ckm : CkmConfig or None
        The cell key method of a table served as tables.
    key_columns : tuple of str
        Columns without a declared domain that a dp GROUP BY may group with the keys the data
        holds, released by thresholding (``keys_from_data``; :mod:`sdckit.query.keys`; only
        for (epsilon, delta)-DP budgets). Such a column may be named in GROUP BY (and selected
        as a group column), in a condition only if it also has bounds.
    max_rows_per_join_key : int
        A dp join of two private tables keeps at most this many of this table's rows per value
        of the join key (the first in file order; :mod:`sdckit.query.joins`).
    square_bits : dict
        ``column -> b``: the clamped values are multiples of ``2**-b`` and their squared
        deviations are summed exactly as integers (filled in when the data is loaded;
        :mod:`sdckit.query.squares`).
    """

    name: str
    path: Path
    source_table: str | None = None
    privacy_unit: str | None = None
    max_rows_per_unit: int = 1
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    domains: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    bounds_from_data: bool = False
    data_bounds: tuple[str, ...] = ()
    dimensions: tuple[str, ...] | None = None
    mode: str = "query"
    ckm: CkmConfig | None = None
    key_columns: tuple[str, ...] = ()
    max_rows_per_join_key: int = 1
    square_bits: dict[str, int] = field(default_factory=dict)

    @property
    def public_dimensions(self) -> tuple[str, ...]:
        """Columns a restricted-mode condition or GROUP BY may name (DESIGN.md section 7): the
        declared ``dimensions``, else every column with a declared domain."""
        return tuple(self.domains) if self.dimensions is None else self.dimensions

    @property
    def columns(self) -> tuple[str, ...]:
        """Declared columns (bounds first, then domains): the only ones a query may name."""
        return tuple(dict.fromkeys([*self.bounds, *self.domains]))

    @property
    def queryable(self) -> tuple[str, ...]:
        """The columns a query may name: the declared ones, then the data-keyed group columns."""
        return tuple(dict.fromkeys([*self.columns, *self.key_columns]))

    def keys_from_data(self, group_by: tuple[str, ...]) -> tuple[str, ...]:
        """The columns of ``group_by`` whose keys are taken from the data (no declared domain)."""
        return tuple(c for c in group_by if c not in self.domains)

    def to_dict(self) -> dict[str, Any]:
        """The fields, ``source_table`` as ``table`` and ``dimensions`` the public dimensions."""
        return plain({"name": self.name, "path": self.path, "table": self.source_table,
                      "privacy_unit": self.privacy_unit, "max_rows_per_unit": self.max_rows_per_unit,
                      "bounds": self.bounds, "domains": self.domains, "bounds_from_data": self.bounds_from_data,
                      "data_bounds": self.data_bounds, "dimensions": self.public_dimensions, "mode": self.mode,
                      "ckm": self.ckm, "keys_from_data": self.key_columns,
                      "max_rows_per_join_key": self.max_rows_per_join_key})


@dataclass(frozen=True)
class PublicTable(Result):
    """A table declared public (``[public_tables.<name>]``): no protection, readable whole, and
    joinable by dp queries (:mod:`sdckit.query.joins`). ``columns`` (each column's distinct
    values, sorted, missing ones left out; ``None`` past :data:`MAX_GROUPS` values),
    ``multiplicity`` (each column's largest number of rows holding one value) and ``n_rows`` are
    read from the file when the service loads it (public facts, known before any query)."""

    name: str
    path: Path
    columns: dict[str, tuple[Any, ...] | None] = field(default_factory=dict)
    multiplicity: dict[str, int] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()
    n_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return plain({"name": self.name, "path": self.path, "columns": list(self.columns),
                      "multiplicity": self.multiplicity, "numeric": self.numeric, "n_rows": self.n_rows})


@dataclass(frozen=True)
class ServiceConfig(Result):
    """The whole service: state database, restricted-mode controls and tables."""

    path: Path
    state: Path
    tables: dict[str, TableConfig]
    min_query_set: int = 5
    collusion: bool = False
    cache: bool = True
    seed: int | None = None
    sync: str = "full"
    p_percent: float = 10
    public_tables: dict[str, PublicTable] = field(default_factory=dict)
    #: DuckDB's memory limit in bytes (``None``: tables in memory, DuckDB's default limit)
    memory_limit: int | None = None
    #: queries whose derived-value and bin structures are built at start-up (:mod:`sdckit.query.derivedcube`)
    prebuild: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields, but only whether a ``seed`` is set (``seeded``), never the seed."""
        return plain({"path": self.path, "state": self.state, "min_query_set": self.min_query_set,
                      "collusion": self.collusion, "cache": self.cache, "seeded": self.seed is not None,
                      "sync": self.sync, "p_percent": self.p_percent, "memory_limit": self.memory_limit,
                      "prebuild": self.prebuild, "tables": self.tables, "public_tables": self.public_tables})


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30,
          "TIB": 2**40}


def _size(raw: Any) -> int | None:
    """``[service] memory_limit``: a size such as "4GB", "512MiB" (at least 64 MiB), or absent."""
    if raw is None:
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B)\s*", raw.upper()) if isinstance(raw, str) else None
    size = int(float(match.group(1)) * _UNITS[match.group(2)]) if match and match.group(2) in _UNITS else 0
    if size < 64 * 2**20:
        raise _fail("[service] 'memory_limit'", 'must be a size of at least 64 MiB such as "4GB" or "512MiB" '
                                                '(DuckDB\'s memory for the tables; leave it out to hold them in memory).')
    return size


def _fail(where: str, message: str) -> ParameterError:
    return ParameterError(f"{where}: {message}")


def _identifier(value: Any, where: str) -> str:
    if not isinstance(value, str) or not IDENTIFIER.match(value):
        raise _fail(where, "must be a name of letters, digits and underscores that does not start "
                           "with a digit (at most 63 characters).")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _bounds(raw: Any, where: str) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict):
        raise _fail(where, "must be a table of column = [low, high].")
    out = {}
    for column, pair in raw.items():
        _identifier(column, f"{where}.{column}")
        if (not isinstance(pair, list) or len(pair) != 2 or not all(_number(v) for v in pair)
                or not pair[0] < pair[1]):
            raise _fail(f"{where}.{column}", "must be [low, high], two finite numbers with low < high.")
        out[column] = (pair[0], pair[1])
    return out


def _domains(raw: Any, where: str) -> dict[str, tuple[Any, ...]]:
    if not isinstance(raw, dict):
        raise _fail(where, "must be a table of column = [value, ...].")
    out = {}
    for column, values in raw.items():
        _identifier(column, f"{where}.{column}")
        if not isinstance(values, list) or not values:
            raise _fail(f"{where}.{column}", "must be a non-empty list of values.")
        strings = all(isinstance(v, str) for v in values)
        numbers = all(_number(v) for v in values)
        if not (strings or numbers):
            raise _fail(f"{where}.{column}", "must list values of one kind: all strings or all numbers.")
        if len(set(values)) != len(values):
            raise _fail(f"{where}.{column}", "lists a value twice; list each value once.")
        out[column] = tuple(values)
    return out


def _dimensions(raw: Any, bounds: dict[str, Any], domains: dict[str, Any], where: str) -> tuple[str, ...] | None:
    """The declared public dimensions (``None``: the key is left out)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise _fail(where, "must be a list of column names, e.g. [\"region\", \"age\"].")
    for column in raw:
        if column not in bounds and column not in domains:
            raise _fail(where, f"names {column!r}, which is not declared: a dimension must have bounds or a "
                               "domain ([table.bounds] or [table.domains]).")
    if len(set(raw)) != len(raw):
        raise _fail(where, "names a column twice; list each column once.")
    return tuple(raw)


def _key_columns(raw: Any, bounds: dict[str, Any], domains: dict[str, Any], unit: str | None,
                 where: str) -> tuple[str, ...]:
    """The ``keys_from_data`` columns: ``true`` (every bounded column without a domain), a list
    of column names (none with a declared domain, never the privacy unit), or ``false``/absent."""
    if raw is None or raw is False:
        return ()
    if raw is True:
        return tuple(c for c in bounds if c not in domains)
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise _fail(where, 'must be true, false or a list of column names, e.g. ["city"].')
    for column in raw:
        _identifier(column, f"{where} {column!r}")
        if column in domains:
            raise _fail(where, f"names {column!r}, which has a declared domain: its GROUP BY keys are the domain's; "
                               "leave it out of keys_from_data.")
        if column == unit:
            raise _fail(where, f"names the privacy unit {column!r}: the person's identifier is never a group key.")
    if len(set(raw)) != len(raw):
        raise _fail(where, "names a column twice; list each column once.")
    return tuple(raw)


def _table(raw: Any, index: int, base: Path) -> TableConfig:
    where = f"[[table]] number {index + 1}"
    if not isinstance(raw, dict):
        raise _fail(where, "must be a table.")
    check_keys(raw, _TABLE_KEYS, where)
    if "name" not in raw:
        raise _fail(where, "the key 'name' is required.")
    name = _identifier(raw["name"], f"{where} 'name'")
    where = f"table {name!r}"
    if not isinstance(raw.get("path"), str):
        raise _fail(where, "the key 'path' (CSV, Parquet or .duckdb file) is required.")
    path = Path(raw["path"])
    path = path if path.is_absolute() else (base / path)
    suffixes = "".join(path.suffixes[-2:]).lower()
    is_duckdb = path.suffix.lower() in (".duckdb", ".db")
    if not (is_duckdb or path.suffix.lower() in (".csv", ".parquet", ".pq", ".tsv") or suffixes.endswith(".csv.gz")):
        raise _fail(f"{where} 'path'", "must be a .csv, .csv.gz, .tsv, .parquet or .duckdb file.")
    source = raw.get("table")
    if is_duckdb:
        if source is None:
            raise _fail(where, "a .duckdb file needs the key 'table' naming the table inside it.")
        source = _identifier(source, f"{where} 'table'")
    elif source is not None:
        raise _fail(f"{where} 'table'", "is only for a .duckdb file.")
    unit = raw.get("privacy_unit")
    if unit is not None:
        unit = _identifier(unit, f"{where} 'privacy_unit'")
    rows = raw.get("max_rows_per_unit", 1)
    if not isinstance(rows, int) or isinstance(rows, bool) or not 1 <= rows <= 1000:
        raise _fail(f"{where} 'max_rows_per_unit'", "must be an int from 1 to 1000.")
    per_key = raw.get("max_rows_per_join_key", 1)
    if not isinstance(per_key, int) or isinstance(per_key, bool) or not 1 <= per_key <= 1000:
        raise _fail(f"{where} 'max_rows_per_join_key'", "must be an int from 1 to 1000.")
    if unit is None and rows != 1:
        raise _fail(f"{where} 'max_rows_per_unit'", "needs 'privacy_unit' (without it one row is one person).")
    bounds = _bounds(raw.get("bounds", {}), f"{where} [table.bounds]")
    domains = _domains(raw.get("domains", {}), f"{where} [table.domains]")
    if unit is not None and (unit in bounds or unit in domains):
        raise _fail(f"{where} 'privacy_unit'", "must not be a declared column: the person's identifier is never queried.")
    from_data = raw.get("bounds_from_data", False)
    if not isinstance(from_data, bool):
        raise _fail(f"{where} 'bounds_from_data'", "must be true or false.")
    keys = _key_columns(raw.get("keys_from_data"), bounds, domains, unit, f"{where} 'keys_from_data'")
    if not bounds and not domains and not from_data and not keys:
        raise _fail(where, "declares no column: add [table.bounds] or [table.domains].")
    dimensions = _dimensions(raw.get("dimensions"), bounds, domains, f"{where} 'dimensions'")
    size = 1
    for values in domains.values():
        size *= len(values)
    if size > MAX_GROUPS:
        raise _fail(f"{where} [table.domains]", f"the domains together have more than {MAX_GROUPS} combinations.")
    mode, ckm = parse_mode(raw, where, base, domains, {*bounds, *domains}, unit, _identifier)
    if keys and mode == "tables":
        raise _fail(f"{where} 'keys_from_data'", 'is for SQL queries in dp mode; a table served as tables '
                                                 '(mode = "tables") takes its codes from [table.domains].')
    return TableConfig(name, path.resolve(), source, unit, rows, bounds, domains, from_data, dimensions=dimensions,
                       mode=mode, ckm=ckm, key_columns=keys, max_rows_per_join_key=per_key)


def load_config(path: str | Path) -> ServiceConfig:
    """Read and check ``service.toml``; relative paths are relative to the file."""
    raw, path = read_toml(Path(path).resolve(), "Service configuration")
    check_keys(raw, _TOP_KEYS, str(path.name))
    base = path.parent
    service = raw.get("service", {})
    restricted = raw.get("restricted", {})
    if not isinstance(service, dict) or not isinstance(restricted, dict):
        raise ParameterError(f"{path.name}: [service] and [restricted] must be tables.")
    check_keys(service, _SERVICE_KEYS, "[service]")
    check_keys(restricted, _RESTRICTED_KEYS, "[restricted]")
    state = service.get("state", "state.db")
    if not isinstance(state, str) or not state:
        raise _fail("[service] 'state'", "must be a file name (relative to the configuration file).")
    state_path = Path(state) if Path(state).is_absolute() else base / state
    cache = service.get("cache", True)
    if not isinstance(cache, bool):
        raise _fail("[service] 'cache'", "must be true or false.")
    seed = service.get("seed")
    if seed is not None:
        if not isinstance(seed, str) or not is_strong_seed(seed):
            raise _fail("[service] 'seed'", "must be a string of at least 32 hex digits (128 bits; "
                                            "`sdckit seed` prints one). Leave it out in production.")
        seed = parse_seed(seed)
    sync = service.get("sync", "full")
    if sync not in ("full", "normal"):
        raise _fail("[service] 'sync'", 'must be "full" (every charge on disk before the answer: survives '
                                        'power loss) or "normal" (survives a crash of the server, not of the machine).')
    memory_limit = _size(service.get("memory_limit"))
    prebuild = service.get("prebuild", [])
    if not isinstance(prebuild, list) or not all(isinstance(q, str) for q in prebuild):
        raise _fail("[service] 'prebuild'", 'must be a list of SQL queries such as ["SELECT SUM(income / 1000) '
                                            'FROM census"] (their derived values are summed at start-up).')
    k = restricted.get("min_query_set", 5)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise _fail("[restricted] 'min_query_set'", "must be an int >= 1.")
    collusion = restricted.get("collusion", False)
    if not isinstance(collusion, bool):
        raise _fail("[restricted] 'collusion'", "must be true or false.")
    p_percent = restricted.get("p_percent", 10)
    if not _number(p_percent) or not 0 <= p_percent <= 100:
        raise _fail("[restricted] 'p_percent'", "must be a number from 0 to 100 (the p of the p% rule that "
                                                "protects every value an answered SUM involves; 0 disables it).")
    tables_raw = raw.get("table", [])
    if not isinstance(tables_raw, list) or not tables_raw:
        raise ParameterError(f"{path.name}: declare at least one [[table]].")
    tables: dict[str, TableConfig] = {}
    for i, t in enumerate(tables_raw):
        table = _table(t, i, base)
        if table.name.lower() in {n.lower() for n in tables}:
            raise _fail(f"table {table.name!r}", "is declared twice.")
        tables[table.name] = table
    return ServiceConfig(path, state_path.resolve(), tables, k, collusion, cache, seed, sync, p_percent,
                         _public_tables(raw.get("public_tables", {}), base, tables), memory_limit, tuple(prebuild))


def _public_tables(raw: Any, base: Path, tables: dict[str, TableConfig]) -> dict[str, PublicTable]:
    """``[public_tables.<name>] path = "file.csv"`` (CSV or Parquet, relative to the configuration)."""
    if not isinstance(raw, dict):
        raise _fail("[public_tables]", 'must be tables such as [public_tables.regions] path = "regions.csv".')
    out = {}
    for name, entry in raw.items():
        where = f"[public_tables.{name}]"
        _identifier(name, where)
        if not isinstance(entry, dict):
            raise _fail(where, 'must be a table with path = "file.csv".')
        check_keys(entry, {"path"}, where)
        if name.lower() in {n.lower() for n in [*tables, *out]}:
            raise _fail(where, "has the name of another table: give it its own name.")
        if not isinstance(entry.get("path"), str):
            raise _fail(where, "the key 'path' (CSV or Parquet file) is required.")
        path = Path(entry["path"])
        path = path if path.is_absolute() else base / path
        if path.suffix.lower() not in (".csv", ".parquet", ".pq", ".tsv"):
            raise _fail(f"{where} 'path'", "must be a .csv, .tsv or .parquet file.")
        out[name] = PublicTable(name, path.resolve())
    return out
