"""Which redirects an HTTP target's run follows, and what the next request is. Pure: no I/O.

A redirect is a URL the *server* chose, after the allow-list judged the job's own: followed
blindly, an allowed host with an open redirect could send a run (and its payload, its
headers) to any host, a cloud metadata address included, and the answer would be the run's
output, which the tenant reads. So the worker follows redirects itself, one request at a time,
and each hop's URL must pass what the job's own URL passed when it was saved:

* the URL rules of ``core.urls`` (one way to read its host; no user information);
* the tenant's HTTP allow-list as it is at the run (``Grant.http_allow``, the list webhooks
  obey too). A hop to the job's own host is taken without it: the run calls that host anyway
  (a job an admin made is bound by no list, and its URL is not judged again at each run).

At most ``MAX_REDIRECTS`` are followed (aiohttp's own bound; browsers stop at 20); the next
one fails the run. The method and body change as browsers change them (the Fetch
standard, which aiohttp follows too): after a 301 or 302 a POST becomes a GET, after a 303
anything but GET and HEAD becomes a GET, without its body nor the headers that describe it;
307 and 308 repeat the request as it was. The job's own headers (``Authorization``, a
``Cookie``, an API key of any name) go to its URL's origin only: after a hop to another
scheme, host or port they are left out, for good, as curl leaves out ``Authorization`` and
``Cookie``. A ``Content-Type`` still goes with the body it describes; cronwheel's own headers
(``Cronwheel-*``, ``Idempotency-Key``) go to every hop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from cronwheel.core.limits import MAX_REDIRECTS, MAX_URL_CHARS
from cronwheel.core.tenants import HostAllow, host_allowed
from cronwheel.core.urls import HttpUrl, parse_http_url

#: the answers whose Location is followed (aiohttp's and browsers' set); a 300 or 304 is an answer
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: the headers that describe a body: dropped with it (Fetch's "request-body-header names")
BODY_HEADERS = frozenset({"content-type", "content-encoding", "content-language", "content-location"})
_SHOWN_URL_CHARS = 500  #: a run's error is bounded: a long Location is cut
#: a URL's scheme and user information (whatever the authority holds before its last ``@``)
_USERINFO_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")


class RedirectRefused(Exception):
    """A redirect the run does not follow; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Hop:
    """One request of a run: the first to the job's URL, then one per redirect followed."""

    method: str
    url: str  #: as it is called
    parsed: HttpUrl  #: as the rules read it
    body: bool  #: whether the payload is sent
    headers: tuple[tuple[str, str], ...]  #: the job's own headers still sent
    redirects: int = 0  #: redirects followed to get here


#: ``Grant.http_allow`` for a tenant whose list allows every host (no list anywhere): ``*`` is
#: no host an allow-list may hold (``core.tenants.normalise_host`` refuses it)
ANY_HOST: tuple[str, ...] = ("*",)


def granted_allow(allow: HostAllow) -> tuple[str, ...]:
    """A tenant's allow-list as a grant carries it (None, every host, is ``ANY_HOST``)."""
    return ANY_HOST if allow is None else allow


@dataclass(frozen=True, slots=True)
class HopRules:
    """What a hop's URL must pass, besides ``core.urls``: the tenant's list as the grant
    carried it (``granted_allow``; None: none was given to the worker, so only the job's own
    host is taken)."""

    tenant: str
    granted: tuple[str, ...] | None
    job_host: str

    def allows(self, host: str) -> bool:
        if host == self.job_host:
            return True
        if self.granted is None:
            return False
        return self.granted == ANY_HOST or host_allowed(host, self.granted)

    def listed(self) -> str:
        if self.granted is None:
            return "its own host only"
        if not self.granted:  # the tenant's own list, or the daemon's when it has none
            return (f"empty: no host but the job's own; `cronwheel tenant set {self.tenant} --http-allow HOST,...` "
                    "opens it")
        return "any host" if self.granted == ANY_HOST else ", ".join(self.granted)


def redirected_method(status: int, method: str) -> tuple[str, bool]:
    """The method of the request a ``status`` redirect of a ``method`` request makes, and
    whether it still sends the body."""
    if (status in (301, 302) and method == "POST") or (status == 303 and method not in ("GET", "HEAD")):
        return "GET", False
    return method, True


def shown(url: str) -> str:
    """``url`` as a run's error may show it: without user information, cut to a length."""
    url = _USERINFO_RE.sub(r"\1", url, count=1)
    return url if len(url) <= _SHOWN_URL_CHARS else url[:_SHOWN_URL_CHARS] + "…"


def follow(hop: Hop, status: int, location: str, rules: HopRules) -> Hop:
    """The request that follows ``hop``'s ``status`` answer with ``location``; raises
    RedirectRefused when the run must not make it."""
    try:
        target = urljoin(hop.url, location)
    except ValueError:  # a Location urljoin cannot read (``http://[::1/``): judged as written
        target = location
    where = f"redirect not followed: HTTP {status} to {shown(target)}"
    if hop.redirects >= MAX_REDIRECTS:
        raise RedirectRefused(f"{where}: a run follows at most {MAX_REDIRECTS} redirects")
    try:
        parsed = parse_http_url(target, MAX_URL_CHARS)
    except ValueError as exc:
        raise RedirectRefused(f"{where}: the URL {exc}") from None
    if parsed.has_userinfo:
        raise RedirectRefused(f"{where}: the URL carries user information (user:password@), which no target's URL may")
    host = parsed.host
    if not rules.allows(host):
        raise RedirectRefused(f"{where}: the host {host} is not on tenant {rules.tenant!r}'s HTTP allow-list ({rules.listed()})")
    method, body = redirected_method(status, hop.method)
    headers = hop.headers
    if not body:
        headers = tuple((k, v) for k, v in headers if k.lower() not in BODY_HEADERS)
    if _origin(parsed) != _origin(hop.parsed):
        headers = tuple((k, v) for k, v in headers if body and k.lower() == "content-type")
    return Hop(method, target, parsed, hop.body and body, headers, hop.redirects + 1)


def _origin(url: HttpUrl) -> tuple[str, str, int]:
    return url.parts.scheme, url.host, url.port
