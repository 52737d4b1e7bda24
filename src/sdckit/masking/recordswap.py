"""Targeted record swapping of households across a geographic hierarchy, as European statistical
offices protected the 2021 census (sdcMicro's ``recordSwap``, Gussenbauer et al.; Eurostat's
census guidelines, "Protection of census 2021 data: targeted record swapping")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.hierarchy import factorize
from sdckit.core.household_swap import HouseholdTable, first_codes, swap_plan
from sdckit.core.matching import combine
from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval, Satisfies
from sdckit.core.schema import Kind, Schema


def _names(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _profiles(value: Any) -> bool:
    return _names(value) or (isinstance(value, tuple) and len(value) > 0 and all(_names(v) for v in value))


NAMES = Satisfies(_names, "a list of distinct column names (possibly empty)")
HIERARCHY = Satisfies(lambda v: _names(v) and len(v) > 0, "a non-empty list of distinct column names, highest level first")
PROFILES = Satisfies(_profiles, "a list of column names, or a list of such lists (similarity profiles tried in order)")


@register
@dataclass(frozen=True)
class RecordSwapping(Method):
    """Targeted record swapping: households at risk, and then random households up to the swap
    rate, exchange their geography with a similar household of another area.

    The algorithm and the parameters are those of sdcMicro's ``recordSwap`` (same names, same
    meaning), so that a statistical office can move a job over:

    1. *Risk.* For each level ``l`` of the hierarchy (highest first) a record's risk is
       ``1 / count`` of its combination of ``risk_variables`` within its area at level ``l``
       (the area: the values of ``hierarchy[0..l]``); a household's risk at each level is its
       members' largest. A household is *at risk* at the first level where its risk exceeds the
       threshold: ``risk_threshold`` if it is > 0, else ``1 / k_anonymity`` (a combination held by
       fewer than ``k_anonymity`` persons in the area); ``k_anonymity = 0`` and
       ``risk_threshold = 0`` mark no household at risk.
    2. *Draws.* ``swaprate * households / 2`` swaps (each swap moves two households), rounded
       up or down at random, shared among the lowest-level areas in proportion to their
       households (fractions rounded up in randomly chosen areas).
    3. *Swaps, level by level.* At each level above the lowest, every household at risk there
       and not yet swapped is swapped. At the lowest level, in each area, the households at
       risk there, plus households drawn at random (weighted by their risk) until the area's
       draws are reached, counting the swaps already started in the area and its households at
       risk still unswapped when its turn comes (one taken earlier as another area's donor does
       not count: sdcMicro's ``randSample``).
    4. *Donor.* A household of another area at that level, **of the same parent area** (the
       area one level up; any area at the top level), not swapped before, with the same
       values of the similarity profile (the first of ``similar`` that finds one, then the
       next), and always of the same household size — so that every area keeps its number of
       households and persons and each household its structure. Among those, the first in a
       random order weighted by the donors' risk at that level (drawn once per level).
       sdcMicro takes the donor from any other area; keeping the parent keeps every table of
       the higher levels unchanged.
    5. The two households exchange their ``hierarchy`` values (and those of ``carry_along``),
       for all their members. Every other column, and the order of the records, is unchanged,
       so the tables of the non-geographic variables are unchanged.

    Parameters
    ----------
    hid : str
        The household identifier column (a person table: several records per household).
    hierarchy : list of str
        The geographic columns, highest level first (e.g. region, district, municipality).
    similar : list of str, or list of lists of str
        Similarity profile(s): household variables a donor must share (household size always).
    risk_variables : list of str
        The variables whose combination within an area makes a person identifiable.
    k_anonymity : int, default 3
        A combination held by fewer persons in an area is at risk (0: none).
    risk_threshold : float, default 0
        A risk threshold on ``1 / count`` used instead of ``1 / k_anonymity`` when > 0.
    swaprate : float, default 0.05
        The share of households to swap (at-risk households are swapped even beyond it).
    carry_along : list of str, default ()
        Household variables swapped with the geography (e.g. finer geography not in the
        hierarchy).
    columns : list of str, optional
        The columns the households exchange; default (and usual): the hierarchy and
        ``carry_along``. If given it must hold every hierarchy column.

    Notes
    -----
    The hierarchy, ``similar`` and ``carry_along`` columns must hold one value per household
    (refused otherwise: swapping them for a household would change its members' values);
    a missing value is refused in the hierarchy and ``hid``, and is a value of its own in the
    similarity and risk variables. The report (the manifest's counts, never a record): households
    and records swapped, households at risk by level, swapped, and left (no donor found),
    swaps by level and the swap rate reached.

    References
    ----------
    Gussenbauer, Templ et al., sdcMicro ``recordSwap`` (R package, C++ core) and its vignette
    "Targeted Record Swapping"; Eurostat (2019), "Harmonised protection of census data in the
    ESS", section 3 (targeted record swapping); seed 002, section 4.6.3 (data swapping).
    """

    hid: str
    hierarchy: tuple[str, ...]
    similar: tuple[Any, ...]
    risk_variables: tuple[str, ...]
    k_anonymity: int = 3
    risk_threshold: float = 0.0
    swaprate: float = 0.05
    carry_along: tuple[str, ...] = ()

    name: ClassVar[str] = "record_swapping"
    constraints: ClassVar = {
        "hierarchy": HIERARCHY,
        "similar": PROFILES,
        "risk_variables": NAMES,
        "k_anonymity": Interval(int, 0, None),
        "risk_threshold": Interval(float, 0, 1),
        "swaprate": Interval(float, 0, 1),
        "carry_along": NAMES,
    }
    kinds: ClassVar = frozenset(Kind)
    # the common test frame has no households: its unique incomes make one-person households
    example: ClassVar = {
        "hid": "income", "hierarchy": ["region", "zip"], "similar": ["sex"],
        "risk_variables": ["education"], "swaprate": 0.2,
    }

    def check_parameters(self) -> None:
        if not isinstance(self.hid, str) or not self.hid:
            raise self.param_error("hid", "a column name (the household identifier)")
        overlap = set(self.hierarchy) & set(self.carry_along)
        if overlap or self.hid in (*self.hierarchy, *self.carry_along):
            raise self.param_error("carry_along", "columns other than hid and the hierarchy")

    @property
    def profiles(self) -> tuple[tuple[str, ...], ...]:
        """The similarity profiles, tried in order (a flat list is one profile)."""
        if not self.similar or isinstance(self.similar[0], str):
            return (tuple(self.similar),)
        return tuple(tuple(p) for p in self.similar)

    @property
    def similar_columns(self) -> tuple[str, ...]:
        """Every column of the similarity profiles, once each."""
        return tuple(dict.fromkeys(c for p in self.profiles for c in p))

    def default_columns(self) -> tuple[str, ...]:
        return (*self.hierarchy, *self.carry_along)

    @property
    def threshold(self) -> float | None:
        """The risk above which a household is at risk (None: no household is)."""
        if self.risk_threshold > 0:
            return float(self.risk_threshold)
        return 1.0 / self.k_anonymity if self.k_anonymity > 0 else None

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        if not set(self.hierarchy) <= set(columns):
            raise self.param_error("columns", "None or a list that holds every hierarchy column "
                                   "(the columns the households exchange)")
        for name in (self.hid, *self.risk_variables, *self.similar_columns):
            schema[name]  # noqa: B018 - raises SchemaError naming an unknown column
        households = household_index(frame, self.hid)
        codes: dict[str, np.ndarray] = {}  # each column factorized once
        household_values(frame, households, (*self.hierarchy, *self.similar_columns, *self.carry_along), codes)
        plan = swap_plan(household_table(frame, households, self, codes), self.threshold, self.swaprate, rng)
        apply_swaps(frame, households, plan.pairs, columns)
        return Outcome(frame, schema, plan.report())


@dataclass(frozen=True)
class Households:
    """Records grouped by household: ``of_record`` (household of each record, 0..h-1 in order of
    first record), ``first`` (each household's first record) and ``size``."""

    of_record: np.ndarray
    first: np.ndarray
    size: np.ndarray

    @property
    def count(self) -> int:
        return len(self.first)


def household_index(frame: pd.DataFrame, hid: str) -> Households:
    """The households of ``frame`` by its ``hid`` column (a missing id is refused)."""
    if frame[hid].isna().any():
        raise DataError(
            f"RecordSwapping: column {hid!r} (the household id) has {int(frame[hid].isna().sum())} "
            "missing value(s); every record needs its household.")
    codes, _ = factorize(frame[hid])
    _, first, of_record = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # households numbered in order of first record
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    of_record = rank[of_record.reshape(-1)]
    return Households(of_record, first[order], np.bincount(of_record, minlength=len(order)))


def column_codes(frame: pd.DataFrame, name: str, codes: dict[str, np.ndarray]) -> np.ndarray:
    """The integer codes of column ``name``, factorized once and kept in ``codes``."""
    if name not in codes:
        codes[name] = factorize(frame[name])[0]
    return codes[name]


def household_values(frame: pd.DataFrame, households: Households, names: tuple[str, ...],
                     codes: dict[str, np.ndarray] | None = None) -> None:
    """Refuse a column that holds more than one value in some household (``codes``: the columns'
    codes found so far, filled as a side effect for :func:`household_table`)."""
    codes = {} if codes is None else codes
    for name in dict.fromkeys(names):
        column = column_codes(frame, name, codes)
        head = column[households.first][households.of_record]
        differ = head != column
        if differ.any():
            bad = len(np.unique(households.of_record[differ]))
            raise DataError(
                f"RecordSwapping: column {name!r} differs within {bad} household(s); the "
                "hierarchy, similarity and carry_along columns must hold one value per household.")


def household_table(frame: pd.DataFrame, households: Households, method: RecordSwapping,
                    codes: dict[str, np.ndarray] | None = None) -> HouseholdTable:
    """The :class:`HouseholdTable` of a person frame (``codes``: columns already factorized)."""
    first = households.first
    codes = {} if codes is None else codes

    def at_first(names: tuple[str, ...]) -> np.ndarray:
        if not names:
            return np.zeros(households.count, dtype=np.int64)
        return first_codes(combine(np.column_stack([column_codes(frame, n, codes)[first] for n in names])))

    geography = np.column_stack([at_first((name,)) for name in method.hierarchy])
    levels = len(method.hierarchy)
    risk = np.zeros((households.count, levels))
    for level in range(levels):
        names = (*method.risk_variables, *method.hierarchy[: level + 1])
        labels = combine(np.column_stack([column_codes(frame, n, codes) for n in names]))
        per_record = 1.0 / np.bincount(labels)[labels]
        np.maximum.at(risk[:, level], households.of_record, per_record)
    return HouseholdTable(households.size, geography, tuple(at_first(p) for p in method.profiles), risk)


def apply_swaps(frame: pd.DataFrame, households: Households, pairs: np.ndarray, columns: tuple[str, ...]) -> None:
    """Exchange ``columns`` between the two households of each pair, for all their members."""
    if not len(pairs):
        return
    partner = np.arange(households.count)
    partner[pairs[:, 0]] = pairs[:, 1]
    partner[pairs[:, 1]] = pairs[:, 0]
    source = households.first[partner[households.of_record]]
    moved = np.flatnonzero(partner[households.of_record] != households.of_record)
    for name in columns:
        values = frame[name].to_numpy(copy=True)
        values[moved] = values[source[moved]]
        frame[name] = pd.Series(values, index=frame.index, dtype=frame[name].dtype)
