"""Comparison of methods and parameter values: risk against utility loss (seeds 000, 001).

* :func:`compare` — run candidates on the same data and seed, verify and measure each;
* :func:`example_methods` — seed 001's comparison of masking and synthetic data;
* :func:`load_compare_recipe` / :func:`run_compare_recipe` — the TOML format of
  ``sdckit compare RECIPE.toml``.
"""

from sdckit.core.lazy import lazy_exports

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

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "Candidate": "sdckit.compare.core",
    "CandidateResult": "sdckit.compare.core",
    "Comparison": "sdckit.compare.core",
    "compare": "sdckit.compare.core",
    "correlated_normal": "sdckit.compare.example",
    "evaluate_release": "sdckit.compare.core",
    "example_methods": "sdckit.compare.example",
    "seed001_candidates": "sdckit.compare.example",
})
