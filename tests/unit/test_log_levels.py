"""Log lines: one schema with a level, filtered by --log-level, prefixed with the syslog
priority only when stdout is the journal stream, library logs and tracebacks as one line."""

from __future__ import annotations

import ast
import io
import json
import logging
import os
import re
from pathlib import Path

import pytest

from cronwheel.obs.events import EventLog, console_line
from cronwheel.obs.levels import SYSLOG_PRIORITY, level_of
from cronwheel.obs.logbridge import EventHandler


def _lines(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_line_has_ts_level_event_node() -> None:
    out = io.StringIO()
    log = EventLog("n1", out, fmt="json")
    log.emit("execution.dead_lettered", executionId="j:1")
    (line,) = _lines(out)
    assert list(line)[:4] == ["ts", "level", "event", "node"]
    assert (line["level"], line["event"], line["node"], line["executionId"]) == ("error", "execution.dead_lettered", "n1", "j:1")
    assert line["jobId"] == "j"  # the job's id goes with its execution's, for `jq 'select(.jobId == …)'`


def test_levels_come_from_the_event_name() -> None:
    assert level_of("execution.succeeded") == "info"
    assert level_of("lease.fenced") == "warning"
    assert level_of("scheduler.error") == "error"  # a loop's own failure
    assert level_of("scheduler.claimed") == "debug"
    assert level_of("api.internal_error") == "error"  # a 500: a bug to look at
    assert level_of("job.submit_failed") == "error"
    assert level_of("dispatch.start_failed") == "warning"  # retried: the table says so


#: a name the code emits: ``emit("a.b"``, ``log("a.b"``, ``self._log("a.b"``
_EMITTED = re.compile(r'\b(?:emit|log|_log)\(\s*"([a-z_]+\.[a-z_.]+)"')
#: words that say something went wrong
_FAILURE_WORDS = ("error", "fail", "crash", "unavailable", "refused", "lost", "timed_out", "stuck", "denied")


def test_no_failure_the_code_reports_is_logged_below_warning() -> None:
    """`journalctl -p warning` must show every event that says something failed (a 500 was
    once logged at info, as were a failed claim and a failed start)."""
    package = Path(__file__).resolve().parents[2] / "cronwheel"
    names = {m.group(1) for path in package.rglob("*.py") for m in _EMITTED.finditer(path.read_text())}
    assert len(names) > 50, "the pattern no longer finds what the code emits"
    quiet = sorted(n for n in names if any(w in n for w in _FAILURE_WORDS) and level_of(n) in ("debug", "info"))
    assert quiet == [], quiet


#: the calls that make an event line, in the daemon and its workers
_EMITTERS = frozenset({"emit", "emit_now_and_then", "emit_many", "log", "_log"})


def _instant_field(name: str | None) -> bool:
    return name is not None and (name == "at" or name.endswith("At"))


def _formatted(value: ast.expr) -> bool:
    """An instant as text: ``format_instant(…)``, or a literal (a constant, None)."""
    if isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "format_instant"


def test_every_instant_an_event_carries_is_rfc_3339_text() -> None:
    """The log promises one form for every instant (docs/operations.md, "Logs"): a field named
    ``…At`` (or ``at``) given to an event is ``format_instant(…)``, never epoch milliseconds
    (`execution.retry_scheduled`'s ``availableAt`` was). Fields passed by keyword, and those
    gathered first as ``("nameAt", value)`` pairs or ``{"nameAt": value}`` literals."""
    package = Path(__file__).resolve().parents[2] / "cronwheel"
    raw: list[str] = []
    # the layers that log (the API's and the CLI's instants are formatted by their schemas)
    for path in (p for layer in ("daemon", "engine", "obs", "worker") for p in (package / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            pairs: list[tuple[str | None, ast.expr]] = []
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in _EMITTERS:
                pairs = [(kw.arg, kw.value) for kw in node.keywords]
            elif isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Constant):
                pairs = [(str(node.elts[0].value), node.elts[1])]
            elif isinstance(node, ast.Dict):
                pairs = [(str(k.value), v) for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)]
            raw += [f"{path.relative_to(package.parent)}:{value.lineno}: {name}" for name, value in pairs
                    if _instant_field(name) and not _formatted(value)]
    assert raw == [], raw


def test_log_level_filters_printing_but_not_counting() -> None:
    out = io.StringIO()
    log = EventLog("n1", out, fmt="json", level="warning")
    log.emit("execution.succeeded")
    log.emit("lease.fenced")
    log.emit("job.created", level="error")  # an explicit level wins over the table
    assert [e["event"] for e in _lines(out)] == ["lease.fenced", "job.created"]
    assert log.counts["execution.succeeded"] == 1 and len(log.ring) == 3
    log.set_level("debug")
    log.emit("scheduler.claimed")
    assert _lines(out)[-1]["event"] == "scheduler.claimed"
    with pytest.raises(ValueError, match="unknown log level"):
        log.set_level("loud")


def test_priority_prefix_only_on_the_journal_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "journal"
    with open(path, "w") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        log = EventLog("n1", stream, fmt="json")
        log.emit("lease.fenced")
        log.emit("execution.succeeded")
        log.flush()
        other = open(tmp_path / "redirected", "w")  # noqa: SIM115 - closed below
        assert EventLog("n1", other, fmt="json").journal is False  # `serve > file` under systemd
        other.close()
    first, second = path.read_text().splitlines()
    assert first.startswith(f"<{SYSLOG_PRIORITY['warning']}>{{") and json.loads(first[3:])["level"] == "warning"
    assert second.startswith("<6>{")


def test_a_console_traceback_on_the_journal_stream_keeps_its_priority_on_every_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`log_format = "console"` under systemd: journald makes each line an entry of its own, and
    a traceback's lines after the first had no prefix, so they were logged at the unit's
    default priority (info) and `journalctl -p err` showed an error without its traceback."""
    path = tmp_path / "journal"
    with open(path, "w") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        log = EventLog("n1", stream, fmt="console")
        log.emit("node.crashed", traceback="Traceback (most recent call last):\n  File x\nValueError: boom")
        log.emit("execution.succeeded")
        log.flush()
    lines = path.read_text().splitlines()
    err = f"<{SYSLOG_PRIORITY['critical']}>"  # node.crashed's
    assert len(lines) == 5 and all(line.startswith(err) for line in lines[:4]), lines
    assert lines[3] == f"{err}    ValueError: boom" and lines[4].startswith("<6>"), lines


def test_console_lines_show_readable_times_and_levels() -> None:
    line = console_line({"ts": "2026-12-01T10:00:00.123Z", "level": "warning", "event": "execution.retry_scheduled",
                         "node": "n", "seq": 1, "availableAt": 1_796_119_200_000, "attempt": 2})
    assert line.startswith("10:00:00.123 WARNING execution.retry_scheduled")
    assert "availableAt=2026-12-01T10:00:00.000Z" in line and "attempt=2" in line


def test_library_logs_and_tracebacks_become_one_line() -> None:
    out = io.StringIO()
    log = EventLog("n1", out, fmt="json")
    logger = logging.getLogger("aiohttp.server.test")
    logger.propagate = False
    logger.addHandler(EventHandler(log))
    try:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logger.exception("Error handling request from %s", "10.0.0.1")
    finally:
        logger.handlers.clear()
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert (record["event"], record["level"], record["logger"]) == ("log.aiohttp", "error", "aiohttp.server.test")
    assert record["message"] == "Error handling request from 10.0.0.1"
    assert "RuntimeError: boom" in record["traceback"] and "Traceback" in record["traceback"]


def test_a_line_repeated_in_a_loop_reaches_the_log_now_and_then() -> None:
    """At its own level once per interval per key, with how many were held back; at debug
    level in between, still counted and in the ring. A field may be called ``key``."""
    from cronwheel.core.ratelimit import OncePer

    out = io.StringIO()
    log = EventLog("n1", out, fmt="json")
    limiter = OncePer(60.0)
    for second in (0.0, 1.0, 2.0, 61.0):
        log.emit_now_and_then(limiter, "j:1", second, "lease.fenced", executionId="j:1", key="k")
    log.emit_now_and_then(limiter, "j:2", 2.0, "lease.fenced", executionId="j:2")  # another key: its own line
    assert [(r["executionId"], r["level"], r["suppressed"]) for r in _lines(out)] == [
        ("j:1", "warning", 0), ("j:1", "warning", 2), ("j:2", "warning", 0)]
    assert log.counts["lease.fenced"] == 5 and [r["level"] for r in log.ring][1:3] == ["debug", "debug"]
