"""A small synchronous client of the HTTP API, standard library only (``http.client``).

Why one module: one thin method per API call (a path and its query or body, nothing more), so
the CLI's whole view of the HTTP API reads in one place.

Talks TCP (``http://host:port``) or a Unix socket (``unix:/path/to/api.sock``). One
connection per call: the CLI makes a handful of calls, and a fresh connection never trips
over a daemon that restarted in between.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode, urlsplit

from cronwheel.cli.render import warned
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.words import as_given, did_you_mean, is_sendable, is_utf8
from cronwheel.worker.sockpath import unix_path

#: how long a request waits for the daemon's answer unless --request-timeout says otherwise
DEFAULT_TIMEOUT_SEC = 30.0


class ClientError(Exception):
    """Base of everything this client raises."""


class DaemonUnreachable(ClientError):
    """No daemon answers at the URL (connection refused, socket missing, timeout)."""

    def __init__(self, url: str, reason: str, *, never_sent: bool = False) -> None:
        super().__init__(f"cannot reach the cronwheel daemon at {url}: {reason}")
        self.url = url
        self.reason = reason
        #: the connection itself failed, so the request cannot have reached a daemon: sending
        #: it again cannot make it count twice
        self.never_sent = never_sent


class ApiError(ClientError):
    """The daemon answered with an error status; ``problem`` is its problem document."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail") or self.problem.get("title") or f"HTTP {self.status}")

    @property
    def code(self) -> str | None:
        return self.problem.get("code")

    @property
    def reason(self) -> str | None:
        return self.problem.get("reason")


class Created(NamedTuple):
    body: dict[str, Any]  #: ``{jobId, nextRunAt}``
    replayed: bool  #: True when an Idempotency-Key replay returned an existing job


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            with unix_path(self._path) as name:  # a deep data directory: as the daemon bound it
                sock.connect(name)
        except ValueError as exc:  # too long, with no /proc to shorten it through: unreachable
            sock.close()
            raise OSError(str(exc)) from None
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def path_segment(segment: str, safe: str = "") -> str:
    """One path segment (a job id or name, a calendar's name…), quoted. An empty one would
    address another route (``/v1/calendars/`` is the list): refused here, in words."""
    if not segment:
        raise ApiError(400, {"detail": "an empty name or id: name the job, calendar, tenant or token", "code": "bad_request"})
    try:
        return quote(segment, safe=safe)
    except UnicodeEncodeError:  # bytes of no encoding in argv come here as lone surrogates
        raise ApiError(400, {"detail": f"'{as_given(segment)}' is not valid UTF-8: no job, calendar, tenant or token has that name",
                             "code": "bad_request"}) from None


_q = path_segment


def query_string(query: dict[str, Any]) -> str:
    """``query`` encoded for a URL. A value from argv whose bytes were not UTF-8 (a lone
    surrogate here) is refused in words, naming its parameter, as ``path_segment`` does."""
    try:
        return urlencode(query)
    except UnicodeEncodeError:
        for key, value in query.items():
            text = str(value)
            if not is_utf8(text):
                raise ApiError(400, {"detail": f"{key} '{as_given(text)}' is not valid UTF-8", "code": "bad_request"}) from None
        raise


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _api_error(resp: http.client.HTTPResponse, decoded: Any) -> ApiError:
    if isinstance(decoded, dict):
        return ApiError(resp.status, decoded)
    # a cronwheel daemon answers every error with a problem document: this is something else
    # (a proxy's error page, another server on the port), whose page is not worth printing
    kind = (resp.getheader("Content-Type") or "no content type").split(";")[0].strip()
    return ApiError(resp.status, {"detail": f"HTTP {resp.status} {resp.reason} ({kind}), not an answer of a cronwheel "
                                            "daemon: is --url (or CRONWHEEL_URL) its address?"})


class Client:
    def __init__(self, url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT_SEC) -> None:
        self.url = url
        self.token = token
        self.timeout = timeout
        if not url.startswith("unix:") and not is_sendable(url):  # a path may hold any byte
            raise ValueError(f"the daemon URL must be http://HOST:PORT or unix:/PATH, not '{as_given(url)}'")
        if url.startswith("unix:"):
            path = url[len("unix:"):]
            if path.startswith("//"):  # unix:///run/x.sock
                path = path[2:]
            if not path:
                raise ValueError(f"no socket path in {url!r}")
            self._unix_path: str | None = path
            self._host = self._port = None
            self._prefix = ""
        else:
            parts = urlsplit(url)
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError(f"the daemon URL must be http://HOST:PORT or unix:/PATH, not {url!r}")
            self._unix_path = None
            self._host = parts.hostname
            try:
                self._port = parts.port or 80
            except ValueError:
                raise ValueError(f"bad port in {url!r}") from None
            self._prefix = parts.path.rstrip("/")

    # ---------------------------------------------------------------- plumbing

    def _connection(self) -> http.client.HTTPConnection:
        if self._unix_path is not None:
            return _UnixHTTPConnection(self._unix_path, self.timeout)
        return http.client.HTTPConnection(self._host or "localhost", self._port, timeout=self.timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """One call: ``(status, headers, decoded JSON body)``; raises ApiError on >= 400."""
        target = self._prefix + path
        if query:
            q = {k: val for k, val in query.items() if val is not None}
            if q:
                target += "?" + query_string(q)
        hdrs = {"Accept": "application/json", "User-Agent": "cronwheel-cli"}
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        conn = self._connection()
        try:
            try:
                conn.request(method, target, body=data, headers=hdrs)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                raise self._unreachable(exc) from None
        finally:
            conn.close()
        resp_headers = {k.lower(): val for k, val in resp.getheaders()}
        decoded = _decode(raw)
        if resp.status >= 400:
            raise _api_error(resp, decoded)
        return resp.status, resp_headers, decoded

    def _unreachable(self, exc: BaseException) -> DaemonUnreachable:
        if isinstance(exc, FileNotFoundError):
            return DaemonUnreachable(self.url, "no such socket (is the daemon running?)", never_sent=True)
        if isinstance(exc, ConnectionRefusedError):
            return DaemonUnreachable(self.url, "connection refused (is the daemon running?)", never_sent=True)
        if isinstance(exc, TimeoutError):
            return DaemonUnreachable(self.url, f"no answer within {self.timeout:g} s")
        if isinstance(exc, PermissionError):
            return DaemonUnreachable(self.url, "permission denied on the socket")
        if isinstance(exc, (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionResetError)):
            return DaemonUnreachable(self.url, "it hung up before it had answered (is it stopping?)")
        if isinstance(exc, socket.gaierror):
            return DaemonUnreachable(self.url, f"cannot resolve the host ({exc.strerror})")
        return DaemonUnreachable(self.url, f"{type(exc).__name__}: {exc}")

    def _call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> dict[str, Any]:
        data = self.request(method, path, body, query=query)[2]
        if not isinstance(data, dict):
            raise ClientError(f"{method} {path}: expected a JSON object from the daemon, got {str(data)[:200]!r}")
        return data

    def _get(self, path: str, **query: Any) -> dict[str, Any]:
        return self._call("GET", path, query=query)

    def _post(self, path: str, body: Any = None) -> dict[str, Any]:
        return self._call("POST", path, body)

    def _delete(self, path: str) -> dict[str, Any]:
        return self._call("DELETE", path)

    # ---------------------------------------------------------------- jobs

    def create_job(self, body: dict[str, Any], idempotency_key: str | None = None) -> Created:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        _status, hdrs, data = self.request("POST", "/v1/jobs", body, headers=headers)
        if not isinstance(data, dict) or "jobId" not in data:
            raise ClientError(f"POST /v1/jobs: unexpected answer {str(data)[:200]!r}")
        warned(data)
        return Created(data, hdrs.get("idempotent-replayed") == "true")

    def create_jobs(self, items: list[tuple[dict[str, Any], str | None]]) -> list[dict[str, Any]]:
        """``POST /v1/jobs/batch``: (body, idempotency key) pairs, one commit; one result per
        job, in order (``status`` 201 created, 200 replayed, 422 or 429 refused)."""
        jobs = [{**body, "idempotencyKey": key} if key else body for body, key in items]
        _status, _hdrs, data = self.request("POST", "/v1/jobs/batch", {"jobs": jobs})
        if not isinstance(data, dict) or not isinstance(data.get("results"), list) or len(data["results"]) != len(jobs):
            raise ClientError(f"POST /v1/jobs/batch: unexpected answer {str(data)[:200]!r}")
        return list(warned(data)["results"])

    def list_jobs(
        self, status: str | None = None, limit: int = 100, after: str | None = None, tenant: str | None = None
    ) -> dict[str, Any]:
        return self._get("/v1/jobs", status=status, limit=limit, after=after, tenant=tenant)

    def iter_jobs(self, status: str | None = None, page_size: int = 500) -> Iterator[dict[str, Any]]:
        after = None
        while True:
            page = self.list_jobs(status, page_size, after)
            yield from page["jobs"]
            after = page.get("next")
            if not after:
                return

    def get_job(self, job_id: str) -> dict[str, Any]:
        return self._get(f"/v1/jobs/{_q(job_id)}")

    def resolve_job(self, ref: str) -> dict[str, Any]:
        """A job by id, else by its unique name (ApiError 404 / 409 listing the ids)."""
        try:
            return self.get_job(ref)
        except ApiError as exc:
            # 405: the ref is a static path of its own (a job named "batch"), so not an id
            if exc.status not in (404, 405):
                raise
        # the name's live holder first (names are unique per tenant), then cancelled namesakes
        named = self._get("/v1/jobs", name=ref, limit=100)["jobs"]
        if not named:
            raise ApiError(404, {"detail": f"no job with id or name {ref!r}{self._near_names(ref)}", "code": "not_found"})
        live = [j for j in named if j.get("status") != "CANCELLED"]
        if len({j.get("tenant") for j in live}) > 1:  # an admin: several tenants use the name
            ids = ", ".join(j["jobId"] for j in live)
            raise ApiError(409, {"detail": f"the name {ref!r} is used by several tenants, use one of the ids: {ids}", "code": "ambiguous_name"})
        return dict(named[0])

    def _near_names(self, ref: str) -> str:
        """`` (did you mean 'backup'?)`` when live jobs' names are close to ``ref``: a typo's
        answer. One page of jobs (the first 1,000 by id) is read, and only on this failure."""
        try:
            jobs = self.list_jobs(limit=MAX_PAGE)["jobs"]
        except ClientError:
            return ""
        names = sorted({j["name"] for j in jobs if j.get("name") and j.get("status") != "CANCELLED"})
        return did_you_mean(ref, names, n=3, cutoff=0.7)

    def update_job(self, job_id: str, patch: dict[str, Any]) -> dict[str, Any]:
        """``PATCH /v1/jobs/{id}``: a merge patch of the job's definition; the updated job."""
        return warned(self._call("PATCH", f"/v1/jobs/{_q(job_id)}", patch))

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        return self._delete(f"/v1/jobs/{_q(job_id)}")

    def pause_job(self, job_id: str) -> dict[str, Any]:
        return self._post(f"/v1/jobs/{_q(job_id)}/pause")

    def resume_job(self, job_id: str) -> dict[str, Any]:
        return self._post(f"/v1/jobs/{_q(job_id)}/resume")

    def trigger_job(self, job_id: str) -> dict[str, Any]:
        return self._post(f"/v1/jobs/{_q(job_id)}/trigger")

    # ---------------------------------------------------------------- executions

    def list_executions(self, job_id: str, limit: int = 50, before: str | None = None) -> dict[str, Any]:
        return self._get(f"/v1/jobs/{_q(job_id)}/executions", limit=limit, before=before)

    def get_execution(self, execution_id: str) -> dict[str, Any]:
        return self._get(f"/v1/executions/{_q(execution_id)}")

    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int) -> dict[str, Any]:
        return self._post(f"/v1/executions/{_q(execution_id)}/heartbeat", {"workerId": worker_id, "leaseEpoch": lease_epoch})

    def complete(
        self,
        execution_id: str,
        worker_id: str,
        lease_epoch: int,
        outcome: str,
        exit_code: int | None = None,
        error: str | None = None,
        output: str | None = None,
    ) -> dict[str, Any]:
        body = {"workerId": worker_id, "leaseEpoch": lease_epoch, "outcome": outcome,
                "exitCode": exit_code, "error": error, "output": output}
        return self._post(f"/v1/executions/{_q(execution_id)}/complete", body)

    def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str) -> dict[str, Any]:
        """``{recorded: true}`` the first time, ``{duplicate: true}`` after; ApiError 409
        (reason ``fenced``) for a stale lease."""
        body = {"workerId": worker_id, "leaseEpoch": lease_epoch, "key": key}
        return self._post(f"/v1/executions/{_q(execution_id)}/effects", body)

    # ---------------------------------------------------------------- dead-letter queue

    def get_tenant_notify(self, name: str) -> dict[str, Any]:
        return self._get(f"/v1/tenants/{_q(name)}/notify")

    def set_tenant_notify(self, name: str, rules: list[Any]) -> dict[str, Any]:
        return warned(self._call("PUT", f"/v1/tenants/{_q(name)}/notify", {"notify": rules}))

    def ping(self, job: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._post(f"/v1/jobs/{_q(job)}/ping", body)

    def list_notifications(self, job_id: str | None = None, status: str | None = None, limit: int = 100,
                           before: str | None = None) -> dict[str, Any]:  # fmt: skip
        return self._get("/v1/notifications", jobId=job_id, status=status, limit=limit, before=before)

    def replay_notification(self, notification_id: str) -> dict[str, Any]:
        return self._post(f"/v1/notifications/{path_segment(notification_id, ':@')}/replay")

    def purge_notification(self, notification_id: str) -> dict[str, Any]:
        return self._delete(f"/v1/notifications/{path_segment(notification_id, ':@')}")

    def list_dead(self, limit: int = 100, after: str | None = None) -> dict[str, Any]:
        return self._get("/v1/dlq", limit=limit, after=after)

    def replay_dead(self, execution_id: str) -> dict[str, Any]:
        return self._post(f"/v1/dlq/{_q(execution_id)}/replay")

    def purge_dead(self, execution_id: str) -> dict[str, Any]:
        return self._delete(f"/v1/dlq/{_q(execution_id)}")

    # ---------------------------------------------------------------- tenants and tokens (admin)

    def list_tenants(self) -> dict[str, Any]:
        return self._get("/v1/tenants")

    def get_tenant(self, name: str) -> dict[str, Any]:
        return self._get(f"/v1/tenants/{_q(name)}")

    def create_tenant(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._post("/v1/tenants", body)

    def update_tenant(self, name: str, changes: dict[str, Any]) -> dict[str, Any]:
        return self._call("PATCH", f"/v1/tenants/{_q(name)}", changes)

    def delete_tenant(self, name: str, force: bool = False) -> dict[str, Any]:
        return self._delete(f"/v1/tenants/{_q(name)}" + ("?force=true" if force else ""))

    def create_token(self, tenant: str | None, role: str = "tenant", name: str | None = None) -> dict[str, Any]:
        """``{tokenId, token, role, tenant, name, createdAt}``: ``token`` is shown this once."""
        body = {k: val for k, val in (("tenant", tenant), ("role", role), ("name", name)) if val is not None}
        return self._post("/v1/tokens", body)

    def list_tokens(self, tenant: str | None = None) -> dict[str, Any]:
        return self._get("/v1/tokens", tenant=tenant)

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        return self._delete(f"/v1/tokens/{_q(token_id)}")

    # ---------------------------------------------------------------- the node

    def status(self) -> dict[str, Any]:
        return self._get("/v1/status")

    def whoami(self) -> dict[str, Any]:
        return self._get("/v1/whoami")

    def herd(self, window: int = 3600, top: int = 10) -> dict[str, Any]:
        return self._get("/v1/herd", window=window, top=top)

    def health(self) -> dict[str, Any]:
        return self._get("/healthz")

    def openapi(self) -> dict[str, Any]:
        return self._get("/v1/openapi.json")

    def output(self, execution_id: str, follow: bool = False, after: str | None = None,
               opened: Callable[[dict[str, str]], None] | None = None) -> Iterator[bytes]:
        """An execution's output (``GET /v1/executions/{id}/output``) in chunks of UTF-8 as they
        come; with ``follow``, until the attempt running now (or the next) ends. ``after``: a
        cursor to resume at; ``opened`` is given the answer's headers (lower-case names)."""
        query = {k: v for k, v in (("follow", "1" if follow else None), ("after", after)) if v is not None}
        target = self._prefix + f"/v1/executions/{_q(execution_id)}/output" + ("?" + query_string(query) if query else "")
        yield from self._stream(target, "text/plain", follow, lambda resp: iter(lambda: resp.read1(65536), b""),
                                lambda chunk: chunk, opened)

    def _stream(self, target: str, accept: str, follow: bool, pieces: Any, convert: Any,
                opened: Callable[[dict[str, str]], None] | None = None) -> Iterator[Any]:
        hdrs = {"Accept": accept, "User-Agent": "cronwheel-cli"}
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        conn = self._connection()
        try:
            try:
                conn.request("GET", target, headers=hdrs)
                resp = conn.getresponse()
                if resp.status >= 400:
                    raise _api_error(resp, _decode(resp.read()))
                if follow and conn.sock is not None:
                    conn.sock.settimeout(None)  # idle is normal while following
                if opened is not None:
                    opened({k.lower(): v for k, v in resp.getheaders()})
                for piece in pieces(resp):
                    yield convert(piece)
            except (OSError, http.client.HTTPException) as exc:
                raise self._unreachable(exc) from None
        finally:
            conn.close()

    def events(
        self,
        *,
        follow: bool = False,
        job: str | None = None,
        event: str | None = None,
        since: str | None = None,
        n: int | None = None,
        after: str | None = None,
        opened: Callable[[dict[str, str]], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The daemon's events (``GET /v1/events``), one dict each, oldest first. With
        ``follow`` the iterator waits for new events until the daemon ends the stream.
        ``after``: a cursor to resume at; ``opened`` is given the answer's headers."""
        query = {k: val for k, val in (("job", job), ("event", event), ("since", since), ("n", n), ("after", after)) if val is not None}
        if follow:
            query["follow"] = "1"
        target = self._prefix + "/v1/events" + ("?" + query_string(query) if query else "")
        lines = self._stream(target, "application/x-ndjson", follow, lambda resp: (line for line in resp if line.strip()), json.loads, opened)
        yield from lines
