"""Perturbative and non-perturbative masking methods (seed 002 section 4.6.3, seed 001)."""

from sdckit.core.grouping import mdav_groups, univariate_groups
from sdckit.masking.microaggregation import Microaggregation
from sdckit.masking.noise import AdditiveNoise, CorrelatedNoise, MultiplicativeNoise
from sdckit.masking.pram import Pram
from sdckit.masking.rankswap import RankSwapping
from sdckit.masking.recoding import GlobalRecoding
from sdckit.masking.recordswap import RecordSwapping
from sdckit.masking.rounding import Rounding
from sdckit.masking.sampling import Sampling
from sdckit.masking.shuffling import DataShuffling
from sdckit.masking.suppression import LocalSuppression
from sdckit.masking.topbottom import TopBottomCoding

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
