"""The paths of the OpenAPI document (``GET /v1/openapi.json``): every route, its parameters,
its request and response bodies by reference to the components (``api/openapi.py`` builds the
document; ``make openapi`` writes it to ``api/openapi.json``).

Why one module: it is one table, a route per entry in the order of ``api/app.py``'s route table;
cut into pieces it would be read in as many places. What every route repeats is written once, in
the helpers above the table: the shared problem answers (``refused``), a JSON body, a success
answer, a path parameter and a link.
"""

from __future__ import annotations

from typing import Any

from cronwheel.core.ids import EXECUTION_ID_REGEX, JOB_ID_REGEX
from cronwheel.core.limits import (
    MAX_EFFECTS_PER_EXECUTION,
    MAX_TENANT_CALENDARS,
    MAX_TENANT_WAITING,
)

OPENAPI_VERSION = "3.1.0"
INFO: dict[str, Any] = {
    "title": "cronwheel",
    "version": "1.0.0",
    "description": "A distributed job scheduler: recurring (cron) and one-off jobs, at-least-once execution with leases, heartbeats and fencing tokens (`leaseEpoch`). Timestamps are RFC 3339 UTC with milliseconds. Errors are `application/problem+json`; every operation may also answer 500 with a problem that carries an `errorId`. Every operation but `GET /healthz` needs `Authorization: Bearer <token>` over TCP (the local Unix socket is admin by file permission); a tenant token sees only its tenant's jobs, executions and dead letters (another tenant's ids answer 404), a worker token may only heartbeat, complete and record effects, and the tenant and token routes are for admins (docs/security.md). Over TCP, any operation but the open ones may answer 429 `too_many_connections` (with `Retry-After`) when the caller's tenant (its workers included) or role already holds its budget of connections to the node; the connection is then closed. Behind a reverse proxy the daemon trusts (`trusted_proxies`), any operation, the open ones included, may also answer it when the client address its `X-Forwarded-For` or `Forwarded` header names holds its budget of connections not yet authenticated.\n\nConventions. Every path answers `OPTIONS` with 204 and an `Allow` header listing exactly its methods (and OPTIONS); any other method gets 405 with the same `Allow`. In request bodies an optional member sent as `null` is the same as leaving it out, wherever its type lists `null` (tenant quotas: `null` means unlimited; a job patch: `null` removes the member); elsewhere `null` is refused (422). A member a body's schema does not list is refused (422 `unknown_field`); an operation without a request body takes none, `{}` or `null` (anything else: 400, `unknown_field` or `invalid_body`); a query parameter an operation does not list, or one given twice, is refused (400 `invalid_query`); a JSON name given twice in one object is 400 `malformed_json`. The schemas state every rule JSON Schema can express; the few it cannot are written in the descriptions (two members compared, sizes in bytes, what depends on earlier requests). The input boundary, for every request: each string (body, path, query, header) is valid Unicode without NUL, and each JSON number is finite and fits in 64 bits, free-form payloads included (400/422 otherwise; docs/security.md has the table of limits). String formats of this API: `schedule` (what `cronwheel next` parses: cron with 5 or 6 fields and `H`, `@every`, macros, or a one-off instant/`+DURATION`, firing at least once after now), `instant` (an RFC 3339 date-time with a UTC offset), `instant-or-delay` (an `instant` or `+DURATION` from now, e.g. `+90s`, `+1h30m`), `time-zone` (an IANA zone name the server's tz database knows), `printable` (letters, marks, numbers, punctuation, symbols and spaces; not blank), `host-pattern` (a host name, `*.domain` or an IP address; a name whose last label is a number, as `127.1`, reads as an IPv4 address and is refused: an IPv4 address is four decimal numbers), `http-url` (an absolute http(s) URL with a port from 1 to 65535 if any, and a host written one way only: an IPv4 address of four decimal numbers, an IPv6 address in brackets without a zone id, or an ASCII (IDNA) host name without a final dot), `calendar-time` (a calendar window's bound: `YYYY-MM-DDTHH:MM[:SS]`, local, or with a UTC offset).",
    "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
}
SERVERS: list[dict[str, Any]] = [{"url": "http://127.0.0.1:7878"}]
SECURITY: list[dict[str, Any]] = [{"bearerAuth": []}]

#: the problem answers every route shares, by status: ``responses`` of the components
STANDARD_PROBLEMS = {
    "400": "BadRequest",
    "401": "Unauthorized",
    "403": "Forbidden",
    "404": "NotFound",
    "409": "Conflict",
    "413": "PayloadTooLarge",
    "415": "UnsupportedMediaType",
    "422": "Unprocessable",
    "429": "TooManyRequests",
    "503": "Unavailable",
}


def refused(*codes: str) -> dict[str, Any]:
    """The problem answers of an operation, in order: ``"404"`` is the standard one for its
    status, ``"409:LeaseConflict"`` names another component."""
    out: dict[str, Any] = {}
    for code in codes:
        status, _, name = code.partition(":")
        out[status] = {"$ref": f"#/components/responses/{name or STANDARD_PROBLEMS[status]}"}
    return out


def answer(
    description: str,
    component: str | None = None,
    *,
    schema: dict[str, Any] | None = None,
    media: str = "application/json",
    headers: dict[str, Any] | None = None,
    links: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A success answer: its description, its body (a component by name, or a schema), and
    its headers and links when it has some."""
    out: dict[str, Any] = {"description": description}
    if component is not None:
        schema = {"$ref": f"#/components/schemas/{component}"}
    if schema is not None:
        out["content"] = {media: {"schema": schema}}
    if headers is not None:
        out["headers"] = headers
    if links is not None:
        out["links"] = links
    return out


def json_body(component: str, *, required: bool = True) -> dict[str, Any]:
    """A JSON request body of a component."""
    return {
        "required": required,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
    }


def path_param(name: str, description: str) -> dict[str, Any]:
    """A string parameter of the path."""
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": description,
    }


def link(operation_id: str, parameters: dict[str, str]) -> dict[str, Any]:
    """A link from an answer to the operation it leads to, with the parameters it fills."""
    return {"operationId": operation_id, "parameters": parameters}


#: ``?tenant=`` of the calendar routes
CALENDAR_TENANT: dict[str, Any] = {
    "name": "tenant",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$"},
    "description": "The tenant whose calendar this is: an admin's choice (default "
    "`default`); a tenant token may name its own tenant only (another is 403).",
}


PATHS: dict[str, Any] = {
    "/v1/jobs": {
        "post": {
            "operationId": "createJob",
            "summary": "Register a recurring or one-off job",
            "description": (
                "Acknowledged (201) only once the job is durably committed. With an "
                "`Idempotency-Key`, a retry with the same key and body returns the "
                "original response (with `Idempotent-Replayed: true`); the same key "
                "with another body is refused (422 `idempotency_key_reused`). A key "
                "lives as long as its job (the retention removes settled jobs). A "
                "`runAs` this daemon cannot honour (it does not run as root, or the "
                "user or group does not exist here) is refused with 422 "
                "`run_as_refused`."
            ),
            "parameters": [
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "schema": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "pattern": "^[\\u0020-\\u007e]*$",
                    },
                    "description": "1 to 200 printable ASCII characters.",
                },
            ],
            "requestBody": json_body("JobRequest"),
            "responses": {
                "201": answer(
                    "Created (or replayed).",
                    "JobCreated",
                    headers={
                        "Location": {"schema": {"type": "string"}},
                        "Idempotent-Replayed": {
                            "schema": {"type": "string", "const": "true"},
                            "description": "Present on a replay.",
                        },
                    },
                    links={
                        "GetJob": link("getJob", {"jobId": "$response.body#/jobId"}),
                        "CancelJob": link("cancelJob", {"jobId": "$response.body#/jobId"}),
                        "PauseJob": link("pauseJob", {"jobId": "$response.body#/jobId"}),
                        "ResumeJob": link("resumeJob", {"jobId": "$response.body#/jobId"}),
                        "TriggerJob": link("triggerJob", {"jobId": "$response.body#/jobId"}),
                        "ListExecutions": link(
                            "listExecutions", {"jobId": "$response.body#/jobId"}
                        ),
                        "UpdateJob": link("updateJob", {"jobId": "$response.body#/jobId"}),
                    },
                ),
                **refused("400", "413", "415", "422", "503", "401", "403", "429", "409:NameTaken"),
            },
        },
        "get": {
            "operationId": "listJobs",
            "summary": "List jobs, ordered by id",
            "parameters": [
                {
                    "name": "status",
                    "in": "query",
                    "schema": {
                        "type": "string",
                        "pattern": "^([aA][cC][tT][iI][vV][eE]|[pP][aA][uU][sS][eE][dD]|[cC][aA][nN][cC][eE][lL][lL][eE][dD]|[sS][uU][cC][cC][eE][eE][dD][eE][dD]|[fF][aA][iI][lL][eE][dD])?$",
                        "examples": [
                            "active",
                            "paused",
                            "cancelled",
                            "succeeded",
                            "failed",
                            "ACTIVE",
                            "PAUSED",
                            "CANCELLED",
                            "SUCCEEDED",
                            "FAILED",
                        ],
                    },
                    "description": "active, paused, cancelled, succeeded or failed, in any case; "
                    "empty: every status.",
                },
                {
                    "name": "tenant",
                    "in": "query",
                    "schema": {
                        "type": "string",
                        "pattern": "^([A-Za-z0-9][A-Za-z0-9_.\\-]{0,63})?$",
                    },
                    "description": "Only this tenant's jobs (admins; a tenant token sees its own "
                    "tenant's only, and an empty list for another). Empty: no filter.",
                },
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                    "description": "At most this many jobs. A page also ends once its jobs "
                    "pass 4 MiB of JSON (it holds one at least), with `next` set: big jobs "
                    "(payloads, env, stdin, HTTP headers) come in more pages, so follow `next` "
                    "rather than count.",
                },
                {
                    "name": "after",
                    "in": "query",
                    "schema": {"type": "string", "pattern": f"^({JOB_ID_REGEX})?$"},
                    "description": "`next` of the previous page (a job id). Empty: the first page.",
                },
                {
                    "name": "name",
                    "in": "query",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                    "description": "Only jobs with this name: the tenant's live holder of the name "
                    "first (admins: each tenant's), then cancelled jobs that had it, "
                    "newest first. One page (`next` is null).",
                },
            ],
            "responses": {
                "200": answer(
                    "A page of jobs.",
                    "JobPage",
                    links={
                        "GetFirstJob": link("getJob", {"jobId": "$response.body#/jobs/0/jobId"})
                    },
                ),
                **refused("400", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/batch": {
        "post": {
            "operationId": "createJobs",
            "summary": "Register up to 1,000 jobs in one request and one commit",
            "description": (
                "Each item is a `POST /v1/jobs` body plus an optional `idempotencyKey` "
                "(the header's role, per job). Validated all or nothing: the first "
                "invalid job refuses the whole batch (its `field` names it, e.g. "
                "`jobs[3].schedule`). The tenant's `submitRate` is charged for all the "
                "jobs at once (429 for the batch; a batch larger than `submitBurst` "
                "can never pass). Then the batch commits in one transaction, and the "
                "answer lists one result per job, in order, with the status a single "
                "`POST /v1/jobs` would have answered: 201 created, 200 an idempotent "
                "replay, 422 `idempotency_key_reused`, 429 `quota_exceeded` (over the "
                "tenant's `maxJobs`; the others are created), or 500 `internal_error` "
                "with an `errorId` for a job the store failed on alone (the others are "
                "created: one job never fails its neighbours). The request body is "
                "limited to 1 MiB like every other. A job with a `runAs` this daemon "
                "cannot honour refuses the whole batch (422 `run_as_refused`, `field` "
                "naming the job)."
            ),
            "requestBody": json_body("JobBatchRequest"),
            "responses": {
                "200": answer(
                    "One result per job, in order.",
                    "JobBatchResponse",
                    links={
                        "GetFirstJob": link("getJob", {"jobId": "$response.body#/results/0/jobId"}),
                        "TriggerFirstJob": link(
                            "triggerJob", {"jobId": "$response.body#/results/0/jobId"}
                        ),
                    },
                ),
                **refused("400", "413", "415", "422", "503", "401", "403", "429"),
            },
        },
    },
    "/v1/jobs/{jobId}": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "get": {
            "operationId": "getJob",
            "summary": "A job",
            "responses": {
                "200": answer("The job.", "Job"),
                **refused("404", "503", "401", "403"),
            },
        },
        "delete": {
            "operationId": "cancelJob",
            "summary": "Cancel a job",
            "description": (
                "No further runs; pending runs are cancelled and running ones aborted "
                "(their next heartbeat gets 409 `cancelled`). The job is kept, with "
                "its history: `GET` still answers it (status `CANCELLED`)."
            ),
            "responses": {
                "200": answer("The cancelled job.", "Job"),
                **refused("404", "503", "401", "403"),
            },
        },
        "patch": {
            "operationId": "updateJob",
            "summary": "Update a job in place",
            "description": (
                "A JSON merge patch (RFC 7386) of the job's definition, in the members "
                "of a create body (`JobRequest`): the members named replace the job's "
                "(`retryPolicy` merges member by member), `null` removes an optional "
                "member (its default applies again), the others are kept. `schedule` "
                "and `runAt` replace each other, and so do the targets (`command`, "
                "`http`, `python`, `queue`, `target`; a target is replaced whole). The "
                "result is validated exactly as a create body, with the same errors. "
                "The job keeps its id, tenant and history. When the schedule, runAt or "
                "timezone changes, `nextRunAt` is recomputed from now, a finished "
                "one-off job is scheduled again, and executions claimed ahead for the "
                "old schedule (PENDING, never started, not yet due) are cancelled with "
                "the reason `superseded`; executions already due or running go on. "
                "Every execution runs the definition current when it starts (target, "
                "payload, timeouts); it keeps the priority and maxAttempts it was "
                "created with."
            ),
            "requestBody": json_body("JobPatch"),
            "responses": {
                "200": answer("The updated job.", "Job"),
                **refused("400", "404"),
                "409": answer(
                    "The job is cancelled (`conflict`), or another live job of the tenant has the new name (`name_taken`, with that job's `jobId`).",
                    schema={
                        "allOf": [
                            {"$ref": "#/components/schemas/Problem"},
                            {"type": "object", "properties": {"jobId": {"type": "string"}}},
                        ]
                    },
                    media="application/problem+json",
                ),
                **refused("413", "415", "422", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/{jobId}/pause": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "post": {
            "operationId": "pauseJob",
            "summary": "Pause a job (no runs until resumed)",
            "responses": {
                "200": answer(
                    "The paused job.",
                    "Job",
                    links={"ResumeJob": link("resumeJob", {"jobId": "$response.body#/jobId"})},
                ),
                **refused("404", "409", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/{jobId}/resume": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "post": {
            "operationId": "resumeJob",
            "summary": "Resume a paused job; the next run is computed from now",
            "responses": {
                "200": answer(
                    "The active job.",
                    "Job",
                    links={"PauseJob": link("pauseJob", {"jobId": "$response.body#/jobId"})},
                ),
                **refused("404", "409", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/{jobId}/trigger": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "post": {
            "operationId": "triggerJob",
            "summary": "Run a job now, outside its schedule",
            "description": (
                "The run is a submission: it takes one token of the tenant's "
                "`submitRate` (429 with `Retry-After` when its bucket is empty). A "
                "local target's run is also refused (429, `quota: waiting`) while "
                f"{MAX_TENANT_WAITING} of the tenant's runs wait to start on the node."
            ),
            "responses": {
                "202": answer(
                    "The new PENDING execution.",
                    "Execution",
                    headers={"Location": {"schema": {"type": "string"}}},
                    links={
                        "GetExecution": link(
                            "getExecution", {"executionId": "$response.body#/executionId"}
                        ),
                        "Heartbeat": link(
                            "heartbeat", {"executionId": "$response.body#/executionId"}
                        ),
                        "Complete": link(
                            "complete", {"executionId": "$response.body#/executionId"}
                        ),
                        "RecordEffect": link(
                            "recordEffect", {"executionId": "$response.body#/executionId"}
                        ),
                        "ReplayDead": link(
                            "replayDead", {"executionId": "$response.body#/executionId"}
                        ),
                        "PurgeDead": link(
                            "purgeDead", {"executionId": "$response.body#/executionId"}
                        ),
                    },
                ),
                **refused("404", "409", "503", "401", "403", "429"),
            },
        },
    },
    "/v1/jobs/{jobId}/executions": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "get": {
            "operationId": "listExecutions",
            "summary": "A job's execution history, newest first",
            "parameters": [
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
                },
                {
                    "name": "before",
                    "in": "query",
                    "schema": {
                        "type": "string",
                        "anyOf": [{"pattern": "^[0-9]{0,18}$"}, {"format": "instant"}],
                    },
                    "description": "`next` of the previous page (scheduledAt in ms, at most 18 "
                    "digits), or an RFC 3339 instant with a UTC offset (format "
                    "`instant`); empty: the newest.",
                },
            ],
            "responses": {
                "200": answer(
                    "A page of executions.",
                    "ExecutionPage",
                    links={
                        "GetFirstExecution": link(
                            "getExecution",
                            {"executionId": "$response.body#/executions/0/executionId"},
                        )
                    },
                ),
                **refused("400", "404", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/{jobId}/backfill": {
        "parameters": [
            path_param("jobId", "A job id (`j…`) or its unique name."),
        ],
        "post": {
            "operationId": "backfillJob",
            "summary": "Run a job for every tick of a past range that has no execution yet",
            "description": (
                "One execution per tick of `[from, to]` of the job's schedule (its "
                "active window and calendars applied) that has none yet, at batch "
                "priority, so live work goes first. The `(jobId, scheduledAt)` "
                "identity makes a repeated backfill create nothing. Each tick of the "
                "range takes a token of the tenant's `submitRate`, all or none (429; a "
                "range of more ticks than `submitBurst` can never pass: backfill smaller "
                "ranges); a dry run takes none. A local target's ticks are refused "
                "whole (429, `quota: waiting`) when they would take the tenant's runs "
                f"waiting to start on the node past {MAX_TENANT_WAITING}."
            ),
            "requestBody": json_body("BackfillRequest"),
            "responses": {
                "200": answer("dryRun: the plan.", "BackfillResult"),
                "202": answer("The executions created.", "BackfillResult"),
                **refused("400", "404", "409", "422", "401", "403", "503", "429"),
            },
        },
        "delete": {
            "operationId": "cancelBackfill",
            "summary": "Cancel a job's backfill executions that have not started",
            "responses": {
                "200": answer("How many were cancelled.", "BackfillCancelled"),
                **refused("404", "401", "403", "503"),
            },
        },
    },
    "/v1/jobs/{jobId}/chain": {
        "parameters": [
            path_param("jobId", "A job id (`j…`) or its unique name."),
        ],
        "put": {
            "operationId": "setJobChain",
            "summary": "Replace the jobs a job triggers on its final outcomes",
            "requestBody": json_body("ChainRequest"),
            "responses": {
                "200": answer("The job as changed.", "Job"),
                **refused("400", "404", "409", "422", "401", "403", "503"),
            },
        },
    },
    "/v1/jobs/{jobId}/upcoming": {
        "parameters": [
            path_param("jobId", "A job id (`j…`) or its unique name."),
        ],
        "get": {
            "operationId": "upcomingTicks",
            "summary": "A job's next ticks that will run, calendars and active window applied",
            "parameters": [
                {
                    "name": "count",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 5},
                },
                {
                    "name": "from",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "format": "instant-or-delay"},
                    "description": "Ticks strictly after this instant, or `+DURATION` from now "
                    "(default now).",
                },
            ],
            "responses": {
                "200": answer("The ticks, and the excluded ones met on the way.", "Upcoming"),
                **refused("400", "404", "401", "403", "503"),
            },
        },
    },
    "/v1/calendars": {
        "get": {
            "operationId": "listCalendars",
            "summary": (
                "Calendars (a tenant's own; an admin's: every tenant's, or one with ?tenant=)"
            ),
            "parameters": [
                CALENDAR_TENANT,
            ],
            "responses": {
                "200": answer("The calendars.", "CalendarList"),
                **refused("400", "401", "403", "503"),
            },
        },
    },
    "/v1/calendars/{name}": {
        "parameters": [
            {
                "name": "name",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$"},
                "description": "A calendar name.",
            },
        ],
        "get": {
            "operationId": "getCalendar",
            "summary": "One calendar",
            "parameters": [
                CALENDAR_TENANT,
            ],
            "responses": {
                "200": answer("The calendar.", "Calendar"),
                **refused("400", "404", "401", "403", "503"),
            },
        },
        "put": {
            "operationId": "putCalendar",
            "summary": "Create or replace a calendar",
            "description": (
                f"A tenant keeps at most {MAX_TENANT_CALENDARS:,} calendars: a new name "
                "beyond them is refused (422 `too_many_calendars`); a replacement always "
                "passes. A tenant being deleted takes no calendar (409 `tenant_deleting`)."
            ),
            "parameters": [
                CALENDAR_TENANT,
            ],
            "requestBody": json_body("CalendarRequest"),
            "responses": {
                "200": answer("The calendar as stored.", "Calendar"),
                **refused("400", "404", "409", "422", "401", "403", "503"),
            },
        },
        "delete": {
            "operationId": "deleteCalendar",
            "summary": "Delete a calendar (409 while a job observes it)",
            "parameters": [
                CALENDAR_TENANT,
            ],
            "responses": {
                "204": answer("Deleted."),
                **refused("400", "404", "409", "401", "403", "503"),
            },
        },
    },
    "/v1/executions/{executionId}": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "get": {
            "operationId": "getExecution",
            "summary": "An execution, with its output tail",
            "responses": {
                "200": answer("The execution.", "Execution"),
                **refused("404", "503", "401", "403"),
            },
        },
    },
    "/v1/workers/claim": {
        "post": {
            "operationId": "claimExecutions",
            "summary": "Remote workers: lease executions of queue targets (long poll)",
            "description": (
                "Takes up to `max` dispatchable executions of the given queues, oldest "
                "first, each started with `leaseEpoch` + 1 exactly as a local worker's "
                "would be. Worker tokens see their tenant's executions only. Two "
                "concurrent claimers never get the same execution. While the node stops, "
                "waiting polls answer at once and new ones get 503 with Retry-After: claim "
                "from another node, or again once it is back."
            ),
            "requestBody": json_body("ClaimRequest"),
            "responses": {
                "200": answer(
                    "The executions now leased to the caller (an empty list when none came within waitSec).",
                    "ClaimResponse",
                    links={
                        "Heartbeat": link(
                            "heartbeat", {"executionId": "$response.body#/executions/0/executionId"}
                        ),
                        "Complete": link(
                            "complete", {"executionId": "$response.body#/executions/0/executionId"}
                        ),
                        "RecordEffect": link(
                            "recordEffect",
                            {"executionId": "$response.body#/executions/0/executionId"},
                        ),
                    },
                ),
                **refused("400", "413", "415", "422", "503", "401", "403"),
            },
        },
    },
    "/v1/executions/{executionId}/heartbeat": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "post": {
            "operationId": "heartbeat",
            "summary": "Extend a lease (fenced by leaseEpoch)",
            "description": "A worker aborts immediately if it receives 409.",
            "requestBody": json_body("LeaseRequest"),
            "responses": {
                "200": answer("Lease extended.", "HeartbeatResponse"),
                **refused(
                    "409:LeaseConflict", "400", "413", "415", "422", "404", "503", "401", "403"
                ),
            },
        },
    },
    "/v1/executions/{executionId}/complete": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "post": {
            "operationId": "complete",
            "summary": "Report a run's result (fenced by leaseEpoch)",
            "requestBody": json_body("CompleteRequest"),
            "responses": {
                "200": answer("Applied: the execution's status afterwards.", "CompleteResponse"),
                **refused(
                    "409:LeaseConflict", "400", "413", "415", "422", "404", "503", "401", "403"
                ),
            },
        },
    },
    "/v1/executions/{executionId}/effects": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "post": {
            "operationId": "recordEffect",
            "summary": "Record a side effect once (execution idempotency, fenced by leaseEpoch)",
            "requestBody": json_body("EffectRequest"),
            "responses": {
                "201": answer("Recorded: perform the effect.", "EffectResponse"),
                "200": answer(
                    "Duplicate: the effect was already recorded; do not repeat it.",
                    "EffectResponse",
                ),
                "409": answer(
                    "Fenced (`reason: fenced`): stale leaseEpoch or not running; or `wrong_worker`: the "
                    "current leaseEpoch was granted to another workerId. Nothing recorded, abort.",
                    "Problem",
                    media="application/problem+json",
                ),
                "422": answer(
                    f"A body that breaks the schema, or `too_many_effects`: the execution recorded "
                    f"{MAX_EFFECTS_PER_EXECUTION} effects already (all attempts together); nothing "
                    "recorded, do not perform the effect.",
                    "Problem",
                    media="application/problem+json",
                ),
                **refused("400", "413", "415", "404", "503", "401", "403"),
            },
        },
    },
    "/v1/dlq": {
        "get": {
            "operationId": "listDead",
            "summary": "The dead-letter queue, ordered by execution id",
            "parameters": [
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                },
                {
                    "name": "after",
                    "in": "query",
                    "schema": {"type": "string", "pattern": f"^({EXECUTION_ID_REGEX})?$"},
                    "description": "`next` of the previous page (an execution id). Empty: the first page.",
                },
            ],
            "responses": {
                "200": answer(
                    "A page of DEAD executions.",
                    "ExecutionPage",
                    links={
                        "ReplayDead": link(
                            "replayDead",
                            {"executionId": "$response.body#/executions/0/executionId"},
                        ),
                        "PurgeDead": link(
                            "purgeDead", {"executionId": "$response.body#/executions/0/executionId"}
                        ),
                    },
                ),
                **refused("400", "503", "401", "403"),
            },
        },
    },
    "/v1/dlq/{executionId}/replay": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "post": {
            "operationId": "replayDead",
            "summary": "Replay a dead-lettered execution (a fresh series of attempts)",
            "description": (
                "The replay is a submission, as a trigger is: it takes one token of the "
                "tenant's `submitRate` (429 with `Retry-After` when its bucket is empty). A "
                "local target's replay is also refused (429, `quota: waiting`) while "
                f"{MAX_TENANT_WAITING} of the tenant's runs wait to start on the node."
            ),
            "responses": {
                "200": answer("The PENDING execution.", "Execution"),
                **refused("404", "409", "503", "401", "403", "429"),
            },
        },
    },
    "/v1/dlq/{executionId}": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "delete": {
            "operationId": "purgeDead",
            "summary": "Delete a dead-lettered execution",
            "responses": {
                "200": answer("Purged.", "Purged"),
                **refused("404", "503", "401", "403"),
            },
        },
    },
    "/v1/status": {
        "get": {
            "operationId": "status",
            "summary": "Node health and counters",
            "responses": {
                "200": answer("Status.", "Status"),
                **refused("503", "401", "403"),
            },
        },
    },
    "/v1/config": {
        "get": {
            "operationId": "nodeConfig",
            "summary": "The configuration this daemon runs with, each key's value and origin",
            "description": (
                "Every key of `cronwheel serve` (cronwheel.toml(5)) as this daemon runs with it: its value "
                "and where it came from (`flag`, `env CRONWHEEL_<KEY>`, `FILE:LINE`, `default`). A key set "
                "nowhere shows the value the daemon chose (its node id, workers, data directory…) or null. "
                "A SIGHUP that applies a key updates it; one it refuses leaves the running value. "
                "Passwords in URLs are masked. `cronwheel config` prints it. Admin only."
            ),
            "responses": {
                "200": answer("The configuration.", "NodeConfig"),
                **refused("404", "401", "403"),
            },
        },
    },
    "/v1/whoami": {
        "get": {
            "operationId": "whoami",
            "summary": "Who is calling: the caller's role, tenant and token",
            "description": (
                "What the credentials of this request are: `role` (admin, tenant, worker or metrics), "
                "`tenant` (null for admin and metrics), `tokenId` (null over the local Unix socket "
                "without a token) and `via`. Any authenticated caller; `cronwheel whoami` prints it, "
                "and `cronwheel tenant show` with a tenant's token shows its own tenant by it."
            ),
            "responses": {
                "200": answer("The caller.", "Whoami"),
                **refused("401", "403"),
            },
        },
    },
    "/v1/herd": {
        "get": {
            "operationId": "herd",
            "summary": (
                "The herd preview: ticks per second of the active jobs over the coming window"
            ),
            "description": (
                "Counts every tick of every ACTIVE job (a tenant token: its own jobs; "
                "admin: all) in each second of [now, now + window), and summarises the "
                "busiest seconds, the total, max and p99 per second, and ticks per "
                "minute. One-off jobs count at their run time; jitterSec is not "
                "applied (it delays dispatch, not the tick). Jobs with calendars or an "
                "active window are counted one by one; a count that would take more than "
                "200,000 schedule evaluations is refused (422 herd_too_large: ask for a "
                "shorter window). The node counts one herd at a time."
            ),
            "parameters": [
                {
                    "name": "window",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 60, "maximum": 86400, "default": 3600},
                    "description": "Seconds from now.",
                },
                {
                    "name": "top",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "description": "How many of the busiest seconds to list.",
                },
            ],
            "responses": {
                "200": answer("The herd summary.", "Herd"),
                **refused("400", "422", "503", "401", "403"),
            },
        },
    },
    "/v1/status/activity": {
        "get": {
            "operationId": "activity",
            "summary": (
                "The last hour's dispatch lag per minute, and what this node's workers run now"
            ),
            "description": (
                "Admin only. lagHistory: one entry per minute for the last 60 minutes, "
                "oldest first, the current (partial) minute last; p50/p99/max of the "
                "first attempts that started in that minute (startedAt - scheduledAt), "
                "from a log-linear histogram that may overstate a percentile by up to "
                "6.25 % and never understates it; null when no execution started that "
                "minute. running: executions in this node's local workers, "
                "longest-running first (at most 100; runningTotal counts all of them). "
                "The dashboard's overview draws these."
            ),
            "responses": {
                "200": answer("Activity.", "Activity"),
                **refused("401", "403"),
            },
        },
    },
    "/healthz": {
        "get": {
            "operationId": "healthz",
            "summary": "Liveness",
            "responses": {
                "200": answer("Alive.", "Health"),
            },
            "security": [],
        },
    },
    "/v1/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "responses": {
                "200": answer("OpenAPI 3.1 document.", schema={"type": "object"}),
                **refused("401"),
            },
        },
    },
    "/v1/events": {
        "get": {
            "operationId": "streamEvents",
            "summary": "The daemon's event log as newline-delimited JSON, optionally followed",
            "description": (
                "The matching tail of the node's recent events (its ring buffer), one "
                "JSON object per line (`{ts, event, node, seq, ...}`). With `follow=1` "
                "the response stays open and every new matching event is written as it "
                "happens (`cronwheel logs -f`). Each follower has a bounded buffer: a "
                'client that reads too slowly loses events and receives a `{"event": '
                '"stream.dropped", "dropped": N}` line in their place. The stream ends '
                "when the daemon shuts down, once its running executions have ended. "
                "The `Cronwheel-Cursor` header says where the answer starts (`LOG:SEQ`: "
                "the event log of this start of the daemon, and the `seq` before the "
                "first event sent); moved on to each event's `seq` as it comes, and "
                "given back as `after`, it resumes the stream with the very next event, "
                "of this daemon or of the one started after it (`cronwheel logs -f` "
                "across a restart)."
            ),
            "parameters": [
                {
                    "name": "follow",
                    "in": "query",
                    "description": "1: keep the response open and stream new events.",
                    "schema": {
                        "type": "string",
                        "enum": ["0", "1", "true", "false"],
                        "default": "0",
                    },
                },
                {
                    "name": "job",
                    "in": "query",
                    "description": "Only events of this job id (or of its executions).",
                    "schema": {"type": "string"},
                },
                {
                    "name": "event",
                    "in": "query",
                    "description": "Only this event name, or names starting with a prefix that ends "
                    "in '.' (`execution.`).",
                    "schema": {"type": "string"},
                },
                {
                    "name": "since",
                    "in": "query",
                    "description": "Only events not older than this: a duration back from now (`90s`, "
                    "`1h`, `2d`) or an RFC 3339 instant.",
                    "schema": {"type": "string"},
                },
                {
                    "name": "n",
                    "in": "query",
                    "description": "How many past events to send first (default 100, or 10 with "
                    "follow=1); not used with `after`.",
                    "schema": {"type": "integer", "minimum": 0, "maximum": 10000},
                },
                {
                    "name": "after",
                    "in": "query",
                    "description": "A `Cronwheel-Cursor` (moved on to the last event had): the "
                    "events after it that match the filters, in place of the last `n`. Of this "
                    "event log, those after its `seq` (a `seq` it has not reached is a 400); of another (the daemon restarted since, "
                    "or another node), all of this one. Events no longer kept (the last 10,000 "
                    "are, fewer past 16 MiB) are one `stream.dropped` line counting them, matching or not.",
                    "schema": {"type": "string", "pattern": "^[0-9a-f]{16}:[0-9]{1,18}$"},
                },
            ],
            "responses": {
                "200": answer(
                    "Events, one JSON object per line.", "Event", media="application/x-ndjson",
                    headers={
                        "Cronwheel-Cursor": {
                            "schema": {"type": "string", "pattern": "^[0-9a-f]{16}:[0-9]{1,18}$"},
                            "description": "Where the answer starts: the event log and the `seq` "
                            "before its first event.",
                        },
                    },
                ),
                **refused("400", "401", "403"),
            },
        },
    },
    "/metrics": {
        "get": {
            "operationId": "metrics",
            "summary": "Prometheus metrics of this node",
            "description": (
                "Prometheus text exposition format. Metric names and labels are listed "
                "in docs/operations.md; labels never carry job or execution ids. Admin "
                "and metrics tokens (`cronwheel token create --role metrics`)."
            ),
            "responses": {
                "200": answer("Metrics.", schema={"type": "string"}, media="text/plain"),
                **refused("401", "403"),
            },
        },
    },
    "/v1/tenants": {
        "get": {
            "operationId": "listTenants",
            "summary": "List tenants (admin)",
            "description": "Every tenant with its settings and this node's live numbers.",
            "responses": {
                "200": answer(
                    "Tenants.",
                    "TenantList",
                    links={
                        "UpdateFirstTenant": link(
                            "updateTenant", {"name": "$response.body#/tenants/0/name"}
                        )
                    },
                ),
                **refused("401", "403", "503"),
            },
        },
        "post": {
            "operationId": "createTenant",
            "summary": "Create a tenant (admin)",
            "requestBody": json_body("TenantRequest"),
            "responses": {
                "201": answer(
                    "Created.",
                    "Tenant",
                    links={
                        "GetTenant": link("getTenant", {"name": "$response.body#/name"}),
                        "UpdateTenant": link("updateTenant", {"name": "$response.body#/name"}),
                    },
                ),
                **refused("400", "401", "403", "409", "422", "503"),
            },
        },
    },
    "/v1/tenants/{name}": {
        "parameters": [
            path_param("name", "A tenant name."),
        ],
        "get": {
            "operationId": "getTenant",
            "summary": "One tenant: its settings, its usage against its quotas (admin; a tenant token: its own)",
            "description": (
                "The tenant's settings, its registered jobs (`jobs`, what `maxJobs` counts), "
                "this node's live numbers, and `effectiveHttpAllow`: the HTTP allow-list that "
                "applies to it (its own `httpAllow`, or the daemon's `--http-allow` when "
                "`httpAllow` is null). A tenant token may read its own tenant only: another "
                "name answers 404, as an unknown one does. A tenant being deleted answers with "
                "`status: deleting` and in `jobs` its live jobs still to cancel (0 once a forced "
                "deletion has cancelled them all; the `Location` its deletion answered), until "
                "retention has removed it: then 404."
            ),
            "responses": {
                "200": answer("The tenant.", "Tenant"),
                **refused("401", "403", "404", "503"),
            },
        },
        "patch": {
            "operationId": "updateTenant",
            "summary": "Change a tenant's weight, quotas or permissions (admin)",
            "description": "A tenant being deleted takes no change (409 `tenant_deleting`).",
            "requestBody": json_body("TenantPatch"),
            "responses": {
                "200": answer("The tenant as changed.", "Tenant"),
                **refused("400", "401", "403", "404", "409", "422", "503"),
            },
        },
        "delete": {
            "operationId": "deleteTenant",
            "summary": "Delete a tenant (admin): revoke its tokens now, remove its rows in the background",
            "description": (
                "Marks the tenant `deleting` and revokes every token of it in the same transaction; "
                "from then on it takes no new job and no new token, and a tenant of its name "
                "cannot be created (409 `tenant_deleting`) until retention has removed every row "
                "that carried its name (executions, notifications, jobs with their names and "
                "idempotency keys, calendars, tokens) and then the tenant itself. While it has "
                "live (active or paused) jobs or executions in flight it is refused (409 "
                "`tenant_not_empty`, with `liveJobs` and `inFlight`), unless `force=true`, which "
                "cancels its jobs as `DELETE /v1/jobs/{jobId}` does (running executions aborted): "
                "in the background, after the answer, a hundred per transaction, however "
                "many it has. The answer (202, with a `Location` to follow it) is the tenant, "
                "`status: deleting`, and in `jobs` its live jobs still to cancel; `GET` of that "
                "location answers the same with `jobs` counting down to 0, then 404 once "
                "retention has removed it. The `default` tenant cannot be deleted (409 "
                "`default_tenant`). Asking again answers the same (a forced ask starts a "
                "cancellation that a stop cut short again). Meanwhile every change to it or its "
                "objects that would add to it (`PATCH`, its `notify`, its calendars, a trigger, "
                "backfill, chain, resume, ping or replay of its jobs) is refused, 409 "
                "`tenant_deleting`, and `GET /v1/tenants` lists it with `status: deleting`."
            ),
            "parameters": [
                {
                    "name": "force",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "enum": ["0", "1", "true", "false", "yes", "no"]},
                    "description": "Cancel its live jobs (and abort their running executions) first.",
                },
            ],
            "responses": {
                "202": answer("The tenant, being deleted: `jobs` is its live jobs still to cancel.", "Tenant",
                              headers={"Location": {"schema": {"type": "string"},
                                                    "description": "The tenant (`GET`), to follow its deletion."}}),
                **refused("400", "401", "403", "404", "409", "503"),
            },
        },
    },
    "/v1/tokens": {
        "get": {
            "operationId": "listTokens",
            "summary": "List tokens (admin), never their secrets",
            "parameters": [
                {
                    "name": "tenant",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "maxLength": 64},
                    "description": "Only this tenant's tokens (at most 64 characters; empty: every "
                    "token).",
                },
            ],
            "responses": {
                "200": answer("Tokens.", "TokenList"),
                **refused("401", "403", "503", "400"),
            },
        },
        "post": {
            "operationId": "createToken",
            "summary": "Create a token (admin); the secret is in this answer only",
            "requestBody": json_body("TokenRequest"),
            "responses": {
                "201": answer(
                    "Created.",
                    "TokenCreated",
                    links={
                        "RevokeToken": link("revokeToken", {"tokenId": "$response.body#/tokenId"})
                    },
                ),
                **refused("400", "401", "403", "404", "409", "422", "503"),
            },
        },
    },
    "/v1/tokens/{tokenId}": {
        "parameters": [
            path_param("tokenId", "A token id, `tk_` + 16 hex digits."),
        ],
        "delete": {
            "operationId": "revokeToken",
            "summary": (
                "Revoke a token (admin); it stops working at once on this node, within "
                "seconds on others"
            ),
            "responses": {
                "200": answer("The revoked token.", "Token"),
                **refused("401", "403", "404", "503"),
                "409": answer(
                    "The last active admin token: `reason` is `last_admin_token`. Create another admin token first (or, as the daemon's user on its machine, use the Unix socket: docs/security.md).",
                    "Problem",
                    media="application/problem+json",
                ),
            },
        },
    },
    "/": {
        "get": {
            "operationId": "dashboard",
            "summary": "The web dashboard (HTML)",
            "description": (
                "A page with no data of its own, served without credentials; its "
                "script calls this API with the user's bearer token (asked for on the "
                "first 401, kept in the tab's sessionStorage), or with none over the "
                "local Unix socket. Served with a strict Content-Security-Policy "
                "(same-origin scripts and styles only, no inline script, no framing) "
                "and X-Content-Type-Options: nosniff."
            ),
            "responses": {
                "200": answer("The page.", schema={"type": "string"}, media="text/html"),
            },
            "security": [],
        },
    },
    "/ui/{asset}": {
        "parameters": [
            {
                "name": "asset",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+\\.(js|css|svg)$"},
                "description": "A file of the dashboard (app.js, style.css, …).",
            },
        ],
        "get": {
            "operationId": "dashboardAsset",
            "summary": "A script, stylesheet or icon of the web dashboard",
            "description": (
                "Static files shipped in the package, served without credentials with "
                "the same security headers as the page, an ETag and Cache-Control: "
                "no-cache."
            ),
            "responses": {
                "200": {
                    "description": "The file.",
                    "content": {
                        "text/javascript": {"schema": {"type": "string"}},
                        "text/css": {"schema": {"type": "string"}},
                        "image/svg+xml": {"schema": {"type": "string"}},
                    },
                },
                "304": answer("Not modified (If-None-Match matched the ETag)."),
                **refused("404"),
            },
            "security": [],
        },
    },
    "/v1/executions/{executionId}/output": {
        "parameters": [
            path_param("executionId", "An execution id, `{jobId}:{scheduledAtMs}`."),
        ],
        "get": {
            "operationId": "getExecutionOutput",
            "summary": "An execution's output, live while it runs",
            "description": (
                "Plain text. While the execution runs on this node's workers: what it "
                "printed so far (a bounded tail, up to 64 KiB), and with `follow=1` "
                "each new chunk as the worker forwards it, until this attempt ends "
                "(then the response ends). Workers forward a command's stdout/stderr "
                "as it is produced, bounded per execution (at most 32 KiB/s after a 64 "
                "KiB burst, in chunks of at most 16 KiB, at most ten a second); when a "
                "command prints faster, the oldest waiting bytes are skipped and a "
                "line `[cronwheel: N bytes of output not shown live]` stands in their "
                "place (the stored output, the result's tail, is complete). Otherwise "
                "the stored output (the tail its last attempt ended with; empty before "
                "it ran); `follow=1` on an execution that has not started yet waits "
                "for it. In a cluster, output is live on the node whose workers run "
                "the execution; another node answers with the stored output once it "
                "ends. The `Cronwheel-Cursor` header (`EPOCH:OFFSET`) names the "
                "hand-off whose output the body is (its lease epoch: a retry's output "
                "starts again) and the byte of it the body starts at; moved on by the "
                "bytes read and given back as `after`, it resumes that output at the "
                "next byte (`cronwheel logs -f` after a broken connection). The header "
                "is absent when the body is not one hand-off's known output: followed "
                "before its next attempt starts (that output is the one of lease epoch "
                "`leaseEpoch` + 1, from its first byte), or running on another node."
            ),
            "parameters": [
                {
                    "name": "follow",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["0", "1", "true", "false", "yes", "no"]},
                    "description": "Keep the response open and stream the output as it comes, until "
                    "this attempt ends.",
                },
                {
                    "name": "after",
                    "in": "query",
                    "schema": {"type": "string", "pattern": "^[0-9]{1,18}:[0-9]{1,18}$"},
                    "description": "A `Cronwheel-Cursor` moved on by the bytes read: the output of "
                    "that hand-off from that byte, live or stored (the stored output is the "
                    "last 64 KiB: exact when the run printed no more, and no faster than the "
                    "live view forwards). Bytes no longer kept live (the last 64 KiB are) are "
                    "skipped: the header then names a later byte. For another hand-off than "
                    "the one the body is, it does not apply: the header says which it is.",
                },
            ],
            "responses": {
                "200": answer(
                    "The output, as UTF-8 text (invalid bytes and NULs replaced by U+FFFD).",
                    schema={"type": "string"},
                    media="text/plain",
                    headers={
                        "Cronwheel-Cursor": {
                            "schema": {"type": "string", "pattern": "^[0-9]{1,18}:[0-9]{1,18}$"},
                            "description": "The hand-off (lease epoch) whose output the body is, "
                            "and the byte of it the body starts at.",
                        },
                    },
                ),
                **refused("400", "404", "503", "401", "403"),
            },
        },
    },
    "/v1/jobs/{jobId}/ping": {
        "parameters": [
            path_param("jobId", "A job id (`j…`)."),
        ],
        "post": {
            "operationId": "pingJob",
            "summary": "A run elsewhere reports on a job: start, success (the default) or fail",
            "description": (
                "`jobId` may also be the job's unique name. A success or fail is "
                "recorded as a finished execution (history), moves the dead-man's "
                "window (success) and is told to the job's rules like any run; it "
                "takes a token of the tenant's `submitRate` (429 with `Retry-After` "
                "when its bucket is empty), a start takes none. Worker, tenant and "
                "admin tokens may ping."
            ),
            "requestBody": json_body("PingRequest", required=False),
            "responses": {
                "200": answer("The ping as recorded.", "PingResponse"),
                **refused("400", "404", "409", "422", "401", "403", "503", "429"),
            },
        },
    },
    "/v1/notifications": {
        "get": {
            "operationId": "listNotifications",
            "summary": "Notifications, newest first (status=DEAD: their dead-letter queue)",
            "parameters": [
                {"name": "jobId", "in": "query", "schema": {"type": "string", "maxLength": 200}},
                {
                    "name": "status",
                    "in": "query",
                    "schema": {
                        "type": "string",
                        "enum": ["PENDING", "RUNNING", "SENT", "DEAD", "HELD"],
                    },
                },
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                },
                {
                    "name": "before",
                    "in": "query",
                    "schema": {"type": "string", "pattern": "^[0-9]{1,18}[|].{1,500}$"},
                    "description": "The `next` of the previous page.",
                },
            ],
            "responses": {
                "200": answer("A page of notifications.", "NotificationPage"),
                **refused("400", "401", "403", "503"),
            },
        },
    },
    "/v1/notifications/{notificationId}": {
        "parameters": [
            path_param("notificationId", "A notification id, `{subject}@{ruleId}`."),
        ],
        "delete": {
            "operationId": "purgeNotification",
            "summary": "Delete a dead-lettered notification for good",
            "description": (
                "Only a DEAD notification (the notifications' dead-letter queue) can "
                "be purged; 404 otherwise."
            ),
            "responses": {
                "200": answer("Purged.", "NotificationPurged"),
                **refused("404", "503", "401", "403"),
            },
        },
    },
    "/v1/notifications/{notificationId}/replay": {
        "parameters": [
            path_param("notificationId", "A notification id, `{subject}@{ruleId}`."),
        ],
        "post": {
            "operationId": "replayNotification",
            "summary": "Send a dead-lettered or held-back notification again (attempts from zero)",
            "responses": {
                "200": answer("The PENDING notification.", "Notification"),
                **refused("404", "409", "401", "403", "503"),
            },
        },
    },
    "/v1/tenants/{name}/notify": {
        "parameters": [
            path_param("name", "A tenant name."),
        ],
        "get": {
            "operationId": "getTenantNotify",
            "summary": (
                "A tenant's default notification rules (for its jobs with none of their own; admin)"
            ),
            "responses": {
                "200": answer("The default rules.", "TenantNotifyAnswer"),
                **refused("404", "409", "401", "403", "503"),
            },
        },
        "put": {
            "operationId": "setTenantNotify",
            "summary": "Replace a tenant's default notification rules (admin)",
            "requestBody": json_body("TenantNotify"),
            "responses": {
                "200": answer("The default rules as saved.", "TenantNotifyAnswer"),
                **refused("400", "404", "409", "422", "401", "403", "503"),
            },
        },
    },
}
