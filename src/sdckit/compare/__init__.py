"""Comparison of methods and parameter values: risk against utility loss (seeds 000, 001).

* :func:`compare` — run candidates on the same data and seed, verify and measure each;
* :func:`example_methods` — seed 001's comparison of masking and synthetic data;
* :func:`load_compare_recipe` / :func:`run_compare_recipe` — the TOML format of
  ``sdckit compare RECIPE.toml``.
"""

from sdckit.compare.core import Candidate, CandidateResult, Comparison, compare, evaluate_release
from sdckit.compare.example import correlated_normal, example_methods, seed001_candidates

__all__ = [
    "Candidate",
    "CandidateResult",
    "Comparison",
    "compare",
    "correlated_normal",
    "evaluate_release",
    "example_methods",
    "seed001_candidates",
]
