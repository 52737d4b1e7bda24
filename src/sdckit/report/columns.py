"""Which columns the report assesses, and the original put on the release's scale where the
release recoded a column into categories of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import SdcError
from sdckit.core.schema import ORDERED_KINDS, Role, Schema
from sdckit.report.transparency import schema_from_manifest
from sdckit.utility.columns import shared_numeric_columns


def assessed_columns(original: pd.DataFrame, released: pd.DataFrame, schema: Schema | None) -> list[str]:
    """Columns for the permutation assessment: shared, ordered kind; the quasi-identifiers and
    confidential ones when the schema declares roles."""
    shared = [c for c in released.columns if c in original.columns]
    if schema is None:
        numeric = set(shared_numeric_columns(original, released))
        return [c for c in shared if c in numeric]
    roles = {Role.QUASI, Role.CONFIDENTIAL}
    chosen = set(schema.select(roles, ORDERED_KINDS))
    return [c for c in shared if c in chosen]


def on_release_scale(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str],
                     schema: Schema | None, manifest: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``original`` with each column that the release recoded into categories of its own put on
    the release's scale, so that the permutation paradigm can compare the two.

    A method such as :class:`~sdckit.masking.GlobalRecoding` gives a column a category order
    (its intervals or groups) that the original's values are not in: the release's schema holds
    that order, the original's column does not. Each original value then becomes the released
    value of the same rank (the lower empirical quantile when the record counts differ), its rank
    taken in the original's own order (the manifest's input schema, else its dtype; ties share
    their mean rank). For a monotone recoding ``g`` alone this is ``g(x)`` exactly: the release is
    ``g`` of the original record by record, so its sorted values are ``g`` of the original's.
    Other columns, and columns the original cannot rank, are left as they are (the verification
    then says why it could not use them).
    """
    from scipy.stats import rankdata

    from sdckit.core.ranks import order_values

    if schema is None:
        return original
    own = schema_from_manifest(manifest, original) if manifest else None
    scaled: dict[str, np.ndarray] = {}
    for name in columns:
        column = schema[name] if name in schema else None
        if column is None or column.order is None or name not in original.columns:
            continue
        categories = pd.Index(list(column.order), dtype=object)
        present = released[name].dropna().astype(object)  # a suppressed cell is the release's business
        if original[name].astype(object).isin(categories).all() or not present.isin(categories).all() or present.empty:
            continue
        own_column = own[name] if own is not None and name in own else Schema.infer(original[[name]])[name]
        try:
            x = order_values(original[name], own_column)
            y = order_values(present, column)
        except SdcError:
            continue
        y_sorted = present.to_numpy(dtype=object)[np.argsort(y, kind="stable")]
        rank = rankdata(x, method="average")
        position = np.clip(np.ceil((rank - 0.5) / len(x) * len(y)).astype(np.int64) - 1, 0, len(y) - 1)
        scaled[name] = y_sorted[position]
    if not scaled:
        return original
    out = original.copy()
    for name, values in scaled.items():
        out[name] = pd.Series(values, index=original.index, name=name, dtype=object)
    return out
