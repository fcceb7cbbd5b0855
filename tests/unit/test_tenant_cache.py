"""What a node holds of the tenants after a read of the store that may have begun before some
of its own writes (core.tenants.with_writes_since): the read, except for the tenants written
since, held as written. Pure."""

from __future__ import annotations

from cronwheel.core.tenants import Tenant, with_writes_since


def _weights(tenants: list[Tenant]) -> dict[str, int]:
    return {t.name: t.weight for t in tenants}


def test_a_read_keeps_what_was_written_after_it_began_and_brings_the_rest() -> None:
    held = {"acme": Tenant("acme", weight=3), "made": Tenant("made", weight=7), "old": Tenant("old")}
    read = [Tenant("acme", weight=1), Tenant("globex", weight=5), Tenant("old", weight=2)]
    # acme updated (write 4) and made created (write 5) after the read began at 3; old at 2, before
    merged = with_writes_since(read, held, {"acme": 4, "made": 5, "old": 2}, read_at=3)
    assert _weights(merged) == {"acme": 3, "made": 7, "globex": 5, "old": 2}


def test_a_read_after_every_write_is_taken_as_it_is() -> None:
    read = [Tenant("acme", weight=1)]
    assert with_writes_since(read, {"acme": Tenant("acme", weight=9), "gone": Tenant("gone")},
                             {"acme": 4, "gone": 1}, read_at=4) == read  # fmt: skip
