"""Make docs/dashboard.png: a real daemon with some real work, its dashboard in headless Chromium.

    .venv/bin/python -m tests.browser.readme_screenshot docs/dashboard.png --minutes 4

Not a test (no ``test_`` prefix): a tool to refresh the README's picture. It runs for
``--minutes`` so that the lag chart has that many minutes of history.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import chromium_driver, screenshot
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

NOOP = "cronwheel.worker.noop:noop"


def populate(d: Daemon) -> None:
    for i in range(4):
        d.add_job({"schedule": "* * * * * *", "python": NOOP, "name": f"heartbeat-{i}"})
    for i in range(150):
        d.add_job({"schedule": "0 * * * *", "python": NOOP, "name": f"hourly-report-{i}"})
    for i in range(60):
        d.add_job({"schedule": "H * * * *", "python": NOOP, "name": f"spread-sync-{i}"})
    for i in range(40):
        d.add_job({"schedule": "*/15 * * * *", "python": NOOP, "priority": "batch", "name": f"batch-export-{i}"})
    d.add_job({"schedule": "*/5 * * * * *", "command": "sleep 20", "name": "slow-etl", "overlap": "forbid"})
    # more batch work than the 16 slots take: a backlog in the batch tier, and its lag
    for i in range(8):
        d.add_job({"schedule": "*/2 * * * * *", "command": "sleep 5", "priority": "batch", "name": f"bulk-resize-{i}"})
    d.add_job({"runAt": "+0s", "command": "echo 'upstream 503' >&2; exit 2", "name": "flaky-webhook",
               "retryPolicy": {"maxAttempts": 1}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--minutes", type=float, default=4)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cw-shot-"))
    d = Daemon(tmp / "node", workers=2, slots=8).start()
    try:
        populate(d)
        wait_for(lambda: d.get("/v1/dlq").json()["executions"], 30, what="a dead letter")
        deadline = time.monotonic() + args.minutes * 60
        while time.monotonic() < deadline:  # a tool, not a test: it waits for history to exist
            time.sleep(5)
        with chromium_driver() as driver:
            driver.set_window_size(1400, 1100)
            driver.get(d.url + "/#/")
            wait = WebDriverWait(driver, 30)
            token = wait.until(lambda x: x.find_element(By.ID, "token"))
            token.send_keys(d.admin_token, Keys.ENTER)
            wait.until(lambda x: x.find_elements(By.CSS_SELECTOR, "#herd-chart rect.bar"))
            wait.until(lambda x: x.find_element(By.ID, "live").text == "Live")
            driver.execute_script("document.activeElement && document.activeElement.blur()")
            shot = screenshot(driver, "readme-overview")  # the whole page, not just the window
            shutil.copyfile(shot, args.out)
        print(args.out)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
