"""cronwheel: a distributed job scheduler."""

from importlib.metadata import PackageNotFoundError, version

try:  # one version source: pyproject.toml, through the installed package's metadata
    __version__ = version("cronwheel")
except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"
