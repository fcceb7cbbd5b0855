"""The keys ``serve`` refuses together (core/config.py ``combination_problems``): pure, each
value with where it came from, for the message to name."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.core.config import combination_problems

PG = "postgresql://cw@db1,db2/cw?target_session_attrs=read-write"


def _problems(cpus: int = 2, **values: Any) -> dict[str, str]:
    return dict(combination_problems(values, lambda key: f"<{key}>", cpus))


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"store": PG},  # cluster mode comes with the shared store
        {"store": PG, "cluster": True},
        {"store": "/var/lib/cronwheel/x.db", "cluster": False},
        {"cluster": True},
        {"workers": 1, "slots": 4, "reserved_high_slots": 3},
        {"workers": 0, "reserved_high_slots": 5},  # no local workers: nothing to reserve from
        {"smtp_url": "smtp://relay"},
        {"sendmail": "/usr/sbin/sendmail"},
    ],
)
def test_what_goes_together(values: dict[str, Any]) -> None:
    assert _problems(**values) == {}


@pytest.mark.parametrize("store", [PG, "postgres://cw@db/cw"])
def test_a_shared_store_needs_cluster_mode(store: str) -> None:
    said = _problems(store=store, cluster=False)["cluster"]
    assert said.startswith("false cannot go with a PostgreSQL store (store from <store>)"), said


def test_a_reserve_of_every_slot_names_workers_and_slots() -> None:
    said = _problems(workers=2, slots=3, reserved_high_slots=6)["reserved_high_slots"]
    assert said.startswith("6 slots reserved for the high priority tier leave none for default and batch work"), said
    assert "the node has 6 (workers = 2 from <workers>, slots = 3 from <slots>); reserve fewer than 6" in said
    # unset: the number of CPUs, and 16 slots each
    assert "the node has 48 (workers = 3" in _problems(cpus=3, reserved_high_slots=48)["reserved_high_slots"]
    assert _problems(cpus=3, reserved_high_slots=47) == {}


def test_one_mail_transport() -> None:
    said = _problems(smtp_url="smtp://relay", sendmail="/usr/sbin/sendmail")["sendmail"]
    assert said == "set as well as smtp_url (from <smtp_url>): email goes out one way, not both; remove one of them"
