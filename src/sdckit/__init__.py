"""sdckit: statistical disclosure control — protect microdata and verify the protection.

The library's main entry points::

    import sdckit
    data = sdckit.read("census.csv")
    release = sdckit.protect(data, [sdckit.AdditiveNoise(alpha=0.1)], seed=7)
    sdckit.write(release.data, "out/census_protected.csv")

See DESIGN.md and the README for the architecture and the CLI.
"""

from sdckit.core.version import __version__
from sdckit.core.errors import DataError, ParameterError, SchemaError, SdcError  # noqa: E402
from sdckit.core.errors import SecurityWarning  # noqa: E402
from sdckit.core.random import new_seed  # noqa: E402
from sdckit.core.method import Method, Outcome  # noqa: E402
from sdckit.core.schema import Kind, Role, Schema  # noqa: E402
from sdckit.io import read, write  # noqa: E402
from sdckit.pipeline import Release, protect  # noqa: E402

# Methods (each registered under its recipe name).
from sdckit.masking import (  # noqa: E402
    AdditiveNoise,
    CorrelatedNoise,
    DataShuffling,
    GlobalRecoding,
    LocalSuppression,
    Microaggregation,
    MultiplicativeNoise,
    Pram,
    RankSwapping,
    Rounding,
    Sampling,
    TopBottomCoding,
)
from sdckit.synthetic import (  # noqa: E402
    CartSynthesizer,
    GaussianCopulaSynthesizer,
    MultivariateNormalSynthesizer,
)
from sdckit.anonymity import (  # noqa: E402
    DistinctLDiversity,
    EntropyLDiversity,
    FullDomainGeneralization,
    Hierarchy,
    KAnonymity,
    MicroaggregationAnonymity,
    Mondrian,
    RecursiveCLDiversity,
    TCloseness,
)
from sdckit.anonymity import check as check_anonymity  # noqa: E402
from sdckit.dp import (  # noqa: E402
    BudgetAccountant,
    BudgetExceeded,
    Geometric,
    KEpsilonAnonymity,
    Laplace,
    LaplaceNoise,
)

# Verification: the permutation paradigm.
from sdckit.permutation import (  # noqa: E402
    assess,
    assign_linkage,
    decompose,
    intruder_linkage,
    permutation_distances,
    permuted_privacy,
    rank_correlation,
    rank_displacement,
    reverse_map,
    verify_linkage,
    verify_subject,
)

__all__ = [
    "AdditiveNoise", "BudgetAccountant", "BudgetExceeded", "CartSynthesizer", "CorrelatedNoise",
    "DataError", "DataShuffling", "DistinctLDiversity", "EntropyLDiversity",
    "FullDomainGeneralization", "GaussianCopulaSynthesizer", "Geometric", "GlobalRecoding",
    "Hierarchy", "KAnonymity", "KEpsilonAnonymity", "Kind", "Laplace", "LaplaceNoise",
    "LocalSuppression", "Method", "Microaggregation", "MicroaggregationAnonymity", "Mondrian",
    "MultiplicativeNoise", "MultivariateNormalSynthesizer", "Outcome", "ParameterError", "Pram",
    "RankSwapping", "RecursiveCLDiversity", "Release", "Role", "Rounding", "Sampling", "Schema",
    "SchemaError", "SdcError", "TCloseness", "TopBottomCoding", "__version__", "assess",
    "assign_linkage", "check_anonymity", "decompose", "intruder_linkage", "permutation_distances",
    "permuted_privacy", "protect", "rank_correlation", "rank_displacement", "read",
    "reverse_map", "verify_linkage", "verify_subject", "write",
    "SecurityWarning", "new_seed",
]
