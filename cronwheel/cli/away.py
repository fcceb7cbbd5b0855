"""A daemon away for a moment (a restart: nothing listens; a store failover: 503), waited out
by the commands that scripts leave running across one: ``run --wait`` and ``ping``."""

from __future__ import annotations

import time

from cronwheel.cli import render

#: how long a command bears with a daemon that does not answer before it gives up (exit 69)
AWAY_LIMIT_SEC = 60.0


class Away:
    """Whether to try again after a call found no daemon: yes, for up to ``AWAY_LIMIT_SEC``
    from the first such failure, saying so once (``doing``: what the command does meanwhile)."""

    def __init__(self, doing: str) -> None:
        self.doing = doing
        self._since: float | None = None

    def bear(self, problem: str) -> bool:
        now = time.monotonic()
        if self._since is None:
            render.emit_note(f"{problem}; {self.doing} for up to {AWAY_LIMIT_SEC:g} s (a restart?)")
            self._since = now
            return True
        return now - self._since <= AWAY_LIMIT_SEC

    def over(self) -> None:
        """The daemon answered: a later absence gets its own allowance."""
        self._since = None
