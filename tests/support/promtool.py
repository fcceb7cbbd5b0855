"""Prometheus' ``promtool`` for the tests that lint metrics and alert rules with it.

Missing, those checks are skipped, loudly; with ``CRONWHEEL_REQUIRE_PROMTOOL=1`` (CI sets it;
``make test`` installs Debian's ``prometheus`` package, which carries promtool) they fail
instead, so a CI run cannot pass by silently skipping them."""

from __future__ import annotations

import os
import shutil

import pytest

ENV_REQUIRE = "CRONWHEEL_REQUIRE_PROMTOOL"


def promtool() -> str | None:
    """The path of promtool; None when it is missing and not required."""
    path = shutil.which("promtool")
    if path is None and os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(f"promtool is not installed and {ENV_REQUIRE}=1 (Debian: apt-get install prometheus)")
    return path


def promtool_or_skip() -> str:
    path = promtool()
    if path is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    return path
