"""The permutation paradigm (seeds 000 and 001; DESIGN.md section 3).

Reverse mapping (:func:`reverse_map`, :func:`decompose`, :func:`rank_correlation`), permutation
distance (:func:`permutation_distances`), (d,v)-permuted privacy (:func:`permuted_privacy`),
the maximum-knowledge intruder (:func:`intruder_linkage`, :func:`assign_linkage`) and the
verification of his linkages (:func:`verify_linkage`), subject verification
(:func:`verify_subject`) and the protector's record-level measures (:func:`rank_displacement`).
"""

from sdckit.core.lazy import lazy_exports

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

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "Assessment": "sdckit.permutation.assess",
    "Assignment": "sdckit.permutation.assignment",
    "Linkage": "sdckit.permutation.intruder",
    "PermutedPrivacy": "sdckit.permutation.privacy",
    "SubjectVerification": "sdckit.permutation.subject",
    "Verification": "sdckit.permutation.verify",
    "assess": "sdckit.permutation.assess",
    "assign_linkage": "sdckit.permutation.assignment",
    "decompose": "sdckit.permutation.reverse",
    "hellinger": "sdckit.permutation.histograms",
    "intruder_linkage": "sdckit.permutation.intruder",
    "permutation_distances": "sdckit.permutation.distance",
    "permuted_privacy": "sdckit.permutation.privacy",
    "rank_correlation": "sdckit.permutation.reverse",
    "rank_displacement": "sdckit.permutation.displacement",
    "reverse_map": "sdckit.permutation.reverse",
    "sample_pairs": "sdckit.permutation.sample",
    "N_RANDOM": "sdckit.core.defaults",
    "verify_linkage": "sdckit.permutation.verify",
    "verify_subject": "sdckit.permutation.subject",
})
