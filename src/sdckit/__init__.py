"""sdckit: statistical disclosure control — protect microdata and verify the protection.

The library's main entry points::

    import sdckit
    data = sdckit.read("census.csv")
    release = sdckit.protect(data, [sdckit.AdditiveNoise(alpha=0.1)], seed=7)
    sdckit.write(release.data, "out/census_protected.csv")

See DESIGN.md and the README for the architecture and the CLI.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("sdckit")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

from sdckit.core.errors import DataError, ParameterError, SchemaError, SdcError  # noqa: E402
from sdckit.core.method import Method, Outcome  # noqa: E402
from sdckit.core.schema import Kind, Role, Schema  # noqa: E402
from sdckit.io import read, write  # noqa: E402
from sdckit.masking import AdditiveNoise  # noqa: E402
from sdckit.pipeline import Release, protect  # noqa: E402

__all__ = [
    "AdditiveNoise",
    "DataError",
    "Kind",
    "Method",
    "Outcome",
    "ParameterError",
    "Release",
    "Role",
    "Schema",
    "SchemaError",
    "SdcError",
    "__version__",
    "protect",
    "read",
    "write",
]
