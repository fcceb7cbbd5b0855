"""Submitting jobs: group commits, tried again while the store cannot be reached.

Composed into the node (``Node.submitter``): it has a state of its own (the group committer
and whether the node still takes submissions), and the jobs part calls only ``submit``.
"""

from __future__ import annotations

import asyncio
import time

from cronwheel.core.clock import Clock
from cronwheel.core.ids import new_error_id
from cronwheel.core.instants import format_instant
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.records import CreateOutcome, CreateResult, NewJob
from cronwheel.engine.runner import GroupCommitter, StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.engine.service import Unavailable
from cronwheel.obs.events import REPEAT_LOG_SEC, EventLog
from cronwheel.store.base import StoreUnavailable

#: the backoff of a submission that finds the store unreachable: first delay, longest delay
SUBMIT_RETRY_DELAYS = (0.05, 1.0)


class Submitter:
    def __init__(
        self, writer: StoreRunner, reader: StoreRunner, clock: Clock, events: EventLog, scheduler: Scheduler,
        retry_ms: int,
    ) -> None:
        self.reader = reader
        self.clock = clock
        self.events = events
        self.scheduler = scheduler
        self.retry_ms = retry_ms
        self._retrying = True  #: False once the node stops: an unreachable store answers 503 at once
        #: an outage as submissions see it: since when (monotonic s), how many retries, and the
        #: limiter of its ``job.submit_retry`` lines (a new one per outage: its first is said)
        self._down_since: float | None = None
        self._retries = 0
        self._retry_log = OncePer(REPEAT_LOG_SEC)
        self._commits: GroupCommitter[NewJob, CreateResult] = GroupCommitter(
            writer, lambda s, jobs: s.create_jobs(jobs, clock.now_ms())
        )

    def start(self) -> None:
        self._commits.start()

    def stop_retrying(self) -> None:
        self._retrying = False

    async def close(self) -> None:
        await self._commits.close()

    async def submit(self, news: list[NewJob]) -> list[CreateResult]:
        """Group-commit submissions (one transaction for the list). While the store cannot be
        reached, try again with backoff for up to ``retry_ms``, then Unavailable (503 +
        Retry-After): a submission is acknowledged only by a commit. A commit whose answer was
        lost (the connection died during COMMIT) may have happened: before each new try the
        jobs' ids are looked up, so the retry acknowledges those jobs instead of writing them
        twice. Created jobs are logged and scheduled here."""
        deadline = time.monotonic() + self.retry_ms / 1000
        delay, longest = SUBMIT_RETRY_DELAYS
        attempt = 0
        done: dict[str, CreateResult] = {}  # job id -> its result, from a commit whose answer was lost
        while True:
            attempt += 1
            try:
                if attempt > 1:
                    found = set(await self._stored([new.job_id for new in news if new.job_id not in done]))
                    done.update((n.job_id, CreateResult(CreateOutcome.CREATED, n.job_id, n.next_run_at))
                                for n in news if n.job_id in found)  # fmt: skip
                # the rest go (again): an idempotent replay or a job over its quota answers the
                # same the second time, and nothing else of a committed batch can be missing
                rest = [new for new in news if new.job_id not in done]
                answers = iter(await self._commits.submit_many(rest, item_errors=True) if rest else [])
                results = [done[n.job_id] if n.job_id in done else self._answer(n, next(answers)) for n in news]
                self.store_answered()
                break
            except StoreUnavailable as exc:
                left = deadline - time.monotonic()
                if left <= 0 or not self._retrying:  # out of time, or the node is stopping
                    raise Unavailable(str(exc)) from exc
                self.retrying(news[0].job_id, len(news), attempt, exc)
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, longest)
        for new, result in zip(news, results, strict=True):
            if result.outcome is CreateOutcome.CREATED:
                spec = new.spec
                self.events.emit(
                    "job.created", jobId=new.job_id, tenant=spec.tenant, name=spec.name,
                    schedule=spec.schedule, nextRunAt=format_instant(new.next_run_at),
                )
                self.scheduler.job_scheduled(new.job_id, new.next_run_at)
        return results

    def retrying(self, job_id: str, jobs: int, attempt: int, exc: StoreUnavailable) -> None:
        """A submission will be tried again: the store cannot be reached. Every try of every
        submission (30 a second make 180 tries) is a ``job.submit_retry``, but only the
        outage's first is a warning, then one a minute with those held back (``suppressed``);
        the rest are at debug level (counted and streamed, not printed)."""
        now = self.clock.monotonic()
        if self._down_since is None:
            self._down_since = now
            self._retry_log = OncePer(REPEAT_LOG_SEC)
        self._retries += 1
        self.events.emit_now_and_then(self._retry_log, "store", now, "job.submit_retry", jobId=job_id, jobs=jobs,
                                      attempt=attempt, error=str(exc))  # fmt: skip

    def store_answered(self) -> None:
        """A submission was committed (or answered by the store): an outage that submissions
        were retried in is over, said once with its length and how many tries it cost."""
        if self._down_since is None:
            return
        down_ms = round((self.clock.monotonic() - self._down_since) * 1000)
        self.events.emit("job.submit_recovered", retries=self._retries, downMs=down_ms)
        self._down_since = None
        self._retries = 0

    async def _stored(self, ids: list[str]) -> list[str]:
        """Which of these jobs the store holds (the commit of a lost answer happened)."""
        return await self.reader.run(lambda s: [i for i in ids if s.get_job(i) is not None])

    def _answer(self, new: NewJob, answer: CreateResult | Exception) -> CreateResult:
        """A submission's result; one whose write failed alone (its neighbours committed) is
        logged once, with the id its caller is given."""
        if not isinstance(answer, Exception):
            return answer
        error_id = new_error_id()
        self.events.emit("job.submit_failed", jobId=new.job_id, tenant=new.spec.tenant, errorId=error_id,
                         error=type(answer).__name__, detail=str(answer)[:300])
        return CreateResult(CreateOutcome.FAILED, new.job_id, None, error_id)
