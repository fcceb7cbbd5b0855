"""Deleting a tenant: the node's side (``cronwheel tenant rm``, ``DELETE /v1/tenants/{name}``).

``TenantRemovalMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit); it
derives from the jobs part, whose ``cancel_job`` a forced deletion uses for each live job, so
that running executions are aborted through the normal, fenced path.

The store marks the tenant and revokes its tokens in one transaction (``store/tenantgone.py``);
retention removes its rows later, in small batches, the tenant row last. What this node holds
in memory for a tenant is dropped when it is marked here, and on every node once the tenant
has gone from the store (``TenancyMixin._forget_tenant``, at each refresh of the tenants).
"""

from __future__ import annotations

import functools

from cronwheel.core.model import DEFAULT_TENANT, Job, JobStatus
from cronwheel.core.tenants import DeletionOutcome, Tenant
from cronwheel.engine.jobs import JobsMixin
from cronwheel.engine.service import Conflict, NotFound, TenantDeleting
from cronwheel.store.base import Store
from cronwheel.store.calendars import calendars_held

#: jobs read per page while a forced deletion cancels them
CANCEL_PAGE = 500


class TenantNotEmpty(Conflict):
    code = "tenant_not_empty"


class DefaultTenant(Conflict):
    code = "default_tenant"


class TenantRemovalMixin(JobsMixin):
    async def delete_tenant(self, name: str, force: bool = False, *, remote: str | None = None) -> Tenant:
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
        cancelled = await self._cancel_all_of(name) if force else 0
        found = await self._read(lambda s: s.tenant_with_jobs(name))
        if found is None:  # retention on another node was quicker: it is gone already
            self._forget_tenant(name)
            return Tenant(name, deleting_since=res.deleting_since)
        self._put_tenant(found[0])
        self._forget_tenant(name, settings_too=False)
        if cancelled:
            self.events.emit("tenant.jobs_cancelled", tenant=name, jobs=cancelled)
        return found[0]

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

    def tenant_state_entries(self) -> int:
        """Entries this node holds per tenant (settings, rate buckets, refusal notes, reader
        turns, cached calendars): status shows it, so that a leak over tenants is seen."""
        calendars = sum(calendars_held(r.store) for r in {self.writer, self.reader, self.completer, self.claimer} if r)
        return (len(self._tenants) + len(self._rates) + len(self._rate_limited) + len(self._jobs_capped)
                + len(self.dispatcher.quota_waiting) + self.reader.remembered() + calendars)

    async def _cancel_all_of(self, tenant: str) -> int:
        """Cancel every live job of ``tenant`` as ``cancel_job`` does (its running executions
        aborted, fenced), a page per transaction; how many it cancelled. Retention calls it too
        for every tenant being deleted: one whose forced deletion was cut short (its node
        stopped) has jobs left that would otherwise run on and keep it from going. New ones cannot appear: the store refuses
        its jobs from the moment it is marked."""
        cancelled = 0
        for status in (JobStatus.ACTIVE, JobStatus.PAUSED):
            while True:
                page = await self._read(functools.partial(_live_jobs, tenant=tenant, status=status))
                await self.cancel_jobs([job.id for job in page], tenant)  # one durable write a page
                cancelled += len(page)
                if len(page) < CANCEL_PAGE:
                    break
        return cancelled


def _live_jobs(store: Store, tenant: str, status: JobStatus) -> list[Job]:
    """The first page of the tenant's jobs in ``status`` (those cancelled leave it)."""
    return store.list_jobs(tenant, status, CANCEL_PAGE, None)
