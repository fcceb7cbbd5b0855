"""How the CLI shows things: rich tables on a terminal, plain aligned text otherwise, JSON
on request. Times arrive from the API as RFC 3339 UTC strings and are shown in the local
zone (or a given one) next to UTC.

Names, commands, payloads, outputs and errors are written by tenants: shown as text they
never reach the terminal as control sequences (``safe``: ESC, C0 but newline and tab, DEL and
C1 are written as visible escapes such as ``\x1b``), and a stored value that does not parse
(a time past the year 9999) is shown as it is rather than crashing the listing. ``--json``
stays exact: JSON escapes control characters itself.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypeVar

import click

from cronwheel.core.words import counted


def is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


#: what a terminal would act on: C0 controls but tab and newline, DEL, and C1 controls
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c) or f"\\x{ord(c):02x}"


def safe(value: Any, *, newlines: bool = True) -> str:
    """``value`` as text fit for a terminal: control characters written as visible escapes
    (``\x1b``, ``\x07``); with ``newlines=False`` (a table cell, a key: value line) newline
    and tab too."""
    text = value if isinstance(value, str) else str(value)
    return (_CONTROL if newlines else _CONTROL_OR_NEWLINE).sub(_escape, text)


def emit_output(text: str) -> None:
    """An execution's output (or error): on a terminal made safe, into a pipe or a file as
    it is (byte for byte what the job wrote, as far as the store kept it)."""
    shown = safe(text) if is_tty() else text
    # color=True: click would strip what looks like ANSI styling from a pipe, and the pipe
    # is where the output must arrive exact
    click.echo(shown, nl=not shown.endswith("\n"), color=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def emit_error(message: str) -> None:
    prefix = click.style("error:", fg="red", bold=True) if sys.stderr.isatty() else "error:"
    click.echo(f"{prefix} {safe(message)}", err=True)


_Answer = TypeVar("_Answer", bound=dict[str, Any])


def emit_note(message: str) -> None:
    click.echo(safe(message), err=True)


def warned(answer: _Answer) -> _Answer:
    """``answer``, after printing its ``warnings`` on standard error whatever the command
    prints: what was accepted but will not work as it stands (an email rule on a daemon
    without mail). The same warning for many jobs of a batch is printed once, with a count."""
    warnings = answer.get("warnings")
    seen: dict[str, int] = {}
    for w in warnings if isinstance(warnings, list) else []:
        text = str(w)
        if text.startswith("jobs[") and "." in text:  # jobs[3].notify[0].to: the same words for each job
            text = text.split(".", 1)[1]
        seen[text] = seen.get(text, 0) + 1
    for text, n in seen.items():
        emit_note(f"warning: {text}" + (f" ({n} jobs)" if n > 1 else ""))
    return answer


def emit_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str = "nothing to show") -> None:
    """A table: rich on a terminal, else a header line and columns separated by two spaces
    (the last column unpadded), so ``cut``/``awk`` work on it."""
    if not rows:
        emit_note(empty)
        return
    if is_tty():
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col in columns:
            table.add_column(col, overflow="fold")
        for row in rows:  # Text: a cell is never read as rich markup ("[red]" stays text)
            table.add_row(*(Text(safe(c, newlines=False)) for c in row))
        Console(highlight=False).print(table)
        return
    cells = [list(columns), *([safe(c, newlines=False) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for r in cells:
        line = "  ".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r))
        click.echo(line.rstrip())


def emit_kv(pairs: Sequence[tuple[str, Any]]) -> None:
    width = max((len(k) for k, _ in pairs), default=0)
    for key, value in pairs:  # an empty key continues the value above (one env variable a line)
        shown = "-" if value is None or value == "" else safe(value, newlines=False)
        click.echo(f"{(key + ':' if key else '').ljust(width + 1)}  {shown}")


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
    emit_kv([(k, _word(v)) for k, v in flatten(data)])


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


# ---------------------------------------------------------------- time


def parse_iso(text: str | None) -> datetime | None:
    """An RFC 3339 time from the API; None when absent or beyond what datetime holds."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, TypeError):
        return None


def ms_to_dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def fmt_local(value: str | datetime | None, tz: tzinfo | None = None) -> str:
    """``2026-11-30 00:00:00 CET`` in ``tz``; without one, UTC (``… UTC``): every command
    shows instants the same way, whatever this machine's zone (the API's are UTC too)."""
    dt = parse_iso(value) if isinstance(value, str) or value is None else value
    if dt is None:
        return safe(value, newlines=False) if value else "-"  # shown as stored, never a crash
    try:
        local = dt.astimezone(tz if tz is not None else UTC)
    except (OverflowError, ValueError):  # the edge of datetime's range
        return fmt_utc(dt)
    text = local.strftime("%Y-%m-%d %H:%M:%S")
    if local.microsecond // 1000:
        text += f".{local.microsecond // 1000:03d}"
    return f"{text} {local.tzname() or local.strftime('%z')}"


def fmt_utc(value: str | datetime | None) -> str:
    dt = parse_iso(value) if isinstance(value, str) or value is None else value
    if dt is None:
        return safe(value, newlines=False) if value else "-"
    dt = dt.astimezone(UTC)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond // 1000:
        text += f".{dt.microsecond // 1000:03d}"
    return text + "Z"


def fmt_both(value: str | None, tz: tzinfo | None = None) -> str:
    if not value:
        return "-"
    return f"{fmt_local(value, tz)}  ({fmt_utc(value)})"


def event_line(record: dict[str, Any]) -> str:
    """One daemon event as a line: UTC time, name, then its fields as key=value."""
    fields = " ".join(
        f"{k}={v if isinstance(v, str | int | float) else json.dumps(v, default=str)}"
        for k, v in record.items()
        if k not in ("ts", "event", "node", "seq")
    )
    return safe(f"{record.get('ts', '')}  {record.get('event', '?'):<26} {fields}".rstrip(), newlines=False)


def fmt_lag(ms: int | None) -> str:
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    if ms < 60_000:
        return f"{sign}{ms / 1000:.1f}s"
    minutes, secs = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{sign}{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}h{minutes:02d}m"


def fmt_seconds(sec: float | None) -> str:
    if sec is None:
        return "-"
    if sec < 60 or sec % 60:
        return f"{sec:g}s"
    if sec % 3600:
        return f"{sec / 60:g}m"
    return f"{sec / 3600:g}h"


# ---------------------------------------------------------------- objects


def target_summary(target: dict[str, Any] | None, width: int = 60) -> str:
    if not target:
        return "-"
    kind, value = next(iter(target.items()))
    if kind == "command":
        text = str(value)
    elif kind == "http":
        text = f"{value.get('method', 'GET')} {value.get('url', '')}"
    else:
        text = f"{kind}:{value}"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def job_when(job: dict[str, Any]) -> str:
    if not job.get("schedule") and not job.get("runAt") and job.get("expectSuccessWithin"):
        return f"pinged, every {job['expectSuccessWithin']}"
    if job.get("schedule"):
        tz = job.get("timezone") or "UTC"
        return job["schedule"] if tz == "UTC" else f"{job['schedule']} ({tz})"
    return f"once at {fmt_utc(job.get('runAt'))}"


def last_result(job: dict[str, Any]) -> str:
    """A job's last result: the status of its latest execution that started, and its exit
    code ("-" when none did)."""
    run = job.get("lastRun")
    if not run:
        return "-"
    code = run.get("exitCode")
    return f"{run.get('status')} (exit {code})" if code is not None else str(run.get("status"))


def job_status(job: dict[str, Any]) -> str:
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


def _last_run_detail(run: dict[str, Any] | None) -> str:
    if not run:
        return "no run on record"
    code = run.get("exitCode")
    at = run.get("finishedAt") or run.get("startedAt")
    return f"{run['status']}" + (f", exit {code}" if code is not None else "") + f" at {fmt_local(at)} ({run['executionId']})"


def _run_as(run_as: dict[str, Any] | None) -> str | None:
    if not run_as:
        return None
    return run_as["user"] if run_as.get("group") is None else f"{run_as['user']}:{run_as['group']}"


def job_details(job: dict[str, Any], zone: tzinfo | None = None) -> list[tuple[str, Any]]:
    """``zone``: where to show the next run (the job's own zone, say); default UTC."""
    retry = job.get("retryPolicy") or {}
    payload = job.get("payload")
    return [
        ("ID", job["jobId"]),
        ("Name", job.get("name")),
        ("Status", job.get("status")),
        ("Schedule", job.get("schedule") or "(one-off)"),
        ("Run at", fmt_both(job.get("runAt")) if job.get("runAt") else None),
        ("Time zone", job.get("timezone")),
        ("Next run", fmt_both(job.get("nextRunAt"), zone)),
        ("Last result", _last_run_detail(job.get("lastRun"))),
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
        ("Priority", job.get("priority")),
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


def history_rows(executions: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for e in executions:
        exit_code = e.get("exitCode")
        rows.append([
            fmt_local(e.get("scheduledAt")),
            fmt_local(e.get("startedAt")),
            fmt_lag(e.get("lagMs")),
            e.get("status", "-"),
            str(e.get("origin") or "schedule").replace("_", "-"),
            f"{e.get('attempt', 0)}/{e.get('maxAttempts', '?')}",
            str(e.get("leaseEpoch", 0)),
            "-" if exit_code is None else str(exit_code),
            e["executionId"],
        ])
    return rows


DLQ_COLUMNS = ("EXECUTION", "SCHEDULED", "ATTEMPTS", "EXIT", "ERROR")


def dlq_rows(executions: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [e["executionId"], fmt_local(e.get("scheduledAt")), str(e.get("attempt", 0)),
         "-" if e.get("exitCode") is None else str(e["exitCode"]),
         " ".join(str(e.get("error") or e.get("reason") or "-").split())[:60]]
        for e in executions
    ]


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
    click.echo("ticks per minute:")
    tty = is_tty()
    if tty:
        from rich.console import Console

        console = Console(highlight=False)
    for i, n in enumerate(per_minute):
        when = f"+{i:>4}m" if start is None else (start.astimezone(UTC) + timedelta(minutes=i)).strftime("%H:%M:%SZ")
        bar = round(width * n / peak) if peak else 0
        if tty:
            style = "red" if n == peak else "cyan"
            console.print(f"{when} [{style}]{'█' * bar}[/{style}] {n}")
        else:
            click.echo(" ".join(x for x in (when, "#" * bar, str(n)) if x))
