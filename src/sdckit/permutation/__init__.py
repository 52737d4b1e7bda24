"""The permutation paradigm (seeds 000 and 001; DESIGN.md section 3).

Reverse mapping (:func:`reverse_map`, :func:`decompose`, :func:`rank_correlation`), permutation
distance (:func:`permutation_distances`), (d,v)-permuted privacy (:func:`permuted_privacy`),
the maximum-knowledge intruder (:func:`intruder_linkage`, :func:`assign_linkage`) and the
verification of his linkages (:func:`verify_linkage`), subject verification
(:func:`verify_subject`) and the protector's record-level measures (:func:`rank_displacement`).
"""

from sdckit.permutation.assess import Assessment, assess
from sdckit.permutation.assignment import Assignment, assign_linkage
from sdckit.permutation.displacement import rank_displacement
from sdckit.permutation.distance import permutation_distances
from sdckit.permutation.intruder import Linkage, intruder_linkage
from sdckit.permutation.privacy import PermutedPrivacy, permuted_privacy
from sdckit.permutation.reverse import decompose, rank_correlation, reverse_map
from sdckit.permutation.sample import sample_pairs
from sdckit.permutation.subject import SubjectVerification, verify_subject
from sdckit.permutation.verify import N_RANDOM, Verification, hellinger, verify_linkage

__all__ = [
    "Assessment",
    "Assignment",
    "Linkage",
    "PermutedPrivacy",
    "SubjectVerification",
    "Verification",
    "assess",
    "assign_linkage",
    "decompose",
    "hellinger",
    "intruder_linkage",
    "permutation_distances",
    "permuted_privacy",
    "rank_correlation",
    "rank_displacement",
    "reverse_map",
    "sample_pairs",
    "N_RANDOM",
    "verify_linkage",
    "verify_subject",
]
