"""How the CLI shows the API's objects: a job's details and its one-line summaries, the rows of
the job, history and dead-letter tables, the status document, the herd preview and daemon
events, all through ``render``'s terminal-safe primitives."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import click

from cronwheel.cli.render import (
    emit_kv,
    emit_table,
    fmt_both,
    fmt_lag,
    fmt_local,
    fmt_seconds,
    fmt_utc,
    is_tty,
    parse_iso,
    safe,
)
from cronwheel.core import skips
from cronwheel.core.words import counted
from cronwheel.obs.events import logfmt_value


def job_label(job: dict[str, Any]) -> str:
    """``jobid (name)``, or the id of a job without a name, fit for a line of text."""
    return safe(f"{job['jobId']} ({job['name']})" if job.get("name") else job["jobId"], newlines=False)


def target_summary(target: Mapping[str, Any] | None, width: int = 60) -> str:
    if not target:
        return "-"
    kind, value = next(iter(target.items()))
    if kind == "command":
        text = str(value)
    elif kind == "http":
        text = f"{value.get('method', 'GET')} {value.get('url', '')}"
    elif kind == "ping":  # a watched job: nothing runs here
        text = "runs elsewhere, reports by ping"
    else:
        text = f"{kind}:{value}"
    return clipped(text, width)


def clipped(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters, ending in "…" when cut."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def job_when(job: Mapping[str, Any]) -> str:
    if not job.get("schedule") and not job.get("runAt") and job.get("expectSuccessWithin"):
        return f"pinged, every {job['expectSuccessWithin']}"
    if job.get("schedule"):
        tz = job.get("timezone") or "UTC"
        return job["schedule"] if tz == "UTC" else f"{job['schedule']} ({tz})"
    return f"once at {fmt_utc(job.get('runAt'))}"


def result_code(code: int, target: Mapping[str, Any] | None) -> str:
    """An execution's ``exitCode`` in words: an HTTP target's is the response's status."""
    return f"HTTP {code}" if target and "http" in target else f"exit {code}"


#: statuses of an execution that did not run (or was cut short) for a reason the store recorded
NEVER_RAN = ("SKIPPED", "CANCELLED")


def attempt_ending(ex: Mapping[str, Any], target: Mapping[str, Any] | None) -> str:
    """How an execution's attempt ended, in the same words for ``logs`` and ``logs -f``: its
    status, its code as its target reads it, and its error, or why it never ran."""
    code = ex.get("exitCode")
    tail = f", {result_code(code, target)}" if code is not None else ""
    error = str(ex.get("error") or "")
    if tail and error.startswith(tail[2:]):  # an HTTP run's error already starts "HTTP 404"
        error = error[len(tail) - 2 :].lstrip()
    if not error and ex.get("status") in NEVER_RAN:  # why it did not run is all there is to say
        error = str(ex.get("reason") or "")
    return f"execution {ex['executionId']}: {ex.get('status')}{tail}" + (f": {error}" if error else "")


def last_result(job: Mapping[str, Any]) -> str:
    """A job's last result: the status of its latest execution that started, and its exit
    code ("-" when none did)."""
    last = job.get("lastRun")
    if not last:
        return "-"
    code = last.get("exitCode")
    return f"{last.get('status')} ({result_code(code, job.get('target'))})" if code is not None else str(last.get("status"))


def job_status(job: Mapping[str, Any]) -> str:
    """The status, marked when the job's dead-man's window passed without a success."""
    status = str(job.get("status", "-"))
    return f"{status} OVERDUE" if (job.get("window") or {}).get("overdue") else status


def job_rows(jobs: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [j["jobId"], j.get("name") or "-", job_status(j), job_when(j),
         fmt_local(j.get("nextRunAt")), last_result(j), target_summary(j.get("target"), 40)]
        for j in jobs
    ]


JOB_COLUMNS = ("ID", "NAME", "STATUS", "SCHEDULE", "NEXT RUN", "LAST RESULT", "TARGET")


def _last_execution_detail(execution: dict[str, Any] | None, target: Mapping[str, Any] | None) -> str:
    """A job's ``lastRun``: its latest execution that started."""
    if not execution:
        return "no execution on record"
    code = execution.get("exitCode")
    at = execution.get("finishedAt") or execution.get("startedAt")
    return (f"{execution['status']}" + (f", {result_code(code, target)}" if code is not None else "")
            + f" at {fmt_local(at)} ({execution['executionId']})")


def _run_as(run_as: dict[str, Any] | None) -> str | None:
    if not run_as:
        return None
    return run_as["user"] if run_as.get("group") is None else f"{run_as['user']}:{run_as['group']}"


def job_details(job: dict[str, Any], zone: tzinfo | None = None) -> list[tuple[str, Any]]:
    """``zone``: where to show the next fire time (the job's own zone, say); default UTC."""
    retry = job.get("retryPolicy") or {}
    payload = job.get("payload")
    return [
        ("ID", job["jobId"]),
        ("Name", job.get("name")),
        ("Status", job.get("status")),
        ("Schedule", job_when(job) if "ping" in (job.get("target") or {}) else job.get("schedule") or "(one-off)"),
        ("Run at", fmt_both(job.get("runAt")) if job.get("runAt") else None),
        ("Time zone", job.get("timezone")),
        ("Next run", fmt_both(job.get("nextRunAt"), zone)),
        ("Last result", _last_execution_detail(job.get("lastRun"), job.get("target"))),
        ("Target", target_summary(job.get("target"), 200)),
        ("Run as", _run_as(job.get("runAs"))),
        ("Shell", job.get("shell")),
        *[("Env" if i == 0 else "", f"{k}={v}") for i, (k, v) in enumerate((job.get("env") or {}).items())],
        ("Stdin", None if job.get("stdin") is None else json.dumps(job["stdin"], ensure_ascii=False)[:200]),
        ("Payload", None if payload is None else json.dumps(payload)[:200]),
        ("Max attempts", retry.get("maxAttempts")),
        ("Backoff", f"{fmt_seconds(retry.get('initialBackoffSec'))} x{retry.get('multiplier', 2):g} up to {fmt_seconds(retry.get('maxBackoffSec'))}" if retry else None),
        ("Timeout", fmt_seconds(job.get("timeoutSec"))),
        ("Lease", fmt_seconds(job.get("leaseSec"))),
        ("Priority", job.get("priority") if "effectivePriority" not in job else
         f"{job.get('priority')}, queued at {job['effectivePriority']} (its tenant lacks allowHighPriority)"),
        ("Overlap", job.get("overlap")),
        ("Misfire", job.get("misfire")),
        ("Misfire grace", "until the next tick, at most 60s" if job.get("misfireGraceSec") is None
         else fmt_seconds(job.get("misfireGraceSec"))),
        ("Jitter", fmt_seconds(job.get("jitterSec"))),
        ("Calendars", ", ".join(job.get("calendars") or []) or None),
        ("Active from", fmt_both(job.get("activeFrom")) if job.get("activeFrom") else None),
        ("Active until", fmt_both(job.get("activeUntil")) if job.get("activeUntil") else None),
        ("On success", ", ".join(job.get("onSuccess") or []) or None),
        ("On failure", ", ".join(job.get("onFailure") or []) or None),
        ("Tenant", job.get("tenant")),
        ("Expect success", f"within {job['expectSuccessWithin']}" if job.get("expectSuccessWithin") else None),
        ("Window", window_summary(job.get("window"))),
        ("Notify", "; ".join(rule_summary(r) for r in job.get("notify") or []) or None),
        ("Created", fmt_both(job.get("createdAt"))),
        ("Updated", fmt_both(job.get("updatedAt"))),
    ]


def window_summary(window: dict[str, Any] | None) -> str | None:
    if not window:
        return None
    text = f"next deadline {fmt_both(window.get('deadline'))}"
    if window.get("overdue"):
        text = f"OVERDUE since {fmt_both(window.get('overdueSince') or window.get('deadline'))}; " + text
    return text


def rule_summary(rule: dict[str, Any]) -> str:
    where = {"webhook": rule.get("url"), "email": ", ".join(rule.get("to") or []), "command": rule.get("command")}
    after = f" {rule['afterSec']}s" if rule.get("afterSec") else ""
    return f"on {rule.get('on')}{after} via {rule.get('via')} {where.get(str(rule.get('via')), '')}"


HISTORY_COLUMNS = ("SCHEDULED", "STARTED", "LAG", "STATUS", "ORIGIN", "ATTEMPT", "EPOCH", "EXIT", "EXECUTION")


def history_rows(executions: Sequence[dict[str, Any]], target: Mapping[str, Any] | None = None) -> list[list[str]]:
    """``target``: the job's, for its EXIT column (an HTTP target's reads ``HTTP 200``)."""
    http = bool(target) and "http" in (target or {})
    rows = []
    for e in executions:
        exit_code = e.get("exitCode")
        rows.append([
            fmt_local(e.get("scheduledAt")),
            fmt_local(e.get("startedAt")),
            fmt_lag(e.get("lagMs")),
            _status_with_why(e),
            str(e.get("origin") or "schedule").replace("_", "-"),
            f"{e.get('attempt', 0)}/{e.get('maxAttempts', '?')}",
            str(e.get("leaseEpoch", 0)),
            "-" if exit_code is None else f"HTTP {exit_code}" if http else str(exit_code),
            e["executionId"],
        ])
    return rows


def _status_with_why(e: Mapping[str, Any]) -> str:
    """A SKIPPED tick's status says in a word why it did not run (``cronwheel logs EXECUTION``
    has the whole reason): overlap, misfire, calendar or backlog."""
    status = str(e.get("status", "-"))
    if status == "SKIPPED":
        kind = skips.kind_of(e.get("reason"))
        if kind is not skips.SkipKind.OTHER:
            return f"{status} ({kind.value})"
    return status


def worker_hint(queue: str, url: str) -> str:
    """The command that runs a remote worker for ``queue`` of the daemon at ``url`` (the CLI's:
    over the Unix socket, its HTTP address is the reader's to fill in): the worker speaks HTTP
    only, with a token."""
    where = url if url.startswith(("http://", "https://")) else "http://HOST:PORT"
    return f"cronwheel worker --url {where} --token TOKEN --queue {queue} --handler MODULE:FUNCTION"


def backlog_note(executions: Sequence[Mapping[str, Any]], job: Mapping[str, Any], url: str = "") -> str | None:
    """Why a job's history ends in SKIPPED (backlog) rows while it still does (no run started
    since the newest), and what would start its runs: its queue's remote workers, or its
    tenant's maxRunning and the worker slots. None when no such row is among ``executions``."""
    held = next((e for e in executions if e.get("status") == "SKIPPED"
                 and skips.kind_of(e.get("reason")) is skips.SkipKind.BACKLOG), None)  # fmt: skip
    if held is None or any(str(e.get("startedAt") or "") >= str(held.get("createdAt") or "~") for e in executions):
        return None
    overdue = str(held.get("reason")).split(";")[0].removeprefix("backlog: ")
    queue = (job.get("target") or {}).get("queue")
    if queue is not None:
        why = f"its target is the queue {queue!r}, and no remote worker claims it (`{worker_hint(queue, url)}`, or a worker of your own)"
    else:
        why = (f"its tenant {job.get('tenant') or 'default'!r} is held at its maxRunning (`cronwheel tenant ls`), "
               "or no worker slot is free (`cronwheel status`)")
    return (f"note: SKIPPED (backlog): {overdue}, so its ticks are skipped, one record for the ticks of about a "
            f"minute (`cronwheel logs EXECUTION` says which), until one of them starts. They do not start: {why}.")


DLQ_COLUMNS = ("EXECUTION", "SCHEDULED", "ATTEMPTS", "EXIT", "ERROR")
#: the ERROR column's characters: the cause, such as a python target's ``cannot load m:f:
#: AttributeError: module 'm' has no attribute 'f'`` (``logs EXECUTION`` has the whole error)
DLQ_ERROR_WIDTH = 100


def dlq_rows(executions: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [e["executionId"], fmt_local(e.get("scheduledAt")), str(e.get("attempt", 0)), _dead_code(e),
         clipped(str(e.get("error") or e.get("reason") or "-"), DLQ_ERROR_WIDTH)]
        for e in executions
    ]


def _dead_code(execution: Mapping[str, Any]) -> str:
    """A dead letter's EXIT column. The page mixes jobs, and an execution does not say its
    target's kind; an HTTP target's failure says its status first (``HTTP 503 Service
    Unavailable``, the worker's wording), so that is shown as ``HTTP 503``, not ``503``."""
    code = execution.get("exitCode")
    if code is None:
        return "-"
    said = str(execution.get("error") or "").split(" ", 2)[:2]
    return f"HTTP {code}" if said == ["HTTP", str(code)] else str(code)


def emit_herd(data: dict[str, Any], width: int = 40) -> None:
    """The herd preview: the busiest seconds, then ticks per minute as a bar chart (rich on a
    terminal, ``#`` bars otherwise)."""
    window = int(data.get("windowSec") or 0)
    click.echo(
        f"{counted(data.get('ticks', 0), 'tick')} of {counted(data.get('jobs', 0), 'active job')} in the {window // 60} min from "
        f"{fmt_utc(data.get('windowStart'))}: max {data.get('maxPerSecond', 0)}/s, p99 {data.get('p99PerSecond', 0)}/s"
        + (f" ({counted(data['skipped'], 'job')} skipped: bad schedule)" if data.get("skipped") else "")
    )
    rows = [
        [fmt_utc(b["at"]), str(b["count"]), ", ".join(f"{s['jobs']}x {s['schedule']}" for s in b.get("schedules", []))]
        for b in data.get("busiest") or []
    ]
    click.echo("")
    emit_table(["SECOND", "TICKS", "SCHEDULES"], rows, empty="no ticks in the window")
    per_minute = data.get("perMinute") or []
    if not per_minute or not any(per_minute):
        return
    start = parse_iso(data.get("windowStart"))
    peak = max(per_minute)
    click.echo("")
    click.echo("ticks per minute (each row: the 60 seconds from its time):")
    tty = is_tty()
    if tty:
        from rich.console import Console

        console = Console(highlight=False)
    for i, n in enumerate(per_minute):
        # a row label, the minute's time of day (its date is the window's), not an instant
        when = f"+{i:>4}m" if start is None else (start.astimezone(UTC) + timedelta(minutes=i)).strftime("%H:%M:%SZ")
        bar = round(width * n / peak) if peak else 0
        if tty:
            style = "red" if n == peak else "cyan"
            console.print(f"{when} [{style}]{'█' * bar}[/{style}] {n}")
        else:
            click.echo(" ".join(x for x in (when, "#" * bar, str(n)) if x))


# ---------------------------------------------------------------- the node


def emit_status(data: dict[str, Any]) -> None:
    """``cronwheel status``: a STALE line first when the node could not read the store (a
    failover, a restart) and answered with its last read; then every field."""
    if data.get("stale"):
        age = data.get("staleForMs")
        ago = f", {fmt_lag(int(age))} ago" if isinstance(age, int | float) else ""
        click.echo(
            f"STALE: the store is unreachable ({data.get('storeError') or 'no detail'}); job and "
            f"execution counts and cluster figures are as of {fmt_utc(data.get('asOf'))}{ago}; "
            "queue, workers and lag are live"
        )
    if data.get("stopping"):
        click.echo(
            "STOPPING: the node is shutting down: it starts no new work, and its running "
            "executions finish within the grace period; jobs added now run after the restart"
        )
    emit_kv([(k, _word(v)) for k, v in flatten(_nodes_by_id(data))])


def _nodes_by_id(data: dict[str, Any]) -> dict[str, Any]:
    """A cluster's nodes one line each (``cluster.nodes.ID: ADDRESS, last seen INSTANT``), not
    the API's list printed as JSON with its milliseconds since the epoch."""
    cluster = data.get("cluster")
    if not isinstance(cluster, dict):
        return data
    nodes = cluster.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        return data
    shown = {}
    for n in nodes:
        seen = n.get("lastSeen")
        when = fmt_utc(datetime.fromtimestamp(seen / 1000, UTC)) if isinstance(seen, int) else "-"
        shown[str(n.get("nodeId"))] = f"{n.get('address') or '-'}, last seen {when}"
    return {**data, "cluster": {**cluster, "nodes": shown}}


def _word(value: Any) -> Any:
    """Booleans as people say them (``stale: no``), not as Python prints them."""
    return ("yes" if value else "no") if isinstance(value, bool) else value


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ``a.b: value`` pairs (for ``status``)."""
    if isinstance(data, dict) and data:
        out: list[tuple[str, Any]] = []
        for k, val in data.items():
            out.extend(flatten(val, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(data, list | dict):
        return [(prefix, json.dumps(data, default=str))]
    return [(prefix, data)]


def event_line(record: dict[str, Any]) -> str:
    """One daemon event as a line: UTC time, name, then its fields as key=value, quoted as the
    daemon's console lines are (logfmt: ``error="exit 1: not found"``), so a line reads back."""
    fields = " ".join(f"{k}={logfmt_value(v)}" for k, v in record.items() if k not in ("ts", "event", "node", "seq"))
    return safe(f"{record.get('ts', '')}  {record.get('event', '?'):<26} {fields}".rstrip(), newlines=False)
