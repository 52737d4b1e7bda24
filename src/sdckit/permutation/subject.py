"""Subject verification (seed 000 section 4 and the end of section 5.2).

A data subject who holds only her own record ``x`` and the released data ``Y`` can compute her
permutation distance ``d(x)``, her matches and the variances of the released values around her
own (Definition 1). When the release is a pure permutation of the original (swapping,
shuffling, reverse-mapped output), she can also draw a random set ``T`` from ``Y``'s marginals
(``Y`` is a permutation of ``X``) and learn whether a match at her distance is plausibly random.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.params import Boolean, validated
from sdckit.core.random import RandomState, renamed_seed
from sdckit.core.result import Result, plain
from sdckit.permutation.columns import SchemaLike, check_frame, rank_space
from sdckit.permutation.distance import distances_and_matches, nearest_distances
from sdckit.permutation.privacy import window_variances
from sdckit.permutation.randomset import random_positions, random_query
from sdckit.permutation.rules import RANDOM_SET_RULES, TIES_RULE
from sdckit.permutation.verify import ALPHA


@dataclass(frozen=True)
class SubjectVerification(Result):
    """Outcome of :func:`verify_subject`.

    Attributes
    ----------
    record : dict
        The subject's values of the columns used.
    distance : int
        Her permutation distance ``d(x)`` against the release.
    matches : tuple of int
        Released positions (0-based) at that distance.
    variances : Series
        Per column, the variance of the released values within ``distance`` ranks of hers.
    p_random : float or None
        For a pure-permutation release, the share of random records matching at a distance
        ``<= distance``; ``None`` otherwise.
    plausibly_random : bool or None
        ``p_random >= 0.05``: a match at her distance could well be chance.
    """

    record: dict
    distance: int
    matches: tuple
    variances: pd.Series
    p_random: float | None
    plausibly_random: bool | None

    def summary(self) -> list[tuple[str, str]]:
        """Label/value pairs of the distance, the matches and the variances (``verify-record``)."""
        shown = ", ".join(map(str, self.matches[:10])) + (", ..." if len(self.matches) > 10 else "")
        rows = [("permutation distance", str(self.distance)),
                ("matching released records (count)", f"{len(self.matches):,}"),
                ("their positions in the release (0-based)", shown)]
        rows += [(f"variance of {c} within the distance", f"{v:.4g}") for c, v in self.variances.items()]
        if self.p_random is not None:
            verdict = "plausibly random" if self.plausibly_random else "NOT plausibly random"
            rows.append(("share of random records matching as closely", f"{self.p_random:.4f} ({verdict})"))
        return rows


def coerce_record(record: Any, released: pd.DataFrame, columns: Any) -> pd.DataFrame:
    """The subject's record as a one-row frame with the released columns' dtypes."""
    if isinstance(record, pd.Series):
        record = record.to_dict()
    if not isinstance(record, Mapping) or not record:
        raise DataError(
            "The record must be a non-empty mapping (or Series) from column name to value; "
            f"got {record!r}."
        )
    names = list(record) if columns is None else [columns] if isinstance(columns, str) else list(columns)
    row = {}
    for name in names:
        if name not in record:
            raise SchemaError(f"Column {name!r} has no value in the record; give one.")
        if name not in released.columns:
            raise SchemaError(
                f"Column {name!r} is not in the released data; its columns are: "
                f"{', '.join(map(str, released.columns))}."
            )
        dtype = released[name].dtype
        value = _coerce(name, record[name], dtype)
        if isinstance(dtype, pd.CategoricalDtype):
            if value not in set(dtype.categories):
                raise SchemaError(
                    f"Column {name!r}: the record's value {record[name]!r} is not one of its "
                    f"categories ({', '.join(map(str, dtype.categories))})."
                )
            row[name] = pd.Series(pd.Categorical([value], dtype=dtype))
        else:
            row[name] = pd.Series([value])
    return pd.DataFrame(row)


def _coerce(name: str, value: Any, dtype: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        if pd.api.types.is_bool_dtype(dtype):
            return value
        if pd.api.types.is_numeric_dtype(dtype):
            return float(value)
        if pd.api.types.is_datetime64_any_dtype(dtype):
            return pd.Timestamp(value)
    except ValueError:
        raise DataError(
            f"Column {name!r}: the record's value {value!r} is not a valid {dtype} value."
        ) from None
    if isinstance(dtype, pd.CategoricalDtype):
        for category in dtype.categories:
            if str(category) == value:
                return category
    return value


@renamed_seed()
@validated(permutation=Boolean(), **RANDOM_SET_RULES, ties=TIES_RULE)
def verify_subject(
    record: Mapping[str, Any] | pd.Series,
    released: pd.DataFrame,
    columns: Any = None,
    *,
    permutation: bool = False,
    null: str = "copula",
    n_random: int = 100_000,
    exhaustive_limit: int = 1_000_000,
    schema: SchemaLike = None,
    ties: str = "random",
    seed: RandomState = None,
) -> SubjectVerification:
    """What a data subject can verify with her own record and the release (seed 000 §4, §5.2).

    Parameters
    ----------
    record : mapping or Series
        Her values, by column name (strings are converted to the released column's type).
    released : DataFrame
        The released data ``Y``.
    columns : list of str, optional
        Columns to use (default: the record's keys).
    permutation : bool
        Whether the release is a pure permutation of the original; only then is ``p_random``
        computed, against random records drawn from ``Y``'s marginals (``null`` as in
        :func:`~sdckit.permutation.verify_linkage`, fitted to ``Y``).
    n_random, exhaustive_limit, null
        As in :func:`~sdckit.permutation.verify_linkage`.
    schema, ties, seed
        As in :func:`~sdckit.permutation.permutation_distances`.

    Returns
    -------
    SubjectVerification
    """
    check_frame(released, "released")
    frame = coerce_record(record, released, columns)
    space = rank_space(frame, released, list(frame.columns), schema=schema, ties=ties,
                       seed=seed, min_original=1)
    r = space.ranks_in(space.y_sorted, space.x)
    dist, matches = distances_and_matches(space, r)
    variances = pd.Series({name[len("var_"):]: float(v[0]) for name, v in
                           window_variances(space, r, dist).items()}, name="variance")
    p_random = plausible = None
    if permutation:
        positions, _ = random_positions(space.y, null, n_random, exhaustive_limit, space.rng)
        random_d = nearest_distances(space, random_query(space.y_sorted, space.y_sorted, positions))
        p_random = float(np.mean(random_d <= dist[0]))
        plausible = p_random >= ALPHA
    return SubjectVerification(
        record={k: plain(frame[k].iloc[0]) for k in frame.columns}, distance=int(dist[0]),
        matches=tuple(matches[0]), variances=variances, p_random=p_random,
        plausibly_random=plausible,
    )


def parse_record(text: str) -> dict[str, str]:
    """Parse ``"col=value,col2=value2"`` (the CLI's ``--record``) into a mapping of strings."""
    record: dict[str, str] = {}
    for piece in str(text).split(","):
        name, sep, value = piece.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise DataError(
                f"Bad --record part {piece.strip()!r}: write the record as "
                "'column=value,column=value' with a value for every column."
            )
        if name in record:
            raise DataError(f"Column {name!r} is given twice in --record; give it once.")
        record[name] = value
    return record
