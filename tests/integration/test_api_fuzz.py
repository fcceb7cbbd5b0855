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

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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


#: two legs, each on a fresh daemon: the coverage phase registers thousands of jobs, tenants
#: and tokens, and every list the later phases read (and schemathesis validates) would carry
#: them all, tripling the run's time without testing anything more
LEGS = (("examples", "coverage"), ("fuzzing", "stateful"))


def _start_leg(daemon: Daemon, phases: tuple[str, ...], report: Path) -> tuple[subprocess.Popen[bytes], str]:
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


@pytest.mark.timeout(600)
def test_schemathesis_finds_nothing(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    # the two legs run at the same time, each on a fresh daemon of its own (they share nothing)
    legs = []
    for phases in LEGS:
        # no local workers: the fuzzer registers jobs with generated shell commands, Python
        # callables and HTTP URLs (random hosts); none of them may ever run on this machine or
        # call out. Their executions wait, PENDING (the fuzzer's own remote claims run nothing).
        daemon = make_daemon(f"fuzz-{phases[0]}", workers=0)
        report = tmp_path / f"schemathesis-{'-'.join(phases)}.txt"
        legs.append((phases, daemon, report, *_start_leg(daemon, phases, report)))
    failures = []
    for phases, daemon, report, proc, token in legs:
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
            failures.append(f"schemathesis {'+'.join(phases)} (seed {SEED}, {EXAMPLES} examples) exited {code}; "
                            f"full report: {report}\n{text[max(0, start - 200):][:20000]}")
            continue
        # the leg did test something: its phases passed, and requests were sent
        for phase in phases:
            assert re.search(rf"✅\s+{phase.capitalize()} \(in", text), f"phase {phase} did not pass:\n{text[-3000:]}"
        generated = re.search(r"(\d+) generated, \1 passed", text)
        assert generated and int(generated.group(1)) > 100, text[-3000:]
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
