"""Tenants, API tokens and who may run what. Pure: no I/O, no clock, no HTTP.

A **tenant** owns jobs, executions and dead letters; it has a fair-share ``weight`` in the
ready queue and optional quotas (running executions, registered jobs, submissions per
second). A **token** is a bearer credential with a role:

* ``admin``  everything, every tenant (the local CLI holds one, see docs/security.md);
* ``tenant`` manage and inspect one tenant's jobs, executions and dead letters;
* ``worker`` heartbeat, complete and record effects for one tenant's executions, nothing else.

Tokens are 256 random bits, shown once, and stored only as their SHA-256 (a slow password
hash buys nothing for a high-entropy secret, and the lookup stays one indexed read).

Targets that run code as the daemon's user (``command``, ``python``) are for admins and for
tenants granted ``allow_shell``; HTTP targets can be limited to an allow-list of hosts. The
ready queue's ``high`` tier is for admins and tenants granted ``allow_high_priority``: its tiers
are strict across tenants, so a tenant that could put its own flood there would delay every
neighbour's work, not only its own (``effective_priority`` clamps the rest to ``default``).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from cronwheel.core.limits import MAX_TOKEN_CHARS, PATTERN_END
from cronwheel.core.model import Priority
from cronwheel.core.urls import LABEL_RE, NUMERIC_LABEL_RE

TOKEN_PREFIX = "cw_"
TOKEN_BYTES = 32  #: 256 bits of randomness per token
#: their ``.pattern`` is a schema pattern too: see ``limits.PATTERN_END``
TENANT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}" + PATTERN_END)
TOKEN_ID_RE = re.compile(r"^tk_[0-9a-f]{16}" + PATTERN_END)
#: target kinds that run arbitrary code as the daemon's user
CODE_TARGETS = ("command", "python")
#: an allow-list of hosts as it is enforced: None when none is set (every host may be called),
#: else the hosts, where an empty tuple allows none. Kept apart because the daemon's
#: ``http_allow = []`` is an operator closing every host, not one who set nothing.
HostAllow = tuple[str, ...] | None


class Role(StrEnum):
    ADMIN = "admin"  #: everything, every tenant
    TENANT = "tenant"  #: one tenant's jobs, executions and dead letters
    WORKER = "worker"  #: heartbeat / complete / effects for one tenant's executions
    METRICS = "metrics"  #: read /metrics only (a Prometheus scraper); no tenant


#: roles whose tokens belong to no tenant
TENANTLESS_ROLES = frozenset({Role.ADMIN, Role.METRICS})


@dataclass(frozen=True, slots=True)
class Tenant:
    """A tenant's configuration. ``None`` quotas mean unlimited."""

    name: str
    weight: int = 1  #: share of the ready queue against other tenants (1..1000)
    max_running: int | None = None  #: executions RUNNING at once (per node)
    max_jobs: int | None = None  #: registered (ACTIVE or PAUSED) jobs
    submit_rate: float | None = None  #: submissions per second (token bucket refill): new jobs, triggered runs, replayed dead letters, backfilled ticks, pinged runs
    submit_burst: int | None = None  #: bucket capacity; None: max(1, ceil(submit_rate))
    allow_shell: bool = False  #: may create command and python targets
    #: hosts its HTTP targets, webhooks and email rules may reach: None, not set, the daemon's
    #: ``--http-allow``; empty, no host at all (as the daemon's ``http_allow = []``)
    http_allow: HostAllow = None
    created_at: int = 0
    updated_at: int = 0
    #: may put its jobs in the ready queue's high tier (strict across tenants: an admin's grant)
    allow_high_priority: bool = False
    #: when its deletion was asked (ms), None while it lives: a tenant being deleted takes no
    #: new work, its tokens are revoked, and its name stays taken until retention has removed
    #: every row that carried it (the tenant row last)
    deleting_since: int | None = None

    @property
    def deleting(self) -> bool:
        return self.deleting_since is not None


#: the fields of ``Tenant`` that an update may change
TENANT_SETTINGS = ("weight", "max_running", "max_jobs", "submit_rate", "submit_burst", "allow_shell",
                   "allow_high_priority", "http_allow")


@dataclass(frozen=True, slots=True)
class ApiToken:
    """A stored token: never the secret itself, only its hash."""

    token_id: str  #: public id, for listing and revoking (``tk_`` + 16 hex digits)
    token_hash: str  #: hex SHA-256 of the secret
    role: Role
    tenant: str | None  #: None only for admin tokens
    name: str | None = None  #: a label chosen by whoever created it
    created_at: int = 0
    revoked_at: int | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class DeletionOutcome(StrEnum):
    MARKED = "marked"  #: now being deleted: its tokens were revoked in the same transaction
    DELETING = "deleting"  #: it was being deleted already: nothing changed
    NOT_FOUND = "not_found"
    #: it has live jobs or executions in flight and the deletion was not forced: nothing changed
    NOT_EMPTY = "not_empty"


@dataclass(frozen=True, slots=True)
class TenantDeletion:
    """What asking to delete a tenant did (``TenantStore.mark_tenant_deleting``)."""

    outcome: DeletionOutcome
    live_jobs: int = 0  #: its ACTIVE and PAUSED jobs when asked
    in_flight: int = 0  #: its PENDING, RUNNING and RETRY_WAIT executions when asked
    revoked: tuple[ApiToken, ...] = ()  #: the tokens this call revoked
    deleting_since: int | None = None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, as far as the API's permission checks go."""

    role: Role
    tenant: str | None = None  #: None for admins (they see every tenant)
    token_id: str | None = None  #: None for the local socket
    allow_shell: bool = False
    allow_high_priority: bool = False
    http_allow: HostAllow = None  #: the effective allow-list (tenant's, else the daemon's)
    via: str = "token"  #: "token" or "socket"
    http_allow_own: bool = False  #: ``http_allow`` is the tenant's own list, not the daemon's

    def allowed_hosts(self) -> str:
        """What a refusal says its list allows (see ``allowed_hosts``)."""
        return allowed_hosts(self.http_allow, self.tenant if self.http_allow_own else None)

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    def may_manage(self) -> bool:
        """Create, change and read jobs, executions and dead letters (of its tenant)."""
        return self.role in (Role.ADMIN, Role.TENANT)

    def may_work(self) -> bool:
        """Heartbeat, complete and record effects (for its tenant's executions)."""
        return self.role in (Role.ADMIN, Role.TENANT, Role.WORKER)

    def may_scrape(self) -> bool:
        """Read the node's Prometheus metrics."""
        return self.role in (Role.ADMIN, Role.METRICS)


ADMIN = Principal(Role.ADMIN, via="socket")


# ---------------------------------------------------------------- tokens


def new_token_secret() -> str:
    """A fresh bearer token: ``cw_`` + 43 url-safe base64 characters (256 bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def given_token(text: str) -> str | None:
    """A bearer token as a person passed it (a flag, a variable, a file's line), without the
    whitespace around it (a file's newline); None when what is left could not be sent, since a
    header carries printable ASCII only."""
    token = text.strip()
    return token if token.isascii() and token.isprintable() else None


def new_token_id() -> str:
    return "tk_" + secrets.token_hex(8)


def hash_token(secret: str) -> str:
    """The stored form of a token. SHA-256 is enough for 256-bit random secrets: there is
    nothing to brute-force, and a fast hash keeps every request's check to one lookup."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def parse_bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when the header is
    absent. Raises ValueError when it is present but not a well-formed bearer token."""
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise ValueError("the Authorization header must be 'Bearer <token>'")
    value = value.strip()
    if not value or len(value) > MAX_TOKEN_CHARS or not value.isascii() or not value.isprintable() or " " in value:
        raise ValueError("malformed bearer token")
    return value


# ---------------------------------------------------------------- who may run what


def valid_tenant_name(name: str) -> bool:
    return TENANT_NAME_RE.fullmatch(name) is not None


def normalise_host(entry: str) -> str:
    """An allow-list entry: a host name (``api.example.com``), a wildcard for its subdomains
    (``*.example.com``) or an IP address. Raises ValueError for anything else, and for an
    entry no URL's host can match (core/urls.py): an IPv6 zone id, or a name that reads as
    an IPv4 address not written as four decimal numbers (``127.1``, ``*.10.0.0.1``)."""
    text = entry.strip().lower().rstrip(".")
    if not text or len(text) > 253:
        raise ValueError(f"{entry!r} is not a host name")
    if "%" in text:
        raise ValueError(f"{entry!r} holds an IPv6 zone id, a network interface of the worker's machine, which no URL "
                         "may name: give the address alone")  # fmt: skip
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    # the labels a URL's host may have (core/urls.py), underscores included: an entry a host
    # can have must be one the list can hold (a container's `my_service`)
    if not all(LABEL_RE.fullmatch(label) for label in text.removeprefix("*.").split(".")):
        raise ValueError(f"{entry!r} is not a host name, *.domain or IP address")
    if NUMERIC_LABEL_RE.fullmatch(text.rsplit(".", 1)[-1]):
        raise ValueError(f"{entry!r} reads as an IPv4 address but is not one written as four decimal numbers (such "
                         "as 10.0.0.1), the only way a URL may write one: no host would ever match it")  # fmt: skip
    return text


def host_allowed(host: str, allow: HostAllow) -> bool:
    """Whether ``host`` matches the allow-list (None: every host; empty: none)."""
    if allow is None:
        return True
    h = host.strip("[]").lower().rstrip(".")
    with contextlib.suppress(ValueError):
        h = str(ipaddress.ip_address(h))
    for entry in allow:
        if entry.startswith("*."):
            if h.endswith(entry[1:]) and len(h) > len(entry) - 1:
                return True
        elif h == entry:
            return True
    return False


@dataclass(frozen=True, slots=True)
class Refusal:
    field: str
    detail: str
    code: str = "forbidden_target"


def target_refusal(target: dict[str, Any], principal: Principal) -> Refusal | None:
    """Why ``principal`` may not create a job with ``target`` (None: it may)."""
    if principal.is_admin:
        return None
    kind = next(iter(target), "")
    if kind in CODE_TARGETS and not principal.allow_shell:
        return Refusal(
            kind,
            f"{kind} targets run code as the daemon's user: only admins may create them, "
            f"or tenants granted allowShell (tenant {principal.tenant!r} is not); use an http or queue target",
        )
    if kind == "http":
        url = str((target.get("http") or {}).get("url", ""))
        host = urlsplit(url).hostname or ""
        if not host_allowed(host, principal.http_allow):
            return Refusal(
                "http.url",
                f"HTTP targets of tenant {principal.tenant!r} may call {principal.allowed_hosts()}; not {host!r}",
            )
    return None


def priority_refusal(priority: Priority, principal: Principal, field: str = "priority") -> Refusal | None:
    """Why ``principal`` may not give a job ``priority`` (None: it may). The high tier is served
    before every tenant's default work, so it is an admin's grant, as running code is."""
    if priority is not Priority.HIGH or principal.is_admin or principal.allow_high_priority:
        return None
    return Refusal(
        field,
        f"priority high is served before every other tenant's default work: only admins may use it, or tenants "
        f"granted allowHighPriority (tenant {principal.tenant!r} is not); use default or batch",
        code="forbidden_priority",
    )


def effective_priority(priority: Priority, tenant: Tenant) -> Priority:
    """The tier a job's executions are queued at: ``high`` only while its tenant holds
    ``allow_high_priority`` (a grant withdrawn since, or a job made by an admin for a tenant
    without it, runs at ``default``); the other tiers as they are."""
    if priority is Priority.HIGH and not tenant.allow_high_priority:
        return Priority.DEFAULT
    return priority


def with_writes_since(read: list[Tenant], held: Mapping[str, Tenant], written_at: Mapping[str, int],
                      read_at: int) -> list[Tenant]:
    """The tenants as a node should hold them after reading ``read`` from the store when it had
    made ``read_at`` tenant writes: what the read says, except for the tenants the node wrote
    after it began (``written_at``: a tenant's name -> the count of writes at its last), which
    the read could not see and the node holds as written. Put in place as read, a list read
    just before a tenant was made forgot it, and one read before an update undid it."""
    since = {name for name, at in written_at.items() if at > read_at and name in held}
    return [t for t in read if t.name not in since] + [held[name] for name in sorted(since)]


def effective_http_allow(tenant: Tenant | None, daemon_allow: HostAllow) -> HostAllow:
    """A tenant's own list when it has one (an empty one too: no host), else the daemon's
    ``--http-allow``."""
    if tenant is not None and tenant.http_allow is not None:
        return tenant.http_allow
    return daemon_allow


def allowed_hosts(allow: HostAllow, own_of: str | None = None) -> str:
    """What a refusal says the list allows: ``only a.example, *.b.example``. ``own_of``: the
    tenant whose own list it is (None: the daemon's), so that an empty one says how to open it."""
    if allow is None:
        return "any host"
    if allow:
        return f"only {', '.join(allow)}"
    if own_of is None:
        return "no host (the daemon's http_allow is empty)"
    return f"no host ({closed_tenant(own_of)})"


def closed_tenant(name: str) -> str:
    """Why a tenant whose own list is empty may reach no host, and how to open it."""
    return (f"tenant {name!r}'s httpAllow is empty: `cronwheel tenant set {name} --http-allow HOST,...` "
            f"opens it to those hosts, `--http-allow-inherit` to the daemon's list")


__all__ = [
    "ADMIN",
    "CODE_TARGETS",
    "TENANT_SETTINGS",
    "ApiToken",
    "DeletionOutcome",
    "HostAllow",
    "Principal",
    "Refusal",
    "Role",
    "Tenant",
    "TenantDeletion",
    "allowed_hosts",
    "closed_tenant",
    "effective_http_allow",
    "effective_priority",
    "hash_token",
    "host_allowed",
    "new_token_id",
    "new_token_secret",
    "normalise_host",
    "parse_bearer",
    "priority_refusal",
    "target_refusal",
    "valid_tenant_name",
]
