"""``cronwheel ls`` as ``systemctl list-timers`` shows timers: when each job runs next and how
long is LEFT until then, and when it LAST ran."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem

from cronwheel.cli import render, views
from cronwheel.cli.client import Client, ClientError

COLUMNS = ("ID", "NAME", "STATUS", "SCHEDULE", "NEXT RUN", "LEFT", "LAST", "LAST RESULT", "TARGET")


def span(ms: int) -> str:
    """A duration the way systemd prints one: its two largest units (``1h 5min``, ``3 days
    2h``, ``12s``, ``0s``)."""
    secs = max(0, ms // 1000)
    units = (("day", 86_400), ("h", 3600), ("min", 60), ("s", 1))
    parts = []
    for name, size in units:
        count, secs = divmod(secs, size)
        if count:
            parts.append(f"{count} {name}{'s' if count > 1 else ''}" if name == "day" else f"{count}{name}")
        if len(parts) == 2:
            break
    return " ".join(parts) or "0s"


def _ms(iso: str) -> int:
    dt = render.parse_iso(iso)
    return 0 if dt is None else int(dt.timestamp() * 1000)


def rows(jobs: Sequence[Mapping[str, Any]], now_ms: int) -> list[list[str]]:
    """LAST and LAST RESULT come from each job's ``lastRun`` (its latest execution that
    started, which the API lists with the job), so the listing costs no request per job."""
    out = []
    for j in jobs:
        nxt = j.get("nextRunAt")
        left = span(_ms(nxt) - now_ms) if nxt and j.get("status") == "ACTIVE" else "-"
        last = (j.get("lastRun") or {}).get("startedAt")
        last_text = "-" if not last else f"{span(now_ms - _ms(last))} ago"
        out.append([
            j["jobId"], j.get("name") or "-", views.job_status(j), views.job_when(j),
            render.fmt_local(nxt), left, last_text, views.last_result(j),
            views.target_summary(j.get("target"), 40),
        ])
    return out


#: completion asks the daemon at most this many jobs, and waits at most this long
COMPLETION_JOBS = 1000
COMPLETION_TIMEOUT_SEC = 2.0


def completion_items(client: Client, incomplete: str) -> list[CompletionItem]:
    """The names and ids of live jobs that start with ``incomplete``, each with a hint (the
    name's id, the id's name), for click's bash/zsh/fish completion."""
    client.timeout = COMPLETION_TIMEOUT_SEC
    items: list[CompletionItem] = []
    try:
        page = client.list_jobs(None, COMPLETION_JOBS)
    except (ClientError, ValueError):  # no daemon, no permission: complete nothing
        return []
    for job in page.get("jobs", []):
        if job.get("status") not in ("ACTIVE", "PAUSED"):
            continue
        name, job_id = job.get("name"), job["jobId"]
        if name and name.startswith(incomplete):
            items.append(CompletionItem(name, help=job_id))
        if job_id.startswith(incomplete):
            items.append(CompletionItem(job_id, help=name or views.job_when(job)))
    return items


def complete_job(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """JOB arguments complete to the ids and names of the daemon's jobs (nothing when no
    daemon answers): `cronwheel show <TAB>` in bash, zsh and fish."""
    # main imports this module: its client factory is looked up at call time
    from cronwheel.cli.main import completion_client

    try:
        client = completion_client(ctx.find_root().params)
    except (click.ClickException, ValueError):
        return []
    return completion_items(client, incomplete)
