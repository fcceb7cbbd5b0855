"""What ``GET /v1/config`` answers: the configuration this daemon runs with, each key's value
and where it came from (``flag``, ``env CRONWHEEL_X``, ``FILE:LINE``, ``default``).

The command line resolves it as the daemon starts (cli/config.py, ``reload_hooks``), values
with secrets already masked; the daemon fills in what it chose for a key set nowhere (its
worker count, its node id, its log format), and a SIGHUP that applies a key records the key's
new value and origin. A key a SIGHUP could not apply keeps the value the daemon runs with.
So ``cronwheel config`` shows what the daemon does, the unit's own flags and environment
included, which a shell that reads the file cannot know.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from cronwheel.core.instants import format_instant


class ConfigReport:
    """``keys``: key -> {value, source, env, default}, in the order of serve's options.
    ``origins``: key -> source of the configuration as the last SIGHUP read it (filled by
    the reload hook; empty until one). ``mask``: a value as shown (a URL's password hidden)."""

    def __init__(
        self, file: str | None, keys: dict[str, dict[str, Any]], origins: dict[str, str] | None = None,
        mask: Callable[[Any], Any] | None = None,
    ) -> None:
        self.file = file
        self.keys = {key: dict(entry) for key, entry in keys.items()}
        self.origins = origins if origins is not None else {}
        self.mask = mask or (lambda value: value)
        self.pid = os.getpid()
        self.started_at_ms = time.time_ns() // 1_000_000
        self.reloaded_at_ms: int | None = None
        self.node: str | None = None

    def chosen(self, key: str, value: Any) -> None:
        """The value the daemon chose for ``key`` when nothing set it (its default, made real)."""
        entry = self.keys.get(key)
        if entry is not None and entry.get("value") is None and value is not None:
            entry["value"] = value

    def started_as(self, node: str, **chosen: Any) -> ConfigReport:
        """The node's id, and the values it chose for keys set nowhere (see ``chosen``)."""
        self.node = node
        for key, value in {"node_id": node, **chosen}.items():
            self.chosen(key, value)
        return self

    def applied(self, changed: dict[str, Any], running: dict[str, Any]) -> None:
        """After a SIGHUP: the keys it put in place now run with their new value and origin."""
        self.reloaded_at_ms = time.time_ns() // 1_000_000
        for key in changed:
            entry = self.keys.get(key)
            if entry is None:
                continue
            entry["value"] = self.mask(running.get(key))
            entry["source"] = self.origins.get(key, entry["source"])

    def as_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "node": self.node,
            "startedAt": format_instant(self.started_at_ms),
            "reloadedAt": format_instant(self.reloaded_at_ms),  # None until a SIGHUP
            "file": self.file,
            "keys": [{"key": key, **entry} for key, entry in self.keys.items()],
        }
