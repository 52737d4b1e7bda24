"""Value-generalization hierarchies (seed 003 section 2, Fig. 3; ARX's CSV layout).

A hierarchy for one attribute is a table with one row per original value and one column per
generalization level: column 0 holds the value itself, column ``h`` (the *height*) a single
value such as ``*``. Seed 003 requires the domains of one attribute to be totally ordered
(each level is a function of the one below, condition C1) and the top domain to be a
singleton (condition C2); :class:`Hierarchy` checks both when it is built.

Values are matched as strings: integers are written without a decimal point (``39``), dates
as ISO dates (``2024-03-15``), times with a time zone with their UTC offset, anything else with
``str``; a column whose distinct values read the same (the number ``1`` and the text ``"1"``) is
refused (:func:`value_keys`). A hierarchy is an immutable value
(hashable, compared by content); in a manifest it appears as its shape and a SHA-256 of its
canonical CSV, never as its thousands of values (:meth:`Hierarchy.to_manifest`).

The keys and the codes of a column live in :mod:`sdckit.core.hierarchy_keys`; this module
re-exports :func:`value_keys` and :func:`factorize`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.core.hierarchy_keys import factorize, value_keys
from sdckit.core.params import Satisfies

__all__ = [
    "HIERARCHY_MAPPING", "TOP", "Hierarchies", "Hierarchy", "HierarchyLike", "as_hierarchy",
    "factorize", "format_number", "freeze_hierarchies", "is_hierarchy_mapping", "value_keys",
]

TOP = "*"


def _keys(values: Iterable[Any]) -> np.ndarray:
    return value_keys(pd.Series(list(values)))


class Hierarchy:
    """A value-generalization hierarchy: one row per original value, one column per level.

    Parameters
    ----------
    table : sequence of rows
        Row ``i`` lists value ``i`` and its generalizations, level 0 first. Every row has the
        same length (the number of levels, at least 1).
    add_top : bool, default False
        Append a level holding only ``"*"`` when the last level has more than one value
        (otherwise such a table is refused, seed 003 condition C2).
    source : str, optional
        Where the table came from (a file path), shown in the manifest.

    Raises
    ------
    DataError
        When rows have different lengths, a value appears twice at level 0, a level is not a
        function of the one below (naming the value and the levels) or the top level holds
        more than one value. The message names ``source`` when there is one.

    Examples
    --------
    >>> h = Hierarchy.masking(["94142", "94141", "94139", "94138"], steps=(1, 2))
    >>> h.height, h.generalize(["94142"], 1).tolist()
    (2, ['9414*'])
    """

    __slots__ = ("_table", "_codes", "_labels", "_index", "source", "_digest")

    def __init__(self, table: Sequence[Sequence[Any]], *, add_top: bool = False, source: str | None = None):
        self.source = None if source is None else str(source)
        rows = [tuple(str(v) for v in row) for row in table]
        where = f" in hierarchy {self.source}" if self.source else ""
        if not rows or not rows[0]:
            raise DataError(f"The hierarchy{where} is empty; it needs one row per value.")
        width = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != width:
                raise DataError(
                    f"Row {i + 1}{where} has {len(row)} levels but row 1 has {width}; every "
                    "value needs one entry per level."
                )
        array = np.array(rows, dtype=object).reshape(len(rows), width)
        if add_top and len(set(array[:, -1])) > 1:
            array = np.column_stack([array, np.full(len(rows), TOP, dtype=object)])
        self._table = array
        self._validate(where)
        codes, labels = [], []
        for level in range(array.shape[1]):
            c, u = pd.factorize(array[:, level])
            codes.append(c.astype(np.int64))
            labels.append(np.asarray(u, dtype=object))
        self._codes = tuple(codes)
        self._labels = tuple(labels)
        self._index = pd.Index(array[:, 0])
        text = "\n".join(";".join(row) for row in array.tolist())
        self._digest = hashlib.sha256(text.encode()).hexdigest()

    def _validate(self, where: str) -> None:
        table = self._table
        values, counts = np.unique(table[:, 0].astype(str), return_counts=True)
        if (counts > 1).any():
            raise DataError(
                f"Value {str(values[counts > 1][0])!r} appears {counts[counts > 1][0]} times at level 0"
                f"{where}; each original value needs exactly one row."
            )
        for level in range(table.shape[1] - 1):
            frame = pd.DataFrame({"low": table[:, level], "high": table[:, level + 1]})
            spread = frame.groupby("low", sort=True)["high"].nunique()
            if (spread > 1).any():
                bad = spread.index[(spread > 1).argmax()]
                targets = sorted(set(frame.loc[frame["low"] == bad, "high"]))
                raise DataError(
                    f"Level {level + 1}{where} is not a function of level {level}: value {bad!r} "
                    f"at level {level} generalizes to {', '.join(map(repr, targets))} at level "
                    f"{level + 1}. Each value must have one parent (seed 003, condition C1)."
                )
        top = sorted(set(table[:, -1]))
        if len(top) > 1:
            shown = ", ".join(map(repr, top[:5])) + (", ..." if len(top) > 5 else "")
            raise DataError(
                f"The top level {table.shape[1] - 1}{where} holds {len(top)} values ({shown}); it "
                "must hold one (seed 003, condition C2). Add a last column with '*' or build "
                "the hierarchy with add_top=True."
            )

    # ------------------------------------------------------------------ shape
    @property
    def levels(self) -> int:
        """Number of levels, level 0 (the original values) included."""
        return self._table.shape[1]

    @property
    def height(self) -> int:
        """The top level's number (``levels - 1``)."""
        return self._table.shape[1] - 1

    @property
    def values(self) -> tuple[str, ...]:
        """The original values (level 0), in row order."""
        return tuple(self._table[:, 0])

    def table(self) -> pd.DataFrame:
        """The hierarchy as a frame with columns ``level0 .. levelH``."""
        return pd.DataFrame(self._table, columns=[f"level{i}" for i in range(self.levels)])

    def level_sizes(self) -> tuple[int, ...]:
        """Number of distinct values at each level."""
        return tuple(len(u) for u in self._labels)

    def codes(self, level: int) -> np.ndarray:
        """Integer code at ``level`` of each row (value) of the table."""
        return self._codes[level]

    def labels(self, level: int) -> np.ndarray:
        """The distinct values of ``level``, indexed by the codes of :meth:`codes`."""
        return self._labels[level]

    def rollup(self, low: int, high: int) -> np.ndarray:
        """Array ``m`` with ``m[code at low] = code at high`` (levels are functions)."""
        out = np.zeros(len(self._labels[low]), dtype=np.int64)
        out[self._codes[low]] = self._codes[high]
        return out

    def leaves(self, level: int) -> np.ndarray:
        """Number of original values under each value of ``level`` (indexed by code)."""
        return np.bincount(self._codes[level], minlength=len(self._labels[level]))

    # ------------------------------------------------------------------ data
    def index_of(self, values: Any, column: str = "the column") -> np.ndarray:
        """Row of each data value in the table; :class:`DataError` names a missing value."""
        codes, rows = self.rows_of(values, column)
        return rows[codes]

    def rows_of(self, values: Any, column: str = "the column") -> tuple[np.ndarray, np.ndarray]:
        """:meth:`index_of` in two parts: a code per value (ints) and the table row of each
        code, so that ``rows[codes]`` is the row of each value (for large data, gathered
        straight into a narrow type)."""
        series = values if isinstance(values, pd.Series) else pd.Series(list(values))
        codes, uniques = factorize(series)
        keys = value_keys(uniques)
        if len(pd.unique(keys)) < len(keys):  # e.g. the number 1 and the text "1" of an object column
            raise DataError(  # never the values themselves: they may be confidential (issue 12 §3)
                f"Column {column!r} holds distinct values of different types that read the same "
                "(e.g. the number 1 and the text '1'), which a hierarchy cannot tell apart; give "
                "the column one type (e.g. convert it with astype(str), or to numbers).")
        found = self._index.get_indexer(keys)
        if (found < 0).any():
            bad = int((found < 0).argmax())
            first = int((codes == bad).argmax())
            where = f" (from {self.source})" if self.source else ""
            row = series.index[first]
            row = row.item() if isinstance(row, np.generic) else row
            missing = int(np.isin(codes, np.flatnonzero(found < 0)).sum())
            what = "a missing value" if pd.isna(uniques.iloc[bad]) else "a value of the data"
            raise DataError(  # never the value itself: it may be confidential (issue 12 §3)
                f"The hierarchy of column {column!r}{where} has no row for {what} "
                f"(first at row {row!r}, {missing} record(s) in all); add the column's values to the hierarchy."
            )
        return codes, found

    def generalize(self, values: Any, level: int, column: str = "the column") -> np.ndarray:
        """The values generalized to ``level`` (an object array of strings)."""
        if not 0 <= level <= self.height:
            raise ParameterError(
                f"The 'level' parameter of Hierarchy.generalize must be an int in [0, "
                f"{self.height}]. Got {level!r} instead."
            )
        return self._table[self.index_of(values, column), level]

    # ------------------------------------------------------------------ files
    @classmethod
    def from_csv(cls, path: str | Path, sep: str = ";", add_top: bool = False) -> Hierarchy:
        """Read a hierarchy in ARX's layout (no header, ``sep``-separated; ``.gz`` accepted)."""
        path = Path(path)
        try:
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except OSError as exc:
            raise DataError(f"Cannot read hierarchy file {str(path)!r}: {exc.strerror or exc}.") from None
        text = raw.decode("utf-8-sig")
        rows = [line.split(sep) for line in text.splitlines() if line.strip()]
        return cls(rows, add_top=add_top, source=str(path))

    def to_csv(self, path: str | Path, sep: str = ";") -> None:
        """Write the hierarchy in ARX's layout (atomically)."""
        from sdckit.core.atomic import write_text_atomic

        write_text_atomic(Path(path), self.to_text(sep))

    def to_text(self, sep: str = ";") -> str:
        buffer = io.StringIO()
        for row in self._table.tolist():
            buffer.write(sep.join(row) + "\n")
        return buffer.getvalue()

    # ------------------------------------------------------------------ value semantics
    def to_manifest(self) -> dict[str, Any]:
        """Compact description: source, levels, distinct values per level, SHA-256."""
        return {
            "class": "Hierarchy",
            "source": self.source,
            "levels": self.levels,
            "level_sizes": list(self.level_sizes()),
            "sha256": self._digest,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hierarchy) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def __repr__(self) -> str:
        src = f", source={self.source!r}" if self.source else ""
        return f"Hierarchy(values={len(self._table)}, levels={self.levels}{src}, sha256={self._digest[:12]})"

    # ------------------------------------------------------------------ builders
    @classmethod
    def intervals(cls, values: Iterable[Any], widths: Sequence[float], start: float | None = None) -> Hierarchy:
        """Numeric intervals, one width per level (each a multiple of the previous), then ``*``.

        Integer values get closed labels ``[20-29]``; other numbers half-open ``[20-30)``.
        ``start`` anchors the intervals (default: the smallest value rounded down to the
        first width).
        """
        keys = np.unique(_keys(values))
        numbers = pd.to_numeric(pd.Series(keys), errors="coerce").to_numpy(dtype=float)
        if np.isnan(numbers).any():
            bad = keys[np.isnan(numbers)][0]
            raise DataError(f"Hierarchy.intervals needs numbers; got {bad!r}.")
        widths = [float(w) for w in widths]
        for i, w in enumerate(widths):
            if w <= 0 or (i and (w / widths[i - 1]) != round(w / widths[i - 1])):
                raise ParameterError(
                    "The 'widths' parameter of Hierarchy.intervals must be positive widths, each "
                    f"a multiple of the one before. Got {tuple(widths)!r} instead."
                )
        integral = bool(np.all(numbers == np.round(numbers)))
        origin = np.floor(numbers.min() / widths[0]) * widths[0] if start is None else float(start)
        columns = [keys]
        for w in widths:
            low = origin + np.floor((numbers - origin) / w) * w
            if integral:
                labels = [f"[{format_number(a)}-{format_number(a + w - 1)}]" for a in low]
            else:
                labels = [f"[{format_number(a)}-{format_number(a + w)})" for a in low]
            columns.append(np.array(labels, dtype=object))
        return cls(np.column_stack(columns), add_top=True)

    @classmethod
    def masking(cls, values: Iterable[Any], steps: Sequence[int] | None = None) -> Hierarchy:
        """Mask trailing characters with ``*``: ``94142 -> 9414* -> 941** -> ... -> *****``.

        ``steps`` gives the number of masked characters per level (default 1, 2, ..., the
        length). Values must all have the same length.
        """
        keys = np.unique(_keys(values))
        lengths = {len(k) for k in keys}
        if len(lengths) != 1:
            raise DataError(
                "Hierarchy.masking needs values of one length; got lengths "
                f"{sorted(lengths)}. Pad the values (e.g. zero-fill ZIP codes) first."
            )
        length = lengths.pop()
        steps = list(range(1, length + 1)) if steps is None else [int(s) for s in steps]
        if any(s <= 0 or s > length for s in steps) or steps != sorted(set(steps)):
            raise ParameterError(
                "The 'steps' parameter of Hierarchy.masking must be increasing counts in "
                f"[1, {length}]. Got {tuple(steps)!r} instead."
            )
        columns = [keys] + [np.array([k[: length - s] + "*" * s for k in keys], dtype=object) for s in steps]
        return cls(np.column_stack(columns), add_top=True)

    @classmethod
    def dates(cls, values: Iterable[Any], levels: Sequence[str] = ("month", "year", "5 years")) -> Hierarchy:
        """Dates generalized to month (``2024-03``), year (``2024``), 5 or 10 years
        (``2020-2024``), then ``*``; ``levels`` picks a coarsening subsequence."""
        stamps = pd.to_datetime(pd.Series(list(values)), errors="coerce").dropna().drop_duplicates()
        stamps = stamps.sort_values().reset_index(drop=True)
        allowed = ("month", "year", "5 years", "10 years")
        if not levels or any(x not in allowed for x in levels) or list(levels) != sorted(
            levels, key=allowed.index
        ) or len(set(levels)) != len(levels):
            raise ParameterError(
                f"The 'levels' parameter of Hierarchy.dates must be increasing levels among "
                f"{allowed}. Got {tuple(levels)!r} instead."
            )
        columns = [value_keys(stamps)]
        years = stamps.dt.year.to_numpy()
        for level in levels:
            if level == "month":
                columns.append(np.asarray(stamps.dt.strftime("%Y-%m"), dtype=object))
            elif level == "year":
                columns.append(years.astype(str).astype(object))
            else:
                span = 5 if level == "5 years" else 10
                low = years // span * span
                columns.append(np.array([f"{a}-{a + span - 1}" for a in low], dtype=object))
        return cls(np.column_stack(columns), add_top=True)

    @classmethod
    def ordered_groups(cls, order: Sequence[Any], sizes: Sequence[int]) -> Hierarchy:
        """Consecutive values of an ordered domain in blocks of ``sizes[i]`` at level ``i+1``
        (each a multiple of the previous), labelled ``[first..last]``, then ``*``."""
        keys = _keys(order)
        sizes = [int(s) for s in sizes]
        if any(s < 1 for s in sizes) or any(b % a for a, b in zip(sizes, sizes[1:])):
            raise ParameterError(
                "The 'sizes' parameter of Hierarchy.ordered_groups must be positive block sizes, "
                f"each a multiple of the one before. Got {tuple(sizes)!r} instead."
            )
        columns = [keys]
        positions = np.arange(len(keys))
        for s in sizes:
            block = positions // s
            first = keys[np.minimum(block * s, len(keys) - 1)]
            last = keys[np.minimum(block * s + s - 1, len(keys) - 1)]
            columns.append(np.array([a if a == b else f"[{a}..{b}]" for a, b in zip(first, last)], dtype=object))
        return cls(np.column_stack(columns), add_top=True)

    @classmethod
    def groups(cls, *mappings: Mapping[Any, Any]) -> Hierarchy:
        """Explicit groups: ``mappings[0]`` maps each value to its level-1 group,
        ``mappings[1]`` each level-1 group to its level-2 group, and so on; ``*`` on top."""
        if not mappings:
            raise ParameterError("Hierarchy.groups needs at least one mapping from values to groups.")
        current = [str(v) for v in mappings[0]]
        columns = [np.array(current, dtype=object)]
        for level, mapping in enumerate(mappings):
            lookup = {str(k): str(v) for k, v in mapping.items()}
            missing = [v for v in columns[-1] if v not in lookup]
            if missing:
                raise DataError(
                    f"Hierarchy.groups: value {missing[0]!r} at level {level} has no group in "
                    f"mapping {level + 1}; add it."
                )
            columns.append(np.array([lookup[v] for v in columns[-1]], dtype=object))
        return cls(np.column_stack(columns), add_top=True)


def format_number(x: float) -> str:
    """A number as a label: integers without ``.0``, others in their shortest exact form."""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


HierarchyLike = Hierarchy | str | Path


def as_hierarchy(value: HierarchyLike, column: str) -> Hierarchy:
    """A :class:`Hierarchy`, or one read from a CSV path (ARX layout, ``;``)."""
    if isinstance(value, Hierarchy):
        return value
    if isinstance(value, str | Path):
        return Hierarchy.from_csv(value)
    raise ParameterError(
        f"The hierarchy of column {column!r} must be a Hierarchy or a CSV path. Got {value!r} instead."
    )


def is_hierarchy_mapping(value: Any) -> bool:
    """True for a non-empty mapping from column names to hierarchies or paths."""
    return (
        isinstance(value, Mapping)
        and len(value) > 0
        and all(isinstance(k, str) and isinstance(v, Hierarchy | str | Path) for k, v in value.items())
    )


#: The parameter rule of a method's ``hierarchies`` (one message for every method).
HIERARCHY_MAPPING = Satisfies(
    is_hierarchy_mapping, "a mapping from column names to Hierarchy values or CSV paths"
)


def freeze_hierarchies(value: Any) -> Any:
    """A valid hierarchy mapping as an immutable :class:`Hierarchies` (read once, hashable);
    anything else unchanged, for the parameter validator to reject with its message."""
    if is_hierarchy_mapping(value) and not isinstance(value, Hierarchies):
        return Hierarchies(value)
    return value


class Hierarchies(Mapping[str, Hierarchy]):
    """An immutable, hashable mapping from column names to hierarchies (method parameters)."""

    __slots__ = ("_items",)

    def __init__(self, mapping: Mapping[str, HierarchyLike]):
        self._items = tuple((str(k), as_hierarchy(v, str(k))) for k, v in mapping.items())

    def __getitem__(self, key: str) -> Hierarchy:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self):
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return "Hierarchies({" + ", ".join(f"{k!r}: {v!r}" for k, v in self._items) + "})"
