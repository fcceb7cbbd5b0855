"""Everything else that logs (aiohttp, asyncio, psycopg, Python warnings, an exception nobody
caught) goes through the daemon's event log: one line, the same schema, a level, and a
traceback as a field of that line, never as loose lines in the journal."""

from __future__ import annotations

import io
import logging
import sys
import threading
import traceback
from types import TracebackType

from cronwheel.obs.events import EventLog
from cronwheel.obs.levels import level_for_logging, logging_level


class EventHandler(logging.Handler):
    """A ``logging`` record as the event ``log.<top-level logger>`` (``log.aiohttp``, …)."""

    def __init__(self, events: EventLog) -> None:
        super().__init__(logging.DEBUG)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string in somebody's log call
            message = str(record.msg)
        trace = None
        if record.exc_info and record.exc_info[0] is not None:
            trace = "".join(traceback.format_exception(*record.exc_info))
        elif record.stack_info:
            trace = record.stack_info
        self.events.emit(
            "log." + record.name.split(".")[0], level=level_for_logging(record.levelno),
            logger=record.name, message=message, traceback=trace,
        )


def route_logging(events: EventLog, level: str, crashed: str = "node.crashed") -> EventHandler:
    """Send the root logger (and so every library logger that propagates) and Python warnings
    to ``events`` at ``level``; an uncaught exception becomes one ``crashed`` line."""
    handler = EventHandler(events)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging_level(level))
    logging.captureWarnings(True)

    def excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        events.emit(crashed, error=f"{kind.__name__}: {exc}",
                    traceback="".join(traceback.format_exception(kind, exc, tb)))
        events.flush()

    sys.excepthook = excepthook
    return handler


def set_logging_level(level: str) -> None:
    logging.getLogger().setLevel(logging_level(level))


class LineEvents(io.TextIOBase):
    """A text stream whose every line becomes one event (``python.stdout`` with ``line=…``):
    what Python code in a worker prints (a callable target's ``print``, a library's warning on
    stderr) reaches the journal in the same schema as everything else, never as a loose line."""

    def __init__(self, events: EventLog, event: str, level: str, **fields: str) -> None:
        super().__init__()
        self.events = events
        self.event = event
        self.level = level
        self.fields = fields
        self._partial = ""
        self._lock = threading.Lock()  # callables print from the worker's thread pool

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        with self._lock:
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self.events.emit(self.event, level=self.level, line=line, **self.fields)
        return len(text)

    def flush(self) -> None:
        self.events.flush()

    def close(self) -> None:
        with self._lock:
            rest, self._partial = self._partial, ""
        if rest:
            self.events.emit(self.event, level=self.level, line=rest, **self.fields)
        super().close()
