"""Keys waiting for instants, held a group per instant on a ``TimingWheel``: pure and clock-free
like the wheel itself (time is the caller's argument)."""

from __future__ import annotations

from typing import Generic

from cronwheel.core.wheel import K, TimingWheel

__all__ = ["InstantGroups"]


class InstantGroups(Generic[K]):
    """Keys waiting for instants, the keys of one instant held together: a ``TimingWheel``
    entry per distinct instant, not per key. Add, length and firing are O(1) per key.

    For waits that many keys share: the executions of a herd are claimed ahead of their second
    and wait for it together, and 100,000 executions due at one instant are one wheel entry and
    one list of ids rather than 100,000 entries of a tuple, a sequence number and two dict
    slots each. A key cannot be cancelled (the dispatcher never takes back a wait) and is not
    looked up."""

    __slots__ = ("_groups", "_len", "_wheel")

    def __init__(self, start_ms: int, tick_ms: int = 10, wheel_size: int = 64) -> None:
        self._wheel: TimingWheel[int] = TimingWheel(start_ms, tick_ms, wheel_size)
        self._groups: dict[int, list[K]] = {}  #: instant -> its keys, in the order added
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def add(self, key: K, deadline_ms: int) -> bool:
        """Hold ``key`` until ``deadline_ms``. False (nothing held) when that is already due,
        as ``TimingWheel.add``: the caller acts on it now."""
        group = self._groups.get(deadline_ms)
        if group is None:
            if not self._wheel.add(deadline_ms, deadline_ms):
                return False
            group = self._groups[deadline_ms] = []
        group.append(key)
        self._len += 1
        return True

    def advance(self, now_ms: int) -> list[K]:
        """Every key whose instant is ``<= now_ms``, removed: by instant, then in the order added."""
        fired: list[K] = []
        for instant, _ in self._wheel.advance(now_ms):
            fired += self._groups.pop(instant)
        self._len -= len(fired)
        return fired

    def next_expiry(self) -> int | None:
        """The earliest instant held (exact), or None when empty."""
        return self._wheel.next_expiry()

    def entries(self) -> list[tuple[K, int]]:
        """Every ``(key, deadline_ms)`` held, by instant (to rebuild after a clock step)."""
        return [(key, instant) for instant in sorted(self._groups) for key in self._groups[instant]]
