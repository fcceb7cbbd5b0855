"""Jobs as code: TOML files of job definitions, the plan that brings a tenant's jobs in line
with them, and the TOML that ``export`` writes back.

A file holds one table per job, named by the job's name, with the fields of the API's
``POST /v1/jobs`` body (the same schema)::

    [backup]
    schedule = "0 3 * * *"
    timezone = "Europe/Paris"
    command = "/usr/local/bin/backup --full"
    retryPolicy = { maxAttempts = 5 }

Pure: text in, plans and text out. Checking a body's values and telling whether two bodies
mean the same job (defaults filled in) is the caller's ``normalise``, the API's own parser.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cronwheel.core.config import ConfigError, key_lines, load_toml, table_lines
from cronwheel.core.limits import json_problem
from cronwheel.core.model import JobStatus
from cronwheel.core.words import did_you_mean, without_byte_order_mark

#: the ``managedBy`` of the jobs apply creates; ``--prune`` deletes only these
OWNER = "apply"
#: fields a file may not set: the table's name is the job's name, and apply sets managedBy
RESERVED_FIELDS = ("name", "managedBy")
#: the order fields are written in (the rest follow, sorted)
FIELD_ORDER = ("schedule", "runAt", "timezone", "command", "http", "python", "queue", "payload",
               "retryPolicy", "timeoutSec", "leaseSec", "priority", "overlap", "misfire", "jitterSec")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
LIVE_STATUSES = (JobStatus.ACTIVE.value, JobStatus.PAUSED.value)
#: a one-off job that has run is settled by its execution (docs/state-machine.md)
SETTLED_STATUSES = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value)


@dataclass(frozen=True)
class JobDef:
    """One job of a file: its name, its ``POST /v1/jobs`` body (without the name), and where."""

    name: str
    body: dict[str, Any]
    source: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


@dataclass
class Change:
    """One line of the plan. ``action``: create, update, adopt (an update that also makes the
    job apply's), unchanged or delete."""

    action: str
    name: str
    job_id: str | None = None
    body: dict[str, Any] | None = None  #: create: the full body; update: the merge patch
    fields: list[str] = field(default_factory=list)  #: update: the fields that differ


def _field_line(text: str, table_line: int, key: str) -> int:
    """The line of ``key = …`` (or of a dotted ``key.sub = …``) in the table whose header is
    at ``table_line``; the header's line when it is not there."""
    lines = text.splitlines()
    for number in range(table_line, len(lines)):
        stripped = lines[number].strip()
        if stripped.startswith("["):
            break
        if re.match(rf"""^["']?{re.escape(key)}["']?\s*[=.]""", stripped):
            return number + 1
    return table_line


def field_line(text: str, job: str, table_line: int, path: str) -> int:
    """The line of a job's field named by its JSON path (``retryPolicy.maxAttempts``,
    ``notify[0].to``): in the job's table, or in its sub-table (``[job.retryPolicy]``) when
    the field's first part is written as one; the job's line when neither holds it."""
    parts = [part.split("[", 1)[0] for part in path.split(".")]
    first = parts[0]
    sub = table_lines(text).get(f"{job}.{first}")
    if sub is not None:
        return _field_line(text, sub, parts[1]) if len(parts) > 1 else sub
    return _field_line(text, table_line, first)


def parse_job_file(text: str, source: str, allowed: Iterable[str]) -> list[JobDef]:
    """The jobs of one file; ConfigError names the file, the line and the job or field of the
    first problem (a field the API does not know, a value that is not a table, …)."""
    text = without_byte_order_mark(text)
    data = load_toml(text, source)
    allowed = set(allowed) - set(RESERVED_FIELDS)
    lines = {**key_lines(text), **table_lines(text)}
    jobs = []
    for name, body in data.items():
        line = lines.get(name, 0)
        if not isinstance(body, dict):
            raise ConfigError(source, f"{name!r} is not a job: each job is a table, [{name}] with its fields", line, name)
        for key in body:
            if key in RESERVED_FIELDS:
                why = "the table's name is the job's name" if key == "name" else "apply sets it"
                raise ConfigError(source, f"job {name!r}: {key} cannot be set in a file ({why})", _field_line(text, line, key), key)
            if key not in allowed and isinstance(body[key], dict) and body[key].keys() & allowed:
                # [group.job] (a job under a group's name, as other tools write resources)
                where = f"{toml_key(name)}.{toml_key(key)}"
                raise ConfigError(source, f"job {name!r}: unknown field; [{where}] holds the fields of a job: write it "
                                  f"as [{toml_key(key)}], a table of its own (the table's name is the job's name)",
                                  lines.get(f"{name}.{key}") or _field_line(text, line, key), key)  # fmt: skip
            if key not in allowed:
                raise ConfigError(source, f"job {name!r}: unknown field{did_you_mean(key, allowed)}; the fields are: {', '.join(sorted(allowed))}",
                                  _field_line(text, line, key), key)
        if isinstance(body.get("runAt"), str) and body["runAt"].strip().startswith("+"):
            raise ConfigError(source, f"job {name!r}: a relative runAt changes on every apply; write an RFC 3339 instant",
                              _field_line(text, line, "runAt"), "runAt")
        bad = json_problem(body)  # what the API would refuse at its door, said with the line
        if bad is not None:
            key = bad.path.split(".", 1)[0].split("[", 1)[0]
            raise ConfigError(source, f"job {name!r}: {bad.path} {bad.why}", field_line(text, name, line, bad.path), key)
        jobs.append(JobDef(name, _plain(body), source, line))
    return jobs


def _plain(value: Any) -> Any:
    """TOML's values as JSON's (dates are written as strings: the API takes RFC 3339 text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def check_unique(jobs: Sequence[JobDef]) -> None:
    seen: dict[str, JobDef] = {}
    for job in jobs:
        if job.name in seen:
            first = seen[job.name]
            raise ConfigError(job.source, f"job {job.name!r} is defined twice (first at {first.where})", job.line, job.name)
        seen[job.name] = job


def plan(
    desired: Sequence[JobDef],
    existing: Sequence[Mapping[str, Any]],
    as_request: Callable[[Mapping[str, Any]], dict[str, Any]],
    normalise: Callable[[dict[str, Any]], Any],
    prune: bool,
    adopt: bool = False,
) -> list[Change]:
    """Compare the files with the jobs the daemon has (API job objects of one tenant).

    A job is matched by name among the live (active or paused) jobs. Equal when ``normalise``
    (the API's parser, defaults filled in) gives the same for both bodies, so writing a default
    out or leaving it out is no change. An update is a merge patch: the fields that differ,
    ``null`` for one the file no longer sets. With ``prune``, live jobs that apply created
    (``managedBy`` = apply) and no file defines are deleted; nothing else ever is.
    A same-named job made by hand is taken over only with ``adopt``; otherwise ValueError."""
    live = [j for j in existing if j.get("status") in LIVE_STATUSES]
    by_name: dict[str, Mapping[str, Any]] = {}
    for job in live:
        if job.get("name"):
            by_name.setdefault(str(job["name"]), job)
    # a one-off that apply created and that has run is done, not missing: the same definition
    # must not run again on the next apply
    done = {str(j["name"]): j for j in existing
            if j.get("status") in SETTLED_STATUSES and j.get("managedBy") == OWNER and j.get("name")}
    changes: list[Change] = []
    for d in desired:
        current = by_name.get(d.name)
        if current is None:
            finished = done.get(d.name)
            if finished is not None and normalise(_request(as_request, finished)) == normalise(d.body):
                changes.append(Change("unchanged", d.name, job_id=finished.get("jobId")))
                continue
            changes.append(Change("create", d.name, body={**d.body, "name": d.name, "managedBy": OWNER}))
            continue
        adopting = current.get("managedBy") != OWNER
        if adopting and not adopt:
            raise ValueError(
                f"{d.where}: job {d.name!r} exists ({current.get('jobId')}) but apply does not manage it: "
                "take it over with --adopt, cancel it, or rename the job in the file"
            )
        now = _request(as_request, current)
        if adopting and normalise(now) == normalise(d.body):
            changes.append(Change("adopt", d.name, job_id=current.get("jobId"), body={"managedBy": OWNER}, fields=["managedBy"]))
            continue
        if normalise(now) == normalise(d.body):
            changes.append(Change("unchanged", d.name, job_id=current.get("jobId")))
            continue
        # every field written differently goes in the patch (a default spelled out or left out
        # costs nothing); the plan names those whose change alone changes the job
        patch = {k: _member_patch(now.get(k), d.body.get(k)) for k in sorted(set(now) | set(d.body))
                 if now.get(k) != d.body.get(k)}
        meaning = normalise(now)
        differing = [k for k in patch if _changes_meaning(normalise, _with(now, k, d.body.get(k)), meaning)]
        fields = differing or sorted(patch)
        if adopting:
            patch, fields = {**patch, "managedBy": OWNER}, [*fields, "managedBy"]
        changes.append(Change("adopt" if adopting else "update", d.name, job_id=current.get("jobId"), body=patch, fields=fields))
    if prune:
        wanted = {d.name for d in desired}
        for job in live:
            if job.get("managedBy") == OWNER and job.get("name") not in wanted:
                changes.append(Change("delete", str(job.get("name")), job_id=job.get("jobId")))
    return changes


def by_rule_identity(rule_id: Callable[[dict[str, Any]], str], normalise: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """``normalise`` for comparing a file's body with a live job's: the daemon never shows a
    webhook's secret (``********``) nor the password of its URL, so a webhook rule is compared
    by its ``ruleId`` (a hash of what it does, secret excepted: the live job's answer carries
    it, a file's is ``rule_id(rule)``) and its other members. A changed secret alone is no
    change; whenever the rule is sent, the file's secret goes with it."""

    def meaning(body: dict[str, Any]) -> Any:
        rules = body.get("notify")
        if not isinstance(rules, list) or not any(isinstance(r, dict) and r.get("via") == "webhook" for r in rules):
            return normalise(body)
        same: list[Any] = []
        for rule in rules:
            if not isinstance(rule, dict) or rule.get("via") != "webhook":
                same.append(rule)
                continue
            rid = rule.get("ruleId") or rule_id({k: v for k, v in rule.items() if k != "ruleId"})
            # what the rule does is its id: a URL and a secret that stand for that id alone
            same.append({**{k: v for k, v in rule.items() if k != "ruleId"},
                         "url": f"https://{str(rid).replace('_', '-').lower()}.invalid/", "secret": "0" * 16})  # fmt: skip
        return normalise({**body, "notify": same})

    return meaning


def _request(as_request: Callable[[Mapping[str, Any]], dict[str, Any]], job: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in as_request(job).items() if k != "name"}


def _member_patch(old: Any, new: Any) -> Any:
    """A merge patch merges objects member by member (``retryPolicy``): the members the file
    leaves out are sent as null, so that their defaults apply again."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: new.get(k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}
    return new


def _changes_meaning(normalise: Callable[[dict[str, Any]], Any], body: dict[str, Any], meaning: Any) -> bool:
    try:
        return bool(normalise(body) != meaning)
    except ValueError:  # half of a change that only makes sense whole (a target swapped)
        return True


def _with(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k != key}
    if value is not None:
        out[key] = value
    if key in ("command", "http", "python", "queue") and value is not None:
        for other in ("command", "http", "python", "queue"):
            if other != key:
                out.pop(other, None)
    if key in ("schedule", "runAt") and value is not None:
        out.pop("runAt" if key == "schedule" else "schedule", None)
    return out


# ---------------------------------------------------------------- writing TOML


class NotToml(ValueError):
    """A value TOML cannot hold (null inside a payload)."""


def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else toml_value(key)


def toml_value(value: Any) -> str:
    if value is None:
        raise NotToml("TOML has no null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's, but for DEL, which TOML wants escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise NotToml(f"cannot write a {type(value).__name__} in TOML")


def job_table(name: str, body: Mapping[str, Any]) -> str:
    """``[name]`` and one ``field = value`` line per field, in FIELD_ORDER."""
    order = {k: i for i, k in enumerate(FIELD_ORDER)}
    keys = sorted((k for k in body if k not in RESERVED_FIELDS and body[k] is not None),
                  key=lambda k: (order.get(k, len(order)), k))
    lines = [f"[{toml_key(name)}]"] + [f"{toml_key(k)} = {toml_value(body[k])}" for k in keys]
    return "\n".join(lines) + "\n"


def compact(body: dict[str, Any], normalise: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """``body`` without the fields that only repeat a default (what they mean is unchanged).
    A field without which the body is refused is needed, whatever its value: a watched job
    (a ping target) has no schedule, so its ``expectSuccessWithin`` stays."""
    meaning = normalise(body)
    out = dict(body)
    for key in list(body):
        if key in ("schedule", "runAt", "command", "http", "python", "queue"):
            continue
        trial = {k: v for k, v in out.items() if k != key}
        if not _changes_meaning(normalise, trial, meaning):
            out = trial
    return out
