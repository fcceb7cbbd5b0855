"""How early a herd is claimed (core.claimlead): pure arithmetic, no clock."""

from __future__ import annotations

from cronwheel.core.claimlead import MIN_EXTRA_MS, SAFETY, ClaimLead

T = 1_767_225_600_000  # a whole second


def test_ordinary_seconds_keep_the_base_lead() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    lead.reset([(T, 100), (T + 1000, 5)])
    assert lead.lead_for(T) == 2000
    assert lead.lead_for(T + 1000) == 2000
    assert lead.lead_for(T + 7000) == 2000  # nothing due then
    assert lead.ahead_at(T - 2000) == 2000


def test_a_herd_second_is_claimed_early_enough_for_its_size() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    lead.reset([(T + 250, 60_000), (T + 900, 40_000)])  # every millisecond of the second counts for it
    expected = 2000 + int(100_000 / 20_000 * 1000 * SAFETY)  # 5 s of claiming, 1.5 x
    assert lead.lead_for(T) == expected == 9500
    assert lead.lead_for(T + 999) == expected
    assert lead.lead_for(T + 1000) == 2000  # the next second is not the herd


def test_the_lead_is_capped_and_follows_the_measured_rate() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    lead.reset([(T, 10_000_000)])
    assert lead.lead_for(T) == 30_000
    slow = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    slow.reset([(T, 50_000)])
    before = slow.lead_for(T)
    for _ in range(10):
        slow.measured(jobs=5000, seconds=1.0)  # this store claims 5,000/s
    assert slow.rate < 6000
    assert slow.lead_for(T) > before
    slow.measured(jobs=10, seconds=1.0)  # a tiny claim says nothing about the rate
    assert slow.rate < 6000 and slow.rate > 5000


def test_a_second_just_over_the_threshold_is_a_herd_and_just_under_is_not() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=1000)
    per_ms = 1000 / 1000 * SAFETY  # extra ms per job at 1,000 claims/s
    under = int(MIN_EXTRA_MS / per_ms) - 1
    lead.reset([(T, under), (T + 1000, under + 2)])
    assert lead.lead_for(T) == 2000
    assert lead.lead_for(T + 1000) > 2000 + MIN_EXTRA_MS - 1


def test_ahead_reaches_to_the_end_of_a_herd_second_once_its_lead_began() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    lead.reset([(T + 10_000, 100_000)])  # lead 9.5 s: claiming starts at T + 500
    assert lead.ahead_at(T) == 2000  # not yet
    assert lead.ahead_at(T + 500) == 10_999 - 500  # the whole herd second, from its first ms
    assert lead.ahead_at(T + 9000) == 2000  # the base lead covers the rest of it by then
    assert lead.ahead_at(T + 11_000) == 2000  # the herd second is past


def test_jobs_added_after_a_load_count_and_claim_ahead_off_means_no_lead() -> None:
    lead = ClaimLead(base_ms=2000, cap_ms=30_000, rate=20_000)
    for _ in range(50_000):
        lead.add(T)
    assert lead.lead_for(T) > 2000
    off = ClaimLead(base_ms=0, cap_ms=30_000)
    off.reset([(T, 1_000_000)])
    assert off.lead_for(T) == 0
    assert off.ahead_at(T - 5000) == 0
