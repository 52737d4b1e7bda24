"""Adult with the synthetic height column of seed 004 section VI, shared by the dp tests.

The height of each person is drawn independently from a normal distribution for their age
group and sex. The means and standard deviations (cm) approximate the US reference data the
paper cites (Fryar, Gu & Ogden 2012, "Anthropometric reference data for children and adults:
United States, 2007-2010", tables of height by age group for men and women); the tests depend
only on heights being a realistic continuous column, not on these exact figures.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from sdckit import Schema
from sdckit.anonymity import Hierarchy

DATA = Path(__file__).parent / "data" / "adult"
K_QUASI = ("age", "sex", "race", "marital-status")

#: (upper age of the group, mean male, sd male, mean female, sd female), in cm.
HEIGHTS = (
    (19, 175.7, 7.3, 162.9, 6.6),
    (29, 176.4, 7.5, 162.8, 6.9),
    (39, 176.4, 7.5, 163.0, 6.9),
    (49, 176.3, 7.4, 162.9, 6.8),
    (59, 175.8, 7.4, 162.1, 6.7),
    (69, 174.7, 7.2, 160.9, 6.6),
    (79, 173.4, 7.0, 159.0, 6.5),
    (200, 170.6, 7.0, 156.2, 6.5),
)


def synthetic_height(age: np.ndarray, male: np.ndarray, seed: int = 2017) -> np.ndarray:
    """Heights drawn independently, normal by age group and sex, with a fixed seed."""
    table = np.array(HEIGHTS)
    group = np.searchsorted(table[:, 0], age)
    mean = np.where(male, table[group, 1], table[group, 3])
    sd = np.where(male, table[group, 2], table[group, 4])
    return np.random.default_rng(seed).normal(mean, sd)


@lru_cache(maxsize=1)
def _adult() -> pd.DataFrame:
    frame = pd.read_csv(DATA / "adult.csv.gz", sep=";")
    frame["height"] = synthetic_height(frame["age"].to_numpy(), (frame["sex"] == "Male").to_numpy())
    frame["rid"] = np.arange(len(frame))
    return frame


def adult_with_height() -> tuple[pd.DataFrame, Schema]:
    """Adult (30,162 records) with ``height`` and a record id ``rid`` (non-confidential, kept by
    the method so that tests can pair released and original records)."""
    frame = _adult().copy()
    schema = Schema.infer(
        frame,
        quasi=list(K_QUASI) + ["height"],
        confidential=["occupation"],
        non_confidential=["rid", "education", "native-country", "workclass", "salary-class"],
    )
    return frame, schema


@lru_cache(maxsize=1)
def adult_hierarchies() -> dict[str, Hierarchy]:
    return {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv.gz") for q in K_QUASI}
