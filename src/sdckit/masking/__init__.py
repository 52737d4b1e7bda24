"""Perturbative and non-perturbative masking methods (seed 002 section 4.6.3, seed 001)."""

from sdckit.core.lazy import lazy_exports

__all__ = [
    "AdditiveNoise",
    "CorrelatedNoise",
    "DataShuffling",
    "GlobalRecoding",
    "LocalSuppression",
    "Microaggregation",
    "MultiplicativeNoise",
    "Pram",
    "RankSwapping",
    "RecordSwapping",
    "Rounding",
    "Sampling",
    "TopBottomCoding",
    "mdav_groups",
    "univariate_groups",
]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "AdditiveNoise": "sdckit.masking.noise",
    "CorrelatedNoise": "sdckit.masking.noise",
    "DataShuffling": "sdckit.masking.shuffling",
    "GlobalRecoding": "sdckit.masking.recoding",
    "LocalSuppression": "sdckit.masking.suppression",
    "Microaggregation": "sdckit.masking.microaggregation",
    "MultiplicativeNoise": "sdckit.masking.noise",
    "Pram": "sdckit.masking.pram",
    "RankSwapping": "sdckit.masking.rankswap",
    "RecordSwapping": "sdckit.masking.recordswap",
    "Rounding": "sdckit.masking.rounding",
    "Sampling": "sdckit.masking.sampling",
    "TopBottomCoding": "sdckit.masking.topbottom",
    "mdav_groups": "sdckit.core.grouping",
    "univariate_groups": "sdckit.core.grouping",
})
