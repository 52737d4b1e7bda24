"""Disclosure-risk measures (seed 002 section 4.6.3; seeds 000 and 001; seed 003).

* :func:`distance_linkage` — distance-based record linkage on standardized attributes;
* :func:`interval_disclosure` — share of original values inside an interval around the
  released value;
* :func:`equivalence_classes` — class sizes and sample uniques on categorical
  quasi-identifiers;
* :func:`permutation_risk` — the permutation paradigm's verification, linkage and rank
  displacement summarised (needs :mod:`sdckit.permutation`).
"""

from sdckit.risk.classes import ClassRisk, categorical_quasi, equivalence_classes
from sdckit.risk.interval import IntervalDisclosure, interval_disclosure
from sdckit.risk.linkage import DistanceLinkage, distance_linkage, true_originals
from sdckit.risk.permutation import PermutationRisk, permutation_risk

__all__ = [
    "ClassRisk",
    "DistanceLinkage",
    "IntervalDisclosure",
    "PermutationRisk",
    "categorical_quasi",
    "distance_linkage",
    "equivalence_classes",
    "interval_disclosure",
    "permutation_risk",
    "true_originals",
]
