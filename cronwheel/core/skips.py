"""Why a tick was not run as scheduled: the structured reasons a claim records, and their text.

A claim records a reason on every SKIPPED execution (and on a catch-up run). The stores store
the text; the metrics read it back from the ``execution.skipped`` event. Both directions live
here, so the wording and its reading cannot drift apart: :class:`SkipReason` renders the text
the stores have always written, :func:`kind_of` and :func:`ticks_of` read a stored text back
into a bounded kind and a tick count. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from cronwheel.core.instants import format_instant


class SkipKind(Enum):
    """What kept a tick from running; the value is the first word of the stored text."""

    OVERLAP = "overlap"
    MISFIRE = "misfire"
    CALENDAR = "calendar"
    BACKLOG = "backlog"  #: the job had ``MAX_WAITING_RUNS`` overdue runs waiting to start
    OTHER = "other"  #: a text written by something else (or none): never rendered here


@dataclass(frozen=True, slots=True)
class SkipReason:
    """One SKIPPED record's reason.

    ``OVERLAP``: ``other`` is the execution that kept the tick from running (still running,
    or the newer tick that replaced it; ``replaced`` says which). ``MISFIRE``: the record
    stands for ``count`` missed ticks from ``first`` to ``last`` (``exact`` False: at least
    that many). ``BACKLOG``: the job had ``count`` overdue runs waiting to start; the record
    stands for ``ticks`` ticks from ``first`` to ``last``.
    ``CALENDAR`` reasons are worded by ``core.calendar`` and only read here.
    """

    kind: SkipKind
    count: int = 1
    exact: bool = True
    first: int | None = None
    last: int | None = None
    other: str | None = None
    replaced: bool = False
    ticks: int = 1

    @classmethod
    def still_running(cls, blocker: str) -> SkipReason:
        return cls(SkipKind.OVERLAP, other=blocker)

    @classmethod
    def replaced_by(cls, newest: str) -> SkipReason:
        return cls(SkipKind.OVERLAP, other=newest, replaced=True)

    @classmethod
    def misfire(cls, count: int, first: int, last: int, exact: bool = True) -> SkipReason:
        return cls(SkipKind.MISFIRE, count, exact, first, last)

    @classmethod
    def backlog(cls, waiting: int, ticks: int = 1, first: int | None = None, last: int | None = None,
                exact: bool = True) -> SkipReason:  # fmt: skip
        return cls(SkipKind.BACKLOG, waiting, exact, first, last, ticks=ticks)

    @property
    def text(self) -> str:
        """The stored wording (unchanged since the stores wrote it themselves)."""
        if self.kind is SkipKind.OVERLAP:
            if self.replaced:
                return f"overlap: replaced by {self.other}"
            return f"overlap: {self.other} still running"
        if self.kind is SkipKind.MISFIRE:
            assert self.first is not None and self.last is not None
            first = format_instant(self.first)
            if self.count == 1:
                return f"misfire: 1 tick skipped at {first}"
            return f"misfire: {_bound(self.exact)}{self.count} ticks skipped from {first} to {format_instant(self.last)}"
        if self.kind is SkipKind.BACKLOG:
            held = f"backlog: {self.count} runs of this job are overdue and waiting to start"
            if self.ticks == 1:
                return held
            assert self.first is not None and self.last is not None
            return (f"{held}; {_bound(self.exact)}{self.ticks} ticks skipped from {format_instant(self.first)} "
                    f"to {format_instant(self.last)}")  # fmt: skip
        raise ValueError(f"a {self.kind.value} reason is not worded here")


def catch_up_text(missed: int, exact: bool, runs: int) -> str:
    """The reason of a catch-up run: one run standing for ``missed`` ticks (when the missed
    ticks collapsed into ``runs`` == 1 run), else a tick run late after an outage."""
    if missed and runs == 1:
        ticks = "tick" if missed == 1 else "ticks"
        return f"catch-up: one run for {_bound(exact)}{missed} missed {ticks} before it"
    return "catch-up: a tick run late, missed while no scheduler could claim it"


def _bound(exact: bool) -> str:
    return "" if exact else "at least "


_KINDS = {k.value: k for k in SkipKind if k is not SkipKind.OTHER}
_TICKS = re.compile(r"(\d+) ticks skipped")


def kind_of(text: str | None) -> SkipKind:
    """The kind of a stored reason text (OTHER for a text this module did not word)."""
    head = (text or "").split(":", 1)[0].strip().lower()
    return _KINDS.get(head, SkipKind.OTHER)


def ticks_of(text: str | None) -> int:
    """How many ticks one stored SKIPPED record stands for (a misfire or backlog record may
    cover several)."""
    m = _TICKS.search(text or "")
    return int(m.group(1)) if m else 1
