"""The dashboard in a real headless Chromium against a real daemon: sign in, the overview's
charts, hostile job names, pause/resume and DLQ replay/purge by clicking, and the keyboard.

Every wait has a deadline (WebDriverWait, tests/support/wait.py), never a bare sleep.
Screenshots go to test-artifacts/browser/ (gitignored), kept as the run's artifacts.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import require_selenium, screenshot
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

require_selenium()  # before importing it: a loud skip (or a failure in CI), not an ImportError

from selenium.common.exceptions import (  # noqa: E402
    NoAlertPresentException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

NOOP = "cronwheel.worker.noop:noop"
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_ATTR = '"><svg onload=alert(3)>'
HOSTILE_OUTPUT = "<img src=x onerror=alert(2)><b>bold</b>"


# ---------------------------------------------------------------- helpers


def until(driver: Any, condition: Any, timeout: float = 20, what: str = "") -> Any:
    """WebDriverWait that shrugs off elements replaced by a live refresh meanwhile."""
    return WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    ).until(condition, message=what)


def css(driver: Any, selector: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, selector)


def text_of(driver: Any, selector: str) -> str:
    return str(css(driver, selector).text)


def open_dashboard(driver: Any, daemon: Daemon, fragment: str = "#/") -> None:
    """Load the page over TCP and sign in as a person would: the first API call answers 401,
    the page asks for a token, we type the admin token and press Enter."""
    driver.get(f"{daemon.url}/{fragment}")
    token = until(driver, lambda d: (el := css(d, "#token")).is_displayed() and el, what="the sign-in dialog")
    token.send_keys(daemon.admin_token, Keys.ENTER)
    until(driver, lambda d: not css(d, "#login").is_displayed(), what="the sign-in dialog to close")
    until(driver, lambda d: css(d, ".view-body").get_attribute("aria-busy") == "false", what="the view to load")


def problems(driver: Any) -> list[str]:
    """Console errors and warnings (uncaught exceptions, CSP violations), except the 401s that
    precede signing in."""
    out = []
    for entry in driver.get_log("browser"):
        msg = str(entry.get("message"))
        if entry.get("source") == "network" and "status of 401" in msg:
            continue
        if entry.get("level") in ("SEVERE", "WARNING"):
            out.append(msg)
    return out


def assert_no_dialog(driver: Any) -> None:
    assert driver.execute_script("return window.__dialogs") == []
    with pytest.raises(NoAlertPresentException):
        _ = driver.switch_to.alert.text


def job_status(daemon: Daemon, job_id: str) -> str:
    r = daemon.get(f"/v1/jobs/{job_id}")
    assert r.status == 200, r
    return str(r.json()["status"])


def dead(daemon: Daemon) -> list[dict[str, Any]]:
    r = daemon.get("/v1/dlq")
    assert r.status == 200, r
    return list(r.json()["executions"])


# ---------------------------------------------------------------- tests


def test_overview_draws_lag_tiers_running_and_herd(make_daemon: Callable[..., Daemon], browser: Any) -> None:
    daemon = make_daemon(args=("--grace-sec", "1"))  # the long runner is not waited for at teardown
    for _ in range(3):
        daemon.add_job({"schedule": "* * * * * *", "python": NOOP})
    for _ in range(20):
        daemon.add_job({"schedule": "0 * * * *", "python": NOOP})
    long_runner = daemon.add_job({"runAt": "+0s", "command": "sleep 60", "name": "long-runner"})["jobId"]

    def activity_ready() -> bool:
        doc = daemon.get("/v1/status/activity").json()
        return sum(m["count"] for m in doc["lagHistory"]["minutes"]) >= 3 and doc["runningTotal"] >= 1

    wait_for(activity_ready, 30, what="dispatch lag samples and a running execution")

    open_dashboard(browser, daemon)
    # every-second jobs keep the page live: an element read may be replaced by the next
    # refresh, so each check is a wait that reads the page afresh (``until``)
    until(browser, lambda d: css(d, "#lag-chart path.line.s-p50").get_attribute("d").startswith("M"), what="the p50 lag line")
    until(browser, lambda d: css(d, "#lag-chart path.line.s-p99").get_attribute("d").startswith("M"), what="the p99 lag line")
    until(browser, lambda d: "Dispatch lag" in css(d, "#lag-chart title").get_attribute("textContent"), what="the chart's title")
    tiers = ["high", "default", "batch"]
    until(browser, lambda d: [t.find_element(By.TAG_NAME, "text").text for t in d.find_elements(By.CSS_SELECTOR, "#tier-depths g.tier")] == tiers,
          what="the three tiers")  # fmt: skip
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#herd-chart rect.bar")) == 60, what="60 bars of herd")
    herd = daemon.get("/v1/herd?window=3600&top=5").json()
    peak = max(herd["peakPerMinute"])
    assert peak == herd["maxPerSecond"] >= 23  # the chart is per second: its tallest bar is the herd
    until(browser, lambda d: str(peak) in css(d, "#herd-chart").get_attribute("textContent"), what="the peak in the chart")

    def busiest(d: Any) -> list[str]:
        rows = d.find_elements(By.CSS_SELECTOR, "table.busiest tbody tr")
        return [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")] if rows else []

    first = until(browser, busiest, what="the busiest seconds")
    assert int(first[1].replace(",", "")) >= 23  # 20 top-of-hour jobs + 3 every-second ones
    assert "0 * * * *" in first[2]
    running = until(browser, lambda d: [r.text for r in d.find_elements(By.CSS_SELECTOR, "table.running tbody tr")], what="the running executions")
    assert long_runner in running[0], "the sleeping job is listed as running"
    until(browser, lambda d: text_of(d, "#live") == "Live", what="the event stream to connect")
    until(browser, lambda d: text_of(d, "#node-stats").count("\n") > 5, what="the node's numbers")
    screenshot(browser, "overview")
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_the_overview_says_when_the_node_is_stopping(make_daemon: Callable[..., Daemon], browser: Any, tmp_path: Path) -> None:
    daemon = make_daemon(args=("--grace-sec", "60"))
    started, release = tmp_path / "started", tmp_path / "release"
    daemon.add_job({"runAt": "+0s", "command": f"touch {started}; while [ ! -e {release} ]; do sleep 0.05; done"})
    wait_for(started.exists, what="the run to start")
    open_dashboard(browser, daemon)
    assert browser.find_elements(By.CSS_SELECTOR, "p.stopping") == []
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGTERM)  # the run holds the stop in its grace period
    try:
        wait_for(lambda: daemon.status().get("stopping"), what="the node to be stopping")
        browser.refresh()  # signed in already: the token is kept for the tab
        until(browser, lambda d: "This node is stopping" in text_of(d, "p.stopping"), what="the stopping notice")
        screenshot(browser, "overview-stopping")
    finally:
        release.touch()
    assert daemon.proc.wait(30) == 0


def test_the_overview_says_when_the_store_cannot_be_reached(make_daemon: Callable[..., Daemon], browser: Any) -> None:
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        daemon = make_daemon(args=("--store", cluster.dsn()))
        daemon.add_job({"schedule": "0 0 1 1 *", "command": "true"})
        open_dashboard(browser, daemon)
        until(browser, lambda d: "Node " in text_of(d, "p.node"), what="the node's line")
        assert browser.find_elements(By.CSS_SELECTOR, "p.stale") == []
        cluster.stop("immediate")  # as a crash or a failover would
        wait_for(lambda: daemon.status().get("stale"), what="the status to be answered from the last read")
        browser.refresh()
        notice = until(browser, lambda d: text_of(d, "p.stale"), what="the stale-store notice")
        assert notice.startswith("The store cannot be reached (") and "counts are as of 20" in notice, notice
        assert "ago. The queue, workers and lag are live." in notice, notice
        screenshot(browser, "overview-store-unreachable")
        cluster.start()
        wait_for(lambda: daemon.status().get("stale") is False, what="a fresh status once the store is back")
        browser.refresh()
        until(browser, lambda d: "Node " in text_of(d, "p.node"), what="the node's line")
        assert browser.find_elements(By.CSS_SELECTOR, "p.stale") == []
        daemon.stop()


def test_hostile_names_commands_and_output_stay_text(daemon: Daemon, browser: Any) -> None:
    command = f"printf '%s\\n' '{HOSTILE_OUTPUT}'"
    job_id = daemon.add_job({"schedule": "0 0 1 1 *", "command": command, "name": HOSTILE_NAME})["jobId"]
    other = daemon.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": HOSTILE_ATTR})["jobId"]
    assert daemon.post(f"/v1/jobs/{job_id}/trigger").status == 202
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in daemon.executions(job_id)), 30, what="the hostile job to run")

    open_dashboard(browser, daemon, "#/jobs")
    link = until(browser, lambda d: css(d, f'tr[data-job="{job_id}"] a.job-name'), what="the hostile job's row")
    assert link.text == HOSTILE_NAME
    assert css(browser, f'tr[data-job="{other}"] a.job-name').text == HOSTILE_ATTR
    assert css(browser, f'tr[data-job="{other}"] button[data-key="pause:{other}"]').get_attribute("aria-label") == f"Pause {HOSTILE_ATTR}"
    assert css(browser, f'tr[data-job="{job_id}"] td.target').text == command
    counts = browser.execute_script(
        "return [document.scripts.length, document.querySelectorAll('main img, main b, main svg').length]"
    )
    assert counts == [1, 0], "no script, image, bold or svg element was injected"
    screenshot(browser, "hostile-jobs")

    link.click()
    until(browser, lambda d: text_of(d, "h1.job-title") == HOSTILE_NAME, what="the job's page")
    css(browser, "table.history button[data-key^='out:']").click()
    output = until(browser, lambda d: (el := css(d, "pre.output")).text.strip() and el, what="the output tail")
    assert output.text.strip() == HOSTILE_OUTPUT
    assert browser.execute_script("return document.querySelectorAll('main img, main b').length") == 0
    screenshot(browser, "hostile-output")
    assert problems(browser) == [], "no CSP violation: nothing tried to run"
    assert_no_dialog(browser)


def test_the_job_page_shows_user_shell_environment_and_input_as_text(daemon: Daemon, browser: Any) -> None:
    job_id = daemon.add_job({
        "schedule": "0 0 1 1 *", "command": "cat", "runAs": {"user": "nobody"}, "shell": "/bin/bash",
        "env": {"PATH": "/usr/bin:/bin", "HOSTILE": HOSTILE_OUTPUT}, "stdin": f"line 1\n{HOSTILE_NAME}\n",
    })["jobId"]  # fmt: skip
    open_dashboard(browser, daemon, f"#/jobs/{job_id}")
    until(browser, lambda d: text_of(d, "h1.job-title") == job_id, what="the job's page")
    shown = {dt.text: dd for dt, dd in zip(browser.find_elements(By.CSS_SELECTOR, "dl.def dt"),
                                           browser.find_elements(By.CSS_SELECTOR, "dl.def dd"), strict=True)}  # fmt: skip
    assert shown["Run as"].text == "nobody"
    assert shown["Shell"].text == "/bin/bash"
    assert [li.text for li in shown["Environment"].find_elements(By.CSS_SELECTOR, "li")] == [
        "PATH=/usr/bin:/bin", f"HOSTILE={HOSTILE_OUTPUT}",
    ]
    assert shown["Standard input"].text == f"line 1\n{HOSTILE_NAME}"
    assert browser.execute_script("return document.querySelectorAll('main img, main b, main script').length") == 0
    screenshot(browser, "job-process-setup")
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_pause_and_resume_a_job_by_clicking(daemon: Daemon, browser: Any) -> None:
    job_id = daemon.add_job({"schedule": "*/5 * * * *", "python": NOOP, "name": "nightly-report"})["jobId"]
    daemon.add_job({"schedule": "*/7 * * * *", "python": NOOP, "name": "bystander"})
    open_dashboard(browser, daemon, "#/jobs")
    row = f'tr[data-job="{job_id}"]'
    until(browser, lambda d: css(d, f"{row} button[data-key='pause:{job_id}']"), what="the Pause button").click()
    wait_for(lambda: job_status(daemon, job_id) == "PAUSED", 10, what="the job to be paused")
    until(browser, lambda d: css(d, f"{row} .badge").text == "PAUSED", what="the row to show PAUSED")
    until(browser, lambda d: "Paused nightly-report" in css(d, "#notice").get_attribute("textContent"), what="the announcement")
    screenshot(browser, "paused")

    css(browser, f"{row} button[data-key='resume:{job_id}']").click()
    wait_for(lambda: job_status(daemon, job_id) == "ACTIVE", 10, what="the job to be resumed")
    until(browser, lambda d: css(d, f"{row} .badge").text == "ACTIVE", what="the row to show ACTIVE")
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_replay_and_purge_dead_letters_by_clicking(daemon: Daemon, browser: Any, tmp_path: Path) -> None:
    marker = tmp_path / "second-try"
    # fails the first time (into the DLQ: one attempt allowed), succeeds once replayed
    flaky = daemon.add_job({
        "runAt": "+0s", "name": "flaky",
        "command": f"if [ -e {marker} ]; then echo recovered; else touch {marker}; exit 3; fi",
        "retryPolicy": {"maxAttempts": 1},
    })["jobId"]
    doomed = daemon.add_job({"runAt": "+0s", "name": "doomed", "command": "exit 7", "retryPolicy": {"maxAttempts": 1}})["jobId"]
    entries = wait_for(lambda: len(d := dead(daemon)) == 2 and d, 30, what="two dead letters")
    by_job = {e["jobId"]: e for e in entries}
    replay_id, purge_id = by_job[flaky]["executionId"], by_job[doomed]["executionId"]
    epoch_before = by_job[flaky]["leaseEpoch"]

    open_dashboard(browser, daemon, "#/dlq")
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "table.dlq tbody tr")) == 2, what="two DLQ rows")
    doomed_row = text_of(browser, f'tr[data-execution="{purge_id}"]')
    assert "doomed" in doomed_row and "exit code 7" in doomed_row, doomed_row
    screenshot(browser, "dlq")

    css(browser, f'tr[data-execution="{replay_id}"] button[data-key="replay:{replay_id}"]').click()

    def replayed() -> dict[str, Any] | None:
        ex = daemon.get(f"/v1/executions/{replay_id}").json()
        return ex if ex["status"] == "SUCCEEDED" else None

    ex = wait_for(replayed, 30, what="the replayed execution to succeed")
    assert ex["leaseEpoch"] > epoch_before and ex["attempt"] == 1 and "recovered" in ex["output"]
    daemon.wait_event("dlq.replayed", executionId=replay_id)
    until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'tr[data-execution="{replay_id}"]'), what="the replayed row to go")

    css(browser, f'tr[data-execution="{purge_id}"] button[data-key="purge:{purge_id}"]').click()
    until(browser, lambda d: css(d, "#confirm").is_displayed(), what="the confirmation dialog")
    assert purge_id in text_of(browser, "#confirm-text")
    css(browser, "#confirm-yes").click()
    wait_for(lambda: dead(daemon) == [], 10, what="the DLQ to be empty")
    until(browser, lambda d: "dead-letter queue is empty" in text_of(d, ".view-body"), what="the empty DLQ")
    assert daemon.get(f"/v1/executions/{purge_id}").status == 404

    # the jobs' state follows their executions: never "COMPLETED", never "never ran" after a purge
    browser.get(f"{daemon.url}/#/jobs")
    until(browser, lambda d: "FAILED" in text_of(d, f'tr[data-job="{doomed}"]') and "SUCCEEDED" in text_of(d, f'tr[data-job="{flaky}"]'),
          what="the jobs' states")
    doomed_row = text_of(browser, f'tr[data-job="{doomed}"]')
    assert "no run on record" in doomed_row and "COMPLETED" not in text_of(browser, ".view-body"), doomed_row
    assert "never ran" not in text_of(browser, ".view-body")
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_dead_notifications_are_listed_and_purged_by_clicking(daemon: Daemon, browser: Any) -> None:
    # a receiver that is not there, one delivery attempt: the notification lands in its DLQ
    rule = {"on": "failure", "via": "webhook", "url": "http://127.0.0.1:9/gone", "secret": "0123456789abcdef-secret",
            "maxAttempts": 1}
    job = daemon.add_job({"runAt": "+0s", "name": HOSTILE_NAME, "command": "exit 4", "retryPolicy": {"maxAttempts": 1},
                          "notify": [rule]})["jobId"]

    def dead_notifications() -> list[dict[str, Any]]:
        return list(daemon.get("/v1/notifications?status=DEAD").json()["notifications"])

    [n] = wait_for(lambda: dead_notifications(), 30, what="a dead-lettered notification")
    nid = n["notificationId"]
    open_dashboard(browser, daemon, "#/notifications?status=DEAD")
    row = until(browser, lambda d: css(d, f'tr[data-notification="{nid}"]'), what="the dead notification's row")
    assert HOSTILE_NAME in row.text and "failure" in row.text and "webhook" in row.text and "DEAD" in row.text, row.text
    assert css(browser, f'tr[data-notification="{nid}"] a').get_attribute("href").endswith(f"#/jobs/{job}")
    screenshot(browser, "notifications")
    css(browser, f'button[data-key="purge:{nid}"]').click()
    until(browser, lambda d: css(d, "#confirm").is_displayed(), what="the confirmation dialog")
    css(browser, "#confirm-yes").click()
    wait_for(lambda: dead_notifications() == [], 10, what="the notifications' DLQ to be empty")
    until(browser, lambda d: "No DEAD notification" in text_of(d, ".view-body"), what="the empty list")
    daemon.wait_event("notification.purged", notificationId=nid)
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_a_running_job_shows_its_output_as_it_is_printed(daemon: Daemon, browser: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    job = daemon.add_job({"runAt": "+0s", "name": "chatty", "command": f"echo live-line; while [ ! -e {gate} ]; do sleep 0.05; done; echo done"})
    job_id = job["jobId"]
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["lastRun"], 20, what="the run to start")
    open_dashboard(browser, daemon, f"#/jobs/{job_id}")
    until(browser, lambda d: "live-line" in text_of(d, "#live-output pre"), what="the live output")
    assert daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "ACTIVE"  # it is still running
    screenshot(browser, "live-output")
    gate.touch()
    until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#live-output") and "SUCCEEDED" in text_of(d, ".view-body"),
          what="the run to end and the page to say so")
    assert problems(browser) == []


def test_keyboard_alone_pauses_and_resumes(daemon: Daemon, browser: Any) -> None:
    job_id = daemon.add_job({"schedule": "*/5 * * * *", "python": NOOP, "name": "by-keyboard"})["jobId"]
    open_dashboard(browser, daemon, "#/jobs")
    until(browser, lambda d: css(d, f"button[data-key='pause:{job_id}']"), what="the job's row")
    keys = ActionChains(browser)

    def focused() -> Any:
        return browser.switch_to.active_element

    # after signing in, the focus is on the view (<main>): Tab walks the filters, then the rows
    assert focused().get_attribute("id") == "main"
    seen = []
    for _ in range(30):
        keys.send_keys(Keys.TAB).perform()
        el = focused()
        seen.append(el.get_attribute("data-key") or el.get_attribute("id") or el.text)
        if el.get_attribute("data-key") == f"pause:{job_id}":
            break
    else:
        raise AssertionError(f"tabbing never reached the Pause button: {seen}")
    assert seen[:3] == ["job-search", "job-tenant", "job-status"], seen
    keys.send_keys(Keys.ENTER).perform()
    wait_for(lambda: job_status(daemon, job_id) == "PAUSED", 10, what="Enter on Pause to pause the job")
    # the focus moves to the Resume button that replaced Pause, so Enter again resumes
    until(browser, lambda d: focused().get_attribute("data-key") == f"resume:{job_id}", what="focus on Resume")
    keys.send_keys(Keys.ENTER).perform()
    wait_for(lambda: job_status(daemon, job_id) == "ACTIVE", 10, what="Enter on Resume to resume the job")
    until(browser, lambda d: focused().get_attribute("data-key") == f"pause:{job_id}", what="focus back on Pause")
    screenshot(browser, "keyboard", full_page=False)
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_search_tenant_and_status_filters_and_a_tenant_token(daemon: Daemon, browser: Any) -> None:
    assert daemon.post("/v1/tenants", {"name": "acme"}).status == 201
    acme = daemon.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    r = daemon.post("/v1/jobs", {"schedule": "0 3 * * *", "queue": "billing", "name": "acme-billing"}, token=acme)
    assert r.status == 201, r
    billing = r.json()["jobId"]
    mine = daemon.add_job({"schedule": "0 4 * * *", "python": NOOP, "name": "default-cleanup"})["jobId"]
    paused = daemon.add_job({"schedule": "0 5 * * *", "python": NOOP, "name": "default-paused"})["jobId"]
    assert daemon.post(f"/v1/jobs/{paused}/pause").status == 200

    def rows(d: Any) -> set[str]:
        return {el.get_attribute("data-job") for el in d.find_elements(By.CSS_SELECTOR, "table.jobs tbody tr")}

    open_dashboard(browser, daemon, "#/jobs")
    until(browser, lambda d: rows(d) == {billing, mine, paused}, what="all three jobs")
    tenant = css(browser, "#job-tenant")
    until(browser, lambda d: "acme" in [o.get_attribute("value") for o in tenant.find_elements(By.TAG_NAME, "option")], what="the tenant list")
    tenant.find_element(By.CSS_SELECTOR, "option[value='acme']").click()
    until(browser, lambda d: rows(d) == {billing}, what="the acme filter")
    assert "tenant=acme" in browser.current_url  # the filter is in the URL: a link keeps it
    css(browser, "#job-tenant option[value='']").click()
    css(browser, "#job-status option[value='PAUSED']").click()
    until(browser, lambda d: rows(d) == {paused}, what="the status filter")
    css(browser, "#job-status option[value='']").click()
    css(browser, "#job-search").send_keys("CLEAN")
    until(browser, lambda d: rows(d) == {mine}, what="the search")
    assert text_of(browser, "#jobs-summary").startswith("1 of 3 jobs")
    screenshot(browser, "jobs-filtered")

    # a tenant's token: its own jobs only, no node-wide numbers, no event stream (polling)
    css(browser, "#signout").click()
    token = until(browser, lambda d: (el := css(d, "#token")).is_displayed() and el, what="the sign-in dialog again")
    token.send_keys(acme, Keys.ENTER)
    css(browser, "nav a[data-view='overview']").click()
    until(browser, lambda d: "numbers need an admin token" in text_of(d, ".view-body"), what="the tenant's overview")
    assert browser.find_elements(By.CSS_SELECTOR, "#herd-chart"), "a tenant sees its own herd"
    until(browser, lambda d: text_of(d, "#live").startswith("Polling"), what="the polling fallback")
    browser.get(f"{daemon.url}/#/jobs")
    until(browser, lambda d: rows(d) == {billing}, what="the tenant's jobs")
    assert_no_dialog(browser)
    assert [p for p in problems(browser) if "status of 403" not in p] == []


def test_a_dismissed_sign_in_can_be_reopened_and_a_bad_token_is_refused(daemon: Daemon, browser: Any) -> None:
    browser.get(f"{daemon.url}/#/dlq")
    token = until(browser, lambda d: (el := css(d, "#token")).is_displayed() and el, what="the sign-in dialog")
    token.send_keys(Keys.ESCAPE)
    until(browser, lambda d: "no token given" in text_of(d, "#alert"), what="the error after dismissing")
    sign_in = next(b for b in css(browser, "#alert").find_elements(By.TAG_NAME, "button") if b.text == "Sign in")
    sign_in.click()
    token = until(browser, lambda d: (el := css(d, "#token")).is_displayed() and el, what="the sign-in dialog again")
    token.send_keys("cw_" + "x" * 43, Keys.ENTER)  # well-formed, never issued
    until(browser, lambda d: "refused" in text_of(d, "#login-error"), what="the refusal")
    token = css(browser, "#token")
    token.send_keys(daemon.admin_token, Keys.ENTER)
    until(browser, lambda d: "dead-letter queue is empty" in text_of(d, ".view-body"), what="the DLQ view")
    until(browser, lambda d: not css(d, "#alert").is_displayed(), what="the error to clear")
    assert_no_dialog(browser)


def test_an_overdue_watched_job_is_marked_and_cannot_be_triggered(daemon: Daemon, browser: Any) -> None:
    r = daemon.post("/v1/jobs", {"name": "offsite-backup", "expectSuccessWithin": "1s",
                                 "notify": [{"on": "missed", "via": "command", "command": "true"}]})  # fmt: skip
    assert r.status == 201, r
    job_id = r.json()["jobId"]
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["window"]["overdue"], 15, what="the window to pass")
    open_dashboard(browser, daemon, "#/jobs")
    row = f'tr[data-job="{job_id}"]'
    until(browser, lambda d: css(d, f"{row} .s-overdue").text == "OVERDUE", what="the OVERDUE mark")
    assert "pinged, every 1s" in text_of(browser, row)
    assert not browser.find_elements(By.CSS_SELECTOR, f"{row} button[data-key='trigger:{job_id}']")
    css(browser, f'{row} a.job-name').click()
    until(browser, lambda d: "within 1s" in text_of(d, ".def"), what="the job's window")
    assert "on missed via command true" in text_of(browser, ".def")
    screenshot(browser, "overdue")
    assert problems(browser) == []
    assert_no_dialog(browser)


def test_a_job_page_shows_its_chain_and_what_made_each_run(daemon: Daemon, browser: Any) -> None:
    child = daemon.add_job({"schedule": "@triggered", "python": NOOP, "name": "after-report"})["jobId"]
    parent = daemon.add_job({"runAt": "+0s", "python": NOOP, "name": "report", "onSuccess": [child]})["jobId"]
    (kid,) = wait_for(lambda: [e for e in daemon.executions(child) if e["status"] == "SUCCEEDED"] or None, 30,
                      what="the chained run")  # fmt: skip
    parent_eid = kid["context"]["parent"]["executionId"]
    open_dashboard(browser, daemon, f"#/jobs/{parent}")
    until(browser, lambda d: "On success" in text_of(d, ".def") and child in text_of(d, ".def"), what="the chain")
    open_dashboard_job = f"#/jobs/{child}"
    browser.get(f"{daemon.url}/{open_dashboard_job}")
    row = f'tr[data-execution="{kid["executionId"]}"]'
    until(browser, lambda d: f"after {parent_eid} (SUCCEEDED)" in text_of(d, row), what="the run's parent")
    screenshot(browser, "chain")
    assert problems(browser) == []


def test_the_calendars_page_lists_days_and_windows_as_text(daemon: Daemon, browser: Any) -> None:
    body = {"description": HOSTILE_NAME, "dates": ["2026-12-25"],
            "windows": [{"start": "2026-12-24T22:00", "end": "2026-12-25T02:00"}]}  # fmt: skip
    assert daemon.request("PUT", "/v1/calendars/holidays", body).status == 200
    open_dashboard(browser, daemon, "#/calendars")
    row = 'tr[data-calendar="default/holidays"]'
    until(browser, lambda d: "2026-12-25" in text_of(d, row), what="the calendar row")
    assert "2026-12-24T22:00 → 2026-12-25T02:00" in text_of(browser, row) and HOSTILE_NAME in text_of(browser, row)
    assert css(browser, 'a[data-view="calendars"]').get_attribute("aria-current") == "page"
    assert_no_dialog(browser)
    assert problems(browser) == []
