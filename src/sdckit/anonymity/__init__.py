"""k-anonymity and its refinements: hierarchies, lattice search, Mondrian, criteria (seeds 003, 004)."""

from sdckit.core.lazy import lazy_exports

__all__ = [
    "CheckReport",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "FullDomainGeneralization",
    "GeneralizeToNode",
    "Hierarchy",
    "KAnonymity",
    "MicroaggregationAnonymity",
    "Mondrian",
    "Partition",
    "RecursiveCLDiversity",
    "TCloseness",
    "check",
    "search_frequencies",
]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "CheckReport": "sdckit.anonymity.check",
    "DistinctLDiversity": "sdckit.anonymity.criteria",
    "EntropyLDiversity": "sdckit.anonymity.criteria",
    "FullDomainGeneralization": "sdckit.anonymity.fulldomain",
    "GeneralizeToNode": "sdckit.anonymity.generalize",
    "Hierarchy": "sdckit.core.hierarchy",
    "KAnonymity": "sdckit.anonymity.criteria",
    "MicroaggregationAnonymity": "sdckit.anonymity.microaggregation",
    "Mondrian": "sdckit.anonymity.mondrian",
    "Partition": "sdckit.anonymity.partition",
    "RecursiveCLDiversity": "sdckit.anonymity.criteria",
    "TCloseness": "sdckit.anonymity.criteria",
    "check": "sdckit.anonymity.check",
    "search_frequencies": "sdckit.anonymity.frequencies",
})
