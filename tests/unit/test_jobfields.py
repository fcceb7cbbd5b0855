"""A job's fields are declared once (core/jobfields.py): the choices a Literal states are the
model's, and every other list of a job's members is derived from the structs."""

from __future__ import annotations

from typing import get_args

import msgspec

from cronwheel.api import schema
from cronwheel.core import jobfields as jf
from cronwheel.core.model import MisfirePolicy, OverlapPolicy, Priority


def _literal(struct: type[msgspec.Struct], name: str) -> tuple[str, ...]:
    field = next(f for f in msgspec.structs.fields(struct) if f.encode_name == name)
    annotated = next(a for a in get_args(field.type) if a is not type(None))
    return tuple(get_args(get_args(annotated)[0]))


def test_the_literal_choices_are_the_models() -> None:
    assert _literal(jf.JobRequest, "priority") == tuple(p.label for p in Priority) == jf.PRIORITIES
    assert _literal(jf.JobRequest, "overlap") == tuple(p.value for p in OverlapPolicy) == jf.OVERLAPS
    assert _literal(jf.JobRequest, "misfire") == tuple(p.value for p in MisfirePolicy) == jf.MISFIRES
    outcome = next(f for f in msgspec.structs.fields(schema.CompleteRequest) if f.name == "outcome")
    assert get_args(get_args(outcome.type)[0]) == schema.WORKER_OUTCOMES


def test_a_job_answer_carries_its_body_back() -> None:
    """What a create body sets, the answer shows under the same name (the target under
    ``target``), so an export can recreate the job from the answer (crontab_export)."""
    answer = set(jf.names(schema.Job))
    body = set(jf.JOB_FIELDS)
    assert body - answer == set(jf.TARGET_KINDS)
    assert set(jf.CARRIED_BACK) < body & answer


def test_patch_and_batch_item_are_the_body_plus_their_own() -> None:
    assert jf.names(jf.JobPatch) == jf.JOB_FIELDS
    assert jf.names(jf.JobItem) == (*jf.JOB_FIELDS, "idempotencyKey")
