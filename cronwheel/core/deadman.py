"""The dead-man's switch: a job that must succeed at least once per window. Pure.

A job with ``expectSuccessWithin`` has a *deadline*: its creation (or its last success)
plus the window. The deadline is stored as an absolute instant, so it is kept whatever
happens meanwhile: the job paused, failing, cancelled by mistake, every node down. When a
watcher sees ``now >= deadline`` it fires ``missed`` once for that deadline and re-arms at
the first later multiple of the window (a job down for three windows is told once for the
downtime, then once per window while it stays down). A success moves the deadline to
``success + window`` and clears the overdue mark.

Worked example, window 24h, created at day 0 00:00::

    deadline 1d 00:00 ── success at 0d 22:00 ──▶ deadline 1d 22:00
    paused from 1d 10:00; the watcher at 1d 22:00 ──▶ missed (deadline 1d 22:00),
        overdue since 1d 22:00, re-armed at 2d 22:00
    all nodes down from 2d 20:00 to 4d 03:00; back at 4d 03:00 ──▶ missed (deadline 2d 22:00)
        once, re-armed at 4d 22:00 (not 3d 22:00: that one is already past)
    success at 4d 05:00 ──▶ deadline 5d 05:00, no longer overdue
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """A job's window state as stored: ``deadline_at`` None means no window."""

    window_ms: int
    deadline_at: int
    overdue_since: int | None = None  #: the first deadline missed since the last success


@dataclass(frozen=True, slots=True)
class Missed:
    deadline_at: int  #: the deadline that passed: with the job id, the notification's identity
    window: Window  #: the state after firing


def armed(window_ms: int, now_ms: int) -> Window:
    """A new window (the job was created, or its window set) starting now."""
    return Window(window_ms, now_ms + window_ms)


def after_success(window: Window, success_at: int) -> Window:
    """A success restarts the window from its own instant (an older success changes nothing)."""
    deadline = max(window.deadline_at, success_at + window.window_ms) if window.overdue_since is None else success_at + window.window_ms
    return Window(window.window_ms, deadline, None)


def check(window: Window, now_ms: int) -> Missed | None:
    """``missed`` if the deadline has come, with the re-armed window; else None."""
    if now_ms < window.deadline_at:
        return None
    periods = (now_ms - window.deadline_at) // window.window_ms + 1
    nxt = window.deadline_at + periods * window.window_ms
    since = window.overdue_since if window.overdue_since is not None else window.deadline_at
    return Missed(window.deadline_at, Window(window.window_ms, nxt, since))


def overdue(window: Window | None, now_ms: int) -> bool:
    """Overdue: a deadline passed with no success since (fired or about to be)."""
    return window is not None and (window.overdue_since is not None or now_ms >= window.deadline_at)
