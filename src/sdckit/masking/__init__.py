"""Perturbative and non-perturbative masking methods (seed 002 section 4.6.3, seed 001)."""

from sdckit.masking.noise import AdditiveNoise

__all__ = ["AdditiveNoise"]
from sdckit.masking.microaggregation import Microaggregation, mdav_groups, univariate_groups
__all__ += ["Microaggregation", "mdav_groups", "univariate_groups"]
