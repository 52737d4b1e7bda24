"""Targeted record swapping of households across a geographic hierarchy, as European statistical
offices protected the 2021 census (sdcMicro's ``recordSwap``, Gussenbauer et al.; Eurostat's
census guidelines, "Protection of census 2021 data: targeted record swapping")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numba
import numpy as np
import pandas as pd

from sdckit.core.errors import DataError
from sdckit.core.hierarchy import factorize
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
       draws are reached, counting the swaps already started in the area.
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
        for name in (self.hid, *self.risk_variables, *{c for p in self.profiles for c in p}):
            schema[name]  # noqa: B018 - raises SchemaError naming an unknown column
        households = household_index(frame, self.hid)
        household_values(frame, households, (*self.hierarchy, *{c for p in self.profiles for c in p}, *self.carry_along))
        plan = swap_plan(frame, households, self, rng)
        apply_swaps(frame, households, plan.pairs, columns)
        return Outcome(frame, schema, plan.report(households))


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


def household_values(frame: pd.DataFrame, households: Households, names: tuple[str, ...]) -> None:
    """Refuse a column that holds more than one value in some household."""
    for name in dict.fromkeys(names):
        codes, _ = factorize(frame[name])
        head = codes[households.first][households.of_record]
        differ = head != codes
        if differ.any():
            bad = len(np.unique(households.of_record[differ]))
            raise DataError(
                f"RecordSwapping: column {name!r} differs within {bad} household(s); the "
                "hierarchy, similarity and carry_along columns must hold one value per household.")


def codes_of(frame: pd.DataFrame, names: tuple[str, ...], rows: np.ndarray | None = None) -> np.ndarray:
    """One integer per record (or per row of ``rows``) for its combination of ``names``."""
    if not names:
        return np.zeros(len(frame) if rows is None else len(rows), dtype=np.int64)
    matrix = np.column_stack([factorize(frame[name])[0] for name in names])
    if rows is not None:
        matrix = matrix[rows]
    return pd.factorize(combine(matrix))[0].astype(np.int64)


def household_risk(frame: pd.DataFrame, households: Households, method: RecordSwapping) -> np.ndarray:
    """Households x levels: the largest ``1 / count`` of a member's risk-variable combination in
    its area at each level (sdcMicro's ``setRisk``)."""
    levels = len(method.hierarchy)
    risk = np.zeros((households.count, levels))
    for level in range(levels):
        labels = codes_of(frame, (*method.risk_variables, *method.hierarchy[: level + 1]))
        per_record = 1.0 / np.bincount(labels)[labels]
        np.maximum.at(risk[:, level], households.of_record, per_record)
    return risk


def first_level_at_risk(risk: np.ndarray, threshold: float | None) -> np.ndarray:
    """The level at which each household must be swapped (the first whose risk exceeds the
    threshold), or ``levels`` if none (sdcMicro's ``setLevels``)."""
    levels = risk.shape[1]
    if threshold is None:
        return np.full(len(risk), levels, dtype=np.int64)
    above = risk > threshold
    return np.where(above.any(axis=1), above.argmax(axis=1), levels).astype(np.int64)


def draws_per_area(area: np.ndarray, swaprate: float, rng: np.random.Generator) -> np.ndarray:
    """Swaps to start in each lowest-level area: ``swaprate * households / 2`` rounded up or down
    at random, shared in proportion to the areas' households, the fractions rounded up in
    randomly chosen areas (sdcMicro's ``distributeDraws``)."""
    households = np.bincount(area)
    total = len(area) * swaprate / 2
    total = int(np.ceil(total)) if rng.integers(0, 2) == 0 else int(np.floor(total))
    share = households / len(area) * total
    draws = np.floor(share).astype(np.int64)
    extra = int(round(float((share - draws).sum())))
    if extra:
        draws[rng.choice(len(draws), size=extra, replace=False)] += 1
    return draws


@numba.njit(cache=True)
def _donor(s, group, starts, order, pointer, area, used):  # pragma: no cover - numba
    """The first unused household of another area in ``s``'s donor group (households in
    ``order[p, starts[p, g]:starts[p, g + 1]]``, best first), trying each similarity profile
    ``p`` in turn; -1 if none."""
    for p in range(group.shape[0]):
        g = group[p, s]
        j = pointer[p, g]
        end = starts[p, g + 1]
        while j < end and used[order[p, j]]:  # used for good: skipped once for all
            j += 1
        pointer[p, g] = j
        while j < end:
            d = order[p, j]
            if not used[d] and area[d] != area[s]:
                return d
            j += 1
    return -1


@numba.njit(cache=True)
def _swap_areas(must, must_starts, optional, optional_starts, quota, group, starts, order, pointer,
                area, used, donor, tried):  # pragma: no cover - numba
    """Area by area: each household that must be swapped and is still unused, then the first
    ``quota[a]`` still unused households of ``optional`` (best first), each given a donor if
    one is found; the households are CSR lists by area."""
    for a in range(len(must_starts) - 1):
        for i in range(must_starts[a], must_starts[a + 1]):
            s = must[i]
            if not used[s]:
                tried[s] = True
                d = _donor(s, group, starts, order, pointer, area, used)
                if d >= 0:
                    donor[s], used[s], used[d] = d, True, True
        picks = quota[a]
        for i in range(optional_starts[a], optional_starts[a + 1]):
            if picks <= 0:
                break
            s = optional[i]
            if not used[s]:
                picks -= 1
                tried[s] = True
                d = _donor(s, group, starts, order, pointer, area, used)
                if d >= 0:
                    donor[s], used[s], used[d] = d, True, True


def by_area(households: np.ndarray, area: np.ndarray, areas: int, key: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """``households`` as CSR lists by area (within an area by decreasing ``key``, else in
    household order)."""
    key = households if key is None else -key
    ordered = households[np.lexsort((key, area[households]))].astype(np.int64)
    starts = np.zeros(areas + 1, dtype=np.int64)
    np.cumsum(np.bincount(area[households], minlength=areas), out=starts[1:])
    return ordered, starts


@dataclass
class SwapPlan:
    """The pairs of households whose geography is exchanged, and what the swap did."""

    levels: int
    at_risk_level: np.ndarray
    swapped_level: np.ndarray
    pairs: np.ndarray
    no_donor: int
    draws: int

    def report(self, households: Households) -> dict[str, Any]:
        """Counts only (a manifest never holds a record)."""
        swapped = self.swapped_level < self.levels
        at_risk = self.at_risk_level < self.levels
        records = int(households.size[self.pairs.reshape(-1)].sum()) if len(self.pairs) else 0
        return {
            "households": households.count,
            "records": int(len(households.of_record)),
            "households_swapped": int(swapped.sum()),
            "records_swapped": records,
            "swap_rate": float(swapped.mean()) if households.count else 0.0,
            "swaps_drawn": self.draws,
            "swapped_by_level": np.bincount(self.swapped_level[swapped], minlength=self.levels).tolist(),
            "at_risk_by_level": np.bincount(self.at_risk_level[at_risk], minlength=self.levels).tolist(),
            "at_risk": int(at_risk.sum()),
            "at_risk_swapped": int((at_risk & swapped).sum()),
            "at_risk_left": int((at_risk & ~swapped).sum()),
            "no_donor": self.no_donor,
        }


def donor_groups(keys: np.ndarray, priority: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Households grouped by ``keys`` and, within a group, by decreasing ``priority``:
    ``(group of each household, group starts (CSR), households in that order)``."""
    group = pd.factorize(keys)[0].astype(np.int64)
    order = np.lexsort((-priority, group)).astype(np.int64)
    starts = np.zeros(int(group.max()) + 2 if len(group) else 1, dtype=np.int64)
    np.cumsum(np.bincount(group), out=starts[1:])
    return group, starts, order


def swap_plan(frame: pd.DataFrame, households: Households, method: RecordSwapping,
              rng: np.random.Generator) -> SwapPlan:
    """Which households swap with which (steps 1-4 of :class:`RecordSwapping`)."""
    h, levels = households.count, len(method.hierarchy)
    first = households.first
    risk = household_risk(frame, households, method)
    at_risk_level = first_level_at_risk(risk, method.threshold)
    area = [codes_of(frame, method.hierarchy[: level + 1], first) for level in range(levels)]
    draws = draws_per_area(area[-1], method.swaprate, rng)
    profiles = np.stack([
        combine(np.column_stack([households.size, codes_of(frame, profile, first)]))
        for profile in method.profiles
    ])
    used = np.zeros(h, dtype=np.bool_)
    donor = np.full(h, -1, dtype=np.int64)
    swapped_level = np.full(h, levels, dtype=np.int64)
    tried = np.zeros(h, dtype=np.bool_)
    for level in range(levels):
        parent = area[level - 1] if level else np.zeros(h, dtype=np.int64)
        # the donors' random order, weighted by their risk (Efraimidis & Spirakis keys)
        priority = risk[:, level] / rng.exponential(1.0, h)
        grouped = [donor_groups(combine(np.column_stack([parent, p])), priority) for p in profiles]
        width = max(len(g[2]) for g in grouped)
        group = np.stack([g[0] for g in grouped])
        starts = np.stack([np.pad(g[1], (0, max(len(x[1]) for x in grouped) - len(g[1])), mode="edge")
                           for g in grouped])
        order = np.stack([np.pad(g[2], (0, width - len(g[2]))) for g in grouped])
        pointer = starts[:, :-1].copy()
        areas = int(area[level].max()) + 1
        must = by_area(np.flatnonzero((at_risk_level == level) & ~used & ~tried), area[level], areas)
        if level < levels - 1:
            optional = by_area(np.zeros(0, dtype=np.int64), area[level], areas)
            quota = np.zeros(areas, dtype=np.int64)
        else:  # the lowest level: the swap rate (sdcMicro's randSample)
            started = np.bincount(area[level][donor >= 0], minlength=areas)
            quota = np.maximum(draws - started - np.diff(must[1]), 0)
            pool = np.flatnonzero(~used & ~tried & (at_risk_level != level))
            optional = by_area(pool, area[level], areas, risk[pool, level] / rng.exponential(1.0, len(pool)))
        before = used.copy()
        _swap_areas(*must, *optional, quota, group, starts, order, pointer, area[level], used, donor, tried)
        swapped_level[used & ~before] = level
    starters = np.flatnonzero(donor >= 0)
    pairs = np.column_stack([starters, donor[starters]]) if len(starters) else np.zeros((0, 2), np.int64)
    no_donor = int((tried & ~used).sum())
    return SwapPlan(levels, at_risk_level, swapped_level, pairs, no_donor, int(draws.sum()))


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
