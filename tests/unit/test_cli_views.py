"""How the CLI words an execution's result (pure functions of the API's JSON)."""

from __future__ import annotations

import pytest

from cronwheel.cli import views

RUN = {"executionId": "j1:1", "status": "SUCCEEDED", "exitCode": 200, "finishedAt": "2026-12-01T10:00:00.000Z"}


def test_an_http_targets_code_is_its_response_status_not_an_exit_status() -> None:
    http = {"jobId": "j1", "status": "ACTIVE", "target": {"http": {"url": "https://example.com/"}}, "lastRun": RUN}
    assert views.last_result(http) == "SUCCEEDED (HTTP 200)"
    assert dict(views.job_details(http))["Last result"].startswith("SUCCEEDED, HTTP 200 at ")
    command = {**http, "target": {"command": "true"}, "lastRun": {**RUN, "exitCode": 0}}
    assert views.last_result(command) == "SUCCEEDED (exit 0)"
    assert dict(views.job_details(command))["Last result"].startswith("SUCCEEDED, exit 0 at ")
    python = {**http, "target": {"python": "m:f"}, "lastRun": {**RUN, "exitCode": None}}
    assert views.last_result(python) == "SUCCEEDED"


def test_history_shows_an_http_runs_code_as_its_status() -> None:
    run = {**RUN, "scheduledAt": RUN["finishedAt"], "attempt": 1, "maxAttempts": 3, "leaseEpoch": 1}
    [http_row] = views.history_rows([run], {"http": {"url": "https://example.com/"}})
    [command_row] = views.history_rows([{**run, "exitCode": 0}], {"command": "true"})
    exit_column = views.HISTORY_COLUMNS.index("EXIT")
    assert (http_row[exit_column], command_row[exit_column]) == ("HTTP 200", "0")


def test_history_says_in_a_word_why_a_tick_was_skipped() -> None:
    status = views.HISTORY_COLUMNS.index("STATUS")
    rows = views.history_rows([
        {"executionId": "j:1", "status": "SKIPPED", "reason": "overlap: j:0 still running"},
        {"executionId": "j:2", "status": "SKIPPED", "reason": "backlog: 100 runs of this job are overdue and waiting to start"},
        {"executionId": "j:3", "status": "SKIPPED", "reason": "calendar: holidays"},
        {"executionId": "j:4", "status": "SKIPPED", "reason": "misfire: 3 ticks skipped from a to b"},
        {"executionId": "j:5", "status": "SKIPPED", "reason": "schedule error, job paused: bad zone"},
        {"executionId": "j:6", "status": "CANCELLED", "reason": "replaced by j:7"},
    ])
    assert [row[status] for row in rows] == [
        "SKIPPED (overlap)", "SKIPPED (backlog)", "SKIPPED (calendar)", "SKIPPED (misfire)", "SKIPPED", "CANCELLED"]


def test_a_dead_http_runs_code_reads_as_its_status() -> None:
    exit_column = views.DLQ_COLUMNS.index("EXIT")
    rows = views.dlq_rows([
        {"executionId": "j:1", "exitCode": 503, "error": "HTTP 503 Service Unavailable"},
        {"executionId": "j:2", "exitCode": 3, "error": "exit code 3"},
        {"executionId": "j:3", "exitCode": 5, "error": "HTTP 500 Internal Server Error"},  # not its code
        {"executionId": "j:4", "error": "timed out"},
    ])
    assert [row[exit_column] for row in rows] == ["HTTP 503", "3", "5", "-"]


def test_a_cut_column_says_it_was_cut() -> None:
    error = "no mail transport: this node cannot send email (cronwheel serve --smtp-url or --sendmail) " * 2
    [row] = views.dlq_rows([{"executionId": "j:1", "attempt": 3, "error": error}])
    assert row[-1] == error[:99] + "…" and len(row[-1]) == 100
    # a python target's cause is shown whole (it was cut at 60 characters)
    cause = "cannot load os:nonexistent_fn: AttributeError: module 'os' has no attribute 'nonexistent_fn'"
    assert views.dlq_rows([{"executionId": "j:1", "error": cause}])[0][-1] == cause
    assert views.clipped("short\nline", 60) == "short line"


def test_a_history_held_at_its_backlog_says_why_its_runs_do_not_start() -> None:
    """`cronwheel history` of a job held at its backlog said SKIPPED (backlog) and showed 100
    PENDING runs, and nothing said why none of them started."""
    reason = "backlog: 100 runs of this job are overdue and waiting to start; 50 ticks skipped from a to b"
    held = {"executionId": "j:3", "status": "SKIPPED", "reason": reason, "createdAt": "2026-12-07T12:51:59.001Z"}
    pending = {"executionId": "j:2", "status": "PENDING", "startedAt": None}
    queued = {"jobId": "j", "tenant": "default", "target": {"queue": "reports"}}
    note = views.backlog_note([held, pending], queued)
    assert note is not None and note.startswith("note: SKIPPED (backlog): 100 runs of this job are overdue and waiting to start, "), note
    assert "the queue 'reports', and no remote worker claims it" in note, note
    assert "`cronwheel worker --url http://HOST:PORT --token TOKEN --queue reports --handler MODULE:FUNCTION`" in note, note
    over_tcp = views.backlog_note([held, pending], queued, "http://10.0.0.5:7878")
    assert over_tcp is not None and "cronwheel worker --url http://10.0.0.5:7878 --token TOKEN --queue reports" in over_tcp
    local = views.backlog_note([held, pending], {"jobId": "j", "tenant": "acme", "target": {"command": "true"}})
    assert local is not None and "tenant 'acme' is held at its maxRunning" in local and "no worker slot is free" in local
    # a run started since: the job is no longer held, the row says what it was
    started = {"executionId": "j:4", "status": "SUCCEEDED", "startedAt": "2026-12-07T12:52:30.000Z"}
    assert views.backlog_note([started, held, pending], queued) is None
    assert views.backlog_note([pending, {**held, "reason": "overlap: j:1 still running"}], queued) is None


def test_status_shows_a_clusters_nodes_one_a_line_with_when_each_was_last_seen(capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [{"nodeId": "node1", "address": "vm:36925", "lastSeen": 1796693600684},
             {"nodeId": "node2", "address": "vm:37431", "lastSeen": 1796693600482}]
    views.emit_status({"nodeId": "node1", "cluster": {"leaseTtlMs": 10000, "nodes": nodes, "owned": 22}})
    out = capsys.readouterr().out
    assert "cluster.nodes.node1:" in out and "vm:36925, last seen 2026-12-08T01:33:20.684Z" in out, out
    assert "cluster.nodes.node2:" in out and "vm:37431, last seen 2026-12-08T01:33:20.482Z" in out, out
    assert "1796693600684" not in out and "cluster.owned:" in out
