"""Disclosure-risk measures (seed 002 section 4.6.3; seeds 000 and 001; seed 003).

* :func:`distance_linkage` — distance-based record linkage on standardized attributes;
* :func:`interval_disclosure` — share of original values inside an interval around the
  released value;
* :func:`equivalence_classes` — class sizes and sample uniques on categorical
  quasi-identifiers;
* :func:`frequencies`, :func:`individual_risk`, :func:`global_risk`,
  :func:`k_anonymity_violations` — sample and weighted key frequencies and the
  Benedetti-Franconi re-identification risk, per record, per household and for the file;
* :func:`l_diversity` — distinct and entropy l-diversity of a sensitive attribute per record;
* :func:`population_risk` — population uniqueness (Pitman, Zayatz, SNB, Dankar's rule) and
  prosecutor, journalist and marketer risk;
* :func:`suda2` — minimal sample uniques, SUDA and DIS-SUDA scores;
* :func:`permutation_risk` — the permutation paradigm's verification, linkage and rank
  displacement summarised (needs :mod:`sdckit.permutation`).
"""

from sdckit.risk.classes import ClassRisk, categorical_quasi, equivalence_classes
from sdckit.risk.frequencies import frequencies, k_anonymity_violations
from sdckit.risk.individual import GlobalRisk, global_risk, individual_risk
from sdckit.risk.interval import IntervalDisclosure, interval_disclosure
from sdckit.risk.ldiversity import l_diversity
from sdckit.risk.linkage import distance_linkage
from sdckit.risk.linkage_result import DistanceLinkage, true_originals
from sdckit.risk.permutation import PermutationRisk, permutation_risk
from sdckit.risk.population import PopulationRisk, population_risk
from sdckit.risk.suda import suda2

__all__ = [
    "ClassRisk",
    "DistanceLinkage",
    "GlobalRisk",
    "IntervalDisclosure",
    "PermutationRisk",
    "PopulationRisk",
    "categorical_quasi",
    "distance_linkage",
    "equivalence_classes",
    "frequencies",
    "global_risk",
    "individual_risk",
    "interval_disclosure",
    "k_anonymity_violations",
    "l_diversity",
    "permutation_risk",
    "population_risk",
    "suda2",
    "true_originals",
]
