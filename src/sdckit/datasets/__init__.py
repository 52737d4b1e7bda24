"""Data sets bundled with sdckit, each with its provenance (see PROVENANCE.txt)."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

import pandas as pd

_PACKAGE = "sdckit.datasets"


def path(name: str) -> Path:
    """The file system path of a bundled file (e.g. ``"casc.csv"`` or ``"demo.toml"``)."""
    resource = files(_PACKAGE) / name
    if not resource.is_file():
        raise FileNotFoundError(f"sdckit bundles no file {name!r}")
    with as_file(resource) as p:
        return Path(p)


def load_casc() -> pd.DataFrame:
    """The CASC census test file: 1080 records x 13 numeric attributes (see PROVENANCE.txt)."""
    return pd.read_csv(path("casc.csv"))


def load_census() -> pd.DataFrame:
    """A synthetic census file for examples: 1000 records with an identifier (ID), quasi-identifiers
    (AGE, SEX, ZIP, EDUCATION), a sensitive DISEASE and confidential INCOME and HEIGHT. No real
    person is in it (see PROVENANCE.txt)."""
    return pd.read_csv(path("census.csv"))


def make_households(households: int = 10_000, seed: int = 1) -> pd.DataFrame:
    """A synthetic person file in households, for census examples and benchmarks (no real person).

    ``households`` households of 1-6 persons (mean about 2.3) in 4 regions > 40 districts > 400
    municipalities (``region``, ``district``, ``municipality``: every municipality in one
    district, every district in one region); per household ``hid``, ``hsize`` and ``tenure``
    ("own"/"rent"); per person ``age_group`` (20 five-year groups, "00-04" .. "95+"), ``sex`` and
    ``nationality`` (10 codes "N0".."N9", N0 for 82% of persons, the others rare) and ``income``.
    The same arguments give the same file.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    size = rng.choice(np.arange(1, 7), households, p=[0.33, 0.33, 0.15, 0.12, 0.05, 0.02])
    municipality = rng.integers(0, 400, households)
    persons = int(size.sum())
    groups = np.array([f"{5 * g:02d}-{5 * g + 4:02d}" for g in range(19)] + ["95+"])
    nationality = rng.choice(10, persons, p=[0.82, 0.08, 0.04, 0.02, 0.01, 0.01, 0.007, 0.005, 0.005, 0.003])
    return pd.DataFrame({
        "hid": np.repeat(np.arange(1, households + 1), size),
        "region": np.repeat(municipality // 100 + 1, size),
        "district": np.repeat(municipality // 10 + 1, size),
        "municipality": np.repeat(municipality + 1, size),
        "hsize": np.repeat(size, size),
        "tenure": np.repeat(rng.choice(np.array(["own", "rent"]), households), size),
        "age_group": groups[rng.integers(0, 20, persons)],
        "sex": rng.choice(np.array(["F", "M"]), persons),
        "nationality": np.char.add("N", nationality.astype(str)),
        "income": rng.gamma(2.0, 15_000, persons).round(),
    })
