"""schemathesis hooks for ``tests/integration/test_api_fuzz.py`` (loaded by the ``st`` CLI through
``SCHEMATHESIS_HOOKS=tests.support.fuzz_hooks``).

Two things the OpenAPI document cannot do by itself:

* **Generate valid values for the document's own string formats.** ``schedule``, ``instant``,
  ``instant-or-delay``, ``calendar-time``, ``time-zone``, ``printable``, ``host-pattern`` and ``http-url`` are named in the document
  (each described where it is used); a client library knows nothing of them, but the fuzzer
  needs them to send bodies the server accepts, or it would never get past validation to the
  jobs, executions and tokens behind it.
* **Accept the few refusals that come from rules JSON Schema cannot state**, each written in the
  document's descriptions: two members compared (``maxBackoffSec >= initialBackoffSec``), a
  size counted in UTF-8 bytes rather than characters (``command``), and what depends on
  earlier requests or on the machine (an ``Idempotency-Key`` reused with another body: 422 as
  the IETF Idempotency-Key draft says; the same ``idempotencyKey`` twice in one batch; a
  ``runAs`` account that does not exist; a patch's process members against the job's target;
  the calendars and jobs a job names must exist, a backfill needs a recurring schedule; a
  remote worker's integers written as `4007.0`, which JSON Schema counts as integers).
  ``ACCEPTED_REFUSALS`` lists them; anything else the server refuses in a schema-valid request
  is a failure.
"""

from __future__ import annotations

import json
import os
import re
import string
import zoneinfo
from datetime import UTC, date, datetime
from typing import Any

import schemathesis
from hypothesis import strategies as st

# ---------------------------------------------------------------- formats


def _cron_field(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("*"),
        st.just("H"),
        st.integers(lo, hi).map(str),
        st.integers(1, max(1, hi - lo)).map(lambda n: f"*/{n}"),
        st.tuples(st.integers(lo, hi), st.integers(lo, hi)).map(lambda p: f"{min(p)}-{max(p)}"),
    )


# day of month up to 28: a cron that names Feb 30 never fires, and the server says so (400)
CRON = st.tuples(_cron_field(0, 59), _cron_field(0, 23), _cron_field(1, 28), _cron_field(1, 12), _cron_field(0, 6)).map(" ".join)
DURATION = st.tuples(st.integers(1, 10_000), st.sampled_from(["s", "m", "h", "d", "ms"])).map(lambda p: f"+{p[0]}{p[1]}")
INSTANT = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9899, 12, 31)).map(
    lambda t: t.replace(tzinfo=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
)
INSTANT_OR_DELAY = st.one_of(INSTANT, DURATION)
SCHEDULE = st.one_of(
    CRON,
    st.sampled_from(["@hourly", "@daily", "@weekly", "@every 5m", "@every 90s", "H H * * *", "0 0 * * * *"]),
    INSTANT_OR_DELAY,
)
TIME_ZONE = st.sampled_from(sorted(z for z in zoneinfo.available_timezones() if len(z) <= 64))
PRINTABLE = st.text(
    st.characters(categories=("L", "M", "N", "P", "S"), include_characters=" "), min_size=1, max_size=200
).filter(lambda s: bool(s.strip()) and s.isprintable())
_LABEL = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?\Z")
HOST_NAME = st.lists(_LABEL, min_size=1, max_size=4).map(".".join)
HOST_PATTERN = st.one_of(
    HOST_NAME,
    HOST_NAME.map(lambda h: f"*.{h}"),
    st.ip_addresses().map(str),
)
CALENDAR_TIME = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9899, 12, 31)).map(lambda t: t.strftime("%Y-%m-%dT%H:%M"))
DATE = st.dates(min_value=date(1970, 1, 1), max_value=date(9899, 12, 31)).map(lambda d: d.isoformat())
#: a URL's host name ends with a label that is not a number (``a.1`` reads as an IPv4 address)
URL_HOST = st.tuples(HOST_NAME, st.from_regex(r"\A[a-z][a-z0-9-]{0,10}\Z").filter(lambda s: not s.endswith("-"))).map(".".join)
HTTP_URL = st.tuples(
    st.sampled_from(["http", "https"]),
    URL_HOST,
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.text(string.ascii_letters + string.digits + "/-_.", max_size=40),
).map(lambda p: f"{p[0]}://{p[1]}{p[2]}/{p[3]}")

for _name, _strategy in {
    "schedule": SCHEDULE,
    "instant": INSTANT,
    "instant-or-delay": INSTANT_OR_DELAY,
    "time-zone": TIME_ZONE,
    "printable": PRINTABLE,
    "host-pattern": HOST_PATTERN,
    "http-url": HTTP_URL,
    "calendar-time": CALENDAR_TIME,
    "date": DATE,  # a calendar's dates, in the years it keeps (1970..9899: outside, a 422 the schema cannot state)
}.items():
    schemathesis.openapi.format(_name, _strategy)


# ---------------------------------------------------------------- refusals JSON Schema cannot state

#: (operation or None for any, problem field suffix, problem code, words in its detail): a
#: schema-valid request refused by a rule the document states in words only
ACCEPTED_REFUSALS = (
    (None, "retryPolicy.maxBackoffSec", "invalid_field", "must be >= initialBackoffSec"),
    (None, "command", "invalid_field", "bytes; the limit is"),
    (None, "Idempotency-Key", "idempotency_key_reused", "was already used with a different request body"),
    (None, "idempotencyKey", "invalid_field", "appears twice in this batch"),
    # the account must exist on the daemon's machine (and the daemon run as root)
    (None, "runAs", "run_as_refused", ""),
    # a patch's env/runAs/shell/stdin must suit the target the job already has
    ("PATCH /v1/jobs/{jobId}", "", "invalid_field", " applies to "),
    # a value outside its custom format (``schedule``, ``instant-or-delay``, ``time-zone``): the
    # strategies above generate valid ones, but schemathesis's coverage phase also builds
    # boundary strings ("0") where a branch of the document's rules only says "a string", and it
    # cannot check a custom format; the server's 400 is then the format's own verdict
    (None, "schedule", "invalid_schedule", ""),
    (None, "runAt", "invalid_schedule", ""),
    (None, "timezone", "invalid_timezone", ""),
    # calendars, chains, backfill and active windows (what they name must exist, or fit the
    # job's schedule; a window ends after it starts)
    (None, "", "invalid_field", "must be after start"),
    (None, "activeUntil", "invalid_field", "activeUntil must not be before activeFrom"),
    (None, "", "invalid_field", "both ends must be local times, or both instants"),
    (None, "", "invalid_field", "bounds a recurring schedule"),
    (None, "", "unknown_reference", ""),
    (None, "jobId", "bad_request", "needs a recurring schedule"),
    (None, "schedule", "bad_request", "never fires within activeFrom..activeUntil"),
    (None, "to", "invalid_field", "to must not be before from"),
    (None, "to", "bad_request", "is in the future: a backfill fills the past"),
    # the number of ticks in a backfill range depends on the job's schedule (at most 10,000)
    (None, "to", "backfill_too_large", "backfill it in smaller ranges"),
    # the input boundary: every JSON number anywhere in a body, free-form payloads included,
    # fits in 64 bits (docs/security.md); a schema cannot say so of a payload's members
    (None, "", "out_of_range", "is an integer beyond 64 bits"),
    (None, "", "invalid_value", "contains a NUL character"),
    (None, "", "invalid_query", "contains a NUL character"),
    # two notification rules that do the same (same event, channel and address) are one rule
    (None, "", "invalid_field", "repeats an earlier rule"),
    # a dead-man's window written as a duration string ("26h") is at most 366 days: a pattern
    # cannot bound the number it matches
    (None, "expectSuccessWithin", "invalid_field", "must be between 1s and 366d"),
    # an http-url's host written one way only, and no port 0 (the format's words: the strategy
    # above makes valid ones, the coverage phase may build others from its pattern)
    (None, "url", "invalid_field", ".url has "),
    (None, "url", "invalid_field", ".url carries user information"),  # a target's: credentials go in headers
    # a host-pattern's name whose last label is a number ("0", "127.1"): no URL's host can be
    # one, so no list holds it (the format's words; the coverage phase builds such boundaries)
    (None, "", "invalid_field", "reads as an IPv4 address but is not one written as four decimal numbers"),
    # the headers an HTTP target may not set, or not twice in two cases: the description's words
    (None, "", "invalid_field", "; leave it out"),
    (None, "", "invalid_field", "header names are case-insensitive"),
    (None, "", "invalid_field", "picks the virtual host"),
    # a remote worker's integers are integers as written: JSON Schema counts 4007.0 as one
    # (the members' descriptions say they are refused)
    ("POST /v1/workers/claim", "max", "invalid_field", "must be an integer (no decimal point, no exponent)"),
    *((f"POST /v1/executions/{{executionId}}/{call}", member, "invalid_field", "must be an integer (no decimal point, no exponent)")
      for call in ("heartbeat", "complete", "effects") for member in ("leaseEpoch", "exitCode")),
)


def accepted_refusal(operation: str, response_text: str) -> bool:
    try:
        problem: Any = json.loads(response_text)
    except ValueError:
        return False
    if not isinstance(problem, dict):
        return False
    field, code, detail = str(problem.get("field") or ""), problem.get("code"), str(problem.get("detail") or "")
    return any(op in (None, operation) and field.endswith(f) and code == c and words in detail
               for op, f, c, words in ACCEPTED_REFUSALS)


#: ``DELETE /v1/jobs/{jobId}`` cancels a job: the job and its history stay readable (status
#: CANCELLED), as the seed's API has it ("cancel a scheduled job or inspect execution
#: history") and the document says; schemathesis's use-after-free check expects a 404 there
KEPT_AFTER_DELETE = re.compile(r"^/v1/jobs/[^/]+(/executions|/upcoming)?$")


#: what a revocation of the run's own token is sent as instead. The stateful phase has sent
#: that DELETE as the step after creating a token, and then counted this 404 of ours as
#: "created resource not found" (ST302): filter_failure drops exactly that one
NO_SUCH_TOKEN_ID = "tk_0000000000000000"


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a positive-data refusal listed in ``ACCEPTED_REFUSALS``, a
    cancelled job read after its DELETE, and the 404 of ``NO_SUCH_TOKEN_ID``."""
    code = getattr(failure, "code", None)
    if code == "ST202":  # "Schema-valid request rejected"
        return not accepted_refusal(f"{case.method.upper()} {case.path}", response.text)
    if code == "ST301":  # "Deleted resource still available"
        return not (case.method.upper() == "GET" and KEPT_AFTER_DELETE.match(case.formatted_path))
    if code == "ST302":  # "Created resource not found": not when before_call sent another id
        return not (case.method.upper() == "DELETE" and case.formatted_path == f"/v1/tokens/{NO_SUCH_TOKEN_ID}")
    return True


# ---------------------------------------------------------------- two adjustments to what is sent

#: the token the run authenticates with (``tokenId``): revoking it would leave the rest of the
#: run answering 401, so the fuzzer never revokes it (every other token id is fair game,
#: including the daemon's own admin token and the last-admin guard)
OWN_TOKEN_ID_ENV = "CRONWHEEL_FUZZ_TOKEN_ID"
#: a claim long-polls for up to ``waitSec`` (<= 30 s) when nothing is queued; valid waits are
#: scaled into [0, 0.5] s so the run stays short (the long poll has its own tests)
CLAIM_WAIT_SCALE = 60


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    own = os.environ.get(OWN_TOKEN_ID_ENV)
    if case.method.upper() == "DELETE" and case.path == "/v1/tokens/{tokenId}" and (case.path_parameters or {}).get("tokenId") == own:
        case.path_parameters["tokenId"] = NO_SUCH_TOKEN_ID  # no such token: 404
    body = case.body
    if case.path == "/v1/workers/claim" and isinstance(body, dict):
        wait = body.get("waitSec")
        if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 30:
            body["waitSec"] = wait / CLAIM_WAIT_SCALE
