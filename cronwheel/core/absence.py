"""A daemon that is away, borne by the commands that outlive one: when they try again, when
they say so, when they give up. Pure: the caller passes the time (seconds, any monotonic
origin), does the waiting and says the words.

``logs -f`` follows as ``tail -F`` does: it waits for the daemon however long it is away
(a restart, a stop for an upgrade), says so at once, then again after a minute, two, four…
up to once an hour, so a terminal left overnight is not filled with reminders. ``run --wait``
and ``ping`` are for scripts: they give up after a limit (exit 69), as a script must not hang
on a daemon that is gone for good.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRY_FIRST_SEC = 0.25  #: the first try again: a stop's last moments and a start take about that
RETRY_MAX_SEC = 2.0  #: then twice as long each time, up to this: back within 2 s of the daemon
REMIND_FIRST_SEC = 60.0  #: the first reminder that it is still away…
REMIND_MAX_SEC = 3600.0  #: …then after twice as long each time, up to once an hour


@dataclass(frozen=True)
class Step:
    """What to do after a call found no daemon."""

    say: str | None  #: "away" (the first failure of this absence), "still" (a reminder), or None
    give_up: bool  #: the limit has passed: the command ends (exit 69)
    retry_in: float  #: seconds to wait before the next try
    away_sec: float  #: how long the daemon has been away, from the first failure


class Absence:
    """The daemon's absences as one command sees them, one at a time: ``failed`` after each
    call that found no daemon, ``back`` after one that reached it."""

    def __init__(self, limit_sec: float | None = None) -> None:
        self.limit_sec = limit_sec  #: give up after this long away (None: never)
        self._since: float | None = None
        self._retry = RETRY_FIRST_SEC
        self._remind_at = 0.0
        self._remind_every = REMIND_FIRST_SEC

    @property
    def away(self) -> bool:
        return self._since is not None

    def failed(self, now: float) -> Step:
        if self._since is None:
            self._since = now
            self._retry = RETRY_FIRST_SEC
            self._remind_every = REMIND_FIRST_SEC
            self._remind_at = now + self._remind_every
            return Step("away", False, self._retry, 0.0)
        away = now - self._since
        if self.limit_sec is not None and away > self.limit_sec:
            return Step(None, True, 0.0, away)
        self._retry = min(self._retry * 2, RETRY_MAX_SEC)
        say = None
        if self.limit_sec is None and now >= self._remind_at:
            say = "still"
            self._remind_every = min(self._remind_every * 2, REMIND_MAX_SEC)
            self._remind_at = now + self._remind_every
        return Step(say, False, self._retry, away)

    def back(self, now: float) -> float | None:
        """The daemon answered: how long it was away (None: it was not); a later absence is
        a new one, with its own notice, retries and limit."""
        if self._since is None:
            return None
        away = now - self._since
        self._since = None
        return away
