"""A real headless browser for the dashboard tests: Debian's ``chromium`` driven through its
``chromedriver`` by selenium.

Where the browser comes from: ``make test`` installs ``chromium`` and ``chromium-driver`` with
apt-get when it can (root, apt-get present; see the Makefile). ``CRONWHEEL_CHROMIUM`` and
``CRONWHEEL_CHROMEDRIVER`` point elsewhere. Selenium is always given both paths, so its own
driver manager (which would download a browser) never runs: the machine may have no internet.

Without a browser the tests are skipped with a loud reason, or fail when
``CRONWHEEL_REQUIRE_BROWSER=1`` (CI sets it: a CI run that silently skipped the dashboard
would prove nothing), the way tests/support/postgres.py treats PostgreSQL.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

ENV_REQUIRE = "CRONWHEEL_REQUIRE_BROWSER"
ENV_CHROMIUM = "CRONWHEEL_CHROMIUM"
ENV_DRIVER = "CRONWHEEL_CHROMEDRIVER"
#: screenshots of the browser tests, kept as artifacts (gitignored)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"

#: what headless Chromium needs as root in a container with no network and little /dev/shm
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container: the setuid sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a small /dev/shm crashes renderers; use /tmp
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",  # no update checks, safe-browsing lists, …: no internet here
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--window-size=1400,1000",
    "--lang=en-US",
)


def unavailable(reason: str, *, module_level: bool = False) -> NoReturn:
    """Skip loudly, or fail when the browser is required."""
    if os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(f"a browser is required ({ENV_REQUIRE}=1) but unavailable: {reason}", pytrace=False)
    pytest.skip(
        f"!!! DASHBOARD NOT TESTED IN A BROWSER: {reason}. Install Debian's chromium and "
        f"chromium-driver (make test does so as root), or set {ENV_CHROMIUM}/{ENV_DRIVER}; "
        f"set {ENV_REQUIRE}=1 to make this an error !!!",
        allow_module_level=module_level,
    )


def require_selenium() -> None:
    """For a test module that imports selenium: skip it whole (loudly) when selenium is not
    installed, or fail its collection when the browser is required."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        unavailable("the selenium package is not installed (pip install -e '.[test]')", module_level=True)


def find_browser() -> tuple[str, str]:
    """(chromium, chromedriver) paths, or ``unavailable``."""
    chromium = os.environ.get(ENV_CHROMIUM) or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get(ENV_DRIVER) or shutil.which("chromedriver")
    if not chromium or not Path(chromium).exists():
        unavailable("no chromium binary (looked for $CRONWHEEL_CHROMIUM, chromium, chromium-browser on PATH)")
    if not driver or not Path(driver).exists():
        unavailable("no chromedriver (Debian package chromium-driver)")
    require_selenium()
    return chromium, driver


@contextlib.contextmanager
def chromium_driver() -> Iterator[Any]:
    """A headless Chromium with a fresh profile, quit (and its profile removed) afterwards."""
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = find_browser()
    profile = tempfile.mkdtemp(prefix="cw-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    # console messages (an uncaught error, a CSP violation) are read by the tests
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        unavailable(f"chromium did not start: {exc.msg or exc}")
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        with contextlib.suppress(Exception):
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of the page under test-artifacts/browser/ (the whole page, not just the
    viewport, via the DevTools protocol). Returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if full_page:
        metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        })
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))
    return path
