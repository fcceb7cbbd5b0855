"""Issue #7 scenario 4: the jobs database's leader fails over, under load.

A primary with a synchronous streaming standby (tests/support/postgres.py
``replicated_pair``); two ``cronwheel serve`` nodes given both servers in one multi-host
conninfo with ``target_session_attrs=read-write``. Every-second jobs tick, and a client
keeps submitting idempotent one-off jobs (``runAt: +2s``, an ``Idempotency-Key`` each) to
both nodes and records what it was told. Mid-run the primary is stopped as a crash would
(``pg_ctl -m immediate``); the outage is held until every node has answered
``GET /v1/status`` from its cache (200, ``stale: true``), and the client has heard at least one
503 (so it lasts longer than the nodes' submission retry budget), and at least 6 s (past
the nodes' 5 s token cache: status must not need the store to authenticate); then the
standby is promoted and the nodes find it through the host list on their own (no restart).

Checked, on the promoted database:

* every acknowledged submission (201) exists there and ran (a SUCCEEDED execution): a 201 is
  sent only after a commit, and a synchronous standby holds every acknowledged commit;
* a refused submission got 503 with ``Retry-After`` only after the node retried it for its
  budget, and the client's retry with the same key afterwards gets 201 — one job per key;
* no double fire: one execution per (job, tick), and no execution's first attempt ran twice
  (the ledger file the commands append to). A run retried after a lease expiry (its
  completion was lost with the primary) is at-least-once by design, not a double fire;
* no missed tick, the outage included: the jobs set ``misfireGraceSec`` 60, so ticks less
  than 60 s late are not misfires but merely late (the default grace of an every-second job
  is 1 s: its outage ticks would collapse into one catch-up run), so every
  tick that came due while no database could be written is claimed and run once the
  standby is promoted (catch-up), and every every-second job has an execution for every
  second from its first tick to the end of the run;
* status never answered anything but 200 during the window, and stale at least once per node.

Leases are short here (``--bucket-lease-ms 1500``, and ``leaseSec`` 3 on the jobs) so that
work stranded by the outage (a start or a completion whose commit answer was lost) comes
back within seconds; every wait is a condition with a deadline. The measured figures are
printed (``-s`` shows them) and recorded in docs/scaling.md.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cronwheel.core.model import MISFIRE_GRACE_MS
from cronwheel.engine.config import SUBMIT_RETRY_MS
from cronwheel.engine.tenancy import TOKEN_CACHE_SEC
from tests.support.daemon import Daemon
from tests.support.postgres import ReplicatedPair, replicated_pair
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres

LEASE_MS = 1500
N_EVERY_SECOND = 6
SEC = 1000
DB = "cronwheel"


def sql(dsn: str, query: str, args: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        return conn.execute(query, args).fetchall()


def db_now_ms(dsn: str) -> int:
    return int(sql(dsn, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")[0][0])


@dataclass
class Answer:
    at: float  #: monotonic seconds when the request was sent
    took: float
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Submitter:
    """A client that keeps submitting idempotent one-offs, round robin over the nodes."""

    nodes: list[Daemon]
    command: str
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  #: key -> body
    acknowledged: dict[str, str] = field(default_factory=dict)  #: key -> jobId (201)
    refused: dict[str, Answer] = field(default_factory=dict)  #: key -> its 503
    unexpected: list[Any] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def first_ack_after(self, t: float) -> float | None:
        """When the first submission sent after ``t`` was acknowledged (its answer's time)."""
        return next((a.at + a.took for a in list(self.answers) if a.at >= t and a.status == 201), None)

    def submit(self, key: str, node: Daemon) -> Answer:
        t0 = time.monotonic()
        r = node.post("/v1/jobs", self.bodies[key], headers={"Idempotency-Key": key})
        return Answer(t0, time.monotonic() - t0, r.status, r.json(), r.headers)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            key = f"once-{i}"
            self.bodies[key] = {"runAt": "+2s", "command": self.command, "name": key, "leaseSec": 3}
            try:
                answer = self.submit(key, self.nodes[i % len(self.nodes)])
            except OSError as exc:  # the node itself must keep answering
                self.unexpected.append((key, repr(exc)))
                continue
            self.answers.append(answer)
            if answer.status == 201:
                self.acknowledged[key] = answer.body["jobId"]
            elif answer.status == 503:
                self.refused[key] = answer
            else:
                self.unexpected.append((key, answer.status, answer.body))
            self.stop.wait(0.1)  # pacing (~10 submissions/s), not a wait on a condition


@dataclass
class StatusPoller:
    """``GET /v1/status`` on every node, all the time: (node, monotonic time, answer)."""

    nodes: dict[str, Daemon]
    seen: list[tuple[str, float, int, dict[str, Any]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            for name, node in self.nodes.items():
                t = time.monotonic()
                try:
                    r = node.get("/v1/status")
                except OSError as exc:  # the node itself must keep answering: recorded, then checked
                    self.seen.append((name, t, -1, {"error": repr(exc)}))
                    continue
                self.seen.append((name, t, r.status, r.json() or {}))
            self.stop.wait(0.1)  # pacing

    def stale_seen(self, name: str, after: float = 0) -> bool:
        return any(n == name and at >= after and code == 200 and body.get("stale") is True
                   for n, at, code, body in list(self.seen))

    def fresh_since(self, name: str, t: float) -> float | None:
        """When ``name`` first answered a fresh status after ``t``."""
        return next((at for n, at, code, body in list(self.seen)
                     if n == name and at >= t and code == 200 and body.get("stale") is False), None)


@pytest.fixture
def pair() -> Iterator[ReplicatedPair]:
    with replicated_pair() as p:
        p.primary.sql(f"CREATE DATABASE {DB}")
        yield p


def in_thread(fn: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_the_jobs_database_fails_over_with_nothing_acknowledged_lost_and_no_double_fire(
    pair: ReplicatedPair, make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    dsn = pair.dsn(DB)  # both servers, primary first; only a writable one is taken
    promoted = pair.standby.dsn(DB)  # the checks read the promoted server itself
    ledger = tmp_path / "ledger.txt"
    cmd = f'echo "$CRONWHEEL_EXECUTION_ID $CRONWHEEL_LEASE_EPOCH $CRONWHEEL_ATTEMPT" >> {ledger}'
    names = ("n1", "n2")
    nodes = {n: make_daemon(n, args=("--store", dsn, "--node-id", n, "--bucket-lease-ms", str(LEASE_MS)))
             for n in names}
    every_second = [nodes["n1"].add_job({"schedule": "* * * * * *", "command": cmd, "name": f"every-{i}", "leaseSec": 3, "misfireGraceSec": 60})["jobId"]
                    for i in range(N_EVERY_SECOND)]

    def owners() -> Counter[str]:
        rows = sql(dsn, """SELECT owner, count(*) FROM bucket_leases WHERE owner IS NOT NULL
                           AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint GROUP BY owner""")
        return Counter({str(o): int(k) for o, k in rows})

    def balanced() -> bool:
        held = owners()
        return set(held) == set(names) and sum(held.values()) == 64

    def ticks_until(end_ms: int) -> bool:
        rows = sql(dsn, "SELECT job_id, max(scheduled_at) FROM executions WHERE job_id = ANY(%s) GROUP BY job_id",
                   (every_second,))
        return len(rows) == N_EVERY_SECOND and all(int(m) >= end_ms for _, m in rows)

    wait_for(balanced, 15, interval=0.05, what="the 64 buckets held by both nodes")
    wait_for(lambda: ticks_until(db_now_ms(dsn) - 1500), 15, interval=0.1, what="every job ticking")

    submitter = Submitter(list(nodes.values()), cmd)
    poller = StatusPoller(nodes)
    threads = [in_thread(submitter.run), in_thread(poller.run)]
    try:
        wait_for(lambda: len(submitter.acknowledged) >= 10, 15, what="submissions acknowledged before the failover")

        # ---- the primary dies
        down_at = time.monotonic()
        down_ms = db_now_ms(dsn)
        pair.primary.stop_immediate()
        # held past the nodes' token cache too: status must keep answering on tokens verified
        # before the outage (auth needs the store otherwise)
        hold = TOKEN_CACHE_SEC + 1
        wait_for(lambda: all(poller.stale_seen(n, after=down_at + hold) for n in names), hold + 15, interval=0.05,
                 what=f"every node answering status from its cache, marked stale, {hold}s into the outage")
        wait_for(lambda: submitter.refused, 15, interval=0.05, what="a submission refused with 503 after its retries")

        # ---- the standby takes over
        promote_at = time.monotonic()
        pair.standby.promote()
        promoted_at = time.monotonic()
        first_ack = wait_for(lambda: submitter.first_ack_after(promoted_at), 20, interval=0.05,
                             what="a submission acknowledged by the promoted database")
        wait_for(lambda: all(poller.fresh_since(n, promoted_at) for n in names), 20, interval=0.05,
                 what="every node answering a fresh status again")
        wait_for(balanced, 20, interval=0.05, what="the 64 buckets held by both nodes again")
        balanced_at = time.monotonic()
        wait_for(lambda: ticks_until(db_now_ms(promoted)), 20, interval=0.1,
                 what="the ticks of the outage caught up")
        caught_up_at = time.monotonic()
    finally:
        submitter.stop.set()
        poller.stop.set()
        for t in threads:
            t.join(40)

    # a refused submission is retried by the client, with the same key and body: it is then
    # acknowledged once (created now, or replayed if the lost commit had in fact happened)
    retried: dict[str, str] = {}
    for key in submitter.refused:
        answer = wait_for(lambda k=key: (a := submitter.submit(k, nodes["n1"])).status == 201 and a, 15,
                          what=f"the client's retry of {key} to be acknowledged")
        retried[key] = answer.body["jobId"]
    acknowledged = {**submitter.acknowledged, **retried}
    one_offs = sorted(set(acknowledged.values()))

    end = db_now_ms(promoted) + 3 * SEC

    def settled() -> bool:
        if not ticks_until(end):
            return False
        rows = sql(promoted, """SELECT count(*) FILTER (WHERE status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')),
                                       count(DISTINCT job_id) FILTER (WHERE status = 'SUCCEEDED' AND job_id = ANY(%(once)s))
                                FROM executions WHERE job_id = ANY(%(all)s) AND scheduled_at <= %(end)s""",
                   {"once": one_offs, "all": one_offs + every_second, "end": end})
        return int(rows[0][0]) == 0 and int(rows[0][1]) == len(one_offs)

    wait_for(settled, 40, interval=0.2, what="every tick up to the end and every acknowledged one-off run to the end")

    # ---- the verdict, from the promoted database
    assert not submitter.unexpected, submitter.unexpected
    statuses = Counter(code for _, _, code, _ in poller.seen)
    assert set(statuses) == {200}, f"status answered {statuses} (only 200s expected: stale ones during the window): " + \
        repr([(n, round(at - down_at, 2), code, body) for n, at, code, body in poller.seen if code != 200][:5])
    assert all(a.headers.get("Retry-After") == "1" for a in submitter.refused.values()), submitter.refused
    budget = SUBMIT_RETRY_MS / 1000
    assert all(a.took >= budget * 0.95 for a in submitter.refused.values()), \
        f"503 only after the retry budget: {[round(a.took, 2) for a in submitter.refused.values()]}"
    assert any(nodes[n].event("job.submit_retry") for n in names)

    in_store = {r[0] for r in sql(promoted, "SELECT id FROM jobs WHERE id = ANY(%s)", (one_offs,))}
    lost = sorted(set(acknowledged.values()) - in_store)
    assert not lost, f"acknowledged jobs missing from the promoted database: {lost}"
    per_name = Counter(r[0] for r in sql(promoted, "SELECT name FROM job_definitions WHERE name LIKE %s", ("once-%",)))
    assert all(per_name[k] == 1 for k in acknowledged), {k: per_name[k] for k in acknowledged if per_name[k] != 1}
    assert set(per_name) <= set(submitter.bodies), "a job that no client submitted"

    rows = sql(promoted, "SELECT job_id, scheduled_at FROM executions WHERE job_id = ANY(%s) AND scheduled_at <= %s",
               (one_offs + every_second, end))
    ticks = Counter((j, int(t)) for j, t in rows)
    doubles = [t for t, k in ticks.items() if k > 1]
    first_runs = Counter(line.split()[0] for line in ledger.read_text().splitlines()
                         if len(line.split()) == 3 and line.split()[2] == "1")
    doubles += [x for x, k in first_runs.items() if k > 1]
    assert not doubles, f"double fires: {doubles}"
    missed = []
    for job_id in every_second:
        mine = sorted(t for j, t in ticks if j == job_id)
        missed += [(job_id, t) for t in range(mine[0], end + 1, SEC) if (job_id, t) not in ticks]
    assert not missed, f"missed ticks: {missed[:20]} ({len(missed)} in all)"
    assert sum(1 for j, _ in ticks if j in set(one_offs)) == len(one_offs)

    outage = promote_at - down_at
    assert outage * 1000 < MISFIRE_GRACE_MS, "the outage must stay inside the misfire grace for this check"
    outage_ticks = sum(1 for (j, t) in ticks if j in set(every_second) and down_ms <= t <= down_ms + outage * 1000)
    assert outage_ticks >= N_EVERY_SECOND * int(outage), "the outage's ticks were caught up"
    fresh = {n: poller.fresh_since(n, promoted_at) for n in names}
    rode_out = sum(1 for a in submitter.answers if a.status == 201 and a.took > 0.5)
    print(
        f"\nfailover: primary down {outage:.2f}s before promote; promote took {promoted_at - promote_at:.2f}s; "
        f"first 201 after promote {first_ack - promoted_at:.2f}s; fresh status after promote "
        + ", ".join(f"{n} {t - promoted_at:.2f}s" for n, t in fresh.items() if t is not None)
        + f"; buckets rebalanced after {balanced_at - promoted_at:.2f}s; outage ticks caught up after "
        f"{caught_up_at - promoted_at:.2f}s; submissions: {len(submitter.acknowledged)} acknowledged, "
        f"{len(submitter.refused)} refused with 503 then acknowledged on retry, {rode_out} acknowledged after "
        f"riding out part of the outage (>0.5s); status answers {dict(statuses)}"
    )
