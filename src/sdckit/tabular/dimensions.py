"""The dimensions of a table: the hierarchy of each (given, or flat over the codes the data
carry) and the positions of the leaf codes records carry (:meth:`Table.from_microdata
<sdckit.tabular.table.Table.from_microdata>`, :meth:`~sdckit.tabular.table.Table.from_cells` and
:mod:`sdckit.tabular.build_duckdb`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import DataError, ParameterError
from sdckit.tabular.hierarchy import DimensionHierarchy, as_dimension_hierarchy


def hierarchies_for(dims: Sequence[str], hierarchies: Any, frame: pd.DataFrame, total: str,
                    leaves_only: bool = True) -> list[DimensionHierarchy]:
    """The hierarchy of each dimension: as given (a :class:`DimensionHierarchy`, a ``{child: parent}``
    mapping, an ``.hrc`` path; per dimension in a mapping, or one per dimension in a list), or
    flat over the codes ``frame`` carries under ``total`` (without ``total`` itself when the
    frame lists cells rather than records, ``leaves_only=False``)."""
    if hierarchies is None:
        hierarchies = {}
    if not isinstance(hierarchies, Mapping):
        hierarchies = list(hierarchies)
        if len(hierarchies) != len(dims):
            raise ParameterError(f"The 'hierarchies' parameter has {len(hierarchies)} entries for "
                                 f"{len(dims)} dimensions; give one per dimension (None for flat).")
        hierarchies = dict(zip(dims, hierarchies))
    unknown = [k for k in hierarchies if k not in dims]
    if unknown:
        raise ParameterError(f"The 'hierarchies' parameter names {unknown[0]!r}, which is not a dimension.")
    out = []
    for d in dims:
        codes = frame[d].dropna().astype(str).str.strip().unique()
        if hierarchies.get(d) is None and not leaves_only:
            codes = [c for c in codes if c != total]
        out.append(as_dimension_hierarchy(hierarchies.get(d), name=d, codes=sorted(codes), total=total))
    return out


def leaf_positions(column: str, codes: Sequence[str], h: DimensionHierarchy) -> np.ndarray:
    """Positions in ``h`` of the distinct leaf ``codes`` records of ``column`` carry.

    Raises
    ------
    DataError
        Codes not in the hierarchy, or subtotal codes, counted but not quoted (a code outside
        the published hierarchy is data).
    """
    codes = list(codes)
    unknown = [c for c in codes if c not in h]
    if unknown:
        raise DataError(f"Column {column!r} has {len(unknown)} code(s) that are not in its hierarchy (not shown: "
                        "they are data); add them to the hierarchy or recode the records.")
    mapped = np.array([h.index(c) for c in codes], dtype=np.int64)
    subtotals = int((~h.is_leaf_array()[mapped]).sum()) if len(mapped) else 0
    if subtotals:
        raise DataError(f"Column {column!r} has {subtotals} subtotal code(s) of its hierarchy; records must "
                        "carry leaf codes.")
    return mapped


