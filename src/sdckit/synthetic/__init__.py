"""Synthetic-data generators (seed 001; seed 002 section 4.6.3)."""

from sdckit.core.lazy import lazy_exports

__all__ = [
    "CartSynthesizer",
    "GaussianCopulaSynthesizer",
    "MultivariateNormalSynthesizer",
    "Synthesizer",
]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "CartSynthesizer": "sdckit.synthetic.cart",
    "GaussianCopulaSynthesizer": "sdckit.synthetic.copula",
    "MultivariateNormalSynthesizer": "sdckit.synthetic.normal",
    "Synthesizer": "sdckit.synthetic.base",
})
