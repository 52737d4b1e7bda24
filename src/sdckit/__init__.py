"""sdckit: statistical disclosure control — protect microdata and verify the protection.

The library's main entry points::

    import sdckit
    data = sdckit.read("census.csv")
    release = sdckit.protect(data, [sdckit.AdditiveNoise(alpha=0.1)], seed=7)
    sdckit.write(release.data, "out/census_protected.csv")

See DESIGN.md and the README for the architecture and the CLI.
"""

from __future__ import annotations

from sdckit.core.errors import DataError, ParameterError, PrivacyWarning, SchemaError, SdcError, SecurityWarning
from sdckit.core.lazy import lazy_exports

#: Every public name of the package and the module it comes from. They are imported on first
#: use (PEP 562), so that ``import sdckit`` or one family (e.g. ``sdckit.anonymity``) does not
#: load every other family and its libraries (numba, scipy, scikit-learn) into memory.
_LAZY = {
    "__version__": "sdckit.core.version",  # read from the package's metadata: importlib.metadata costs
    "new_seed": "sdckit.core.random", "Method": "sdckit.core.method", "Outcome": "sdckit.core.method",
    "Kind": "sdckit.core.schema", "Role": "sdckit.core.schema", "Schema": "sdckit.core.schema",
    "read": "sdckit.io", "write": "sdckit.io", "Release": "sdckit.pipeline", "protect": "sdckit.pipeline",
    **dict.fromkeys(("AdditiveNoise", "CorrelatedNoise", "DataShuffling", "GlobalRecoding", "LocalSuppression",
                     "Microaggregation", "MultiplicativeNoise", "Pram", "RankSwapping", "RecordSwapping", "Rounding", "Sampling",
                     "TopBottomCoding"), "sdckit.masking"),
    **dict.fromkeys(("CartSynthesizer", "GaussianCopulaSynthesizer", "MultivariateNormalSynthesizer"),
                    "sdckit.synthetic"),
    **dict.fromkeys(("DistinctLDiversity", "EntropyLDiversity", "FullDomainGeneralization", "Hierarchy",
                     "KAnonymity", "MicroaggregationAnonymity", "Mondrian", "RecursiveCLDiversity", "TCloseness"),
                    "sdckit.anonymity"),
    **dict.fromkeys(("BudgetAccountant", "BudgetExceeded", "Geometric", "KEpsilonAnonymity", "Laplace",
                     "LaplaceNoise"), "sdckit.dp"),
    **dict.fromkeys(("assess", "assign_linkage", "decompose", "intruder_linkage", "permutation_distances",
                     "permuted_privacy", "rank_correlation", "rank_displacement", "reverse_map", "verify_linkage",
                     "verify_subject"), "sdckit.permutation"),
}
#: Public names whose name differs in their module.
_RENAMED = {"check_anonymity": "sdckit.anonymity:check"}

__all__ = sorted(["DataError", "ParameterError", "PrivacyWarning", "SchemaError", "SdcError", "SecurityWarning",
                  *_LAZY, *_RENAMED])

__getattr__, __dir__ = lazy_exports(__name__, {**_LAZY, **_RENAMED})
