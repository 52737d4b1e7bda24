"""Rank swapping (Moore 1996; seed 002 section 4.6.3; seed 001, "Evaluation of methods: rank swapping")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.method import Method, Outcome, register
from sdckit.core.params import Interval
from sdckit.core.random import derive_seed
from sdckit.core.ranks import sort_order
from sdckit.core.swapping import swap_partners, swap_draws
from sdckit.core.schema import ORDERED_KINDS, Schema
from sdckit.masking.reorder import column_order_values, take_column


def rank_swap_source(
    values: np.ndarray, window: int, rng: np.random.Generator, *, ties: str = "random"
) -> np.ndarray:
    """For each record, the record whose value it receives under rank swapping.

    ``window`` is the largest allowed rank difference. The result is a permutation made of
    swaps (pairs) and fixed points; ``values[source]`` has the same multiset as ``values`` and
    every record's rank moves by at most ``window``.
    """
    order = sort_order(values, ties=ties, seed=rng)  # order[r]: record of rank r+1
    partner = swap_partners(len(values), int(window), swap_draws(len(values), derive_seed(rng)))
    source = np.empty(len(values), dtype=np.int64)
    source[order] = order[partner]
    return source


@register
@dataclass(frozen=True)
class RankSwapping(Method):
    """Rank swapping: each value swapped with a random partner of nearby rank.

    Per attribute, the values are sorted (ties broken at random, DESIGN.md section 3); going up
    the ranks, each value not yet swapped is exchanged with a partner drawn uniformly among the
    not-yet-swapped values whose rank exceeds its own by at most ``floor(p * n / 100)``; a
    value with no such partner left keeps its place. Columns are swapped independently.

    Parameters
    ----------
    p : float in (0, 100]
        Largest rank difference of a swap, in percent of the number of records ``n`` (seed 001
        uses 15: "values within a rank of 6 (15% of n = 40) are swapped randomly").
    columns : list of str, optional
        Columns to swap; default: the numeric, date and ordinal quasi-identifiers and
        confidential columns (every such column when no roles are declared).

    Notes
    -----
    Every column keeps its multiset of values (its dtype too) and no value moves by more than
    ``floor(p n / 100)`` ranks. Ordinal columns are ranked by their category order. Missing
    values are refused (``nan_policy="error"``). When ``floor(p n / 100) = 0`` nothing can be
    swapped; the report says so in ``info["warnings"]``. ``info["max_rank_difference"]`` holds
    the window and ``info["swapped_share"]`` the share of values that moved, per column.
    Each column costs ``O(n log n)`` (a sort and a compiled pass). The uniform draws that pick
    the partners are drawn by logical chunks of 65,536 sorted positions, each chunk from its own
    stream, and random ties by keys drawn the same way (:func:`sdckit.core.ranks.tie_keys`), so
    the streaming engines give the same release out of core: DuckDB's external sort and a pass
    over the sorted order holding the window (:func:`sdckit.engine.external_sort.rank_swap_file`;
    DESIGN.md section 8). Releases made before issue 17 are not reproduced bit for bit.

    References
    ----------
    Seed 002 (Domingo-Ferrer, Sánchez, Soria-Comas), section 4.6.3, "Data swapping"; seed 001
    (Domingo-Ferrer & Muralidhar, slides), "Evaluation of methods: rank swapping"; Moore
    (1996), "Controlled data-swapping techniques for masking public use microdata sets",
    U.S. Census Bureau.
    """

    p: float
    name: ClassVar[str] = "rank_swapping"
    constraints: ClassVar = {"p": Interval(float, 0, 100, closed="right")}
    kinds: ClassVar = ORDERED_KINDS
    example: ClassVar = {"p": 15}
    needs: ClassVar[str] = "ranks"

    def transform(
        self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema, rng: np.random.Generator
    ) -> Outcome:
        n = len(frame)
        window = int(np.floor(self.p * n / 100.0))
        moved = {}
        for name in columns:
            source = rank_swap_source(column_order_values(frame, name, schema), window, rng)
            moved[name] = float(np.mean(source != np.arange(n)))
            take_column(frame, name, source)
        warnings = []
        if window == 0:
            warnings.append(
                f"RankSwapping with p={self.p} on {n} records allows a rank difference of 0, so "
                "nothing was swapped; raise p."
            )
        info = {"max_rank_difference": window, "swapped_share": moved, "warnings": warnings}
        return Outcome(frame, schema, info)
