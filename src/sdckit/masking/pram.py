"""Post-randomisation, PRAM (Gouweleeuw et al. 1998; seed 002 section 4.6.3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.method import Outcome, StratifiedMethod, register
from sdckit.core.params import Boolean, Interval, IsNone, Satisfies
from sdckit.core.schema import CATEGORICAL_KINDS, Kind, Schema

#: Largest number of categories whose transition matrix is written into the report.
REPORT_MAX_CATEGORIES = 20
_ROW_SUM_TOLERANCE = 1e-6


# --------------------------------------------------------------------------- matrix specs
def _is_number(x: Any) -> bool:
    return isinstance(x, int | float | np.number) and not isinstance(x, bool) and np.isfinite(x)


def _spec_rows(spec: Any) -> list[tuple[Any, list[float]]] | None:
    """The rows of one column's matrix as ``(from_category or row number, probabilities)``,
    or None when ``spec`` is neither a square nested list nor a category mapping."""
    if isinstance(spec, Mapping):
        keys = list(spec)
        if not keys or not all(isinstance(row, Mapping) for row in spec.values()):
            return None
        position = {k: i for i, k in enumerate(keys)}
        rows = []
        for key, row in spec.items():
            if not all(t in position and _is_number(p) for t, p in row.items()):
                return None
            probs = [0.0] * len(keys)
            for t, p in row.items():
                probs[position[t]] = float(p)
            rows.append((key, probs))
        return rows
    if isinstance(spec, Sequence) and not isinstance(spec, str) and len(spec) > 0:
        size = len(spec)
        if not all(
            isinstance(row, Sequence) and not isinstance(row, str) and len(row) == size
            and all(_is_number(p) for p in row) for row in spec
        ):
            return None
        return [(i, [float(p) for p in row]) for i, row in enumerate(spec)]
    return None


def _is_matrix_mapping(value: Any) -> bool:
    return (
        isinstance(value, Mapping) and len(value) > 0
        and all(isinstance(k, str) and _spec_rows(v) is not None for k, v in value.items())
    )


def transition_matrix(spec: Any) -> tuple[list[Any] | None, np.ndarray]:
    """One column's matrix spec as ``(categories or None for a nested list, matrix)``."""
    rows = _spec_rows(spec)
    if rows is None:  # pragma: no cover - the constraints refuse such specs first
        raise DataError(f"not a transition matrix: {spec!r}")
    matrix = np.array([probs for _, probs in rows], dtype=float)
    categories = [key for key, _ in rows] if isinstance(spec, Mapping) else None
    return categories, matrix


def keep_matrix(size: int, p_keep: float) -> np.ndarray:
    """Keep a category with probability ``p_keep``, else move uniformly to another one."""
    if size == 1:
        return np.ones((1, 1))
    off = (1.0 - p_keep) / (size - 1)
    return np.full((size, size), off) + np.eye(size) * (p_keep - off)


def invariant_matrix(p: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """Invariant PRAM matrix ``R = P Q`` for the distribution ``frequencies`` (Gouweleeuw et al.
    1998): ``Q[k, l] = P[l, k] pi_l / sum_j P[j, k] pi_j`` is the backward
    transition, so ``pi R = pi``: the expected distribution after PRAM is the observed one.
    Categories that no observed one reaches (``sum_j P[j, k] pi_j = 0``) map to themselves in Q.
    """
    pi = frequencies / frequencies.sum()
    reach = pi @ p
    q = np.eye(len(pi))
    ok = reach > 0
    q[ok] = (p[:, ok] * pi[:, None]).T / reach[ok, None]
    return p @ q


def _categories_of(series: pd.Series, column: Any) -> list[Any]:
    """The category order of a column: its ordinal order, else its sorted distinct values."""
    if column is not None and column.kind is Kind.ORDINAL and column.order is not None:
        return list(column.order)
    values = pd.unique(series.dropna())
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def _codes(series: pd.Series, categories: list[Any], name: str) -> np.ndarray:
    """Index of each value in ``categories`` (-1 for a missing value); a value matches a
    category equal to it or, failing that, to its text (recipe keys are strings)."""
    index = _category_index(categories)
    missing = series.isna().to_numpy()
    codes = np.full(len(series), -1, dtype=np.int64)
    inverse, uniques = pd.factorize(series, use_na_sentinel=True)
    mapped = np.empty(len(uniques), dtype=np.int64)
    for u, value in enumerate(uniques):
        i = index.get(value, index.get(str(value)))
        if i is None:
            shown = ", ".join(map(repr, categories[:10]))
            row = series.index[int(np.argmax(inverse == u))]
            raise DataError(  # the category is named only if the matrix names it: never a data value
                f"Pram has no transition for a value of column {name!r} (first at row {row!r}); its matrix "
                f"covers the categories {shown}{', ...' if len(categories) > 10 else ''}. Add "
                "the category to the matrix."
            )
        mapped[u] = i
    codes[~missing] = mapped[inverse[~missing]]
    return codes


def apply_transitions(codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw each record's new category from the row of ``matrix`` of its category (-1 stays)."""
    out = codes.copy()
    cumulative = np.cumsum(matrix, axis=1)
    cumulative[:, -1] = np.inf  # rounding must never push a draw past the last category
    draws = rng.random(len(codes))
    for k in np.unique(codes[codes >= 0]):
        rows = codes == k
        out[rows] = np.searchsorted(cumulative[k], draws[rows], side="right")
    return out


# --------------------------------------------------------------------------- method
@register
@dataclass(frozen=True)
class Pram(StratifiedMethod):
    """PRAM: each categorical value changed at random according to a Markov matrix.

    Record ``i``'s value of category ``k`` becomes category ``l`` with probability ``P[k, l]``,
    independently across records and columns (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998).

    Parameters
    ----------
    matrix : mapping, optional
        Transition matrix per column: ``{column: spec}``, where ``spec`` is either a mapping
        ``{from_category: {to_category: probability}}`` (missing entries are 0; every
        to-category must also be a from-category) or a square nested list whose categories are
        the column's ordinal order, or for a nominal column its distinct observed values in
        sorted order. Without ``columns``, the columns are the matrix's keys.
    p_keep : float in [0, 1], optional
        Instead of ``matrix``: keep each value with probability ``p_keep``, else change it to
        one of the column's other categories, chosen uniformly (categories: the ordinal order,
        or the distinct observed values).
    invariant : bool, default False
        Apply the invariant matrix ``R = P Q`` built from ``P`` and the column's observed
        distribution (Gouweleeuw et al. 1998), so that the expected frequencies after
        PRAM equal the observed ones.
    columns : list of str, optional
        Columns to randomise; default: the matrix's columns, or (with ``p_keep``) the nominal
        and ordinal quasi-identifiers and confidential columns.
    strata : list of str, optional
        Randomise within each stratum of these columns (with ``p_keep`` or ``invariant``, the
        categories and distribution are the stratum's); see
        :class:`~sdckit.core.method.StratifiedMethod`.

    Notes
    -----
    Exactly one of ``matrix`` and ``p_keep`` must be given, and every matrix row must be
    non-negative and sum to 1. Missing values are passed through unchanged
    (``nan_policy="pass"``): NaN is not a category. A value outside a column's matrix is an
    error naming the value. The report holds, per column, the share of values changed and, for
    up to 20 categories, the matrix applied (``info["transitions"]``), which analysts need to
    correct their estimates.

    PRAM is row-wise (DESIGN.md section 8): a first pass counts each column's observed values
    (the categories, the invariant matrix's distribution, the column's own spelling of each
    category), then records are randomised by logical chunks of 65,536, chunk ``c`` drawing
    from its own stream spawned from the step's key — in memory as on the streaming engines,
    so every engine releases the same bytes (issue 17; releases made before it are not
    reproduced bit for bit). A category's value in the release is the column's first observed
    value that matches it.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "Post-randomisation"
    (its reference [133]); Gouweleeuw, Kooiman, Willenborg & de Wolf (1998), "Post
    randomisation for statistical disclosure control: theory and implementation", Journal of
    Official Statistics 14(4).
    """

    matrix: Mapping[str, Any] | None = None
    p_keep: float | None = None
    invariant: bool = False
    name: ClassVar[str] = "pram"
    constraints: ClassVar = {
        "matrix": [
            IsNone(),
            Satisfies(
                _is_matrix_mapping,
                "a mapping from column name to a square transition matrix (a nested list, or a "
                "mapping from category to a mapping from category to probability)",
            ),
        ],
        "p_keep": [IsNone(), Interval(float, 0, 1)],
        "invariant": Boolean(),
    }
    kinds: ClassVar = CATEGORICAL_KINDS
    nan_policy: ClassVar[str] = "pass"
    example: ClassVar = {"p_keep": 0.8}
    needs: ClassVar[str] = "rows"

    def __hash__(self) -> int:  # the matrix is a mapping, so hash the plain parameters
        return hash(repr(self.params()))

    def check_parameters(self) -> None:
        if (self.matrix is None) == (self.p_keep is None):
            raise self.param_error(
                "p_keep", "given when 'matrix' is not, and only then (give exactly one of the two)"
            )
        for column, spec in (self.matrix or {}).items():
            _, p = transition_matrix(spec)
            bad = np.flatnonzero((p < 0).any(axis=1) | (np.abs(p.sum(axis=1) - 1) > _ROW_SUM_TOLERANCE))
            if len(bad):
                row = list(spec)[bad[0]] if isinstance(spec, Mapping) else int(bad[0])
                raise self.param_error(
                    "matrix",
                    f"made of non-negative rows that sum to 1 (row {row!r} of column {column!r} "
                    f"sums to {p[bad[0]].sum():g})",
                )

    def default_columns(self) -> tuple[str, ...] | None:
        return None if self.matrix is None else tuple(self.matrix)

    def _column_matrix(self, series: pd.Series, column: Any) -> tuple[list[Any], np.ndarray]:
        name = series.name
        if self.matrix is None:
            categories = _categories_of(series, column)
            return categories, keep_matrix(len(categories), float(self.p_keep))
        if name not in self.matrix:
            raise DataError(
                f"Pram has no transition matrix for column {name!r}; add one to 'matrix' or "
                "leave the column out of 'columns'."
            )
        categories, p = transition_matrix(self.matrix[name])
        if categories is None:
            categories = _categories_of(series, column)
            if len(categories) != len(p):
                raise DataError(
                    f"Pram's matrix for column {name!r} is {len(p)} x {len(p)}, but the column "
                    f"has {len(categories)} categories ({', '.join(map(repr, categories[:10]))}"
                    f"{', ...' if len(categories) > 10 else ''}). Give one row per category, or "
                    "give the matrix as a mapping from category to category."
                )
        return categories, p

    # ----------------------------------------------------------------- row-wise (DESIGN.md section 8)
    def needs_statistics(self) -> bool:
        """PRAM learns from the whole data, in a first pass, each column's observed values and
        their counts: the categories (``p_keep``, a nested-list matrix), the distribution of the
        invariant matrix, and the column's own spelling of every category."""
        return True

    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> dict[str, dict[Any, int]]:
        """Per column, its observed values (in order of first appearance) with their counts."""
        return {name: _value_counts(chunk[name]) for name in columns}

    def merge_statistics(self, first: dict[str, dict[Any, int]], second: dict[str, dict[Any, int]]
                         ) -> dict[str, dict[Any, int]]:
        out = {}
        for name, counts in first.items():
            merged = dict(counts)
            for value, count in second[name].items():
                merged[value] = merged.get(value, 0) + count
            out[name] = merged
        return out

    def _column_plan(self, name: str, counts: dict[Any, int], column: Any
                     ) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """The categories, the matrix applied and each category's label (the column's own
        spelling: the first observed value that matches it, else the category itself)."""
        observed = pd.Series(list(counts), dtype=object, name=name)
        categories, p = self._column_matrix(observed, column)
        index = _category_index(categories)
        labels = np.empty(len(categories), dtype=object)
        labels[:] = categories
        spelled = np.zeros(len(categories), dtype=bool)
        frequencies = np.zeros(len(categories))
        for value, count in counts.items():
            i = index.get(value, index.get(str(value)))
            if i is None:  # refused, naming its row, when its chunk is recoded
                continue
            frequencies[i] += count
            if not spelled[i]:
                labels[i], spelled[i] = value, True
        if self.invariant:
            p = invariant_matrix(p, frequencies)
        return categories, p, labels

    def transform_rows(
        self, chunk: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator,
        statistics: dict[str, dict[Any, int]],
    ) -> Outcome:
        transitions: dict[str, Any] = {}
        for name in columns:
            series = chunk[name]
            categories, p, labels = self._column_plan(name, statistics[name], schema[name] if name in schema else None)
            codes = _codes(series, categories, name)
            new = apply_transitions(codes, p, rng)
            chunk[name] = _decode(series, labels, codes, new)
            present = codes >= 0
            entry: dict[str, Any] = {"changed": int(np.count_nonzero(new[present] != codes[present])),
                                     "present": int(present.sum())}
            if len(categories) <= REPORT_MAX_CATEGORIES:
                entry["categories"] = [c.item() if isinstance(c, np.generic) else c for c in categories]
                entry["matrix"] = p.round(12).tolist()
            transitions[name] = entry
        return Outcome(chunk, schema, {"transitions": transitions})

    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]:
        """Per column: the share of values changed over every chunk, and the matrix applied."""
        transitions: dict[str, Any] = {}
        for name, first in infos[0]["transitions"].items():
            changed = sum(info["transitions"][name]["changed"] for info in infos)
            present = sum(info["transitions"][name]["present"] for info in infos)
            entry: dict[str, Any] = {"changed_share": changed / present if present else 0.0}
            entry.update({k: v for k, v in first.items() if k in ("categories", "matrix")})
            transitions[name] = entry
        return {"transitions": transitions}


def _value_counts(series: pd.Series) -> dict[Any, int]:
    """The observed values of ``series`` in order of first appearance, with their counts."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    values = uniques.tolist() if hasattr(uniques, "tolist") else list(uniques)
    return {v.item() if isinstance(v, np.generic) else v: int(c) for v, c in zip(values, counts.tolist())}


def _category_index(categories: list[Any]) -> dict[Any, int]:
    index: dict[Any, int] = {}
    for i, c in enumerate(categories):
        index.setdefault(str(c), i)
    for i, c in enumerate(categories):
        index[c] = i
    return index


def _decode(series: pd.Series, labels: np.ndarray, codes: np.ndarray, new: np.ndarray) -> pd.Series:
    """The new categories as values of the column's own type (``labels``: each category as the
    column's own first value that matched it, when one did); missing values stay missing."""
    present = codes >= 0
    values = np.empty(len(series), dtype=object)
    values[:] = None
    values[present] = labels[new[present]]
    out = pd.Series(values, index=series.index, name=series.name)
    out[~present] = series[~present]
    try:
        return out.astype(series.dtype)
    except (TypeError, ValueError):
        return out
