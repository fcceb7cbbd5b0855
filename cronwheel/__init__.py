"""cronwheel: a distributed job scheduler."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed package's metadata (one version source:
    pyproject.toml) the first time something asks. Not at import: importlib.metadata costs
    every process ~20 ms and a few MiB, and workers and most CLI commands never need it."""
    if name != "__version__":
        raise AttributeError(f"module 'cronwheel' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("cronwheel")
    except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
