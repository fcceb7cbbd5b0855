"""Signals that come while ``cronwheel serve`` starts, before its event loop takes them over.

Python's default action for SIGTERM, SIGINT and SIGHUP ends the process: a stop asked for
while the node starts (``systemctl restart`` just after a start, Ctrl-C at once) killed a
half-started node, leaving its workers to find out on their own, and a SIGHUP (a reload, a
logrotate script, ``kill -HUP`` from a deploy tool) killed it silently, which systemd counts
as a clean exit and does not restart. From ``hold()`` until the loop's own handlers are in
place each is only noted: the node stops once it has started, as any stop is done, and reads
its configuration again once it can (the file may have been edited just before the signal).

This module imports nothing heavy, so the command line can hold the signals before it loads
the daemon (the imports alone take a good part of the start).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

#: a SIGTERM or SIGINT that came before the event loop took the signals over
stop_asked = threading.Event()
#: a SIGHUP that came before the reload handler existed
reload_asked = threading.Event()


def _stop(signum: int, frame: Any) -> None:
    stop_asked.set()


def _reload(signum: int, frame: Any) -> None:
    reload_asked.set()


def hold() -> None:
    """Note SIGTERM, SIGINT and SIGHUP from now on instead of dying of them. Handlers (not
    SIG_IGN) on purpose: workers and jobs started meanwhile get the default actions back at
    exec, as they should."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    signal.signal(signal.SIGHUP, _reload)
