"""The swap plan of targeted record swapping (sdcMicro's ``recordSwap``; issue 30): which
households exchange their geography, from a table of the households alone. Shared by the method
in memory (:class:`sdckit.masking.RecordSwapping`) and its run over a file
(:func:`sdckit.engine.households.record_swap_file`), so both give the same release for a seed.
The steps are documented on the method."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pandas as pd

from sdckit.core.matching import combine


def first_codes(values: np.ndarray | pd.Series) -> np.ndarray:
    """Codes of ``values`` numbered in order of first appearance (a missing value is a value),
    so that the same values in the same order get the same codes however they were read."""
    return pd.factorize(np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values,
                        use_na_sentinel=False)[0].astype(np.int64)


@dataclass(frozen=True)
class HouseholdTable:
    """What the swap plan needs of the households, in order of their first record: ``size``
    (persons), ``geography`` (households x levels: the codes of each hierarchy column),
    ``profiles`` (per similarity profile, the codes of its columns' combination) and ``risk``
    (households x levels: the members' largest ``1 / count``, sdcMicro's ``setRisk``). Built in
    memory (:func:`household_table`) or by an engine from a file; the same data give the same table."""

    size: np.ndarray
    geography: np.ndarray
    profiles: tuple[np.ndarray, ...]
    risk: np.ndarray

    @property
    def count(self) -> int:
        return len(self.size)

    def area(self, level: int) -> np.ndarray:
        """Each household's area at ``level`` (the combination of hierarchy[0..level])."""
        return first_codes(combine(self.geography[:, : level + 1]))


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
    ``quota[a]`` less those still unused households of ``optional`` (best first), each given a
    donor if one is found; the households are CSR lists by area. A household that must be
    swapped but was taken as a donor by an earlier area does not count against its area's
    quota (sdcMicro's ``randSample`` counts the unused ones only)."""
    for a in range(len(must_starts) - 1):
        picks = quota[a]
        for i in range(must_starts[a], must_starts[a + 1]):
            s = must[i]
            if not used[s]:
                picks -= 1
                tried[s] = True
                d = _donor(s, group, starts, order, pointer, area, used)
                if d >= 0:
                    donor[s], used[s], used[d] = d, True, True
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
    size: np.ndarray

    def report(self) -> dict[str, Any]:
        """Counts only (a manifest never holds a record)."""
        swapped = self.swapped_level < self.levels
        at_risk = self.at_risk_level < self.levels
        records = int(self.size[self.pairs.reshape(-1)].sum()) if len(self.pairs) else 0
        return {
            "households": len(self.size),
            "records": int(self.size.sum()),
            "households_swapped": int(swapped.sum()),
            "records_swapped": records,
            "swap_rate": float(swapped.mean()) if len(self.size) else 0.0,
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


def swap_plan(table: HouseholdTable, threshold: float | None, swaprate: float, rng: np.random.Generator) -> SwapPlan:
    """Which households swap with which (steps 1-4 of :class:`sdckit.masking.RecordSwapping`):
    ``threshold`` is the risk above which a household is at risk (None: none is)."""
    h, levels = table.count, table.geography.shape[1]
    risk = table.risk
    at_risk_level = first_level_at_risk(risk, threshold)
    area = [table.area(level) for level in range(levels)]
    draws = draws_per_area(area[-1], swaprate, rng)
    profiles = np.stack([combine(np.column_stack([table.size, p])) for p in table.profiles])
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
            quota = draws - started
            pool = np.flatnonzero(~used & ~tried & (at_risk_level != level))
            optional = by_area(pool, area[level], areas, risk[pool, level] / rng.exponential(1.0, len(pool)))
        before = used.copy()
        _swap_areas(*must, *optional, quota, group, starts, order, pointer, area[level], used, donor, tried)
        swapped_level[used & ~before] = level
    starters = np.flatnonzero(donor >= 0)
    pairs = np.column_stack([starters, donor[starters]]) if len(starters) else np.zeros((0, 2), np.int64)
    no_donor = int((tried & ~used).sum())
    return SwapPlan(levels, at_risk_level, swapped_level, pairs, no_donor, int(draws.sum()), table.size)
