"""Methods are values (DESIGN.md section 2).

Every protection method is a frozen dataclass whose fields are its parameters. The class
declares, once:

* ``name`` — the snake_case name a recipe uses (the class is registered under it);
* ``constraints`` — a rule for each parameter, checked at construction by one validator;
* ``kinds`` and ``roles`` — the column kinds it accepts and the roles it works on by default;
* ``nan_policy`` — ``"error"`` (NaN in a used column is refused) or ``"pass"`` (NaN cells are
  left as NaN); each method documents which;
* ``path_params`` — parameters that may hold file paths (a path, or a mapping whose values are
  paths, e.g. hierarchies by column); a recipe resolves them relative to its own folder;
* ``example`` — valid parameters on the common test frame (``tests/test_common_checks.py``),
  so that the checks every method owes run on every registered method.

and implements ``transform(frame, columns, schema, rng)``. Its one public entry point is
:meth:`Method.apply`; :meth:`Method.run` also returns the method's report (information loss,
suppressed records, ...) and the schema of its output, which the pipeline records.
Because the fields are the parameters, the manifest is derived from them and cannot forget one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.core.outcome import Outcome
from sdckit.core.params import IsNone, ParamRule, StrList, param_error, validate_fields
from sdckit.core.registry import Registry
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.result import plain as json_plain  # params(plain=...) is a parameter
from sdckit.core.rowwise import run_rows
from sdckit.core.schema import Kind, Role, Schema

_REGISTRY: Registry[type[Method]] = Registry("method")


@dataclass(frozen=True)
class Method:
    """Base class of every protection method; see the module docstring for the contract."""

    columns: tuple[str, ...] | None = field(default=None, kw_only=True)

    name: ClassVar[str] = ""
    constraints: ClassVar[Mapping[str, ParamRule]] = {}
    kinds: ClassVar[frozenset[Kind]] = frozenset({Kind.NUMERIC})
    roles: ClassVar[frozenset[Role]] = frozenset({Role.QUASI, Role.CONFIDENTIAL})
    nan_policy: ClassVar[str] = "error"
    example: ClassVar[Mapping[str, Any] | None] = None
    path_params: ClassVar[frozenset[str]] = frozenset()
    #: Whether the method's job is suppression (it may leave missing values, and reports how many).
    suppresses: ClassVar[bool] = False
    #: What the method needs of the data, from which an engine chooses how to run it (DESIGN.md
    #: section 8): ``"rows"`` (each record on its own, given whole-column statistics: streamed
    #: by logical chunks, :mod:`sdckit.core.rowwise`), ``"groups"`` (per class or stratum),
    #: ``"ranks"`` (a global sort), ``"neighbours"`` (nearest records), ``"all"`` (the whole
    #: data in memory).
    needs: ClassVar[str] = "all"

    # ----------------------------------------------------------------- construction
    def __post_init__(self) -> None:
        validate_fields(self, parameter_rules(type(self)))
        self.check_parameters()

    def check_parameters(self) -> None:
        """Cross-parameter rules; override and raise :class:`ParameterError` (via
        :meth:`param_error`) when parameters are inconsistent with each other."""

    def param_error(self, name: str, requirement: str) -> ParameterError:
        """An error in the shared template for parameter ``name``."""
        return param_error(type(self).__name__, name, getattr(self, name), requirement)

    # ----------------------------------------------------------------- parameters
    def params(self, plain: bool = True) -> dict[str, Any]:
        """Every parameter with its value; ``plain`` makes them JSON-friendly. A field declared
        with ``compare=False`` (e.g. the ``accountant`` the caller holds) is not a parameter."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare}
        return {k: json_plain(v) for k, v in values.items()} if plain else values

    def to_manifest(self) -> dict[str, Any]:
        """The method as the manifest records it: registered name, class and all parameters."""
        return {"name": self.name, "class": type(self).__name__, "params": self.params()}

    @property
    def claims_dp(self) -> bool:
        """Whether this method's release is differentially private; False unless it says so."""
        return False

    # ----------------------------------------------------------------- application
    @renamed_seed("rng")
    def apply(
        self, frame: pd.DataFrame, schema: Schema | None = None, seed: RandomState = None
    ) -> pd.DataFrame:
        """Return a protected copy of ``frame``; the input is never modified."""
        return self.run(frame, schema, seed).data

    @renamed_seed("rng")
    def run(
        self, frame: pd.DataFrame, schema: Schema | None = None, seed: RandomState = None
    ) -> Outcome:
        """Like :meth:`apply`, also returning the output schema and the method's report."""
        schema, columns = self.prepare(frame, schema)
        strata = getattr(self, "strata", None)
        if strata:
            outcome = _run_by_stratum(self, frame, columns, schema, as_generator(seed), strata)
        elif self.streams:
            outcome = run_rows(self, frame, columns, schema, as_generator(seed))
        else:
            result = self.transform(frame.copy(), columns, schema, as_generator(seed))
            outcome = result if isinstance(result, Outcome) else Outcome(result, schema)
        if not self.suppresses:
            require_no_new_missing(frame, outcome.data, type(self).__name__)
        return outcome

    def prepare(self, frame: pd.DataFrame, schema: Schema | None = None) -> tuple[Schema, tuple[str, ...]]:
        """The checks every entry point owes before any work (:meth:`run`, and public helpers
        such as a k-anonymity method's ``partition``): a non-empty DataFrame, the schema
        (inferred if not given), the target columns, and the missing-value policy
        (``nan_policy="error"`` refuses a missing value in a target column)."""
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{type(self).__name__} expects a pandas DataFrame, got {type(frame).__name__}.")
        if len(frame) == 0:
            raise DataError(f"{type(self).__name__} got an empty data set (0 records).")
        schema = schema if schema is not None else Schema.infer(frame)
        columns = self.target_columns(schema)
        if self.nan_policy == "error":
            require_no_nan(frame, columns, type(self).__name__)
        require_finite(frame, columns, type(self).__name__)
        return schema, columns

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> pd.DataFrame | Outcome:
        """Protect ``columns`` of ``frame`` (a copy the method may change in place).

        Every method other than a row-wise one defines it. A row-wise method need not: its
        :meth:`transform_rows` runs on the whole frame as one chunk, with the statistics of that
        one chunk and its report passed through :meth:`merge_info`, as the engines do per chunk.
        """
        if self.needs != "rows":  # pragma: no cover - interface
            raise NotImplementedError
        stats = self.finish_statistics(self.chunk_statistics(frame, columns)) if self.needs_statistics() else None
        result = self.transform_rows(frame, columns, schema, rng, stats)
        if isinstance(result, Outcome):
            return Outcome(result.data, result.schema, self.merge_info([result.info], stats))
        return result

    # ----------------------------------------------------------------- row-wise execution
    @property
    def streams(self) -> bool:
        """Whether this value runs by logical chunks: a row-wise method not split by strata (and
        not a subclass that overrides :meth:`transform` without :meth:`transform_rows`)."""
        if self.needs != "rows" or getattr(self, "strata", None):
            return False
        mro = type(self).__mro__
        owner = {name: next(c for c in mro if name in vars(c)) for name in ("transform", "transform_rows")}
        return not (owner["transform"] is not owner["transform_rows"]
                    and issubclass(owner["transform"], owner["transform_rows"]))

    def needs_statistics(self) -> bool:
        """Whether a row-wise method needs whole-data statistics (a first pass) before it runs."""
        return False

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> Any:
        """The partial statistics of one logical chunk (row-wise methods that need some)."""
        return None

    def merge_statistics(self, first: Any, second: Any) -> Any:
        """Two chunks' partial statistics merged (applied left to right in chunk order)."""
        return first

    def finish_statistics(self, merged: Any) -> Any:
        """The statistics :meth:`transform_rows` uses, from the merged partial ones."""
        return merged

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: Any,
    ) -> pd.DataFrame | Outcome:
        """Protect one logical chunk given the whole data's statistics (row-wise methods)."""
        raise NotImplementedError

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        """The method's report for the whole data from its chunks' reports (in chunk order)."""
        return infos[0] if len(infos) == 1 else {}

    def default_columns(self) -> tuple[str, ...] | None:
        """The columns the method's own parameters name when ``columns`` is not given (e.g. the
        quasi-identifiers of a k-anonymity method); ``None``: choose them by role and kind."""
        return None

    def target_columns(self, schema: Schema) -> tuple[str, ...]:
        """The columns this method works on: ``columns`` if given, else the columns its
        parameters name (:meth:`default_columns`), both checked; else the columns whose role
        and kind the method accepts."""
        owner = type(self).__name__
        names = self.columns if self.columns is not None else self.default_columns()
        if names is not None:
            for name in names:
                col = schema[name]  # raises SchemaError naming the column
                if col.kind not in self.kinds:
                    allowed = ", ".join(sorted(k.value for k in self.kinds))
                    raise SchemaError(
                        f"{owner} cannot protect column {name!r}: its kind is {col.kind.value!r}, "
                        f"and {owner} works on {allowed} columns. Choose other columns or "
                        "declare the column's kind."
                    )
                if col.role is Role.IDENTIFIER:
                    raise SchemaError(
                        f"{owner} was asked to protect identifier column {name!r}; identifiers "
                        "are dropped from releases, not masked. Give the column another role."
                    )
            return tuple(names)
        chosen = schema.select(self.roles, self.kinds)
        if not chosen:
            roles = ", ".join(sorted(r.value for r in self.roles))
            kinds = ", ".join(sorted(k.value for k in self.kinds))
            raise SchemaError(
                f"{owner} found no column to protect: it works on {kinds} columns with role "
                f"{roles}. Name columns with columns=[...] or declare roles in the schema."
            )
        return chosen


@dataclass(frozen=True)
class StratifiedMethod(Method):
    """A method that can run within each stratum: with ``strata=[columns]`` the records are
    split by their values of those columns (a missing value is a stratum value of its own) and
    the method is applied to each stratum on its own, as sdcMicro does with ``strataVars``
    (e.g. microaggregation and PRAM per region). The strata, in the order of their first
    record, share the one random generator; the records keep their order. The report holds
    ``strata`` (how many) and ``by_stratum`` (each stratum's report)."""

    strata: tuple[str, ...] | None = field(default=None, kw_only=True)


def parameter_rules(cls: type[Method]) -> dict[str, ParamRule]:
    """The rule of every validated parameter of ``cls``: ``columns`` (and ``strata`` for a
    :class:`StratifiedMethod`) and the class's own ``constraints``; the reference's Methods page
    describes them with :func:`sdckit.core.params.describe_rule`."""
    rules: dict[str, ParamRule] = {"columns": [IsNone(), StrList()], **cls.constraints}
    if issubclass(cls, StratifiedMethod):
        rules["strata"] = [IsNone(), StrList()]
    return rules


def _run_by_stratum(method: Method, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                    rng: np.random.Generator, strata: tuple[str, ...]) -> Outcome:
    owner = type(method).__name__
    for name in strata:
        if name not in frame.columns:
            raise SchemaError(f"Stratum column {name!r} of {owner} is not in the data; "
                              f"the columns are: {', '.join(map(str, frame.columns))}.")
        if name in columns:
            raise SchemaError(f"{owner} cannot both protect column {name!r} and use it as a stratum.")
    labels = frame.groupby(list(strata), sort=False, dropna=False, observed=True).ngroup().to_numpy()
    pieces, infos, out_schema = [], [], schema
    for label in range(int(labels.max()) + 1):
        rows = np.flatnonzero(labels == label)
        part = frame.iloc[rows].copy()
        result = method.transform(part, columns, schema, rng)
        outcome = result if isinstance(result, Outcome) else Outcome(result, schema)
        if len(outcome.data) != len(rows):
            raise DataError(f"{owner} changed the number of records of a stratum; it cannot run per stratum.")
        pieces.append(outcome.data.set_axis(rows))
        infos.append(outcome.info)
        out_schema = outcome.schema
    data = pd.concat(pieces).sort_index().set_axis(frame.index)
    return Outcome(data, out_schema, {"strata": len(pieces), "by_stratum": infos} if any(infos) else {})


#: Largest magnitude a numeric value may have: sums of squares of 10^8 such values stay finite.
MAX_MAGNITUDE = 1e150


def require_finite(frame: pd.DataFrame, columns: tuple[str, ...], owner: str) -> None:
    """Raise :class:`DataError` naming the column and how many rows hold +-inf or a value
    beyond :data:`MAX_MAGNITUDE` (whose variance overflows): no method handles them, and they
    would otherwise come out as a column of missing values (issue 12 section 2)."""
    for name in columns:
        series = frame[name]
        if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
            continue
        values = series.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            bad = np.isinf(values) | (np.abs(values) > MAX_MAGNITUDE)
        if bad.any():
            raise DataError(
                f"{owner} cannot handle column {name!r}: {int(bad.sum())} record(s) hold an infinite "
                f"value or one beyond +-{MAX_MAGNITUDE:g} (sums of squares overflow), first at row "
                f"{int(bad.argmax())}. Remove them or rescale the column."
            )


def require_no_new_missing(before: pd.DataFrame, after: pd.DataFrame, owner: str) -> None:
    """Raise :class:`DataError` when a method left missing values in a column that had none:
    only methods whose job is suppression may (and they report how many cells)."""
    for name in after.columns:
        if name in before.columns and not before[name].isna().any():
            missing = int(after[name].isna().sum())
            if missing:
                raise DataError(
                    f"{owner} produced {missing} missing value(s) in column {name!r}, which had "
                    "none; nothing was released. Please report this with the method's parameters."
                )


def require_no_nan(frame: pd.DataFrame, columns: tuple[str, ...], owner: str) -> None:
    """Raise :class:`DataError` naming the first column and row that hold a missing value."""
    for name in columns:
        missing = frame[name].isna().to_numpy()
        if missing.any():
            row = frame.index[missing.argmax()]
            raise DataError(
                f"{owner} cannot handle missing values: column {name!r} is missing in "
                f"{int(missing.sum())} record(s), first at row {row!r}. Impute or remove them first."
            )


# --------------------------------------------------------------------------- registry
def register(cls: type[Method]) -> type[Method]:
    """Class decorator: register a method under its ``name`` so that recipes can use it."""
    return _REGISTRY.register(cls)


def registered() -> dict[str, type[Method]]:
    """The registered methods by name (only those whose modules have been imported)."""
    return _REGISTRY.registered()


def method_from_params(name: str, params: Mapping[str, Any], registry: Mapping[str, type[Method]]) -> Method:
    """Build the method registered as ``name`` from a parameter mapping (a recipe entry)."""
    if name not in registry:
        known = ", ".join(sorted(registry))
        raise ParameterError(f"Unknown method {name!r}; the methods are: {known}.")
    cls = registry[name]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise ParameterError(
            f"Unknown parameter(s) {', '.join(map(repr, unknown))} for method {name!r}; its "
            f"parameters are: {', '.join(fields)}."
        )
    required = [
        n for n, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in params]
    if missing:
        raise ParameterError(
            f"Method {name!r} needs parameter(s) {', '.join(map(repr, missing))}."
        )
    return cls(**params)
