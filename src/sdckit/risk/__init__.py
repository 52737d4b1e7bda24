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

from sdckit.core.lazy import lazy_exports

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

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "ClassRisk": "sdckit.risk.classes",
    "DistanceLinkage": "sdckit.risk.linkage_result",
    "GlobalRisk": "sdckit.risk.individual",
    "IntervalDisclosure": "sdckit.risk.interval",
    "PermutationRisk": "sdckit.risk.permutation",
    "PopulationRisk": "sdckit.risk.population",
    "categorical_quasi": "sdckit.risk.classes",
    "distance_linkage": "sdckit.risk.linkage",
    "equivalence_classes": "sdckit.risk.classes",
    "frequencies": "sdckit.risk.frequencies",
    "global_risk": "sdckit.risk.individual",
    "individual_risk": "sdckit.risk.individual",
    "interval_disclosure": "sdckit.risk.interval",
    "k_anonymity_violations": "sdckit.risk.frequencies",
    "l_diversity": "sdckit.risk.ldiversity",
    "permutation_risk": "sdckit.risk.permutation",
    "population_risk": "sdckit.risk.population",
    "suda2": "sdckit.risk.suda",
    "true_originals": "sdckit.risk.linkage_result",
})
