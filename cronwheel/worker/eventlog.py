"""The event log of a worker process (local or remote): the daemon's schema, on stderr."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from cronwheel.obs.events import EventLog
from cronwheel.obs.logbridge import LineEvents, route_logging

_events: EventLog | None = None


def configure_log(node: str) -> EventLog:
    """Log as the daemon does (same schema, level, format and journald priorities), on stderr:
    the daemon's stderr, so the journal takes worker lines as they are. The daemon passes its
    level and format in CRONWHEEL_LOG_LEVEL / CRONWHEEL_LOG_FORMAT, taken out of the environment
    here so that jobs do not inherit them."""
    global _events
    fmt = os.environ.pop("CRONWHEEL_LOG_FORMAT", "") or "auto"
    level = os.environ.pop("CRONWHEEL_LOG_LEVEL", "") or "info"
    try:
        _events = EventLog(node, stream=sys.stderr, fmt=fmt, level=level, ring_size=1)
    except ValueError:  # a bad level from a hand-started worker: say so, in the default level
        _events = EventLog(node, stream=sys.stderr, fmt=fmt, ring_size=1)
    return _events


def capture_output(events: EventLog, worker_id: str) -> None:
    """Python code that runs in this process (callable targets, the libraries they use) prints
    and logs through ``events``: ``python.stdout`` / ``python.stderr`` lines, ``log.<logger>``
    records, ``worker.crashed`` for an uncaught exception."""
    route_logging(events, events.level, crashed="worker.crashed")
    sys.stdout = LineEvents(events, "python.stdout", "info", worker=worker_id)
    sys.stderr = LineEvents(events, "python.stderr", "warning", worker=worker_id)


def log(event: str, **fields: Any) -> None:
    """One event line on stderr (see configure_log), written out at once; a process that did
    not configure its log (the remote worker) gets one named after this host on first use."""
    events = _events or configure_log(socket.gethostname())
    events.emit(event, pid=os.getpid(), **fields)
    events.flush()
