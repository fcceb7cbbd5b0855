from collections import Counter

from cronwheel.core.ids import (
    N_BUCKETS,
    bucket_of,
    execution_id,
    new_job_id,
    parse_execution_id,
    stable_hash,
)


def test_execution_id_is_deterministic_and_reversible():
    assert execution_id("jabc", 1700000000000) == execution_id("jabc", 1700000000000)
    assert execution_id("jabc", 1) != execution_id("jabc", 2)
    assert parse_execution_id(execution_id("jabc", 1700000000000)) == ("jabc", 1700000000000)


def test_stable_hash_is_fixed_across_processes():
    # a pinned value: if this changes, every H schedule and bucket assignment moves
    assert stable_hash("job-1") == 0x1E636A65307B56B


def test_job_ids_unique_and_buckets_spread():
    ids = {new_job_id() for _ in range(20_000)}
    assert len(ids) == 20_000
    counts = Counter(bucket_of(i) for i in ids)
    assert set(counts) == set(range(N_BUCKETS))
    expected = 20_000 / N_BUCKETS
    assert all(abs(c - expected) < expected * 0.35 for c in counts.values())


def test_a_worker_id_is_the_node_s_only_when_the_whole_rest_is_an_incarnation_and_a_worker() -> None:
    from cronwheel.core.ids import incarnation_of

    assert incarnation_of("n-bf00d1-w0-0", "n") == "bf00d1"
    assert incarnation_of("n-bf00d1-w12-3", "n") == "bf00d1"
    assert incarnation_of("n-2-bf00d1-w0-0", "n") is None  # node n-2's
    assert incarnation_of("n-2-bf00d1-w0-0", "n-2") == "bf00d1"
    assert incarnation_of("web-b-0a1b2c-w1-0", "web") is None
    assert incarnation_of("remote-worker-1", "remote") is None
    assert incarnation_of("n-bf00d1-w0-0-x", "n") is None
    assert incarnation_of("nn-bf00d1-w0-0", "n") is None
