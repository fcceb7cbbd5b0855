from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import chromium_driver, find_browser


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium per module (each test still gets its own daemon, so its own
    origin and sessionStorage). Skipped loudly without a browser, failed instead when
    CRONWHEEL_REQUIRE_BROWSER=1 (tests/support/browser.py)."""
    find_browser()
    with chromium_driver() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": GUARD})
        yield driver


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The module's browser, on a blank page, with every alert/confirm/prompt recorded instead
    of shown (a dialog that the page never meant to open, e.g. from injected markup, must be
    seen by the test) and the console log of the previous test discarded."""
    chromium.get("about:blank")
    chromium.get_log("browser")
    yield chromium
    chromium.get("about:blank")


# runs before any page script (DevTools, so not subject to the page's CSP): records dialogs
GUARD = """
window.__dialogs = [];
for (const name of ["alert", "confirm", "prompt"]) {
  window[name] = (msg) => { window.__dialogs.push(name + ":" + String(msg)); return null; };
}
"""
