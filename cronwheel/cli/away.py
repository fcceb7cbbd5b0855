"""A daemon away for a moment (a restart: nothing listens; a stop's last moments or a store
failover: 503), waited out by the commands that outlive one: ``logs -f`` (for as long as it
takes, as ``tail -F``), ``run --wait`` and ``ping`` (scripts: up to ``AWAY_LIMIT_SEC``). When
they try again and speak is ``core.absence``; the words and the waiting are here."""

from __future__ import annotations

import time

from cronwheel.cli import render
from cronwheel.cli.client import ApiError, DaemonUnreachable
from cronwheel.core.absence import Absence

#: how long a script's command bears with a daemon that does not answer before it gives up (exit 69)
AWAY_LIMIT_SEC = 60.0


def is_away(exc: Exception) -> bool:
    """The daemon is away, not refusing: nothing answers (or it hung up mid-answer), or it
    answers 503 (stopping, or its store is unavailable). Asking again later is the answer."""
    return isinstance(exc, DaemonUnreachable) or (isinstance(exc, ApiError) and exc.status == 503)


class Away:
    """Whether to try again after a call found no daemon (``bear``), saying so once and, for a
    follower (``limit_sec`` None), now and then after; ``doing``: what the command does
    meanwhile."""

    def __init__(self, doing: str, limit_sec: float | None = AWAY_LIMIT_SEC) -> None:
        self.doing = doing
        self._absence = Absence(limit_sec)
        self.retry_in = 0.0  #: how long a caller without a pace of its own waits before trying again

    def bear(self, problem: str) -> bool:
        """True: try again; False: the limit has passed, give up."""
        step = self._absence.failed(time.monotonic())
        self.retry_in = step.retry_in
        if step.say == "away":
            limit = self._absence.limit_sec
            render.emit_note(f"{problem}; {self.doing} " + (f"for up to {limit:g} s (a restart?)" if limit is not None else "(Ctrl-C stops)"))
        elif step.say == "still":
            render.emit_note(f"still waiting for the daemon, away for {render.fmt_lag(round(step.away_sec * 1000))}: {problem}")
        return not step.give_up

    def wait(self, problem: str) -> None:
        """A follower's turn: ``bear`` (it never gives up), then wait a little longer each time,
        up to 2 s, before the next try."""
        self.bear(problem)
        time.sleep(self.retry_in)

    def over(self) -> None:
        """The daemon answered: a later absence gets its own notice and allowance."""
        away = self._absence.back(time.monotonic())
        if away is not None:
            render.emit_note(f"the daemon is back after {render.fmt_lag(round(away * 1000))}")
