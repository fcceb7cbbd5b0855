"""The HTTP-only bodies as msgspec structs: a remote worker's calls (claim, heartbeat, complete,
effects). The API decodes them with these (``api/decode.py``) and the OpenAPI document's
components of the same names are generated from them (``api/openapi.py``). A job's body is
``core/jobfields.py``: the CLI and the job files need it too. Pure: no HTTP, no I/O."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from cronwheel.core import limits as lim
from cronwheel.core.jobfields import QUEUE_PATTERN, ordered
from cronwheel.core.records import Outcome

_WORKER_ID = Annotated[str, Meta(min_length=1, max_length=lim.MAX_WORKER_ID_CHARS)]
#: the outcomes a worker may report; ``lost`` is the daemon's own verdict
WORKER_OUTCOMES = (Outcome.SUCCEEDED.value, Outcome.FAILED.value, Outcome.TIMED_OUT.value)


class ClaimRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    worker_id: Annotated[_WORKER_ID, Meta(description="The remote worker's stable id; heartbeats and completions name it too.")]
    queues: Annotated[list[Annotated[str, Meta(pattern=QUEUE_PATTERN)]],
                      Meta(min_length=1, max_length=lim.MAX_CLAIM_QUEUES, description="Duplicates are taken once.")]
    max: Annotated[int, Meta(ge=1, le=lim.MAX_CLAIM, extra_json_schema={"default": 1}, description="At most this many executions. Null: absent (1).")] | None = None
    wait_sec: Annotated[float, Meta(ge=0, le=lim.MAX_CLAIM_WAIT_SEC, extra_json_schema={"default": 0},
                                    description="Long poll: with nothing to take, wait up to this long for an execution of these queues. Null: absent (0).")] | None = None


class LeaseRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    worker_id: _WORKER_ID
    lease_epoch: Annotated[int, Meta(ge=0, le=2**63 - 1)]


class CompleteRequest(LeaseRequest):
    outcome: Annotated[Literal["succeeded", "failed", "timed_out"], ordered(WORKER_OUTCOMES)]
    exit_code: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)] | None = None
    error: Annotated[str, Meta(description="Kept up to its last 8 KiB. `null`: none.")] | None = None
    output: Annotated[str, Meta(description="Kept up to its last 64 KiB. `null`: none.")] | None = None


class EffectRequest(LeaseRequest):
    key: Annotated[str, Meta(min_length=1, max_length=lim.MAX_EFFECT_KEY_CHARS, description="Idempotency key of the side effect, unique per execution.")]


STRUCTS: tuple[type[msgspec.Struct], ...] = (ClaimRequest, LeaseRequest, CompleteRequest, EffectRequest)
