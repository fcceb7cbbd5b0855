"""SIGHUP: read the configuration again and apply what can change in a running daemon.

Live: the log level and format, ``http_allow``, ``trusted_proxies`` and the history retention. Anything else that
differs from what the daemon runs with is refused with one ``config.reload_refused`` line per
key (it needs a restart), and a file that does not parse changes nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cronwheel.api.server import ConnectionGuard
from cronwheel.core.config import ConfigError
from cronwheel.daemon.configreport import ConfigReport
from cronwheel.daemon.options import (
    DaemonError,
    parse_http_allow,
    parse_trusted_proxies,
    retention_options,
)
from cronwheel.engine.config import NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.obs.levels import RANK
from cronwheel.obs.logbridge import set_logging_level

if TYPE_CHECKING:
    from cronwheel.api.auth import Authenticator
    from cronwheel.engine.node import Node

LOG_KEYS = frozenset({"log_level", "log_format"})
LIVE_KEYS = frozenset({"log_level", "log_format", "http_allow", "trusted_proxies", "retention", "keep_last",
                       "dlq_keep_last", "retention_interval_ms"})


class Reloader:
    """``read()`` returns the configuration as it now resolves (flag > environment > file >
    default; None for a key set nowhere); ``apply_*`` put a live value in place, or raise
    ValueError to refuse it."""

    def __init__(
        self,
        events: EventLog,
        read: Callable[[], dict[str, Any]],
        running: dict[str, Any],
        apply: dict[str, Callable[[Any], None]],
        report: ConfigReport | None = None,
    ) -> None:
        self.events = events
        self.read = read
        self.running = dict(running)
        self.apply = apply
        self.report = report
        #: a refused value is logged as `cronwheel config` shows it: a URL's password masked
        self.mask = report.mask if report is not None else (lambda text: text)

    def reload(self) -> dict[str, Any]:
        """One SIGHUP. Returns {changed: [...], refused: [...]} (also logged)."""
        try:
            wanted = self.read()
        except ConfigError as exc:
            self.events.emit("config.reload_failed", error=str(exc), file=exc.source, line=exc.line, key=exc.key)
            return {"changed": [], "refused": [], "error": str(exc)}
        changed: dict[str, Any] = {}
        refused: list[str] = []
        later: list[tuple[str, Any, Any]] = []
        for key in sorted(set(wanted) | set(self.running)):
            old, new = self.running.get(key), wanted.get(key)
            if old == new:
                continue
            if key not in LIVE_KEYS or key not in self.apply:
                refused.append(key)
                self.events.emit(
                    "config.reload_refused", key=key, **self._sides(key, old, new, "running", "wanted"),
                    reason="cannot change while the daemon runs: restart it to apply",
                )
                continue
            if key in LOG_KEYS and not _shows_more(key, old, new):
                # last: the line that says what changed is printed at the old level (a level
                # that shows more is applied first, or the line would be dropped by the old one)
                later.append((key, old, new))
                continue
            try:
                self.apply[key](new)
            except ValueError as exc:
                refused.append(key)
                self.events.emit("config.reload_refused", key=key, **self._sides(key, old, new, "running", "wanted"),
                                 reason=str(exc))
                continue
            self.running[key] = new
            changed[key] = self._sides(key, old, new, "from", "to")
        for key, old, new in later:
            changed[key] = self._sides(key, old, new, "from", "to")
        summary = "; ".join(
            f"{key}: {c['from']} ({c['fromSource']}) -> {c['to']} ({c['toSource']})" for key, c in changed.items()
        )
        self.events.emit("config.reloaded", summary=summary or "nothing changed", changed=changed,
                         refused=refused or None)
        for key, _, new in later:
            self.apply[key](new)  # checked by the option's type already
            self.running[key] = new
        if self.report is not None:
            self.report.applied(changed, self.running)
        return {"changed": sorted(changed), "refused": refused}

    def _sides(self, key: str, old: Any, new: Any, was: str, now: str) -> dict[str, Any]:
        """The value a key runs with and the one the file now resolves to, each in effect (a
        key set nowhere shows its default, not "(default)") and with where it comes from:
        ``{from, fromSource, to, toSource}`` (``was`` and ``now`` name the pair)."""
        entry = self.report.keys.get(key, {}) if self.report is not None else {}
        origins = self.report.origins if self.report is not None else {}
        running = old if old is not None else entry.get("value")  # what the daemon chose, if it did
        return {
            was: self._text(running if running is not None else entry.get("default")),
            f"{was}Source": entry.get("source", "?"),
            now: self._text(new if new is not None else self._default(key, entry)),
            f"{now}Source": origins.get(key, "default"),
        }

    def _default(self, key: str, entry: dict[str, Any]) -> Any:
        if key == "log_format":  # what "auto" is on this daemon's stream
            return self.events.resolve_format("auto")
        return entry.get("default")

    def _text(self, value: Any) -> Any:
        if value is None:
            return "not set"
        shown = value if isinstance(value, (bool, int, float)) else str(value)
        return self.mask(shown) if isinstance(shown, str) else shown


def _shows_more(key: str, old: Any, new: Any) -> bool:
    """A log level that prints more than the old one (``warning`` to ``info``)."""
    return key == "log_level" and RANK[new or "info"] < RANK[old or "info"]


def log_appliers(events: EventLog, worker_env: dict[str, str]) -> dict[str, Callable[[Any], None]]:
    """The log settings: this process now, and workers started from now on (running workers
    keep theirs until they are replaced)."""

    def level(value: Any) -> None:
        events.set_level(value or "info")
        set_logging_level(events.level)
        worker_env["CRONWHEEL_LOG_LEVEL"] = events.level

    def fmt(value: Any) -> None:
        events.set_format(value or "auto")
        worker_env["CRONWHEEL_LOG_FORMAT"] = events.fmt

    return {"log_level": level, "log_format": fmt}


def live_appliers(events: EventLog, node: Node, auth: Authenticator, guard: ConnectionGuard) -> dict[str, Any]:
    """How each key that may change on SIGHUP is put in place (daemon/reload.py)."""
    pool_env = node.pool.env if node.pool is not None else {}

    def http_allow(value: Any) -> None:
        auth.http_allow = parse_http_allow(value)

    def trusted_proxies(value: Any) -> None:
        # new connections are judged by the new list; an open one stays counted as it was
        guard.proxies = parse_trusted_proxies(value)

    def retention(value: Any) -> None:
        node.config.retention_ms = retention_options(value or "30d", None)["retention_ms"]

    def number(key: str) -> Any:  # a key of NodeConfig's, back to its default when unset
        return lambda value: setattr(node.config, key, value or getattr(NodeConfig, key))

    def wrap(fn: Any) -> Any:
        def apply(value: Any) -> None:
            try:
                fn(value)
            except DaemonError as exc:
                raise ValueError(str(exc)) from None
        return apply

    return {
        **log_appliers(events, pool_env), "http_allow": wrap(http_allow), "retention": wrap(retention),
        "trusted_proxies": wrap(trusted_proxies),
        **{key: number(key) for key in ("keep_last", "dlq_keep_last", "retention_interval_ms")},
    }
