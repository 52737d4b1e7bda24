"""Perturbative and non-perturbative masking methods (seed 002 section 4.6.3, seed 001)."""

from sdckit.masking.noise import AdditiveNoise
from sdckit.masking.recoding import GlobalRecoding
from sdckit.masking.rounding import Rounding
from sdckit.masking.sampling import Sampling
from sdckit.masking.suppression import LocalSuppression
from sdckit.masking.topbottom import TopBottomCoding

__all__ = ["AdditiveNoise"]
__all__ += ["GlobalRecoding"]
__all__ += ["LocalSuppression"]
__all__ += ["Rounding"]
__all__ += ["Sampling"]
__all__ += ["TopBottomCoding"]
from sdckit.masking.microaggregation import Microaggregation, mdav_groups, univariate_groups
__all__ += ["Microaggregation", "mdav_groups", "univariate_groups"]
from sdckit.masking.noise import CorrelatedNoise, MultiplicativeNoise
__all__ += ["CorrelatedNoise", "MultiplicativeNoise"]
from sdckit.masking.rankswap import RankSwapping
__all__ += ["RankSwapping"]
from sdckit.masking.shuffling import DataShuffling
__all__ += ["DataShuffling"]
from sdckit.masking.pram import Pram
__all__ += ["Pram"]
