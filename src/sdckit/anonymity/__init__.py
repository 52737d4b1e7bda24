"""k-anonymity and its refinements: hierarchies, lattice search, Mondrian, criteria (seeds 003, 004)."""

from sdckit.anonymity.check import CheckReport, check
from sdckit.anonymity.criteria import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from sdckit.anonymity.frequencies import search_frequencies
from sdckit.anonymity.fulldomain import FullDomainGeneralization
from sdckit.anonymity.generalize import GeneralizeToNode
from sdckit.core.hierarchy import Hierarchy
from sdckit.anonymity.microaggregation import MicroaggregationAnonymity
from sdckit.anonymity.mondrian import Mondrian
from sdckit.anonymity.partition import Partition

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
