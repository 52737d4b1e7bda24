"""sdckit's version: from the installed package's metadata, or the source tree's default."""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("sdckit")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"
