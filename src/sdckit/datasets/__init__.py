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
