"""Global recoding (generalisation, coarsening) of numeric and categorical columns
(seed 002 section 4.6.3; seed 003 section 2 for generalisation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.hierarchy import Hierarchy, as_hierarchy, format_number
from sdckit.core.errors import DataError, SchemaError
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, IsNone, Satisfies, StrList
from sdckit.core.schema import CATEGORICAL_KINDS, Kind, Role, Schema


def _is_breaks(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) >= 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and not np.isnan(np.asarray(value, dtype=float)).any()
        and bool(np.all(np.diff(np.asarray(value, dtype=float)) > 0))
    )


def _is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) > 0


#: Most distinct values a column's report counts (and a mapped ordinal column without an order
#: may have): the counts are kept in bounded memory, chunk by chunk (DESIGN.md section 8).
DISTINCT_CAP = 10_000


def _is_number_column(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def _distinct(series: pd.Series) -> np.ndarray | None:
    """The distinct present values of ``series`` (None beyond :data:`DISTINCT_CAP`)."""
    if isinstance(series.dtype, pd.CategoricalDtype):  # the categories its codes use
        codes = series.cat.codes.to_numpy()
        used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(series.cat.categories)))
        values = series.cat.categories.to_numpy(dtype=object)[used]
    else:
        values = pd.unique(series.dropna().to_numpy())
    return None if len(values) > DISTINCT_CAP else np.asarray(values)


def _union(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None:
        return None
    values = pd.unique(np.concatenate([a.astype(object), b.astype(object)])) if a.dtype != b.dtype \
        else pd.unique(np.concatenate([a, b]))
    return None if len(values) > DISTINCT_CAP else np.asarray(values)


@register
@dataclass(frozen=True)
class GlobalRecoding(Method):
    """Global recoding: numeric values into intervals, categories into coarser groups.

    *Numeric columns* (``bins``): each value is replaced by the interval it falls in. The
    intervals are left-closed, ``[b_0, b_1), [b_1, b_2), ..., [b_{m-1}, b_m]`` (the last one
    also closed on the right). ``bins`` is either the list of breaks ``b_0 < ... < b_m`` (use
    ``-inf``/``inf`` for open ends; a value outside ``[b_0, b_m]`` is refused) or a number of
    equal-width intervals between the column's minimum and maximum. The column becomes
    *ordinal*, its category order the interval order, held as an ordered pandas Categorical.

    *Categorical columns* (``mapping``): every value found in ``mapping`` becomes its group;
    a value not in the mapping is kept as it is (so a mapping names only the categories it
    merges, as sdcMicro's ``groupAndRename``). Keys are matched as given, then as strings
    (recipes written in TOML have string keys). A nominal column stays nominal. An ordinal
    column stays ordinal when each group is a run of consecutive categories (the groups then
    keep the order); otherwise it becomes nominal and the report warns.

    *Any column* (``hierarchy`` and ``level``): every value is replaced by its ancestor at
    ``level`` of a value-generalization hierarchy (:class:`sdckit.anonymity.Hierarchy`, or
    the path of one in ARX's CSV layout; seed 003 section 2). Values are matched as the
    hierarchy's strings; a value missing from the hierarchy is refused. The column becomes
    nominal (a hierarchy level carries no order). Give ``columns`` with a hierarchy.

    The same ``bins`` (``mapping``, ``hierarchy``) apply to every column protected: recode
    columns with different codings in separate steps (``columns=[...]``).

    Parameters
    ----------
    bins : int >= 2 or list of increasing floats, optional
        Number of equal-width intervals, or the breaks.
    mapping : mapping value -> group, optional
        The grouping of categorical values.
    labels : list of str, optional
        Names of the intervals (one per interval); default ``"[b_i, b_{i+1})"`` with the
        breaks written exactly (integers without ``.0``).
    hierarchy : Hierarchy or str (CSV path), optional
        A value-generalization hierarchy; not together with ``bins`` or ``mapping``.
    level : int >= 0, optional
        The hierarchy level to recode to (0 = the values themselves); needed with
        ``hierarchy`` and only with it, at most the hierarchy's height.
    columns : list of str, optional
        Columns to recode; default the quasi-identifiers that the given parameters apply to
        (numeric ones when ``bins`` is given, categorical ones when ``mapping`` is given).

    Notes
    -----
    ``nan_policy="pass"``: a missing value stays missing (it is never made a category).
    Equal-width ``bins`` put the column's observed minimum and maximum into the labels of the
    outer intervals, which discloses them: the report warns; give explicit breaks to avoid it.
    The report gives the number of categories before and after for each column (``None`` for
    more than 10,000 distinct values, which are not counted: the count is kept in bounded
    memory).

    Recoding is row-wise (DESIGN.md section 8): equal-width ``bins`` take the minimum and
    maximum of the whole column from a first pass (exact, so the breaks are the in-memory
    ones), a ``mapping`` of an ordinal column without an order its observed values; explicit
    breaks and hierarchies need no pass. Every engine, in memory or streaming a file by
    logical chunks, gives the same bytes.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "generalisation, also
    known as coarsening or global recoding"; seed 003 (Samarati/Sweeney k-anonymity chapter),
    section on generalisation; sdcMicro ``globalRecode`` and ``groupAndRename``.

    Examples
    --------
    >>> import pandas as pd
    >>> data = pd.DataFrame({"age": [17, 25, 40, 64]})
    >>> GlobalRecoding(bins=[0, 18, 65]).apply(data)["age"].tolist()
    ['[0, 18)', '[18, 65]', '[18, 65]', '[18, 65]']
    """

    bins: int | tuple[float, ...] | None = None
    mapping: Mapping[Any, Any] | None = None
    labels: tuple[str, ...] | None = None
    hierarchy: Hierarchy | str | None = None
    level: int | None = None
    name: ClassVar[str] = "global_recoding"
    constraints: ClassVar = {
        "bins": [IsNone(), Interval(int, 2, None), Satisfies(_is_breaks, "a list of increasing numbers")],
        "mapping": [IsNone(), Satisfies(_is_mapping, "a non-empty mapping value -> group")],
        "labels": [IsNone(), Satisfies(StrList().is_satisfied_by, "a list of distinct strings")],
        "hierarchy": [IsNone(), Satisfies(lambda v: isinstance(v, Hierarchy), "a Hierarchy or the path of a hierarchy CSV file")],
        "level": [IsNone(), Interval(int, 0, None)],
    }
    kinds: ClassVar = frozenset({Kind.NUMERIC, Kind.ORDINAL, Kind.NOMINAL})
    roles: ClassVar = frozenset({Role.QUASI})
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"bins": [0, 30, 50, 70, 120]}
    path_params: ClassVar = frozenset({"hierarchy"})
    needs: ClassVar[str] = "rows"

    def __post_init__(self) -> None:
        if isinstance(self.mapping, Mapping):
            object.__setattr__(self, "mapping", MappingProxyType(dict(self.mapping)))
        if isinstance(self.hierarchy, str | Path) and Path(self.hierarchy).is_file():
            object.__setattr__(self, "hierarchy", as_hierarchy(self.hierarchy, "the recoded column"))
        super().__post_init__()

    def check_parameters(self) -> None:
        if self.hierarchy is not None:
            if self.bins is not None or self.mapping is not None:
                raise self.param_error("hierarchy", "None when 'bins' or 'mapping' is given (one coding per step)")
            if self.level is None or self.level > self.hierarchy.height:
                raise self.param_error("level", f"an int in [0, {self.hierarchy.height}] (the hierarchy's levels)")
            if self.columns is None:
                raise self.param_error("columns", "a list of the columns the hierarchy describes")
            return
        if self.level is not None:
            raise self.param_error("level", "None when 'hierarchy' is None")
        if self.bins is None and self.mapping is None:
            raise self.param_error("bins", "given when 'mapping' and 'hierarchy' are None (give a coding)")
        if self.labels is not None:
            if self.bins is None:
                raise self.param_error("labels", "None when 'bins' is None (labels name intervals)")
            count = self.bins if isinstance(self.bins, int) else len(self.bins) - 1
            if len(self.labels) != count:
                raise self.param_error("labels", f"a list of {count} names, one per interval")

    # ----------------------------------------------------------------- columns
    def _usable(self, kind: Kind) -> bool:
        return self.hierarchy is not None or (kind is Kind.NUMERIC and self.bins is not None) or (
            kind in CATEGORICAL_KINDS and self.mapping is not None
        )

    def target_columns(self, schema: Schema) -> tuple[str, ...]:
        chosen = super().target_columns(schema)
        usable = tuple(n for n in chosen if self._usable(schema[n].kind))
        if self.columns is not None and usable != chosen:
            bad = next(n for n in chosen if n not in usable)
            need = "bins" if schema[bad].kind is Kind.NUMERIC else "mapping"
            raise SchemaError(
                f"GlobalRecoding cannot recode column {bad!r} ({schema[bad].kind.value}) without "
                f"'{need}'; give '{need}' or leave the column out."
            )
        if not usable:
            raise SchemaError(
                "GlobalRecoding found no column to recode: 'bins' apply to numeric columns and "
                "'mapping' to nominal/ordinal ones, among the quasi-identifiers. Name columns "
                "with columns=[...] or declare roles in the schema."
            )
        return usable

    # ----------------------------------------------------------------- recoding (row-wise)
    def needs_statistics(self) -> bool:
        """A first pass is needed for equal-width ``bins`` (the columns' minimum and maximum)
        and for a ``mapping`` (the observed values of an ordinal column without an order)."""
        return isinstance(self.bins, int) or self.mapping is not None

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> dict[str, Any]:
        """Per column: minimum and maximum of a numeric column, observed values otherwise."""
        out: dict[str, Any] = {}
        for name in columns:
            series = chunk[name]
            if isinstance(self.bins, int) and _is_number_column(series):
                values = series.to_numpy(dtype=float, na_value=np.nan)
                present = values[~np.isnan(values)]
                out[name] = ("range", (float(present.min()), float(present.max())) if len(present) else None)
            else:
                out[name] = ("values", _distinct(series))
        return out

    def merge_statistics(self, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, (kind, a) in first.items():
            b = second[name][1]
            if kind == "range":
                out[name] = (kind, a if b is None else b if a is None else (min(a[0], b[0]), max(a[1], b[1])))
            else:
                out[name] = (kind, _union(a, b))
        return out

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: dict[str, Any] | None,
    ) -> Outcome:
        info: dict[str, Any] = {"before": {}, "after": {}, "warnings": []}
        for name in columns:
            column = schema[name]
            info["before"][name] = _distinct(chunk[name])
            stats = (statistics or {}).get(name, (None, None))[1]
            if self.hierarchy is not None:
                chunk[name] = self._generalize(chunk[name])
                schema = schema.replace_column(name, kind=Kind.NOMINAL, order=None)
            elif column.kind is Kind.NUMERIC:
                chunk[name], order = self._intervals(chunk[name], info["warnings"], stats)
                schema = schema.replace_column(name, kind=Kind.ORDINAL, order=order)
            else:
                chunk[name], kind, order = self._groups(chunk[name], column.kind, column.order, stats)
                if column.kind is Kind.ORDINAL and kind is Kind.NOMINAL:
                    info["warnings"].append(
                        f"Column {name!r}: the mapping merges non-consecutive categories of its "
                        "order, so the recoded column is nominal."
                    )
                schema = schema.replace_column(name, kind=kind, order=order)
            info["after"][name] = _distinct(chunk[name])
        return Outcome(chunk, schema, info)

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        """Categories before and after per column (``None``: more than :data:`DISTINCT_CAP`,
        not counted with bounded memory) and the warnings, each once."""
        out: dict[str, Any] = {"categories_before": {}, "categories_after": {}, "warnings": []}
        for key, target in (("before", "categories_before"), ("after", "categories_after")):
            for name in infos[0][key]:
                merged = infos[0][key][name]
                for info in infos[1:]:
                    merged = _union(merged, info[key][name])
                out[target][name] = None if merged is None else len(merged)
        for info in infos:
            out["warnings"].extend(w for w in info["warnings"] if w not in out["warnings"])
        return out

    def _generalize(self, series: pd.Series) -> pd.Series:
        present = series.notna().to_numpy()
        out = pd.Series(np.full(len(series), np.nan, dtype=object), index=series.index)
        out[present] = self.hierarchy.generalize(series[present], self.level, column=str(series.name))
        return out

    def _intervals(self, series: pd.Series, warnings: list[str], span: tuple[float, float] | None
                   ) -> tuple[pd.Categorical, tuple[str, ...]]:
        values = series.to_numpy(dtype=float, na_value=np.nan)
        present = ~np.isnan(values)
        if isinstance(self.bins, int):
            if span is None:
                raise DataError(f"Column {series.name!r} has no value to take equal-width bins from.")
            low, high = span
            if low == high:
                high = low + 1.0
            breaks = np.linspace(low, high, self.bins + 1)
            warnings.append(
                f"Column {series.name!r}: equal-width bins disclose its observed minimum "
                f"({low:g}) and maximum in the interval labels; give explicit breaks to avoid it."
            )
        else:
            breaks = np.asarray(self.bins, dtype=float)
            outside = present & ((values < breaks[0]) | (values > breaks[-1]))
            if outside.any():
                row = series.index[outside.argmax()]
                raise DataError(
                    f"Column {series.name!r} holds a value at row {row!r} "
                    f"outside the breaks [{breaks[0]:g}, {breaks[-1]:g}]; widen the outer breaks "
                    "(-inf and inf are allowed)."
                )
        m = len(breaks) - 1
        labels = self.labels or tuple(
            f"[{format_number(breaks[i])}, {format_number(breaks[i + 1])}{']' if i == m - 1 else ')'}"
            for i in range(m)
        )
        codes = np.clip(np.searchsorted(breaks, values, side="right") - 1, 0, m - 1)
        codes = np.where(present, codes, -1)
        return pd.Categorical.from_codes(codes, categories=list(labels), ordered=True), tuple(labels)

    def _groups(
        self, series: pd.Series, kind: Kind, order: tuple[Any, ...] | None, observed: np.ndarray | None
    ) -> tuple[pd.Series, Kind, tuple[Any, ...] | None]:
        mapping = self.mapping

        def group(value: Any) -> Any:
            if value in mapping:
                return mapping[value]
            return mapping.get(str(value), value)

        recoded = series.astype(object).map(lambda v: v if pd.isna(v) else group(v))
        if kind is not Kind.ORDINAL:
            return recoded, Kind.NOMINAL, None
        if order is None:  # numeric codes of an ordinal column: their sorted values are the order
            if observed is None:
                raise DataError(f"Column {series.name!r} (ordinal, without a category order) has more than "
                                f"{DISTINCT_CAP} distinct values; declare its order in the schema.")
            order = tuple(sorted(observed.tolist()))
        groups = [group(v) for v in order]
        runs = [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
        if len(runs) != len(set(runs)):
            return recoded, Kind.NOMINAL, None
        return recoded, Kind.ORDINAL, tuple(runs)
