"""Column roles and kinds (DESIGN.md section 2).

Every column of a data set has a *role* — what it means for disclosure — and a *kind* — what
operations its values allow:

* roles: ``identifier`` (names a person directly; dropped from every release unless the user
  insists), ``quasi`` (quasi-identifier: can be linked with outside data), ``confidential``
  (sensitive, the value an intruder wants) and ``non_confidential``;
* kinds: ``numeric``, ``ordinal`` (with an explicit category order), ``nominal`` and ``date``.

Kinds are inferred from the frame's dtypes unless overridden. A column nobody gave a role has
no declared role (``None``); when no column has one, methods work on every column of a kind
they accept, otherwise undeclared columns are released unchanged, like non-confidential ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.result import plain


class Role(str, Enum):
    """What a column means for disclosure."""

    IDENTIFIER = "identifier"
    QUASI = "quasi"
    CONFIDENTIAL = "confidential"
    NON_CONFIDENTIAL = "non_confidential"


class Kind(str, Enum):
    """What a column's values allow: arithmetic, order, or equality only."""

    NUMERIC = "numeric"
    ORDINAL = "ordinal"
    NOMINAL = "nominal"
    DATE = "date"


#: Kinds whose values are ordered, so that ranks and reverse mapping apply.
ORDERED_KINDS = frozenset({Kind.NUMERIC, Kind.ORDINAL, Kind.DATE})
#: Kinds of categorical columns (PRAM, recoding, k-anonymity on categories).
CATEGORICAL_KINDS = frozenset({Kind.ORDINAL, Kind.NOMINAL})

_ROLE_ALIASES = {
    "identifier": Role.IDENTIFIER,
    "identifiers": Role.IDENTIFIER,
    "quasi": Role.QUASI,
    "quasi_identifier": Role.QUASI,
    "quasi-identifier": Role.QUASI,
    "confidential": Role.CONFIDENTIAL,
    "sensitive": Role.CONFIDENTIAL,
    "non_confidential": Role.NON_CONFIDENTIAL,
    "non-confidential": Role.NON_CONFIDENTIAL,
}


def parse_role(value: str | Role) -> Role:
    """Return the :class:`Role` named ``value`` or raise :class:`SchemaError`."""
    if isinstance(value, Role):
        return value
    try:
        return _ROLE_ALIASES[str(value).strip().lower()]
    except KeyError:
        allowed = ", ".join(r.value for r in Role)
        raise SchemaError(f"Unknown role {value!r}; use one of: {allowed}.") from None


def parse_kind(value: str | Kind) -> Kind:
    """Return the :class:`Kind` named ``value`` or raise :class:`SchemaError`."""
    if isinstance(value, Kind):
        return value
    try:
        return Kind(str(value).strip().lower())
    except ValueError:
        allowed = ", ".join(k.value for k in Kind)
        raise SchemaError(f"Unknown kind {value!r}; use one of: {allowed}.") from None


@dataclass(frozen=True)
class Column:
    """One column's role, kind and, for an ordinal column, its category order."""

    name: str
    kind: Kind
    role: Role | None = None
    order: tuple[Any, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind.value}
        out["role"] = self.role.value if self.role else None
        if self.order is not None:
            out["order"] = plain(self.order)
        return out


def infer_kind(series: pd.Series) -> tuple[Kind, tuple[Any, ...] | None]:
    """Infer a column's kind (and order, for an ordered categorical) from its dtype.

    Booleans and strings are nominal; an ordered pandas Categorical is ordinal with its
    category order; datetimes are dates; other numbers are numeric.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if dtype.ordered:
            return Kind.ORDINAL, tuple(dtype.categories)
        return Kind.NOMINAL, None
    if pd.api.types.is_bool_dtype(dtype):
        return Kind.NOMINAL, None
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return Kind.DATE, None
    if pd.api.types.is_numeric_dtype(dtype):
        return Kind.NUMERIC, None
    return Kind.NOMINAL, None


@dataclass(frozen=True)
class Schema:
    """Roles and kinds of a data set's columns, in column order.

    Build one with :meth:`Schema.infer` (kinds from dtypes, roles from lists) or
    :meth:`Schema.from_dict` (the form written into a manifest or a recipe).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"id": [1, 2], "age": [30, 41], "income": [2.5, 3.0]})
    >>> schema = Schema.infer(frame, identifier=["id"], quasi=["age"], confidential=["income"])
    >>> schema["age"].role.value, schema["age"].kind.value
    ('quasi', 'numeric')
    """

    columns: tuple[Column, ...] = field(default_factory=tuple)

    # ----------------------------------------------------------------- construction
    @classmethod
    def infer(
        cls,
        frame: pd.DataFrame,
        *,
        identifier: Iterable[str] = (),
        quasi: Iterable[str] = (),
        confidential: Iterable[str] = (),
        non_confidential: Iterable[str] = (),
        kinds: Mapping[str, str | Kind] | None = None,
        orders: Mapping[str, Sequence[Any]] | None = None,
    ) -> Schema:
        """Infer kinds from ``frame``'s dtypes and attach the given roles.

        ``kinds`` overrides inferred kinds column by column; ``orders`` gives the category
        order of ordinal columns (required for a non-numeric ordinal column that is not an
        ordered pandas Categorical). Every named column must exist, and a column may have
        one role only.
        """
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"Expected a pandas DataFrame, got {type(frame).__name__}.")
        roles: dict[str, Role] = {}
        for role, names in (
            (Role.IDENTIFIER, identifier),
            (Role.QUASI, quasi),
            (Role.CONFIDENTIAL, confidential),
            (Role.NON_CONFIDENTIAL, non_confidential),
        ):
            for name in _names(names, role.value):
                if name in roles and roles[name] is not role:
                    raise SchemaError(
                        f"Column {name!r} is given two roles, {roles[name].value!r} and "
                        f"{role.value!r}; give each column one role."
                    )
                roles[name] = role
        kinds = {k: parse_kind(v) for k, v in (kinds or {}).items()}
        orders = {k: tuple(v) for k, v in (orders or {}).items()}
        _check_known(frame, roles, "role")
        _check_known(frame, kinds, "kind")
        _check_known(frame, orders, "order")
        cols = []
        for name in frame.columns:
            kind, order = infer_kind(frame[name])
            if name in kinds:
                kind = kinds[name]
                if kind is not Kind.ORDINAL:
                    order = None
            if name in orders:
                if kind is not Kind.ORDINAL:
                    raise SchemaError(
                        f"Column {name!r} has a category order but its kind is {kind.value!r}; "
                        "set its kind to 'ordinal' or drop the order."
                    )
                order = orders[name]
            if kind is Kind.ORDINAL and order is None:
                if not pd.api.types.is_numeric_dtype(frame[name].dtype):
                    raise SchemaError(
                        f"Ordinal column {name!r} needs an explicit category order; give it in "
                        f"orders={{{name!r}: [...]}} (or [schema.orders] in a recipe)."
                    )
            cols.append(Column(str(name), kind, roles.get(name), order))
        schema = cls(tuple(cols))
        schema.validate(frame)
        return schema

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], frame: pd.DataFrame) -> Schema:
        """Build a schema from recipe/manifest form, inferring what is not given.

        ``data`` may hold role lists (``identifier``, ``quasi``, ``confidential``,
        ``non_confidential``), ``kinds`` and ``orders`` mappings; unknown keys are refused.
        """
        allowed = {"identifier", "quasi", "confidential", "non_confidential", "kinds", "orders"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise SchemaError(
                f"Unknown schema key(s) {', '.join(map(repr, unknown))}; allowed: "
                f"{', '.join(sorted(allowed))}."
            )
        return cls.infer(
            frame,
            identifier=data.get("identifier", ()),
            quasi=data.get("quasi", ()),
            confidential=data.get("confidential", ()),
            non_confidential=data.get("non_confidential", ()),
            kinds=data.get("kinds"),
            orders=data.get("orders"),
        )

    # ----------------------------------------------------------------- access
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __contains__(self, name: object) -> bool:
        return any(c.name == name for c in self.columns)

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise SchemaError(
            f"Column {name!r} is not in the data; the columns are: {', '.join(self.names)}."
        )

    @property
    def roles_declared(self) -> bool:
        """True when at least one column has a role."""
        return any(c.role is not None for c in self.columns)

    def with_role(self, role: Role) -> tuple[str, ...]:
        """Names of the columns with ``role``, in column order."""
        return tuple(c.name for c in self.columns if c.role is role)

    def select(
        self, roles: Iterable[Role] | None = None, kinds: Iterable[Kind] | None = None
    ) -> tuple[str, ...]:
        """Columns whose kind is in ``kinds`` and whose role is in ``roles``.

        When no column has a declared role, roles are not used to select: every column of a
        matching kind is returned (the rule for data given without a schema).
        """
        roles = set(roles) if roles is not None else None
        kinds = set(kinds) if kinds is not None else None
        use_roles = roles is not None and self.roles_declared
        return tuple(
            c.name
            for c in self.columns
            if (kinds is None or c.kind in kinds) and (not use_roles or c.role in roles)
        )

    # ----------------------------------------------------------------- change
    def replace_column(self, name: str, **changes: Any) -> Schema:
        """A copy with column ``name``'s fields changed (e.g. ``kind=Kind.NOMINAL``)."""
        self[name]  # raises if absent
        return Schema(tuple(replace(c, **changes) if c.name == name else c for c in self.columns))

    def subset(self, names: Iterable[str]) -> Schema:
        """A copy restricted to ``names`` (in the schema's column order)."""
        keep = set(names)
        return Schema(tuple(c for c in self.columns if c.name in keep))

    # ----------------------------------------------------------------- checks
    def validate(self, frame: pd.DataFrame) -> None:
        """Check that ``frame`` has exactly the schema's columns and fits their kinds.

        Raises :class:`SchemaError` naming the column (and row, for a bad value).
        """
        frame_cols = [str(c) for c in frame.columns]
        missing = [n for n in self.names if n not in frame_cols]
        if missing:
            raise SchemaError(
                f"Column(s) {', '.join(map(repr, missing))} of the schema are not in the data; "
                f"the data has: {', '.join(frame_cols)}."
            )
        for col in self.columns:
            series = frame[col.name]
            if col.kind is Kind.NUMERIC and not (
                pd.api.types.is_numeric_dtype(series.dtype)
                and not pd.api.types.is_bool_dtype(series.dtype)
            ):
                bad = _first_non_numeric(series)
                where = f" (row {bad[0]}: {bad[1]!r})" if bad else ""
                raise SchemaError(
                    f"Column {col.name!r} is declared numeric but holds non-numeric values{where}; "
                    "fix the data or declare the column 'nominal' or 'ordinal'."
                )
            if col.kind is Kind.DATE and not pd.api.types.is_datetime64_any_dtype(series.dtype):
                raise SchemaError(
                    f"Column {col.name!r} is declared a date but has dtype {series.dtype}; "
                    "convert it with pandas.to_datetime or declare another kind."
                )
            if col.kind is Kind.ORDINAL and col.order is not None:
                allowed = set(col.order)
                values = series.dropna()
                outside = ~values.isin(allowed)
                if outside.any():
                    row = values.index[outside.to_numpy().argmax()]
                    raise SchemaError(
                        f"Column {col.name!r} holds a value at row {row} that is not in its "
                        "category order; add the column's categories to the order."
                    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for the manifest)."""
        return {"columns": [c.to_dict() for c in self.columns]}


def _names(names: Iterable[str] | str, what: str) -> list[str]:
    if isinstance(names, str):
        names = [names]
    out = list(names)
    for n in out:
        if not isinstance(n, str):
            raise SchemaError(f"The {what} list must hold column names (strings); got {n!r}.")
    return out


def _check_known(frame: pd.DataFrame, named: Mapping[str, Any], what: str) -> None:
    cols = [str(c) for c in frame.columns]
    for name in named:
        if name not in cols:
            raise SchemaError(
                f"Column {name!r} (given a {what}) is not in the data; the columns are: "
                f"{', '.join(cols)}."
            )


def _first_non_numeric(series: pd.Series) -> tuple[Any, Any] | None:
    coerced = pd.to_numeric(series, errors="coerce")
    bad = coerced.isna() & series.notna()
    if bad.any():
        row = series.index[bad.to_numpy().argmax()]
        return row, series[row]
    return None
