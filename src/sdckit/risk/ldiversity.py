"""l-diversity of a sensitive attribute, measured for assessment (Machanavajjhala et al. 2007).

For each record, the values of ``sensitive`` among the records whose key matches its key
(under the ``missing`` rule of :mod:`sdckit.core.matching`; the record itself included):
``distinct_l`` is how many different values occur, ``entropy_l`` is ``exp(entropy)`` of their
distribution (the effective number of values). The anonymity package enforces the same two
quantities as criteria; both compute them with :mod:`sdckit.core.diversity`. A missing
sensitive value counts as a value of its own. sdcMicro's ``ldiversity`` reports the same
distinct and entropy measures per record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdckit.core.diversity import distinct_values, entropy_values
from sdckit.core.errors import SchemaError
from sdckit.core.matching import MISSING_RULE, check_keys, match_totals
from sdckit.core.params import validated
from sdckit.risk.frequencies import require_frame, stratified_codes


@validated(missing=MISSING_RULE)
def l_diversity(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    sensitive: str,
    missing: str = "wildcard",
    *,
    strata: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Per record ``fk``, ``distinct_l`` and ``entropy_l`` of ``sensitive`` in its key's class.

    Examples
    --------
    >>> f = pd.DataFrame({"zip": [1, 1, 1, 2, 2], "disease": ["flu", "flu", "hiv", "flu", "flu"]})
    >>> l_diversity(f, ["zip"], "disease")[["distinct_l"]].to_numpy().ravel().tolist()
    [2.0, 2.0, 2.0, 1.0, 1.0]
    """
    owner = "l_diversity"
    require_frame(frame, owner)
    keys = check_keys(frame, keys, owner)
    if sensitive not in frame.columns:
        raise SchemaError(f"Sensitive column {sensitive!r} of {owner} is not in the data; "
                          f"the columns are: {', '.join(map(str, frame.columns))}.")
    if sensitive in keys:
        raise SchemaError(f"{owner}: the sensitive column {sensitive!r} cannot also be a key variable.")
    codes = stratified_codes(frame, keys, strata, missing, owner)
    values = pd.factorize(frame[sensitive], use_na_sentinel=False)[0]
    hist = np.empty((len(frame), int(values.max()) + 1))
    for v in range(hist.shape[1]):  # one matching pass per sensitive value
        hist[:, v] = match_totals(codes, (values == v).astype(float))[1]
    return pd.DataFrame({"fk": hist.sum(axis=1).astype(np.int64), "distinct_l": distinct_values(hist),
                         "entropy_l": entropy_values(hist)}, index=frame.index)
