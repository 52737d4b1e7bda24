"""Synthetic-data generators (seed 001; seed 002 section 4.6.3)."""

from sdckit.synthetic.base import Synthesizer
from sdckit.synthetic.cart import CartSynthesizer
from sdckit.synthetic.copula import GaussianCopulaSynthesizer
from sdckit.synthetic.normal import MultivariateNormalSynthesizer

__all__ = [
    "CartSynthesizer",
    "GaussianCopulaSynthesizer",
    "MultivariateNormalSynthesizer",
    "Synthesizer",
]
