"""How early to claim a herd: the claim lead per due second. Pure: no clock, no I/O.

Claim-ahead (``claim_ahead_ms``, 2 s by default) hides the claim transaction's latency from
the dispatch lag of ordinary ticks. A herd (100,000 jobs due in the same second) takes the
store several seconds to claim, so with a fixed lead its tail is claimed *after* its tick:
those executions start late, and a ``high`` job that happens to sit in the last claim batch
waits behind the claim, whatever its tier. Executions claimed early wait in the dispatcher's
delay wheel until due, where the tiers order them, so the fix is to claim a big second
early enough that the whole of it is claimed before it is due.

``ClaimLead`` keeps, for each second of the horizon, how many job ticks fall in it (the
scheduler feeds it from its horizon load and from jobs scheduled since), and answers the lead
for a second: the base lead, plus the time the claim needs for that many jobs at the
measured claim rate, times a safety factor, capped. Seconds whose extra lead would be small
are not herds and keep the base lead, so ordinary jobs are not claimed earlier than before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["ClaimLead"]

#: the rate assumed before any claim was measured (claims/s; SQLite on a small machine does more)
DEFAULT_CLAIM_RATE = 20_000.0
#: claim this many times the expected claim time ahead (the rate varies with load)
SAFETY = 1.5
#: an extra lead below this is not worth claiming early for
MIN_EXTRA_MS = 500


class ClaimLead:
    def __init__(self, base_ms: int, cap_ms: int, rate: float = DEFAULT_CLAIM_RATE) -> None:
        self.base_ms = base_ms
        self.cap_ms = max(cap_ms, base_ms)
        self.rate = rate  #: claims per second, a moving average of measured claims
        self._per_second: Counter[int] = Counter()  # second (ms // 1000) -> ticks due in it

    def reset(self, due: Iterable[tuple[int, int]]) -> None:
        """The horizon was reloaded: these are all its due instants, each with how many jobs
        are due then (seconds that have passed drop out here, every reload)."""
        per_second: Counter[int] = Counter()
        for due_ms, jobs in due:
            per_second[due_ms // 1000] += jobs
        self._per_second = per_second

    def add(self, due_ms: int) -> None:
        self._per_second[due_ms // 1000] += 1

    def measured(self, jobs: int, seconds: float) -> None:
        """A claim of ``jobs`` took ``seconds``: fold it into the rate (small claims say
        little about the rate of a big one, so they are ignored)."""
        if jobs >= 1000 and seconds > 0:
            self.rate = 0.7 * self.rate + 0.3 * (jobs / seconds)

    def _extra_ms(self, count: int) -> int:
        """The extra lead a second with ``count`` ticks needs (0: not a herd)."""
        extra = int(count / max(self.rate, 1.0) * 1000 * SAFETY)
        return extra if extra >= MIN_EXTRA_MS else 0

    def lead_for(self, due_ms: int) -> int:
        """How long before ``due_ms`` a job due then should be claimed."""
        if self.base_ms <= 0:
            return 0
        return min(self.cap_ms, self.base_ms + self._extra_ms(self._per_second.get(due_ms // 1000, 0)))

    def ahead_at(self, now_ms: int) -> int:
        """The ``ahead_ms`` for a claim at ``now_ms``: the base lead, or far enough to take
        the whole of a herd second whose lead has begun."""
        ahead = self.base_ms
        if ahead <= 0:
            return 0
        now_s = now_ms // 1000
        for second, count in self._per_second.items():
            if second < now_s or not self._extra_ms(count):
                continue
            start = second * 1000
            if start - self.lead_for(start) <= now_ms:
                ahead = max(ahead, start + 999 - now_ms)
        return ahead
