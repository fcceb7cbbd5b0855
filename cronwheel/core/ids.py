"""Identity is data: job ids, deterministic execution ids, bucket assignment."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

N_BUCKETS = 64


def new_job_id() -> str:
    """A random job id, ``j`` + 16 base32 characters (80 bits)."""
    return "j" + base64.b32encode(secrets.token_bytes(10)).decode().lower()


#: ``new_job_id``'s shape, and an execution id's (a job id, ``:``, its tick in ms): the cursors of
#: the job and dead-letter listings are ids, and anything else is refused rather than paged
JOB_ID_REGEX = r"j[a-z2-7]{16}"
EXECUTION_ID_REGEX = JOB_ID_REGEX + r":[0-9]{1,18}"
_JOB_ID_SHAPE = re.compile(JOB_ID_REGEX)
_EXECUTION_ID_SHAPE = re.compile(EXECUTION_ID_REGEX)


def has_job_id_shape(text: str) -> bool:
    """Whether ``text`` could be a job id (``new_job_id``'s shape): a name may not, since every
    command takes a job's id and its name alike, and the id is looked up first."""
    return _JOB_ID_SHAPE.fullmatch(text) is not None


def has_execution_id_shape(text: str) -> bool:
    """Whether ``text`` could be an execution id: a job id and a tick of at most 18 digits."""
    return _EXECUTION_ID_SHAPE.fullmatch(text) is not None


def new_error_id() -> str:
    """The id of one internal error, given to the caller and written in the one log line
    about it, so that the two can be matched (12 hex characters)."""
    return secrets.token_hex(6)


def execution_id(job_id: str, scheduled_at_ms: int) -> str:
    """The execution id of one tick: deterministic, so a tick can only exist once."""
    return f"{job_id}:{scheduled_at_ms}"


def parse_execution_id(execution_id_: str) -> tuple[str, int]:
    job_id, _, ms = execution_id_.rpartition(":")
    if not job_id or not ms.isdigit():
        raise ValueError(f"not an execution id: {execution_id_!r}")
    return job_id, int(ms)


def stable_hash(text: str) -> int:
    """A 64-bit hash that is the same on every node, process and restart (unlike hash())."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def bucket_of(job_id: str, n_buckets: int = N_BUCKETS) -> int:
    return stable_hash(job_id) % n_buckets


#: a daemon start's incarnation: hex digits (``secrets.token_hex(3)``), in each local worker's
#: id ``{node}-{incarnation}-w{index}-{generation}`` and in its notification owner
#: ``{node}-{incarnation}``
INCARNATION_HEX_CHARS = 6
_LOCAL_WORKER_REST = re.compile(rf"([0-9a-f]{{{INCARNATION_HEX_CHARS}}})-w[0-9]+-[0-9]+")


def incarnation_of(worker_id: str, node_id: str) -> str | None:
    """The incarnation of node ``node_id`` whose local worker ``worker_id`` is, or None: a
    remote worker's, or another node's whose id merely starts like it (``n-2``'s workers
    begin with ``n-`` too)."""
    if not worker_id.startswith(node_id + "-"):
        return None
    shape = _LOCAL_WORKER_REST.fullmatch(worker_id, len(node_id) + 1)
    return shape.group(1) if shape else None
