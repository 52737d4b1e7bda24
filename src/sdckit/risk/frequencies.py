"""Sample and estimated population frequencies of keys, with sampling weights.

For record i with key k (its values on the categorical key variables), ``fk`` is the number of
sample records sharing the key and ``Fk`` the sum of their sampling weights — the estimated
number of population units with that key (sdcMicro's ``freqCalc``; Templ, Kowarik & Meindl
2015, JSS 67(4), section 3.1). Without weights every record weighs 1 and ``Fk == fk``.
Missing key values follow one of two rules (:mod:`sdckit.core.matching`): ``"wildcard"``
(sdcMicro's, a missing value matches any value) or ``"category"``. ``strata`` computes every
count within each stratum (the strata columns must match exactly; a missing stratum is a
stratum of its own).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, SchemaError
from sdckit.core.matching import MISSING_RULE, check_keys, key_codes, match_totals
from sdckit.core.params import Interval, validated


def require_frame(frame: object, owner: str) -> pd.DataFrame:
    """``frame`` if it is a non-empty DataFrame, else a DataError naming ``owner``."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{owner} expects a pandas DataFrame; got {type(frame).__name__}.")
    if len(frame) == 0:
        raise DataError(f"{owner} got an empty data set (0 records).")
    return frame


def sampling_weights(frame: pd.DataFrame, weight: str | None, owner: str) -> np.ndarray | None:
    """The weight column as floats, each finite and > 0 (None without a weight column)."""
    if weight is None:
        return None
    if weight not in frame.columns:
        raise SchemaError(f"Weight column {weight!r} of {owner} is not in the data; "
                          f"the columns are: {', '.join(map(str, frame.columns))}.")
    values = pd.to_numeric(frame[weight], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values <= 0))
    if len(bad):
        rows = ", ".join(str(r + 1) for r in bad[:5]) + (" ..." if len(bad) > 5 else "")
        raise DataError(f"Weight column {weight!r} must hold positive finite numbers; "
                        f"{len(bad)} record(s) do not (rows {rows}).")
    return values


def stratified_codes(frame: pd.DataFrame, keys: Sequence[str], strata: Sequence[str] | str | None,
                     missing: str, owner: str) -> np.ndarray:
    """Key codes (see :func:`~sdckit.core.matching.key_codes`) with the strata appended as keys
    that must match exactly."""
    codes = key_codes(frame, keys, missing=missing)
    if strata is None or (not isinstance(strata, str) and len(strata) == 0):
        return codes
    strata = check_keys(frame, strata, owner)
    if set(strata) & set(keys):
        raise SchemaError(f"{owner}: a column cannot be both a key variable and a stratum.")
    return np.hstack([codes, key_codes(frame, strata, missing="category")])


@validated(missing=MISSING_RULE)
def frequencies(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    weight: str | None = None,
    missing: str = "wildcard",
    *,
    strata: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Per record, the sample frequency ``fk`` and the weighted frequency ``Fk`` of its key.

    Examples
    --------
    >>> f = pd.DataFrame({"sex": ["f", "f", "m", None], "w": [10.0, 20.0, 5.0, 1.0]})
    >>> frequencies(f, ["sex"], "w").to_dict("list")
    {'fk': [3, 3, 2, 4], 'Fk': [31.0, 31.0, 6.0, 36.0]}
    >>> frequencies(f, ["sex"], "w", missing="category")["fk"].tolist()
    [2, 2, 1, 1]
    """
    owner = "frequencies"
    require_frame(frame, owner)
    keys = check_keys(frame, keys, owner)
    w = sampling_weights(frame, weight, owner)
    fk, Fk = match_totals(stratified_codes(frame, keys, strata, missing, owner), w)
    return pd.DataFrame({"fk": fk.astype(np.int64), "Fk": Fk}, index=frame.index)


@validated(k=Interval(int, 1, None), missing=MISSING_RULE)
def k_anonymity_violations(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    k: int,
    missing: str = "wildcard",
    *,
    strata: Sequence[str] | str | None = None,
) -> int:
    """The number of records whose key is shared by fewer than ``k`` records (``fk < k``).

    Examples
    --------
    >>> f = pd.DataFrame({"a": [1, 1, 2, None]})
    >>> k_anonymity_violations(f, ["a"], 3), k_anonymity_violations(f, ["a"], 2, missing="category")
    (1, 2)
    """
    fk = frequencies(frame, keys, None, missing, strata=strata)["fk"].to_numpy()
    return int((fk < k).sum())
