"""Shared by the report tests: a small data set whose original values can be told apart."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sdckit import AdditiveNoise, Schema, protect


def census(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """n records: an identifier, three correlated numeric attributes with 6 decimals (so that
    every original value is a distinctive string), and two categorical quasi-identifiers."""
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal(np.zeros(3), np.full((3, 3), 0.5) + 0.5 * np.eye(3), size=n)
    return pd.DataFrame({
        "ID": [f"PERSON-{i:05d}-XQ" for i in range(n)],
        "AGE": np.round(45 + 12 * z[:, 0], 6),
        "INCOME": np.round(31_000 + 9_000 * z[:, 1], 6),
        "WEALTH": np.round(120_000 + 40_000 * z[:, 2], 6),
        "SEX": rng.choice(["f", "m"], n),
        "REGION": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
    })


def census_schema(frame: pd.DataFrame) -> Schema:
    return Schema.infer(frame, identifier=["ID"], quasi=["AGE", "SEX", "REGION"], confidential=["INCOME", "WEALTH"])


def release(frame: pd.DataFrame, alpha: float = 0.5, seed: int = 1):
    return protect(frame, [AdditiveNoise(alpha=alpha)], schema=census_schema(frame), seed=seed)


def renderings(value: float) -> set[str]:
    """The ways a report could print a number."""
    return {repr(value), f"{value:.6f}", f"{value:.4f}", f"{value:.2f}", f"{value:,.2f}", f"{value:,.3f}", f"{value:.6g}"}


def disclosed_values(html: str, original: pd.DataFrame, released: pd.DataFrame) -> list[str]:
    """Renderings of original values that are NOT in the release and appear in ``html``."""
    released_text = set()
    for col in released.columns:
        for v in released[col].tolist():
            released_text |= renderings(v) if isinstance(v, float) else {str(v)}
    found = []
    tokens = set(re.findall(r"[-\w.,]+", html))
    for col in original.columns:
        for v in original[col].tolist():
            forms = renderings(v) if isinstance(v, float) else {str(v)}
            # values that also occur in the release, and short or round forms, cannot tell
            for form in forms - released_text:
                if len(form.replace(",", "").replace(".", "").lstrip("-")) >= 7 and form in tokens:
                    found.append(f"{col}={form}")
    return found
