"""Dead-man's windows in a cluster, with real daemons on the test PostgreSQL: a window is
checked by the node that holds its job's bucket; when that node is killed (SIGKILL), the
node that takes the bucket over goes on firing `missed`, and no deadline is ever told twice
(the re-arm is a compare-and-set and the notification's id is unique)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from cronwheel.core.ids import bucket_of
from tests.support.daemon import Daemon
from tests.support.receiver import WebhookReceiver
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres

SECRET = "s3cret-for-the-hmac-signature"
LEASE_MS = 1500


def owner_of(dsn: str, bucket: int) -> str | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            """SELECT owner FROM bucket_leases WHERE bucket_id = %s
               AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint""", (bucket,)
        ).fetchone()
    return None if row is None else row[0]


def balanced(dsn: str) -> bool:
    held = Counter(owner_of(dsn, b) for b in range(64))
    return set(held) == {"n1", "n2"} and min(held.values()) >= 31


def missed_by(node: Daemon, job_id: str) -> list[dict[str, Any]]:
    return [e for e in node.events("window.missed") if e["jobId"] == job_id]


def test_windows_fail_over_with_their_buckets(make_daemon: Callable[..., Daemon], postgres_dsn: str) -> None:
    with WebhookReceiver(SECRET) as rx:
        args = ("--store", postgres_dsn, "--bucket-lease-ms", str(LEASE_MS))
        nodes = {name: make_daemon(name, args=(*args, "--node-id", name)) for name in ("n1", "n2")}
        wait_for(lambda: balanced(postgres_dsn), 20, interval=0.1, what="the 64 buckets balanced over both nodes")
        r = nodes["n1"].post("/v1/jobs", {"name": "watched", "expectSuccessWithin": "2s",
                                          "notify": [{"on": "missed", "via": "webhook", "url": rx.url, "secret": SECRET}]})  # fmt: skip
        assert r.status == 201, r
        job_id = r.json()["jobId"]
        # a lease can lapse for a moment between renewals on a loaded machine: ask until held
        holder = wait_for(lambda: owner_of(postgres_dsn, bucket_of(job_id)), 10, what="the job's bucket held")
        assert holder in nodes
        other = next(n for n in nodes if n != holder)
        wait_for(lambda: missed_by(nodes[holder], job_id), 20, what="the holder to fire missed")
        assert missed_by(nodes[other], job_id) == []  # not its bucket

        nodes[holder].kill()
        wait_for(lambda: owner_of(postgres_dsn, bucket_of(job_id)) == other, 20, what="the bucket to move")
        wait_for(lambda: missed_by(nodes[other], job_id), 20, what="the new holder to fire missed")
        deadlines = Counter(e["deadlineAt"] for n in nodes.values() for e in missed_by(n, job_id))
        assert deadlines and max(deadlines.values()) == 1, deadlines  # each deadline told once
        wait_for(lambda: len(rx.unique()) >= len(deadlines), 30, what="every missed delivered")
        assert all(d.signed and d.event == "missed" for ds in rx.unique().values() for d in ds)
        subjects = Counter(ds[0].body["deadline"] for ds in rx.unique().values())
        assert max(subjects.values()) == 1
