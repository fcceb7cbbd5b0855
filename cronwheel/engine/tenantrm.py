"""Deleting a tenant: the node's side (``cronwheel tenant rm``, ``DELETE /v1/tenants/{name}``).

``TenantRemovalMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit); it
derives from the jobs part, whose ``cancel_jobs`` a forced deletion uses for its live jobs, so
that running executions are aborted through the normal, fenced path.

A forced deletion answers once the tenant is marked and its tokens revoked; its live jobs are
cancelled after that, in the background, a page per transaction: a tenant of 100,000 jobs took
90 s to cancel inside the request on a loaded machine, longer than clients and proxies wait, and
a client that hung up never learnt what happened. One cancellation runs per tenant on a node (asking again, or
retention, joins it); retention starts it again after a stop or a crash cut it short.

The store marks the tenant and revokes its tokens in one transaction (``store/tenantgone.py``);
retention removes its rows later, in small batches, the tenant row last. What this node holds
in memory for a tenant is dropped when it is marked here, and on every node once the tenant
has gone from the store (``TenancyMixin._forget_tenant``, at each refresh of the tenants).
"""

from __future__ import annotations

import asyncio
import functools
import time

from cronwheel.core.model import DEFAULT_TENANT, Job, JobStatus
from cronwheel.core.tenants import DeletionOutcome, Tenant
from cronwheel.engine.jobs import JobsMixin
from cronwheel.engine.service import Conflict, NotFound, TenantDeleting
from cronwheel.store.base import Store
from cronwheel.store.calendars import calendars_held

#: jobs read and cancelled per transaction while a forced deletion cancels them: with 500, a
#: neighbour's job creation waited 128 ms (p50) and 312 ms (p99) during a deletion of 100,000
#: jobs, with 100 34 ms and 150 ms, the deletion no slower (40 s)
CANCEL_PAGE = 100


class TenantNotEmpty(Conflict):
    code = "tenant_not_empty"


class DefaultTenant(Conflict):
    code = "default_tenant"


class TenantRemovalMixin(JobsMixin):
    #: the forced deletions cancelling their tenant's jobs on this node, by tenant
    _cancelling: dict[str, asyncio.Task[int]]

    async def delete_tenant(self, name: str, force: bool = False, *, remote: str | None = None) -> tuple[Tenant, int]:
        if name == DEFAULT_TENANT:
            raise DefaultTenant(
                "the default tenant cannot be deleted: it holds the jobs of every caller that names no "
                "tenant (the local CLI's, an admin's); cancel its jobs instead"
            )
        now = self.clock.now_ms()
        res = await self._write(lambda s: s.mark_tenant_deleting(name, now, force))
        if res.outcome is DeletionOutcome.NOT_FOUND:
            raise NotFound(f"no tenant {name!r} (cronwheel tenant ls lists them)")
        if res.outcome is DeletionOutcome.NOT_EMPTY:
            raise TenantNotEmpty(
                f"tenant {name!r} has {res.live_jobs} live (active or paused) jobs and {res.in_flight} executions "
                f"in flight: cancel them first, or delete it with force (?force=true, cronwheel tenant rm --force), "
                f"which cancels them and aborts its running executions",
                liveJobs=res.live_jobs, inFlight=res.in_flight,
            )
        for token in res.revoked:  # refused here at once; elsewhere see lookup_token
            self._token_cache.pop(token.token_hash, None)
            self._note_revoked(token.token_id)
        self.retention.tenant_deleting()  # asked again: its purge may wait for a run that ended
        if res.outcome is DeletionOutcome.MARKED:
            self.events.emit("tenant.deleting", tenant=name, force=force, liveJobs=res.live_jobs,
                             inFlight=res.in_flight, tokensRevoked=len(res.revoked), remote=remote)
        if force:  # (asked again after a stop cut the first short: it starts again at once)
            self._cancelling_of(name)
        found = await self._read(lambda s: s.tenant_with_jobs(name))
        if found is None:  # retention on another node was quicker: it is gone already
            self._forget_tenant(name)
            return Tenant(name, deleting_since=res.deleting_since), 0
        self._put_tenant(found[0])
        self._forget_tenant(name, settings_too=False)
        return found

    async def create_tenant(self, tenant: Tenant, *, remote: str | None = None) -> Tenant:
        try:
            return await super().create_tenant(tenant, remote=remote)
        except Conflict:
            found = await self._read(lambda s: s.tenant_with_jobs(tenant.name))
            if found is not None and found[0].deleting:
                raise TenantDeleting(
                    f"tenant {tenant.name!r} is being deleted: its name is free once every row of the old tenant "
                    "is gone (retention removes them; cronwheel tenant ls shows it until then)"
                ) from None
            raise

    async def jobs_left(self, tenants: list[Tenant]) -> dict[str, int]:
        left: dict[str, int] = {}
        for t in tenants:  # (one count on an index each, and tenants being deleted are few)
            if t.deleting and (found := await self._read(functools.partial(_with_jobs, name=t.name))) is not None:
                left[t.name] = found[1]
        return left

    def tenant_state_entries(self) -> int:
        """Entries this node holds per tenant (settings, rate buckets, refusal notes, reader
        turns, cached calendars): status shows it, so that a leak over tenants is seen."""
        calendars = sum(calendars_held(r.store) for r in {self.writer, self.reader, self.completer, self.claimer} if r)
        return (len(self._tenants) + len(self._rates) + len(self._rate_limited) + len(self._jobs_capped)
                + len(self.dispatcher.quota_waiting) + self.reader.remembered_tenants() + calendars)

    async def _cancel_all_of(self, tenant: str) -> int:
        """Cancel every live job of ``tenant`` (see ``_cancel_pages``), or wait for this node's
        cancellation already under way; how many it cancelled. Retention calls it for every
        tenant being deleted: one whose forced deletion was cut short (its node stopped) has
        jobs left that would otherwise run on and keep it from going."""
        # shielded: retention stopping must not cut short a cancellation a request started
        return await asyncio.shield(self._cancelling_of(tenant))

    def _cancelling_of(self, tenant: str) -> asyncio.Task[int]:
        """The cancellation of ``tenant``'s live jobs running on this node, started if none is."""
        task = self._cancelling.get(tenant)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._cancel_pages(tenant), name=f"tenant-rm:{tenant}")
            self._cancelling[tenant] = task
            task.add_done_callback(lambda done: self._cancel_ended(tenant, done))
        return task

    def _cancel_ended(self, tenant: str, task: asyncio.Task[int]) -> None:
        if self._cancelling.get(tenant) is task:
            del self._cancelling[tenant]
        if not task.cancelled() and task.exception() is not None:  # retention tries again
            self.events.emit("tenant.cancel_failed", tenant=tenant, error=repr(task.exception()))
            self.retention.tenant_deleting()

    async def _cancel_pages(self, tenant: str) -> int:
        """Cancel every live job of ``tenant`` as ``cancel_job`` does (its running executions
        aborted, fenced), a page per transaction, letting the node's other work in between;
        how many it cancelled (``tenant.jobs_cancelled`` says so once they are all done). New
        ones cannot appear: the store refuses its jobs (and a resume of its paused ones) from
        the moment it is marked."""
        started, cancelled, pages = time.monotonic(), 0, 0
        for status in (JobStatus.ACTIVE, JobStatus.PAUSED):
            after: str | None = None  # from the last page on: reading from the first id again went
            while True:  # over every job cancelled before (100,000 jobs took 77 s, with the cursor 40 s)
                page = await self._read(functools.partial(_live_jobs, tenant=tenant, status=status, after=after))
                if page:
                    after = page[-1].id
                    await self.cancel_jobs([job.id for job in page], tenant)  # one durable write a page
                    cancelled, pages = cancelled + len(page), pages + 1
                if len(page) < CANCEL_PAGE:
                    break
                await asyncio.sleep(0)  # the requests and completions waiting go first
        if cancelled:
            self.events.emit("tenant.jobs_cancelled", tenant=tenant, jobs=cancelled, pages=pages,
                             ms=round((time.monotonic() - started) * 1000))
        self.retention.tenant_deleting()  # its rows may go now
        return cancelled

    def stop_cancelling(self) -> list[asyncio.Task[int]]:
        """Cut the cancellations under way short (the node stops; retention finishes them at the
        next start); the tasks, to wait for."""
        tasks = list(self._cancelling.values())
        for task in tasks:
            task.cancel()
        return tasks


def _live_jobs(store: Store, tenant: str, status: JobStatus, after: str | None) -> list[Job]:
    """A page of the tenant's jobs in ``status``, by id from after ``after``."""
    return store.list_jobs(tenant, status, CANCEL_PAGE, after)


def _with_jobs(store: Store, name: str) -> tuple[Tenant, int] | None:
    return store.tenant_with_jobs(name)
