"""The node's side of tenancy: tenant configuration, API tokens and submission quotas.

``TenancyMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit). What it
keeps in memory:

* **Tenant configuration**, read by the engine on every pop of the ready queue (weights,
  running quotas) and every submission (rate, jobs quota): a dict, loaded at start, replaced
  whenever a change goes through this node, and re-read from the store every
  ``TENANT_REFRESH_SEC`` so that changes made through another node of a cluster arrive too.
* **Token lookups**: an active token found by its hash is trusted for ``TOKEN_CACHE_SEC``
  (a revocation through this node takes effect at once, through another node within that
  time). Unknown tokens are not cached: each costs one indexed read. While the store cannot
  be reached (a failover), a token this node verified within ``TOKEN_STALE_GRACE_SEC`` still
  stands, so that what needs no store (``status``, from its cache) keeps answering; a
  revocation made meanwhile through another node takes effect here once the store answers.
* **Submission buckets** (``core.quota``), one per rate-limited tenant, per node.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from pathlib import Path
from typing import Any

from cronwheel.core.fairness import neighbour_reserve
from cronwheel.core.limits import MAX_TENANT_WAITING
from cronwheel.core.model import DEFAULT_TENANT, JobSpec
from cronwheel.core.quota import RateLimiter
from cronwheel.core.tenants import (
    TENANTLESS_ROLES,
    ApiToken,
    HostAllow,
    Role,
    Tenant,
    effective_http_allow,
    hash_token,
    new_token_id,
    new_token_secret,
    with_writes_since,
)
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.parts import NodeParts
from cronwheel.engine.secretfile import write_secret_file
from cronwheel.engine.service import (
    Conflict,
    NotFound,
    TooManyRequests,
    Unavailable,
)

TENANT_REFRESH_SEC = 2.0
TOKEN_CACHE_SEC = 5.0
TOKEN_STALE_GRACE_SEC = 300.0
TOKEN_CACHE_MAX = 10_000
#: token ids revoked through this node, remembered for the streams open with them: each also
#: asks the store within a second (api/context.py), so only a stream cut off from the store
#: relies on this longer; the newest this many are kept, so token churn does not grow it
REVOKED_REMEMBERED = 10_000
ADMIN_TOKEN_FILE = "admin-token"
#: the Retry-After of a run refused because too many of its tenant's wait already
WAITING_RETRY_SEC = 30.0
JOBS_QUOTA_LOG_SEC = 10.0  #: a tenant refused for maxJobs is logged at most this often


#: a submission too large for a tenant's burst, in words, and what to do instead
_AT_ONCE = {
    "job": ("a batch of {} jobs", "send smaller batches"),
    "run": ("{} runs", "trigger fewer at once"),
    "replay": ("{} replayed dead letters", "replay fewer at once"),
    "tick": ("a backfill of {} ticks", "backfill smaller ranges"),
    "report": ("{} reported runs", "report fewer at once"),
}


class TenancyMixin(NodeParts):
    def _init_tenancy(self) -> None:
        """Before the dispatcher is made: its queue reads the tenants' weights and quotas."""
        self._tenants: dict[str, Tenant] = {}
        self._tenant_puts = 0  # tenant writes this node made; a name -> the count at its last:
        self._put_at: dict[str, int] = {}  # a list read before those is stale for them (_set_tenants)
        self._read_at = 0  # the count when the list in place was read
        self._rates = RateLimiter()
        self._rate_limited: set[str] = set()  # tenants refused since their last accepted submission
        self._jobs_capped: dict[str, float] = {}  # tenant -> when its maxJobs refusal was last logged
        self._token_cache: dict[str, tuple[float, ApiToken]] = {}  # hash -> (trusted until, token)
        self._revoked_here: dict[str, None] = {}  # token ids this node revoked, oldest first: open streams end at once
        self._refresh_health = LoopHealth(self.events, self.clock, "tenants")  # an outage: one line, not one per turn

    # ---- configuration the engine reads (cheap: no store access)
    def tenant_config(self, name: str) -> Tenant:
        t = self._tenants.get(name)
        return t if t is not None else Tenant(name)

    def tenant_weight(self, name: str) -> float:
        t = self._tenants.get(name)
        return 1.0 if t is None else float(t.weight)

    def tenant_max_running(self, name: str) -> int | None:
        t = self._tenants.get(name)
        return None if t is None else t.max_running

    def tenant_may_high(self, name: str) -> bool:
        """Whether the tenant's high executions are queued at the high tier (its grant)."""
        t = self._tenants.get(name)
        return t is not None and t.allow_high_priority

    def neighbour_slots(self) -> int:
        """The local slots kept for tenants running nothing here: none while the node serves one
        tenant (``default`` alone), else ``core.fairness.neighbour_reserve``'s share."""
        tenants = len(self._tenants) + (DEFAULT_TENANT not in self._tenants)
        return neighbour_reserve(self.config.workers * self.config.slots, tenants)

    def tenant_http_allow(self, tenant: str) -> HostAllow:
        """The hosts a tenant's webhooks, and its HTTP targets' redirects, may call: its own
        HTTP allow-list, else the daemon's (None: any host)."""
        return effective_http_allow(self.tenant_config(tenant), self.config.http_allow)

    def tenant_stats(self) -> dict[str, dict[str, Any]]:
        running = self.dispatcher.running_by_tenant
        queued = self.dispatcher.queue.depth_by_tenant()
        waiting = self.dispatcher.quota_waiting
        names = set(self._tenants) | set(running) | set(queued)
        return {
            n: {"running": running.get(n, 0), "queued": queued.get(n, 0), "quotaWaiting": n in waiting}
            for n in sorted(names)
        }

    async def load_tenants(self) -> None:
        self._set_tenants(await self._read(lambda s: s.list_tenants()))

    def _set_tenants(self, tenants: list[Tenant], puts: int | None = None) -> None:
        if puts is not None:  # read when this node had made ``puts`` tenant writes
            if puts < self._read_at:  # older than the list in place (two reads crossed)
                return
            tenants = with_writes_since(tenants, self._tenants, self._put_at, puts)
            self._read_at, self._put_at = puts, {n: at for n, at in self._put_at.items() if at > puts}
        old = self._tenants
        self._tenants = {t.name: t for t in tenants}
        for name, was in old.items():  # deleted (on any node), maybe made anew since: nothing of it stays
            now = self._tenants.get(name)
            if now is None or (was.deleting and not now.deleting):
                self._forget_tenant(name, settings_too=now is None)
        self._retier(old, tenants)
        if any(old.get(t.name) != t for t in tenants):
            self.dispatcher.wake()  # a raised quota or a new weight counts from the next pop

    def _put_tenant(self, tenant: Tenant) -> None:
        old, self._tenant_puts = self._tenants, self._tenant_puts + 1
        self._put_at[tenant.name] = self._tenant_puts
        self._tenants = {**self._tenants, tenant.name: tenant}
        self._retier(old, [tenant])
        self.dispatcher.wake()

    def _retier(self, old: dict[str, Tenant], tenants: list[Tenant]) -> None:
        """A tenant granted the high tier, or no longer, has its queued executions moved at once
        (through another node: within TENANT_REFRESH_SEC)."""
        for t in tenants:
            was = old.get(t.name)
            if t.allow_high_priority != (was is not None and was.allow_high_priority):
                self.dispatcher.retier(t.name)

    async def tenant_refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(TENANT_REFRESH_SEC)
            try:  # the store's own error (not the API's Unavailable): an outage is one line
                puts = self._tenant_puts
                self._set_tenants(await self.reader.run(lambda s: s.list_tenants()), puts)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is failing over: keep the last known settings
                self._refresh_health.failed(exc)
            else:
                self._refresh_health.ok()

    def _forget_tenant(self, name: str, settings_too: bool = True) -> None:
        """Drop what this node keeps for a deleted tenant: its rate bucket and refusal notes, its
        turn among the readers, its tokens' lookups, its calendars cached by the stores (and,
        unless it is still being deleted, its settings)."""
        if settings_too and name in self._tenants:
            self._tenants = {n: t for n, t in self._tenants.items() if n != name}
        self._rates.forget(name)
        self._rate_limited.discard(name)
        self._jobs_capped.pop(name, None)
        self.dispatcher.quota_waiting.discard(name)
        self.reader.forget(name)
        self._token_cache = {h: v for h, v in self._token_cache.items() if v[1].tenant != name}
        self.forget_held_calendars(name)

    # ---- quotas at submission
    def admit_submission(self, spec: JobSpec, count: int = 1, what: str = "job") -> int | None:
        """Take ``count`` submission tokens for the job's tenant (TooManyRequests with
        Retry-After when its bucket is short) and return its registered-jobs quota, which the
        store checks. Each new job, triggered run, replayed dead letter, backfilled tick and run
        reported by a ping is a submission (``what``: ``job``, ``run``, ``replay``, ``tick`` or
        ``report``, for the refusal's words): each makes durable work. A run, replay or tick of a
        local target is also refused while the tenant has ``MAX_TENANT_WAITING`` runs in this
        node's ready queue."""
        if what in ("run", "replay", "tick") and spec.target.get("queue") is None:
            self._refuse_past_waiting(spec.tenant, count)
        t = self._tenants.get(spec.tenant)
        if t is None:
            return None
        wait = self._rates.take(t.name, t.submit_rate, t.submit_burst, self.clock.now_ms(), count)
        if math.isinf(wait):
            burst = t.submit_burst or max(1, math.ceil(t.submit_rate or 1))
            many, advice = _AT_ONCE[what]
            raise TooManyRequests(
                f"{many.format(count)} is more than tenant {t.name!r} may ever submit at once "
                f"(submitBurst {burst}): {advice}",
                quota="submitBurst",
            )
        if wait > 0:
            if t.name not in self._rate_limited:  # one event per episode, not per refusal
                self._rate_limited.add(t.name)
                self.events.emit("tenant.rate_limited", tenant=t.name, submitRate=t.submit_rate, submitBurst=t.submit_burst)
            raise TooManyRequests(
                f"tenant {t.name!r} submits more than its quota of {t.submit_rate:g} submissions per second "
                f"(a new job, a triggered run, a replayed dead letter, a backfilled tick and a reported run "
                f"are one each); "
                f"retry in {wait:.2f} s",
                retry_after_sec=wait, quota="submitRate", retryAfterSec=round(wait, 3),
            )
        self._rate_limited.discard(t.name)
        return t.max_jobs

    def _refuse_past_waiting(self, tenant: str, count: int) -> None:
        waiting = self.dispatcher.queue.depth_of(tenant)
        if waiting + count > MAX_TENANT_WAITING:
            limit = self.tenant_config(tenant).max_running
            held = f" (its maxRunning is {limit})" if limit is not None else ""
            raise TooManyRequests(
                f"tenant {tenant!r} has {waiting} runs waiting to start on this node{held}; at most "
                f"{MAX_TENANT_WAITING} may wait, so {count} more cannot be queued now: retry once some have started",
                retry_after_sec=WAITING_RETRY_SEC, quota="waiting", waiting=waiting,
            )

    def note_jobs_quota(self, tenant: str) -> None:
        """A submission of ``tenant`` was refused for its maxJobs: logged at most every
        JOBS_QUOTA_LOG_SEC, not once per refusal."""
        now = time.monotonic()
        if now - self._jobs_capped.get(tenant, -1e9) >= JOBS_QUOTA_LOG_SEC:
            self._jobs_capped[tenant] = now
            self.events.emit("tenant.jobs_quota", tenant=tenant, maxJobs=self.tenant_config(tenant).max_jobs)

    def jobs_quota_exceeded(self, tenant: str) -> TooManyRequests:
        self.note_jobs_quota(tenant)
        limit = self.tenant_config(tenant).max_jobs
        return TooManyRequests(
            f"tenant {tenant!r} has {limit} registered jobs, its maxJobs quota: cancel some, or ask an admin to raise it",
            quota="maxJobs",
        )

    # ---- tenant administration
    async def list_tenants(self) -> list[Tenant]:
        puts = self._tenant_puts
        tenants = await self._read(lambda s: s.list_tenants())
        self._set_tenants(tenants, puts)
        return tenants

    async def get_tenant(self, name: str) -> tuple[Tenant, int, HostAllow]:
        """A tenant, its registered (ACTIVE or PAUSED) jobs, what its maxJobs counts, and the
        HTTP allow-list that applies to it (its own, else the daemon's). NotFound."""
        found = await self._read(lambda s: s.tenant_with_jobs(name))
        if found is None:
            raise NotFound(f"no tenant {name!r} (cronwheel tenant ls lists them)")
        tenant, jobs = found
        return tenant, jobs, effective_http_allow(tenant, self.config.http_allow)

    async def create_tenant(self, tenant: Tenant, *, remote: str | None = None) -> Tenant:
        now = self.clock.now_ms()
        created = await self._write(lambda s: s.create_tenant(tenant, now))
        if created is None:  # (or being deleted: engine/tenantrm.py says so)
            raise Conflict(f"tenant {tenant.name!r} exists already (change it with PATCH /v1/tenants/{tenant.name})")
        self._put_tenant(created)
        self.events.emit("tenant.created", tenant=created.name, remote=remote)
        return created

    async def update_tenant(self, name: str, changes: dict[str, Any], *, remote: str | None = None) -> Tenant:
        now = self.clock.now_ms()
        updated = await self._write(lambda s: s.update_tenant(name, changes, now))
        if updated is None:
            await self._no_such_tenant(name, f"create it first: cronwheel tenant add {name}")
        self._put_tenant(updated)
        self.events.emit("tenant.updated", tenant=name, changed=sorted(changes), remote=remote)
        return updated

    # ---- tokens
    async def create_token(self, role: Role, tenant: str | None, name: str | None = None, *,
                           remote: str | None = None) -> tuple[ApiToken, str]:
        secret = new_token_secret()
        now = self.clock.now_ms()
        token = ApiToken(new_token_id(), hash_token(secret), role, None if role in TENANTLESS_ROLES else tenant, name, now)
        if not await self._write(lambda s: s.create_token(token, now)):
            await self._no_such_tenant(str(tenant), f"create it first: cronwheel tenant add {tenant}")
        # the secret is returned to the caller once and never logged
        self.events.emit("token.created", tokenId=token.token_id, role=role.value, tenant=token.tenant, name=name,
                         remote=remote)
        return token, secret

    async def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        return await self._read(lambda s: s.list_tokens(tenant))

    async def revoke_token(self, token_id: str, *, remote: str | None = None) -> ApiToken:
        now = self.clock.now_ms()
        token = await self._write(lambda s: s.revoke_token(token_id, now))
        if token is None:
            raise NotFound(f"no token {token_id!r}")
        if token.role is Role.ADMIN and token.revoked_at is None:
            raise Conflict(
                f"token {token_id} is the last active admin token: revoking it would leave no admin "
                "over TCP; create another first (cronwheel token create --role admin), then revoke this one",
                reason="last_admin_token",
            )
        self._token_cache.pop(token.token_hash, None)
        self._note_revoked(token_id)
        self.events.emit("token.revoked", tokenId=token_id, role=token.role.value, tenant=token.tenant, remote=remote)
        return token

    def _note_revoked(self, token_id: str) -> None:
        self._revoked_here[token_id] = None
        while len(self._revoked_here) > REVOKED_REMEMBERED:
            del self._revoked_here[next(iter(self._revoked_here))]

    def revoked_here(self, token_id: str) -> bool:
        return token_id in self._revoked_here

    async def lookup_token(self, secret: str) -> ApiToken | None:
        digest = hash_token(secret)
        cached = self._token_cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return None if self._of_deleting(cached[1]) else cached[1]
        try:
            token = await self._read(lambda s: s.get_token_by_hash(digest))
        except Unavailable:
            if cached is not None and now < cached[0] - TOKEN_CACHE_SEC + TOKEN_STALE_GRACE_SEC:
                # verified a little while ago, and the store is down
                return None if self._of_deleting(cached[1]) else cached[1]
            raise
        if token is None or not token.active or self._of_deleting(token):
            self._token_cache.pop(digest, None)
            return None
        if len(self._token_cache) >= TOKEN_CACHE_MAX:
            self._token_cache = {h: v for h, v in self._token_cache.items() if v[0] > now}
            if len(self._token_cache) >= TOKEN_CACHE_MAX:
                self._token_cache.clear()
        self._token_cache[digest] = (now + TOKEN_CACHE_SEC, token)
        return token

    def _of_deleting(self, token: ApiToken) -> bool:
        """A token of a tenant being deleted (revoked with it in the store): a node that trusted
        it a moment before refuses it from its next tenants' refresh, not TOKEN_CACHE_SEC on."""
        t = None if token.tenant is None else self._tenants.get(token.tenant)
        return t is not None and t.deleting

    # ---- the local operator's first credential
    async def ensure_admin_token(self, data_dir: Path) -> bool:
        """Make sure ``<data_dir>/admin-token`` holds an active admin token (Jupyter and Vault
        do the same for their first credential). A missing, unreadable or no longer valid file
        is replaced by a new token; returns True when one was minted. The file is written
        mode 0600 under a temporary name opened with O_EXCL, fsynced, then renamed into place,
        so a reader never sees a partial token."""
        path = data_dir / ADMIN_TOKEN_FILE
        with contextlib.suppress(OSError, UnicodeDecodeError):
            current = path.read_text(encoding="ascii").strip()
            if current:
                token = await self.lookup_token(current)
                if token is not None and token.role is Role.ADMIN:
                    return False
        token, secret = await self.create_token(Role.ADMIN, None, f"admin-token ({self.node_id})")
        await self.lookup_token(secret)  # verified, as an existing one is above: it rides out an outage
        write_secret_file(path, secret)
        self.events.emit("auth.admin_token_created", path=str(path.resolve()), tokenId=token.token_id)
        return True

