"""The dispatcher's tenant accounting with a fake pool and a fake store: weights from tenant
settings, the running quota applied at pop time (waiting, never dropping), one
``tenant.quota_wait`` event per episode, and every way a slot is freed."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from cronwheel.core.clock import FakeClock
from cronwheel.core.model import ExecStatus, Execution, Grant, Priority
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
    StartRequest,
)
from cronwheel.engine.dispatcher import Dispatcher
from cronwheel.obs.events import EventLog

T0 = 1_767_225_600_000


class FakeStore:
    def start_executions(self, starts: list[StartRequest], now_ms: int) -> list[Grant]:
        return [
            Grant(s.execution_id, s.execution_id.split(":")[0], "x", Priority.DEFAULT, T0, 1, 1, now_ms + 60_000,
                  60.0, 60.0, {"command": "true"}, None)
            for s in starts
        ]

    def complete_executions(self, completions: list[Completion], now_ms: int, rand01: Any = None) -> list[CompletionResult]:
        return [CompletionResult(c.execution_id, LeaseVerdict.OK, ExecStatus.SUCCEEDED) for c in completions]

    def heartbeat_many(self, beats: list[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        return [HeartbeatResult(LeaseVerdict.CANCELLED) for _ in beats]

    def expire_leases(self, now_ms: int, limit: int, ran_out_before_ms: int | None = None) -> list[CompletionResult]:
        return []


class FakeRunner:
    def __init__(self) -> None:
        self.store = FakeStore()

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        return fn(self.store)


class FakePool:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.granted: list[str] = []

    def free_slots(self) -> int:
        return self.slots - len(self.granted)

    def assign(self, n: int) -> list[tuple[str, int]]:
        return [("w1", min(n, self.free_slots()))] if n and self.free_slots() else []

    def send_grants(self, worker_id: str, grants: list[Grant]) -> None:
        self.granted += [g.execution_id for g in grants]

    def in_flight(self) -> dict[str, Any]:
        return {}

    def abort(self, execution_id: str, reason: str) -> bool:
        return False


def make(weights: dict[str, int], quotas: dict[str, int | None], slots: int = 100) -> tuple[Dispatcher, FakePool, io.StringIO]:
    out = io.StringIO()
    runner = FakeRunner()
    d = Dispatcher(
        FakeClock(T0), runner, runner, EventLog("n", stream=out, fmt="json"),  # type: ignore[arg-type]
        tenant_weight=lambda t: float(weights.get(t, 1)),
        tenant_max_running=lambda t: quotas.get(t),
    )
    pool = FakePool(slots)
    d.pool = pool  # type: ignore[assignment]
    d._completions.start()  # group commit of results (needs the running loop)
    return d, pool, out


def ex(tenant: str, i: int) -> Execution:
    return Execution(f"j{tenant}{i}:{T0}", f"j{tenant}{i}", tenant, Priority.DEFAULT, T0, ExecStatus.PENDING, available_at=T0)


def events(out: io.StringIO, name: str) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, out.getvalue().splitlines()) if r["event"] == name]


def test_a_tenant_at_its_quota_waits_and_others_go_on() -> None:
    async def main() -> None:
        d, pool, out = make({}, {"capped": 2})
        d.add([ex("capped", i) for i in range(5)] + [ex("free", i) for i in range(5)])
        await d._dispatch(T0)
        started = [x for x in pool.granted if x.startswith("jcapped")]
        assert len(started) == 2, "the quota holds"
        assert len([x for x in pool.granted if x.startswith("jfree")]) == 5, "others are not held up"
        assert d.running_by_tenant == {"capped": 2, "free": 5}
        assert len(d.queue) == 3, "the rest wait in the queue, nothing dropped"
        (wait,) = events(out, "tenant.quota_wait")
        assert (wait["tenant"], wait["running"], wait["maxRunning"], wait["queued"]) == ("capped", 2, 2, 3)
        await d._dispatch(T0)  # a second look changes nothing and says nothing new
        assert len(events(out, "tenant.quota_wait")) == 1

        # one finishes: exactly one more starts, and the episode goes on (still at quota)
        pool.granted.remove(started[0])
        await d.on_results("w1", [Completion(started[0], "w1", 1, Outcome.SUCCEEDED)])
        await d._dispatch(T0)
        assert d.running_by_tenant["capped"] == 2
        assert len(d.queue) == 2
        assert len(events(out, "tenant.quota_resumed")) == 1
        assert len(events(out, "tenant.quota_wait")) == 2  # a new episode began at once

    asyncio.run(main())


def test_a_neighbour_finds_a_slot_kept_while_a_tenant_holds_the_rest() -> None:
    """A running execution is never preempted: a tenant whose runs are slow must not take the
    node's last slots, or a neighbour's every-second job starts only when they end."""
    async def main() -> None:
        d, pool, _ = make({}, {}, slots=8)
        d.neighbour_reserve = lambda: 2
        d.add([ex("flood", i) for i in range(20)])
        await d._dispatch(T0)
        assert d.running_by_tenant == {"flood": 6}, "the last 2 slots are kept"
        d.add([ex("quiet", i) for i in range(3)] + [ex("other", 0)])
        await d._dispatch(T0)
        assert d.running_by_tenant == {"flood": 6, "quiet": 1, "other": 1}, "one each for tenants running nothing"
        assert len(d.queue) == 14 + 2, "the rest wait, nothing dropped"

        d.neighbour_reserve = lambda: 0  # one tenant on the node: it may fill it
        quiet = next(x for x in pool.granted if x.startswith("jquiet"))
        pool.granted.remove(quiet)
        await d.on_results("w1", [Completion(quiet, "w1", 1, Outcome.SUCCEEDED)])
        await d._dispatch(T0)
        assert sum(d.running_by_tenant.values()) == 8

    asyncio.run(main())


def test_every_way_out_frees_the_slot() -> None:
    async def main() -> None:
        d, pool, _ = make({}, {"t": 10})
        d.add([ex("t", i) for i in range(4)])
        await d._dispatch(T0)
        a, b, c, e = pool.granted
        assert d.running_by_tenant["t"] == 4
        await d.on_results("w1", [Completion(a, "w1", 1, Outcome.FAILED)])  # a result
        await d.on_worker_lost("w1", [(b, 1)])  # a lost worker
        assert await d.on_heartbeats("w1", [(c, 1)]) == [(c, "cancelled")]  # a lost lease
        d.release([e])  # an abort (cancel)
        d.release([e, "unknown:1"])  # twice, or unknown: no effect
        assert d.running_by_tenant == {} and d.running == {}

    asyncio.run(main())


def test_a_fenced_completion_from_elsewhere_does_not_free_a_slot() -> None:
    class Fenced(FakeStore):
        def complete_executions(self, completions: list[Completion], now_ms: int, rand01: Any = None) -> list[CompletionResult]:
            return [CompletionResult(c.execution_id, LeaseVerdict.LEASE_LOST) for c in completions]

    async def main() -> None:
        d, pool, _ = make({}, {"t": 1})
        d.add([ex("t", 0)])
        await d._dispatch(T0)
        d.writer.store = Fenced()  # type: ignore[attr-defined]
        await d.finish([Completion(pool.granted[0], "remote", 7, Outcome.SUCCEEDED)])  # e.g. the HTTP API
        assert d.running_by_tenant["t"] == 1

    asyncio.run(main())


def test_weights_come_from_the_tenant_settings() -> None:
    async def main() -> None:
        d, pool, _ = make({"gold": 3}, {}, slots=40)
        d.add([ex("gold", i) for i in range(100)] + [ex("bronze", i) for i in range(100)])
        await d._dispatch(T0)
        gold = sum(1 for x in pool.granted if x.startswith("jgold"))
        assert gold == 30 and len(pool.granted) == 40

    asyncio.run(main())


def test_a_quota_of_zero_holds_everything_and_nothing_is_lost() -> None:
    async def main() -> None:
        quotas: dict[str, int | None] = {"t": 0}
        d, pool, _ = make({}, quotas)
        d.add([ex("t", i) for i in range(3)])
        await d._dispatch(T0)
        assert pool.granted == [] and len(d.queue) == 3
        quotas["t"] = None  # lifted
        await d._dispatch(T0)
        assert len(pool.granted) == 3

    asyncio.run(main())


def test_waiting_executions_of_one_tier_and_tenant_share_one_record() -> None:
    """A herd's waiting executions cost the dispatcher a dict slot each: every one of a tier
    and tenant points at the same (tier, tenant) tuple, whichever row its strings came from."""

    async def main() -> None:
        d, _, _ = make({}, {})
        rows = [ex("".join(["ten", "ant"]), i) for i in range(3)]  # a string object per row
        rows.append(Execution("jh:1", "jh", "".join(["ten", "ant"]), Priority.HIGH, T0, ExecStatus.PENDING))
        d.add(rows)
        kinds = [d.meta[r.execution_id] for r in rows]
        assert kinds[0] == (int(Priority.DEFAULT), "tenant") and kinds[3] == (int(Priority.HIGH), "tenant")
        assert kinds[0] is kinds[1] is kinds[2] and kinds[3] is not kinds[0]
        assert kinds[0][1] is kinds[3][1], "one tenant string for both tiers"
        d._retry_at(rows[1].execution_id, int(Priority.DEFAULT), "".join(["ten", "ant"]), T0 + 1000)
        assert d.meta[rows[1].execution_id] is kinds[0], "a retry waits under the same record"
        await d.stop()

    asyncio.run(main())


def test_the_shared_records_are_bounded_and_forgetting_them_loses_nothing(monkeypatch: Any) -> None:
    monkeypatch.setattr("cronwheel.engine.dispatchloop.MAX_KINDS", 2)

    async def main() -> None:
        d, _, _ = make({}, {})
        rows = [ex(f"t{i}", i) for i in range(5)]
        d.add(rows)
        assert len(d._kinds) <= 2
        assert [d.meta[r.execution_id] for r in rows] == [(int(Priority.DEFAULT), f"t{i}") for i in range(5)]
        assert len(d.queue) == 5
        await d.stop()

    asyncio.run(main())


def test_a_tick_due_while_a_backlog_drains_starts_in_the_next_batch() -> None:
    """One dispatch pass drains a tenant's backlog batch by batch, each batch a start
    transaction that takes time. A neighbour's tick that comes due meanwhile joins the fair
    queue before the next batch is popped, and starts in it: not after the whole backlog,
    which a fast pool (slots freed as fast as they are granted) can make hundreds of batches."""

    async def main() -> None:
        d, _, out = make({}, {})
        clock = d.clock
        assert isinstance(clock, FakeClock)

        class SlowStarts(FakeStore):
            def start_executions(self, starts: list[StartRequest], now_ms: int) -> list[Grant]:
                clock.advance(10)  # each start transaction takes 10 ms
                return [replace(g, scheduled_at=int(g.execution_id.rpartition(":")[2]))
                        for g in super().start_executions(starts, now_ms)]

        class FastPool(FakePool):
            def free_slots(self) -> int:
                return self.slots  # every run ends before the next batch: the node keeps up

        d.writer.store = SlowStarts()  # type: ignore[attr-defined]
        pool = FastPool(4)
        d.pool = pool  # type: ignore[assignment]
        d.add([ex("flood", i) for i in range(40)])
        quiet = Execution(f"jquiet:{T0 + 25}", "jquiet", "quiet", Priority.DEFAULT, T0 + 25, ExecStatus.PENDING,
                          available_at=T0 + 25)  # claimed ahead: it waits for its instant
        d.add([quiet])
        await d._dispatch_pass()
        # batches of 4 start at T0, T0+10, T0+20 (flood's only), then T0+30: the first after
        # its instant, where the fair queue gives it the first or second place
        assert pool.granted.index(quiet.execution_id) in (12, 13), pool.granted
        (started,) = [r for r in events(out, "execution.started") if r["jobId"] == "jquiet"]
        assert started["lagMs"] == 5
        assert len(pool.granted) == 41, "the backlog still drains in the same pass"
        await d.stop()

    asyncio.run(main())


def test_the_high_tier_takes_only_the_tenants_granted_it() -> None:
    """Tiers are strict across tenants: a tenant's high executions are queued at default unless
    it holds the grant, whichever way they come in (claimed, due later, retried), and move at
    once when the grant is given or withdrawn, each back to the tier it may use."""

    def high(tenant: str, i: int, at: int = T0) -> Execution:
        return Execution(f"j{tenant}{i}:{T0}", f"j{tenant}{i}", tenant, Priority.HIGH, T0, ExecStatus.PENDING, available_at=at)

    async def main() -> None:
        d, _, _ = make({}, {})
        granted = {"vip"}
        d.tenant_may_high = lambda t: t in granted
        d.add([high("vip", 0), high("evil", 0), high("evil", 1, at=T0 + 1000), ex("evil", 2)])
        d._retry_at("jevil9:1", int(Priority.HIGH), "evil", T0)
        assert d.queue.depth_by_tier() == [1, 3, 0]
        assert isinstance(d.clock, FakeClock)
        d.clock.advance(1000)
        d._queue_due(d.clock.now_ms())  # the delayed one comes due: at default too
        assert d.queue.depth_by_tier() == [1, 4, 0]
        assert d.meta["jevil0:" + str(T0)] == (int(Priority.HIGH), "evil"), "its own tier is kept"

        granted.add("evil")
        d.retier("evil")
        assert d.queue.depth_by_tier() == [4, 1, 0], "evil's high ones move up, its default one stays"
        granted.clear()
        d.retier("evil")
        d.retier("vip")
        assert d.queue.depth_by_tier() == [0, 5, 0]
        assert d.queue.depth_by_tenant() == {"vip": 1, "evil": 4}, "nothing lost on the way"
        await d.stop()

    asyncio.run(main())
