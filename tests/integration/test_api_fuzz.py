"""The OpenAPI document against the real daemon, by an off-the-shelf fuzzer: schemathesis, every
check, every phase (examples, coverage, fuzzing, and the stateful phase that follows the
document's links: create a job, then get, pause, trigger, cancel it; create a token, then
revoke it…). It must find nothing: no server error, no undocumented status or header, no
response off its schema, no schema-valid request refused, no schema-invalid one accepted, no
wrong ``Allow``.

Bounded and reproducible: a fixed seed and example count (override with CRONWHEEL_FUZZ_SEED /
CRONWHEEL_FUZZ_EXAMPLES to explore). Run it alone with

    .venv/bin/python -m pytest -q tests/integration/test_api_fuzz.py

A failure prints schemathesis's own report: each failure with a curl line to reproduce it
against any daemon (add your token).

What is left out, and where it is covered instead:
* ``GET /v1/events`` streams newline-delimited JSON (with ``follow=1`` it never ends):
  ``tests/integration/test_events_stream.py``.
* ``GET /v1/executions/{executionId}/output`` streams an attempt's output as text (with
  ``follow=1`` until the attempt ends): ``tests/integration/test_live_output.py``.
* The hooks (``tests/support/fuzz_hooks.py``) generate the document's own string formats,
  accept the two refusals JSON Schema cannot state, never revoke the run's own token, and
  shorten claim long polls.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import fuzz_hooks
from tests.support.daemon import REPO, Daemon

ST = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "st"
CONFIG = REPO / "tests" / "support" / "schemathesis.toml"
SEED = int(os.environ.get("CRONWHEEL_FUZZ_SEED", "1"))
EXAMPLES = int(os.environ.get("CRONWHEEL_FUZZ_EXAMPLES", "10"))
#: streaming routes, covered by their own tests (module docstring)
EXCLUDED_PATHS = ("/v1/events", "/v1/executions/{executionId}/output")


def _st() -> Path:
    for candidate in (ST, Path(sys.executable).with_name("st")):
        if candidate.exists():
            return candidate
    pytest.fail("schemathesis is not installed: it is in the test extra (make .venv/.installed)")


#: the operations of the coverage phase, in two groups (its cases are generated per
#: operation): one test each, so that pytest's workers share them. The three that take a
#: job's body are one group: most of the phase's time is generating cases for that large
#: schema, and one schemathesis process reuses much of that work from one operation to the
#: next (one process each cost 1.7 times the CPU). Every operation the document has is in one
#: group (test_the_coverage_groups_hold_every_operation).
COVERAGE_GROUPS = {
    "job-bodies": ("createJob", "createJobs", "updateJob"),
    "other-operations": (
        "listJobs", "getJob", "cancelJob", "pauseJob", "resumeJob", "triggerJob", "listExecutions", "backfillJob",
        "cancelBackfill", "setJobChain", "upcomingTicks", "pingJob",
        "listCalendars", "getCalendar", "putCalendar", "deleteCalendar", "getExecution", "claimExecutions", "heartbeat",
        "complete", "recordEffect", "listDead", "replayDead", "purgeDead",
        "status", "nodeConfig", "herd", "whoami", "activity", "healthz", "openapi", "metrics", "listTenants", "createTenant", "getTenant",
        "updateTenant", "deleteTenant", "listTokens", "createToken", "revokeToken", "dashboard", "dashboardAsset", "listNotifications",
        "purgeNotification", "replayNotification", "getTenantNotify", "setTenantNotify",
    ),
}

#: the legs, each on a fresh daemon and a test of its own (pytest's workers run them side by
#: side): the coverage phase registers thousands of jobs, tenants and tokens, and every list
#: the later phases read (and schemathesis validates) would carry them all, tripling the run's
#: time without testing anything more. A leg is its phases and the operations it is limited to
#: (none: every operation).
LEGS = {
    "examples-fuzzing-stateful": (("examples", "fuzzing", "stateful"), ()),
    **{f"coverage-{name}": (("coverage",), ops) for name, ops in COVERAGE_GROUPS.items()},
}


def _start_leg(daemon: Daemon, phases: tuple[str, ...], operations: tuple[str, ...],
               report: Path) -> tuple[subprocess.Popen[bytes], str]:
    """schemathesis started on its leg's daemon, its report written to ``report``; with the
    token it runs with (the test checks that it still works afterwards)."""
    created = daemon.post("/v1/tokens", {"role": "admin", "name": "schemathesis"})
    assert created.status == 201, created
    token = created.json()
    cmd = [
        str(_st()), "--config-file", str(CONFIG), "--no-color", "run", f"{daemon.url}/v1/openapi.json",
        "--header", f"Authorization: Bearer {token['token']}",
        "--checks", "all",
        "--phases", ",".join(phases),
        "--max-examples", str(EXAMPLES),
        "--seed", str(SEED),
        "--workers", "1",
        "--request-timeout", "15",
        "--suppress-health-check", "too_slow",
        *[arg for path in EXCLUDED_PATHS for arg in ("--exclude-path", path)],
        *[arg for operation in operations for arg in ("--include-operation-id", operation)],
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SCHEMATHESIS_HOOKS": "tests.support.fuzz_hooks",
        "CRONWHEEL_FUZZ_TOKEN_ID": token["tokenId"],
    }
    with open(report, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=report.parent)
    return proc, token["token"]


def test_the_coverage_groups_hold_every_operation() -> None:
    """Each operation of the document (but the streaming ones, EXCLUDED_PATHS) is in exactly
    one coverage group: a new operation not added to one would go unfuzzed by that phase."""
    document = json.loads((REPO / "cronwheel" / "api" / "openapi.json").read_text())
    operations = [op["operationId"] for path, item in document["paths"].items() if path not in EXCLUDED_PATHS
                  for method, op in item.items() if method in ("get", "put", "post", "delete", "patch")]
    grouped = [op for group in COVERAGE_GROUPS.values() for op in group]
    assert sorted(grouped) == sorted(operations)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("leg", LEGS)
def test_schemathesis_finds_nothing(leg: str, make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    phases, operations = LEGS[leg]
    # no local workers: the fuzzer registers jobs with generated shell commands, Python
    # callables and HTTP URLs (random hosts); none of them may ever run on this machine or
    # call out. Their executions wait, PENDING (the fuzzer's own remote claims run nothing).
    daemon = make_daemon(f"fuzz-{leg}", workers=0)
    report = tmp_path / f"schemathesis-{leg}.txt"
    proc, token = _start_leg(daemon, phases, operations, report)
    try:
        code = proc.wait(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert daemon.get("/v1/status", token=token).status == 200, "the run's token still works"
    daemon.stop()
    text = report.read_text(errors="replace")
    if code != 0:
        # the report's FAILURES and ERRORS sections: each with a curl line to reproduce it
        start = min((i for i in (text.find("=== ERRORS ==="), text.find("=== FAILURES ===")) if i >= 0), default=0)
        pytest.fail(f"schemathesis {leg}: {'+'.join(phases)} (seed {SEED}, {EXAMPLES} examples) exited {code}; "
                    f"full report: {report}\n{text[max(0, start - 200):][:20000]}", pytrace=False)
    # the leg did test something: its phases passed, requests were sent, and every operation
    # it selected was tested
    for phase in phases:
        assert re.search(rf"✅\s+{phase.capitalize()} \(in", text), f"phase {phase} did not pass:\n{text[-3000:]}"
    generated = re.search(r"(\d+) generated, \1 passed", text)
    assert generated and int(generated.group(1)) > 100, text[-3000:]
    selected = re.search(r"Selected: (\d+)/\d+\s+Tested: (\d+)", text)
    assert selected and selected.group(1) == selected.group(2), f"an operation went untested:\n{text[-3000:]}"
    if operations:
        assert int(selected.group(1)) == len(operations), f"an operation of {operations} is not served:\n{text[-3000:]}"


@pytest.mark.runs_no_jobs
def test_a_window_that_ends_before_it_starts_is_a_refusal_the_document_states(daemon: Daemon) -> None:
    """What the stateful leg once met under load (its scenarios follow the daemon's answers, so
    which cases it generates varies with timing): a recurring job in a batch whose activeUntil
    is before its activeFrom. Schema-valid and refused, so the document says it in words and
    the hooks accept it (its failure was 'ST202 Schema-valid request rejected')."""
    item = {"schedule": "@hourly", "command": "true",
            "activeFrom": "4888-02-03T15:53:39.000Z", "activeUntil": "3302-04-14T09:36:34.000Z"}
    for method, path, body in (("POST", "/v1/jobs", item), ("POST", "/v1/jobs/batch", {"jobs": [{"runAt": "+1h", "command": "true"}, item]})):
        refused = daemon.request(method, path, body)
        assert refused.status == 422, refused
        assert fuzz_hooks.accepted_refusal(f"{method} {path}", refused.body.decode()), refused
    document = json.loads((REPO / "cronwheel" / "api" / "openapi.json").read_text())
    for schema in ("JobRequest", "JobItem", "JobPatch"):
        assert "not before `activeFrom` (else 422)" in document["components"]["schemas"][schema]["properties"]["activeUntil"]["description"]
