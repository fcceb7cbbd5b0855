"""Log levels: each event's level, and how a level is told to journald.

An event's level is a property of its name (operators filter by level, tests assert on names),
so it lives in one table here rather than at each call site. Names not listed are ``info``,
except those ending in a failure's word (``*.error``, ``*_failed``, …: ``_ERROR_WORDS``), which
are ``error``.
"""

from __future__ import annotations

import functools
import os
from typing import IO

LEVELS = ("debug", "info", "warning", "error", "critical")
RANK = {name: rank for rank, name in enumerate(LEVELS)}
#: RFC 5424 severities, the ``<N>`` prefix journald reads on a stream (SyslogLevelPrefix=)
SYSLOG_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2}

EVENT_LEVELS: dict[str, str] = {
    # high volume, useful when tracing one node's behaviour
    "scheduler.claimed": "debug",
    "pool.worker_alive": "debug",
    "pool.worker_slots": "debug",
    "remote_worker.run": "debug",
    "remote_worker.completed": "debug",
    "bucket.acquired": "debug",  # one buckets.acquired line per turn says it at info
    "bucket.released": "debug",  # and one buckets.released line
    # something went wrong for one execution, worker or request; the node carries on
    "execution.retry_scheduled": "warning",
    "execution.aborted": "warning",
    "lease.expired": "warning",
    "lease.fenced": "warning",
    "worker.lost": "warning",
    "worker.killed": "warning",
    "worker.grant_ignored": "warning",
    "worker.stopping": "info",
    "pool.worker_lost": "warning",
    "pool.worker_orphans_killed": "warning",
    "pool.worker_hung": "warning",
    "pool.worker_suspect": "warning",
    "pool.worker_not_ready": "warning",
    "pool.worker_backoff": "warning",
    "pool.grant_refused": "warning",
    "pool.grant_to_gone_worker": "warning",
    "pool.oversubscribed": "warning",
    "pool.result_dropped": "warning",
    "pool.connection_refused": "warning",
    "pool.abort": "info",
    "http.bad_request": "warning",
    "http.forwarded_invalid": "warning",  # a proxy of ours passes on headers it should have written
    "completion.deferred": "warning",
    "job.submit_retry": "warning",
    "tenant.rate_limited": "warning",
    "tenant.jobs_quota": "warning",
    "tenant.cancel_failed": "warning",  # retention tries again
    "bucket.lost": "warning",
    "store.unavailable": "warning",
    "node.stalled": "warning",
    "clock.skewed": "warning",  # the node's clock is wrong: its NTP needs fixing
    "store.disk_low": "warning",  # an alert: `journalctl -p warning` must show it
    "dlq.pruned": "warning",  # dead letters deleted unread: an operator should know
    "effect.fenced": "warning",
    "effect.wrong_worker": "warning",  # another worker of the tenant names a lease it does not hold
    "remote_worker.fenced": "warning",
    "remote_worker.aborted": "warning",
    "remote_worker.claim_failed": "warning",
    "remote_worker.heartbeat_failed": "warning",
    "config.reload_refused": "warning",
    "remote_worker.complete_retrying": "warning",
    "dispatch.start_failed": "warning",  # retried, with a backoff
    "scheduler.claim_failed": "warning",  # the job is set aside and claimed again
    "notification.finish_failed": "warning",  # its lease expires and it goes out again
    "store.disk_check_error": "warning",
    # lost work or a broken part: someone should look
    "execution.dead_lettered": "error",
    "pool.spawn_failed": "error",
    "pool.protocol_error": "error",
    "pool.handler_error": "error",
    "pool.connection_error": "error",
    "worker.protocol_error": "error",
    "worker.connect_failed": "error",
    "worker.refused": "error",
    "worker.exit_with_stuck_threads": "error",
    "worker.shutdown_forced": "error",
    "remote_worker.complete_failed": "error",
    "remote_worker.refused": "error",
    "config.reload_failed": "error",
    "node.id_taken": "error",  # two processes run with one node id
    "node.start_failed": "critical",
    "node.crashed": "critical",
}
#: an event whose name ends in one of these words (``scheduler.error``, ``api.internal_error``,
#: ``job.submit_failed``) is an error unless the table says otherwise
_ERROR_WORDS = frozenset({"error", "crashed", "failed"})


@functools.lru_cache(maxsize=1024)  # called for every line, and the names are a few hundred
def level_of(event: str) -> str:
    level = EVENT_LEVELS.get(event)
    if level is not None:
        return level
    return "error" if event.rsplit(".", 1)[-1].rsplit("_", 1)[-1] in _ERROR_WORDS else "info"


def check_level(name: str) -> str:
    name = name.strip().lower()
    if name == "warn":
        name = "warning"
    if name not in RANK:
        raise ValueError(f"unknown log level {name!r} (one of {', '.join(LEVELS)})")
    return name


def level_for_logging(levelno: int) -> str:
    """A ``logging`` record's level as one of ours."""
    if levelno >= 50:
        return "critical"
    if levelno >= 40:
        return "error"
    if levelno >= 30:
        return "warning"
    return "info" if levelno >= 20 else "debug"


def logging_level(name: str) -> int:
    return {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}[name]


def journal_stream(stream: IO[str]) -> bool:
    """Is ``stream`` the journal stream systemd connected us to? ``$JOURNAL_STREAM`` holds the
    ``device:inode`` of that stream; a redirection (``>file``) in between means it is not, and
    the priority prefix would only clutter the file."""
    value = os.environ.get("JOURNAL_STREAM", "")
    dev, sep, ino = value.partition(":")
    if not sep:
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return f"{st.st_dev}:{st.st_ino}" == f"{dev}:{ino}"
