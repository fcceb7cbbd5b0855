"""``PATCH /v1/jobs/{id}``: a JSON merge patch of a job's create body, merged into the body of
the job as it stands and validated as a create body is. Pure: no HTTP, no I/O, no clock."""

from __future__ import annotations

from typing import Any

import msgspec

from cronwheel.api.fields import bad, reject_unknown, type_name
from cronwheel.api.validation import parse_job_body
from cronwheel.core import notify as nt
from cronwheel.core.instants import format_instant
from cronwheel.core.jobfields import (
    JOB_ANSWER_ONLY,
    TARGET_KINDS,
    JobPatch,
    JobRequest,
    RetryPolicy,
    names,
)
from cronwheel.core.model import Job, JobSpec

#: what a patch may name: the members of a create body (``core.jobfields.JobPatch``)
PATCH_FIELDS = names(JobPatch)
#: members of a patch that replace each other: naming one removes the others from the job
_EXCLUSIVE_GROUPS = (("schedule", "runAt"), (*TARGET_KINDS, "target"))
#: objects a patch merges member by member (``{"env": {"A": null}}`` removes one variable)
_MERGED_OBJECTS = ("retryPolicy", "env", "runAs")


def job_body(job: Job) -> dict[str, Any]:
    """The ``POST /v1/jobs`` body that creates ``job``'s definition as it stands: what a
    patch is merged into. Built as the struct a body decodes into (``JobRequest``), so it
    names the members as a body does; absent members are left out."""
    spec = job.spec
    watched = "ping" in spec.target  # a watched job: its window alone makes it one again
    body = JobRequest(
        name=spec.name,
        schedule=spec.schedule,
        run_at=None if spec.schedule is not None else format_instant(spec.run_at),
        timezone=spec.timezone,
        payload=spec.payload,
        retry_policy=msgspec.convert(spec.retry.to_json(), RetryPolicy),
        timeout_sec=spec.timeout_sec,
        lease_sec=spec.lease_sec,
        priority=spec.priority.label,  # type: ignore[arg-type]  # a label is one of the Literal's choices
        overlap=spec.overlap.value,
        misfire=spec.misfire.value,
        jitter_sec=spec.jitter_sec,
        misfire_grace_sec=spec.misfire_grace_sec,  # kept too (it used to be dropped by any patch)
        calendars=list(spec.calendars) or None,
        active_from=format_instant(spec.active_from),
        active_until=format_instant(spec.active_until),
        on_success=list(spec.on_success) or None,
        on_failure=list(spec.on_failure) or None,
        managed_by=spec.managed_by,  # kept by a patch that does not name it
        notify=nt.rules_to_json(spec.notify),  # with the secrets: merged and validated, never shown
        expect_success_within=None if spec.expect_success_within_ms is None else nt.format_window(spec.expect_success_within_ms),
    )
    out: dict[str, Any] = {k: v for k, v in msgspec.to_builtins(body).items() if v is not None}
    if not watched:
        out["target"] = spec.target
    process = spec.process_json()
    if process is not None:
        out.update(process)
    return out


def parse_job_patch(job: Job, patch: Any, *, now_ms: int) -> JobSpec:
    """Validate a ``PATCH /v1/jobs/{id}`` body against ``job`` into its new ``JobSpec``.

    The body is a JSON merge patch (RFC 7386) of the create body: members it names replace
    the job's (objects such as ``retryPolicy`` merge member by member), ``null`` removes an
    optional member (its default applies again), the rest is kept. ``schedule``/``runAt``
    replace each other, and so do the targets (``command``, ``http``, ``python``, ``queue``,
    ``target``; a target is replaced whole). The result is validated exactly as a create
    body is, by ``parse_job_body``, so an update accepts and refuses what a create does."""
    if not isinstance(patch, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(patch)}", status=400, code="invalid_body")
    if not patch:
        raise bad(None, f"the patch is empty: name at least one of {', '.join(sorted(PATCH_FIELDS))}", code="empty_patch")
    reject_unknown(None, patch, PATCH_FIELDS, JOB_ANSWER_ONLY)
    merged = job_body(job)
    for group in _EXCLUSIVE_GROUPS:
        if any(k in patch for k in group):
            for k in group:
                merged.pop(k, None)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and key in _MERGED_OBJECTS:
            # RFC 7386: a member the job lacks merges into {}, so the patch's nulls still remove
            current = merged.get(key)
            merged[key] = _merge(current if isinstance(current, dict) else {}, value)
        else:
            merged[key] = value
    # a name kept from before names had to be trimmed (" nightly") does not block other changes
    kept_name = merged.pop("name") if "name" not in patch and job.spec.name and job.spec.name != job.spec.name.strip() else None
    spec = parse_job_body(merged, now_ms=now_ms, tenant=job.tenant)
    if kept_name is not None:
        spec.name = kept_name
    return spec


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
