"""Which request headers a job's HTTP target may set: the rules its struct's patterns cannot
say, checked by the API when a job is saved and by the worker before it sends (a job stored
before a rule existed is not sent either). Pure: no I/O.

The worker's HTTP client honours what it is given, over one connection pool that every
tenant's targets share. So the headers that say where a request goes and how the connection
carries it are the worker's to set, not a job's:

* ``Host`` picks the virtual host behind the address the URL names, and the allow-list judges
  the URL's host name (and so may an egress proxy): ``https://api.acme.com/`` with
  ``Host: admin.internal`` would reach what the admin never allowed. A ``Host`` that only
  repeats the URL's own host (its port too, or not) is taken.
* ``Content-Length`` and ``Transfer-Encoding`` frame the body: a value that does not match it
  leaves a pooled connection out of step, and the next job to use it, maybe another tenant's,
  reads this one's answer.
* ``Connection``, ``Keep-Alive``, ``Upgrade``, ``TE``, ``Trailer``: hop-by-hop (RFC 9110 §7.6.1),
  the client's own; ``Proxy-*`` speak to a proxy between the worker and the server, which a
  job must not steer either; ``Expect`` holds the body back until the server answers.
* A name given twice in other cases (``X-A`` and ``x-a``) would be sent twice: header names are
  case-insensitive, so that is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping

from cronwheel.core.urls import HttpUrl

_FRAMING = "frames the request body, which the worker does itself: a value that does not match the body would leave a connection that other jobs reuse out of step"
_HOP = "is hop-by-hop: it manages the worker's own connection, not the request"
#: the headers no job may set (lower case), and why
WORKER_HEADERS = {
    "content-length": _FRAMING,
    "transfer-encoding": _FRAMING,
    "connection": _HOP,
    "keep-alive": _HOP,
    "upgrade": _HOP,
    "te": _HOP,
    "trailer": _HOP,
    "expect": "would hold the request body back until the server answers; the worker sends it at once",
}
_PROXY = "speaks to a proxy between the worker and the server, which a job may not steer"


def header_problem(headers: Mapping[str, str], url: HttpUrl) -> tuple[str, str] | None:
    """The first header of ``headers`` that a job may not send to ``url``, and why (a phrase
    that follows the header's name: ``Host picks …``); None when they may all be sent."""
    seen: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in seen:
            return name, f"is given twice ({seen[key]} and {name}): header names are case-insensitive"
        seen[key] = name
        why = WORKER_HEADERS.get(key) or (_PROXY if key.startswith("proxy-") else None)
        if why is not None:
            return name, f"{why}; leave it out"
        if key == "host" and value.lower() not in (url.host, f"{url.host}:{url.port}"):
            return name, (f"picks the virtual host behind the URL's address, while the allow-list judges the URL's "
                          f"host: put the host in the URL (a Host header may only repeat it, {url.host!r}), not {value[:100]!r}")  # fmt: skip
    return None
