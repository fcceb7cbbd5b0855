"""The one source of time. Pure code takes time as an argument; the shells take a Clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time, ms since the epoch (UTC). Used for schedules and stored times."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back. Used for local trust windows and timeouts."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to: for tests of pure logic, no sleeping."""

    def __init__(self, now_ms: int = 1_767_225_600_000) -> None:  # 2026-01-01T00:00:00Z
        self._now = now_ms
        self._mono = 1000.0

    def now_ms(self) -> int:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a fake clock only moves forward; use set() for a wall-clock jump")
        self._now += ms
        self._mono += ms / 1000

    def set(self, now_ms: int) -> None:
        """Jump the wall clock (either way); the monotonic clock is unaffected."""
        self._now = now_ms


class StepDetector:
    """Notices the wall clock stepping (an NTP step, a VM resumed, an operator's ``date -s``):
    between two observations the wall clock moved by more or less than the monotonic clock.

    ``observe(wall_ms, mono_s)`` returns the step in ms (positive: the wall clock jumped
    forward; negative: back) when it exceeds ``tolerance_ms``, else 0. A loop that observes
    every turn sees each step once, on the turn after it happened."""

    def __init__(self, tolerance_ms: int = 2_000) -> None:
        self.tolerance_ms = tolerance_ms
        self._last: tuple[int, float] | None = None

    @classmethod
    def since(cls, clock: Clock) -> StepDetector:
        """One that has observed ``clock`` now: a loop whose wheel was built on this instant
        sees a step taken before its first turn (a cluster node's clock moved onto the
        database's at its start, ``StoreAlignedClock``), and rebuilds the wheel for it."""
        detector = cls()
        detector.observe(clock.now_ms(), clock.monotonic())
        return detector

    def observe(self, wall_ms: int, mono_s: float) -> int:
        last, self._last = self._last, (wall_ms, mono_s)
        if last is None:
            return 0
        step = (wall_ms - last[0]) - round((mono_s - last[1]) * 1000)
        return step if abs(step) > self.tolerance_ms else 0


class ReapCutoff:
    """Which leases the reaper may take back now. A lease that ran out is the reaper's, unless
    it ran out while the node could not hear its holder's heartbeats: the node stopped or
    starved of CPU (SIGSTOP, swap, a VM paused), the store refusing the renewals (an outage,
    a failover), the wall clock stepping forward under the stored instants. After such a deaf
    spell, for ``pause_sec``, only leases that ran out before it began are taken back: a live
    holder beats every leaseSec / 3, so each lease up to 3 × ``pause_sec`` is renewed first.

    ``deaf(since_ms, mono_s)``: the node could not hear heartbeats from ``since_ms`` (wall
    clock) until now; ``cutoff(now_ms, mono_s)``: leases that ran out before it may go."""

    def __init__(self, pause_sec: float) -> None:
        self.pause_sec = pause_sec
        self._since_ms = 0
        self._until = float("-inf")  #: monotonic: the pause's end

    def deaf(self, since_ms: int, mono_s: float) -> None:
        in_pause = mono_s < self._until
        self._since_ms = min(self._since_ms, since_ms) if in_pause else since_ms
        self._until = mono_s + self.pause_sec

    def cutoff(self, now_ms: int, mono_s: float) -> int:
        return min(now_ms, self._since_ms) if mono_s < self._until else now_ms


#: a cluster node's clock is moved onto the database's when they differ by more than this
SKEW_TOLERANCE_MS = 500


class StoreAlignedClock:
    """A cluster node's clock: the local clock moved onto the shared database's.

    Nodes of one cluster compare each other's instants: one node's execution lease
    (``lease_until``, written with its clock) is reaped by another's reaper, by *its* clock;
    the ready queue one node fills is drained by any node, when ``available_at`` has come by
    the drainer's clock. A node whose clock ran 30 s ahead reaped the live runs of every other
    node (killed and ran again) and started their queued runs early; one 30 s behind had its
    own runs reaped. So in a cluster the wall clock is the database's: every membership turn
    reads it (``align``), and ``now_ms`` is the local clock plus the measured offset. An offset
    within ``tolerance_ms`` of the current one is left alone (so round-trip jitter does not
    move the clock back and forth), and one within ``tolerance_ms`` of zero is zero (a node
    kept in sync by NTP is not moved at all). The monotonic clock is the local one."""

    def __init__(self, base: Clock, tolerance_ms: int = SKEW_TOLERANCE_MS) -> None:
        self.base = base
        self.tolerance_ms = tolerance_ms
        self.offset_ms = 0

    def now_ms(self) -> int:
        return self.base.now_ms() + self.offset_ms

    def monotonic(self) -> float:
        return self.base.monotonic()

    def align(self, store_ms: int, sent_ms: int, answered_ms: int) -> int | None:
        """The database said ``store_ms`` during a call sent at ``sent_ms`` and answered at
        ``answered_ms`` (both the *local* clock: ``base.now_ms()``). Returns the new offset
        when it changed, else None. A call that took longer than the tolerance tells too
        little (the reading could be anywhere in it) and is not used."""
        if answered_ms - sent_ms > self.tolerance_ms:
            return None
        skew = store_ms - (sent_ms + answered_ms) // 2
        if abs(skew - self.offset_ms) <= self.tolerance_ms:
            return None
        self.offset_ms = skew if abs(skew) > self.tolerance_ms else 0
        return self.offset_ms
