"""engine.cluster.Holdings: a bucket is scheduled only inside its term's trust window
(``t0 + ttl − margin`` on the monotonic clock, t0 read before the acquire was sent), and
every claim carries the epochs it was granted as its fence."""

from __future__ import annotations

from cronwheel.engine.cluster import Holdings


def test_a_bucket_is_owned_only_inside_its_trust_window() -> None:
    h = Holdings("n1", ttl_ms=1500, margin_ms=300)
    new, changed = h.granted(100.0, [(3, 1, 999), (5, 2, 999)])
    assert new == [3, 5] and changed == []
    assert h.owned(100.0) == ([3, 5], ("n1", {3: 1, 5: 2}))
    assert h.owned(101.19) == ([3, 5], ("n1", {3: 1, 5: 2}))
    assert h.owned(101.2) == ([], ("n1", {}))  # 1.5 s − 0.3 s after t0: step down


def test_a_renewal_extends_the_window_and_a_new_epoch_is_a_changed_term() -> None:
    h = Holdings("n1", ttl_ms=1500, margin_ms=300)
    h.granted(100.0, [(3, 1, 0)])
    assert h.granted(100.5, [(3, 1, 0)]) == ([], [])
    assert h.owned(101.6)[0] == [3]
    assert h.granted(101.0, [(3, 2, 0)]) == ([], [3])
    assert h.owned(101.0)[1] == ("n1", {3: 2})


def test_expired_terms_are_forgotten_and_dropped_ones_fence_nothing() -> None:
    h = Holdings("n1", ttl_ms=1000, margin_ms=200)
    h.granted(0.0, [(1, 1, 0), (2, 1, 0)])
    h.granted(0.5, [(2, 1, 0)])
    assert h.expired(0.9) == [1]
    assert h.owned(0.9) == ([2], ("n1", {2: 1}))
    assert h.drop([2, 7]) == [2]
    assert h.owned(0.9) == ([], ("n1", {}))


def test_the_default_margin_is_a_fifth_of_the_ttl() -> None:
    assert Holdings("n", 10_000).margin_ms == 2_000
    assert Holdings("n", 300).margin_ms == 100
