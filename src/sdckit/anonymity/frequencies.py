"""Optimal full-domain generalization of a frequency table computed elsewhere (issue 18).

The lattice search never needs the records, only the *bottom frequency table*: the distinct
combinations of the quasi-identifiers' original values (and of the sensitive values, for
l-diversity and t-closeness) with the number of records behind each. Any engine that can
count — pandas, DuckDB over Parquet larger than memory, a database — can compute that table
and hand it to :func:`search_frequencies`, which returns the optimal node::

    # codes[:, j]: the row of the record's value in hierarchy j's table (its level-0 code);
    #              for a value v of column q that is hierarchies[q].values.index(key(v)), with
    #              key = sdckit.core.hierarchy.value_keys (e.g. a join of the column's keys
    #              with the hierarchy's first column);
    # codes[:, len(hierarchies) + i]: the index of the sensitive value in sensitive[name_i];
    # counts[r]: records with that combination (rows may repeat: they are added up).
    result = search_frequencies(codes, counts, hierarchies, k=5, max_suppressed=1508)
    result.node      # the level of each quasi-identifier, in the order of ``hierarchies``

``max_suppressed`` is MaxSup as a number of records (``floor(share * n)``). The result is the
one :meth:`FullDomainGeneralization.search` finds on the records themselves; applying the node
(generalizing the values to those levels and dropping the records of violating classes) is
then the engine's own pass over the data, e.g. one SQL ``SELECT`` with the hierarchies joined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sdckit.anonymity.criteria import Criterion, criteria_with_k
from sdckit.anonymity.lattice import Encoded, Evaluator, encode_table
from sdckit.anonymity.metrics import DEFAULT_METRIC, check_metric
from sdckit.anonymity.search import ALGORITHMS, SearchResult
from sdckit.core.errors import ParameterError
from sdckit.core.hierarchy import Hierarchy


def evaluator_for(encoded: Encoded, k: int, criteria: Sequence[Criterion], allowed: int) -> Evaluator:
    """The lattice evaluator of ``encoded`` under k-anonymity and ``criteria`` with at most
    ``allowed`` suppressed records; a criterion prunes when it is monotone (with suppression,
    or without it when nothing may be suppressed)."""
    criteria = criteria_with_k(k, tuple(criteria))
    flags = [c.monotone or (allowed == 0 and c.monotone_without_suppression) for c in criteria]
    return Evaluator(encoded, criteria, allowed, flags)


def search_frequencies(codes: np.ndarray, counts: np.ndarray, hierarchies: Mapping[str, Hierarchy], k: int,
                       max_suppressed: int = 0, criteria: Sequence[Criterion] = (),
                       sensitive: Mapping[str, Sequence] | None = None, metric: str = DEFAULT_METRIC,
                       algorithm: str = "optimal") -> SearchResult:
    """The optimal full-domain generalization of a bottom frequency table (module docstring).

    Parameters
    ----------
    codes : (rows, quasi + sensitive) array of ints
        Level-0 codes of the quasi-identifiers (rows of their hierarchies), then the codes of
        the sensitive attributes the criteria name (indexes into ``sensitive``'s labels).
    counts : (rows,) array of ints >= 1
    hierarchies : mapping quasi-identifier -> Hierarchy, in the order of ``codes``' columns
    k : int >= 2
    max_suppressed : int >= 0
        MaxSup, in records.
    criteria : further criteria (l-diversity, t-closeness)
    sensitive : mapping sensitive column -> its labels in the attribute's order
    metric, algorithm : as for :class:`~sdckit.anonymity.FullDomainGeneralization`
    """
    if algorithm not in ALGORITHMS:
        raise ParameterError(f"The 'algorithm' parameter of search_frequencies must be one of "
                             f"{tuple(ALGORITHMS)}. Got {algorithm!r} instead.")
    check_metric(metric, "search_frequencies")
    if not isinstance(max_suppressed, int | np.integer) or max_suppressed < 0:
        raise ParameterError("The 'max_suppressed' parameter of search_frequencies must be an int >= 0. "
                             f"Got {max_suppressed!r} instead.")
    names = [c.needs_sensitive for c in criteria if c.needs_sensitive is not None]
    missing = [s for s in names if s not in (sensitive or {})]
    if missing:
        raise ParameterError(f"The 'sensitive' parameter of search_frequencies must give the labels of "
                             f"{missing[0]!r}, which a criterion names.")
    encoded = encode_table(codes, counts, hierarchies, sensitive)
    return ALGORITHMS[algorithm](evaluator_for(encoded, k, criteria, int(max_suppressed)), metric)
